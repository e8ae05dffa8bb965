//! The sandbox: what commands and file tools may change, in layers. `paths` keeps file tools
//! inside the workspace, `fsafe` opens what they checked without following a symlink swapped
//! in since, `protect` finds what in the workspace must stay read-only (every `.git`, `.turn`),
//! and `screen` flags well-known destructive commands. Commands run
//! (through `exec`) in the `namespaces` of a run (a read-only view of the host but for the
//! writable directories, a private /tmp and /dev/shm, a PID namespace of their own), without
//! `capabilities`, confined by
//! `landlock` and filtered by `seccomp`, with an `env` that keeps secrets and sockets out.
//! `layers` decides which of these this machine and the flags allow; `sys` holds the raw
//! system calls.
//!
//! Architecture invariant: `paths`, `screen`, `env`, `layers::decide` and `seccomp::program`
//! are pure; only `exec` starts the model's commands.

mod capabilities;
pub mod env;
pub mod exec;
pub mod fsafe;
pub mod landlock;
pub mod layers;
mod namespaces;
pub mod paths;
pub mod protect;
pub mod screen;
mod seccomp;
pub(crate) mod sys;

pub use paths::{safe_path, Node};
pub use screen::check_command;

/// How much the model's commands and file tools may change (`--sandbox`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Writes inside the workspace (but its protected paths), `--writable` dirs and the run's
    /// private /tmp and /dev/shm only.
    WorkspaceWrite,
    /// No writes at all, except to /dev/null and the run's private /tmp and /dev/shm.
    ReadOnly,
    /// No Landlock: commands run with the user's full rights, screened by keywords only.
    Off,
}

impl Mode {
    pub fn parse(name: &str) -> Option<Mode> {
        match name {
            "workspace-write" => Some(Mode::WorkspaceWrite),
            "read-only" => Some(Mode::ReadOnly),
            "off" => Some(Mode::Off),
            _ => None,
        }
    }
}
