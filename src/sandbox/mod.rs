//! The sandbox: what commands and file tools may change, in layers. `paths` keeps file tools
//! inside the workspace, `fsafe` opens what they checked without following a symlink swapped
//! in since, `screen` flags well-known destructive commands, `landlock` confines what commands
//! may write and connect to, and `exec` runs a command inside those limits.
//!
//! Architecture invariant: `paths` and `screen` are pure; only `exec` spawns processes.

pub mod exec;
pub mod fsafe;
pub mod landlock;
pub mod paths;
pub mod screen;

pub use paths::{safe_path, Node};
pub use screen::check_command;

/// How much the model's commands and file tools may change (`--sandbox`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Writes inside the workspace and the temp dir only (Landlock for bash).
    WorkspaceWrite,
    /// No writes at all, except to /dev/null.
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
