//! Which sandbox layers a run gets: what this machine offers (Landlock's ABI, seccomp, user
//! namespaces), what the flags ask for, and what follows: the `exec::Runner` with every layer
//! that works, a notice for each that does not, or a usage error where a flag demands one
//! that is missing (`--require-landlock`, `--require-isolation`, `--no-network`).
//! `turn --sandbox-check` prints the same findings.
//!
//! `decide` is pure and tested; `runner` and `check` probe the machine and build.

use super::exec::{Config, Runner};
use super::landlock::{self, Policy};
use super::namespaces::{Holder, Private, Recipe, PRIVATE};
use super::seccomp::{self, Network};
use super::{env, Mode};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The sandbox flags of a run.
pub struct Settings<'a> {
    pub mode: Mode,
    /// Canonical.
    pub workspace: &'a Path,
    /// As given on the command line.
    pub writable: &'a [PathBuf],
    pub no_network: bool,
    pub require_landlock: bool,
    pub require_isolation: bool,
    pub pass_env: &'a [String],
    /// Canonical paths inside the workspace kept read-only in `workspace-write` (empty with
    /// `--writable-protected`).
    pub protected: &'a [PathBuf],
    /// `--host-tmp`: commands use the host's /tmp (writable in `workspace-write`) instead of
    /// a private one.
    pub host_tmp: bool,
}

/// What the machine offers.
#[derive(Clone, Debug, PartialEq)]
pub struct Offered {
    pub landlock: Option<u32>,
    pub seccomp: bool,
    /// `Err(why)` where user namespaces (or the mount calls) are not available.
    pub namespaces: Result<(), String>,
}

/// The layers to use, and what to tell the user about the rest.
#[derive(Debug, PartialEq)]
pub struct Plan {
    pub landlock: bool,
    pub seccomp: Option<Network>,
    pub namespaces: bool,
    /// Lines for stderr, each complete ("turn: notice: …").
    pub notices: Vec<String>,
}

/// The layers for `mode` and the flags, given what is offered; a usage error where a flag
/// cannot be honoured.
pub fn decide(settings: &Settings, offered: &Offered) -> Result<Plan, String> {
    if settings.mode == Mode::Off {
        if settings.no_network {
            return Err("--no-network needs the Landlock sandbox, not --sandbox off".into());
        }
        if settings.require_isolation {
            return Err("--require-isolation cannot be combined with --sandbox off".into());
        }
        return Ok(Plan {
            landlock: false,
            seccomp: None,
            namespaces: false,
            notices: vec!["turn: warning: --sandbox off: commands run with all your rights, screened by keywords only".into()],
        });
    }
    let namespaces = offered.namespaces.is_ok();
    if settings.require_landlock && offered.landlock.is_none() {
        return Err(
            "this kernel has no Landlock (Linux 5.13+ with landlock in lsm=), which --require-landlock needs"
                .into(),
        );
    }
    if settings.require_isolation {
        if let Err(why) = &offered.namespaces {
            return Err(format!(
                "--require-isolation: commands cannot get namespaces here: {why}"
            ));
        }
        if offered.landlock.is_none() {
            return Err("--require-isolation: this kernel has no Landlock (Linux 5.13+ with landlock in lsm=)".into());
        }
        if !offered.seccomp {
            return Err("--require-isolation: this kernel has no seccomp filters".into());
        }
    }
    if settings.no_network && !namespaces && !offered.seccomp {
        return Err(
            "--no-network needs a network namespace or seccomp, and neither works here".into(),
        );
    }
    let mut notices = Vec::new();
    match (&offered.namespaces, offered.landlock) {
        (Err(why), None) => notices.push(format!(
            "turn: warning: this kernel has no Landlock and commands cannot get namespaces ({why}), so bash \
             commands are not confined, only screened by keywords (--require-landlock refuses to run instead)"
        )),
        (Err(why), Some(_)) => notices.push(format!(
            "turn: notice: commands cannot get namespaces here ({why}); they run under Landlock, seccomp and \
             without capabilities, which do not stop chmod or chown of your files outside the workspace \
             (--require-isolation refuses to run instead)"
        )),
        (Ok(()), None) => notices.push(
            "turn: notice: this kernel has no Landlock; read-only mounts still stop writes outside the \
             workspace (--require-landlock refuses to run instead)"
                .into(),
        ),
        (Ok(()), Some(_)) => {}
    }
    if !offered.seccomp {
        notices.push(
            "turn: notice: this kernel has no seccomp filters, so commands are not kept from terminal \
             ioctls, io_uring and the keyrings (--require-isolation refuses to run instead)"
                .into(),
        );
    }
    let network = match (settings.no_network, namespaces) {
        (false, _) => Network::Open,
        (true, true) => Network::Namespaced,
        (true, false) => Network::Refused,
    };
    Ok(Plan {
        landlock: offered.landlock.is_some(),
        seccomp: offered.seccomp.then_some(network),
        namespaces,
        notices,
    })
}

/// The directories commands may write: the workspace, `--writable` ones and with
/// `--host-tmp` the host's temp dir (canonical), in `workspace-write` only.
fn writable_dirs(settings: &Settings) -> Result<Vec<PathBuf>> {
    if settings.mode != Mode::WorkspaceWrite {
        if !settings.writable.is_empty() {
            return Err(Error::Usage(
                "--writable goes with --sandbox workspace-write".into(),
            ));
        }
        return Ok(Vec::new());
    }
    let mut dirs = vec![settings.workspace.to_path_buf()];
    if settings.host_tmp {
        dirs.extend(std::env::temp_dir().canonicalize().ok());
    }
    for dir in settings.writable {
        let dir = dir.canonicalize().map_err(|err| Error::File {
            path: dir.clone(),
            what: "cannot use --writable",
            err,
        })?;
        dirs.push(dir);
    }
    Ok(dirs)
}

/// The host directories a run gets a private tmpfs over: /tmp (but with `--host-tmp`) and
/// /dev/shm.
fn private_mounts(settings: &Settings) -> Vec<Private> {
    PRIVATE
        .iter()
        .filter(|(path, _)| !(settings.host_tmp && *path == "/tmp"))
        .map(|(path, options)| Private {
            path: PathBuf::from(path),
            options,
        })
        .collect()
}

/// The protected paths that hold for commands: in `workspace-write` only (read-only has
/// nothing writable to protect).
fn protected<'a>(settings: &Settings<'a>) -> &'a [PathBuf] {
    match settings.mode {
        Mode::WorkspaceWrite => settings.protected,
        _ => &[],
    }
}

/// What the machine offers, with the holder already started where namespaces work.
fn probe(settings: &Settings, dirs: &[PathBuf]) -> Result<(Offered, Option<(Recipe, Holder)>)> {
    let mut holder = None;
    let namespaces =
        if settings.mode == Mode::Off {
            Err("--sandbox off".to_string())
        } else {
            let private = private_mounts(settings);
            let visible = [settings.workspace.to_path_buf()];
            let network = !settings.no_network;
            let recipe = Recipe::new(dirs, &visible, network, &private, protected(settings))
                .map_err(|err| Error::File {
                    path: settings.workspace.to_path_buf(),
                    what: "cannot set up the sandbox for",
                    err,
                })?;
            match Holder::start(&recipe) {
                Ok(started) => {
                    holder = Some((recipe, started));
                    Ok(())
                }
                Err(why) => Err(why.to_string()),
            }
        };
    let offered = Offered {
        landlock: landlock::abi(),
        seccomp: seccomp::available(),
        namespaces,
    };
    Ok((offered, holder))
}

/// The runner for this run's commands, with every layer the flags and the machine allow;
/// notices go to stderr.
pub fn runner(settings: &Settings) -> Result<Runner> {
    let dirs = writable_dirs(settings)?;
    let (offered, holder) = probe(settings, &dirs)?;
    let plan = decide(settings, &offered).map_err(Error::Usage)?;
    for notice in &plan.notices {
        eprintln!("{notice}");
    }
    build(settings, dirs, &offered, &plan, holder)
}

fn build(
    settings: &Settings,
    dirs: Vec<PathBuf>,
    offered: &Offered,
    plan: &Plan,
    holder: Option<(Recipe, Holder)>,
) -> Result<Runner> {
    let setup_error = |err| Error::File {
        path: settings.workspace.to_path_buf(),
        what: "cannot set up the sandbox for",
        err,
    };
    let confined = settings.mode != Mode::Off;
    // Without namespaces, a directory of turn's own in the host's temp dir stands in for the
    // private /tmp; /dev/shm is then the host's, writable in workspace-write.
    let own_tmp = if confined && !plan.namespaces && !settings.host_tmp {
        Some(own_temp_dir().map_err(setup_error)?)
    } else {
        None
    };
    let mut dirs = dirs;
    dirs.extend(own_tmp.clone());
    if own_tmp.is_some() && settings.mode == Mode::WorkspaceWrite {
        dirs.push(PathBuf::from("/dev/shm"));
    }
    let landlock = match offered.landlock.filter(|_| plan.landlock) {
        Some(abi) => {
            let mut writable_files = vec![PathBuf::from("/dev/null")];
            if settings.mode == Mode::WorkspaceWrite {
                writable_files.extend(["/dev/zero", "/dev/full"].map(PathBuf::from));
            }
            let policy = Policy {
                abi,
                writable_dirs: dirs,
                writable_files,
                no_network: settings.no_network,
            };
            let rights = policy.dir_rights();
            Some((policy.ruleset().map_err(setup_error)?, rights))
        }
        None => None,
    };
    let tmpdir = match (&own_tmp, &holder) {
        (Some(dir), _) => Some(dir.clone()),
        (None, Some(_)) if !settings.host_tmp => Some(PathBuf::from("/tmp")),
        _ => None,
    };
    let config = Config {
        workspace: settings.workspace.to_path_buf(),
        env: env::for_commands(std::env::vars_os(), settings.pass_env),
        landlock,
        seccomp: plan
            .seccomp
            .map(|network| seccomp::program(&seccomp::NATIVE, network)),
        confine: confined,
        tmpdir,
        own_tmp,
        subreaper: holder.is_none(),
        namespaces: holder,
    };
    Runner::new(config).map_err(setup_error)
}

/// A new directory `turn-<random>` (0700) in the host's temp dir, for one run's temp files.
fn own_temp_dir() -> std::io::Result<PathBuf> {
    use std::hash::{BuildHasher, Hasher};
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    for _ in 0..100 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        let dir = base.join(format!("turn-{:016x}", hasher.finish()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return dir.canonicalize(),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free name for a temp dir"))
}

/// `turn --sandbox-check`: the report, and whether every layer is active.
pub fn check(settings: &Settings) -> Result<(String, bool)> {
    let dirs = writable_dirs(settings)?;
    let (offered, holder) = probe(settings, &dirs)?;
    let shared_proc = holder
        .as_ref()
        .and_then(|(_, h)| h.shared_proc.as_ref().map(|e| e.to_string()));
    let mode = match settings.mode {
        Mode::WorkspaceWrite => "workspace-write",
        Mode::ReadOnly => "read-only",
        Mode::Off => "off",
    };
    let network = if settings.no_network {
        ", --no-network"
    } else {
        ""
    };
    let mut out = format!("turn sandbox check: --sandbox {mode}{network}\n");
    let line = |out: &mut String, layer: &str, state: String| {
        out.push_str(&format!("  {layer:<44} {state}\n"));
    };
    let on = |yes: bool, why: &str| {
        if yes {
            "active".to_string()
        } else {
            format!("no: {why}")
        }
    };
    let off = settings.mode == Mode::Off;
    let ns = offered.namespaces.clone();
    let ns_why = ns.clone().err().unwrap_or_default();
    let kinds = if settings.no_network {
        "user, mount, pid, uts, ipc, net"
    } else {
        "user, mount, pid, uts, ipc"
    };
    line(
        &mut out,
        &format!("namespaces ({kinds})"),
        on(ns.is_ok(), &ns_why),
    );
    let needs = "needs the namespaces";
    line(
        &mut out,
        "read-only file system outside writable dirs",
        on(ns.is_ok(), needs),
    );
    let proc_state = match (&shared_proc, ns.is_ok()) {
        (None, true) => "active".to_string(),
        (Some(err), true) => format!("no: {err} (the host's /proc, read-only)"),
        (_, false) => format!("no: {needs}"),
    };
    line(&mut out, "private /proc", proc_state);
    let confined = !off;
    let tmp_state = match (ns.is_ok(), settings.host_tmp) {
        _ if !confined => "no: --sandbox off".to_string(),
        (true, false) => {
            "active: tmpfs /tmp (1 GiB, TMPDIR) and /dev/shm (256 MiB), one per run".into()
        }
        (true, true) => "/dev/shm only (256 MiB); /tmp is the host's (--host-tmp)".into(),
        (false, false) => format!(
            "no: {needs}; TMPDIR is a directory of turn's in {}, removed at the end; /tmp is \
             read-only under Landlock but its Unix sockets stay reachable; /dev/shm is the host's",
            std::env::temp_dir().display()
        ),
        (false, true) => format!("no: {needs}; /tmp is the host's (--host-tmp)"),
    };
    line(&mut out, "private /tmp and /dev/shm", tmp_state);
    let shown: Vec<String> = settings
        .protected
        .iter()
        .map(|p| {
            p.strip_prefix(settings.workspace)
                .unwrap_or(p)
                .display()
                .to_string()
        })
        .collect();
    let protected_state = match (settings.mode, ns.is_ok()) {
        (Mode::WorkspaceWrite, _) if shown.is_empty() => {
            "none (no .git or .turn here, or --writable-protected)".to_string()
        }
        (Mode::WorkspaceWrite, true) => format!("read-only: {}", shown.join(" ")),
        (Mode::WorkspaceWrite, false) => format!(
            "file tools only ({needs} for commands): {}",
            shown.join(" ")
        ),
        (Mode::ReadOnly, _) => "everything is read-only".into(),
        (Mode::Off, _) => "no: --sandbox off".into(),
    };
    line(&mut out, "protected paths (.git, .turn)", protected_state);
    let landlock_state = match offered.landlock {
        _ if off => "no: --sandbox off".to_string(),
        Some(abi) => format!("active (ABI {abi})"),
        None => "no: this kernel has no Landlock (Linux 5.13+ with landlock in lsm=)".into(),
    };
    line(&mut out, "Landlock", landlock_state);
    let seccomp_why = if off {
        "--sandbox off"
    } else {
        "this kernel has no seccomp filters"
    };
    line(
        &mut out,
        "seccomp filter",
        on(offered.seccomp && !off, seccomp_why),
    );
    line(
        &mut out,
        "no capabilities, no_new_privs",
        on(!off, "--sandbox off"),
    );
    line(
        &mut out,
        "no controlling terminal (own session)",
        on(true, ""),
    );
    let lifetime = if ns.is_ok() {
        "end with turn, a timeout or Ctrl-C (PID namespace)"
    } else {
        "end with a timeout, Ctrl-C or turn's exit (child subreaper)"
    };
    line(&mut out, "background jobs", lifetime.to_string());
    let withheld: Vec<String> = std::env::vars_os()
        .map(|(n, v)| (n.to_string_lossy().into_owned(), v))
        .filter(|(n, v)| !settings.pass_env.contains(n) && env::withheld(n, &v.to_string_lossy()))
        .map(|(n, _)| n)
        .collect();
    let withheld = if withheld.is_empty() {
        "none here".to_string()
    } else {
        withheld.join(" ")
    };
    line(&mut out, "environment withheld from commands", withheld);
    let plan = match decide(settings, &offered) {
        Ok(plan) => plan,
        Err(refused) => {
            out.push_str(&format!("turn would refuse to run: {refused}\n"));
            return Ok((out, false));
        }
    };
    let runner = build(settings, dirs, &offered, &plan, holder)?;
    let started = runner.run("true", std::time::Duration::from_secs(10), 100);
    let works = matches!(&started, Ok(o) if o.end == super::exec::End::Exited(0));
    match started {
        Ok(_) if works => line(&mut out, "a command starts", "yes".into()),
        Ok(outcome) => line(
            &mut out,
            "a command starts",
            format!("no: {:?} {}", outcome.end, outcome.output.trim()),
        ),
        Err(err) => line(&mut out, "a command starts", format!("no: {err}")),
    }
    let complete = works && plan.namespaces && plan.landlock && plan.seccomp.is_some();
    out.push_str(if complete {
        "every layer is active\n"
    } else {
        "some layers are missing (see above)\n"
    });
    Ok((out, complete))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(mode: Mode) -> Settings<'static> {
        Settings {
            mode,
            workspace: Path::new("/w"),
            writable: &[],
            no_network: false,
            require_landlock: false,
            require_isolation: false,
            pass_env: &[],
            protected: &[],
            host_tmp: false,
        }
    }

    fn offered(landlock: bool, seccomp: bool, namespaces: bool) -> Offered {
        Offered {
            landlock: landlock.then_some(6),
            seccomp,
            namespaces: if namespaces {
                Ok(())
            } else {
                Err("not allowed".into())
            },
        }
    }

    #[test]
    fn everything_offered_is_used_quietly() {
        let plan = decide(&settings(Mode::WorkspaceWrite), &offered(true, true, true)).unwrap();
        assert_eq!(
            plan,
            Plan {
                landlock: true,
                seccomp: Some(Network::Open),
                namespaces: true,
                notices: vec![],
            }
        );
    }

    #[test]
    fn missing_layers_are_notices_or_refusals() {
        let s = settings(Mode::WorkspaceWrite);
        let plan = decide(&s, &offered(true, true, false)).unwrap();
        assert!(!plan.namespaces && plan.landlock);
        assert_eq!(plan.notices.len(), 1);
        assert!(plan.notices[0].contains("cannot get namespaces here (not allowed)"));
        let plan = decide(&s, &offered(false, true, false)).unwrap();
        assert!(plan.notices[0].contains("warning: this kernel has no Landlock"));
        let strict = Settings {
            require_isolation: true,
            ..settings(Mode::ReadOnly)
        };
        for (offer, needle) in [
            (
                offered(true, true, false),
                "cannot get namespaces here: not allowed",
            ),
            (offered(false, true, true), "no Landlock"),
            (offered(true, false, true), "no seccomp"),
        ] {
            let err = decide(&strict, &offer).unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
        assert!(decide(&strict, &offered(true, true, true)).is_ok());
        let landlock = Settings {
            require_landlock: true,
            ..settings(Mode::WorkspaceWrite)
        };
        assert!(decide(&landlock, &offered(false, true, true)).is_err());
    }

    #[test]
    fn no_network_picks_the_filter_by_namespace() {
        let s = Settings {
            no_network: true,
            ..settings(Mode::WorkspaceWrite)
        };
        let with = decide(&s, &offered(true, true, true)).unwrap();
        assert_eq!(with.seccomp, Some(Network::Namespaced));
        let without = decide(&s, &offered(false, true, false)).unwrap();
        assert_eq!(without.seccomp, Some(Network::Refused));
        assert!(decide(&s, &offered(true, false, false)).is_err());
        let off = Settings {
            mode: Mode::Off,
            ..s
        };
        assert!(decide(&off, &offered(true, true, true))
            .unwrap_err()
            .contains("--no-network needs the Landlock sandbox"));
    }

    #[test]
    fn off_uses_nothing_and_warns() {
        let plan = decide(&settings(Mode::Off), &offered(true, true, true)).unwrap();
        assert!(!plan.landlock && !plan.namespaces && plan.seccomp.is_none());
        assert!(plan.notices[0].contains("warning: --sandbox off"));
    }
}
