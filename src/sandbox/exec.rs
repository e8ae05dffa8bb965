//! Runs one shell command for the `bash` tool: `sh -c` in the workspace, in a process group of
//! its own, output (stdout and stderr interleaved) to an unlinked temp file so no thread has to
//! drain pipes. The wait blocks in `waitpid` until the command ends, the deadline passes or
//! Ctrl-C comes, then kills the group.

use crate::sandbox::landlock;
use crate::signal::{self, Cut};
use crate::tools::truncate;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::raw::c_int;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Output beyond this many bytes stops the command: a runaway `yes` must not fill the disk.
const MAX_CAPTURE: u64 = 256 * 1024 * 1024;

pub struct Outcome {
    /// The output, cut to the caller's maximum with a note in the middle.
    pub output: String,
    /// Chars of output the cut took out.
    pub elided: usize,
    pub end: End,
}

#[derive(Debug, PartialEq)]
pub enum End {
    Exited(i32),
    Signaled(i32),
    TimedOut,
    TooMuchOutput,
    Interrupted,
}

/// How often a running command is checked against its deadline and output limit.
const TICK: Duration = Duration::from_millis(100);

extern "C" {
    fn kill(pid: c_int, sig: c_int) -> c_int;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
}

/// Reaps `pid`, blocking; `Interrupted` when a signal comes first.
fn wait(pid: c_int) -> io::Result<ExitStatus> {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer.
    if unsafe { waitpid(pid, &mut status, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ExitStatus::from_raw(status))
}
const SIGKILL: c_int = 9;

/// Runs `command`, confined by the Landlock ruleset `confine` when there is one: the child
/// enters it between fork and exec. Its output goes through inherited descriptors, which
/// Landlock does not check, so capture works in every sandbox mode.
pub fn run(
    command: &str,
    workspace: &Path,
    timeout: Duration,
    max_output: usize,
    confine: Option<&OwnedFd>,
) -> io::Result<Outcome> {
    let (mut capture, path) = temp_file()?;
    // An absolute path: no PATH search in the child.
    let mut child = Command::new("/bin/sh");
    if let Some(ruleset) = confine {
        let fd = ruleset.as_raw_fd();
        // SAFETY: enforce makes only two syscalls, which is safe between fork and exec.
        unsafe { child.pre_exec(move || landlock::enforce(fd)) };
    }
    let child = child
        .arg("-c")
        .arg(command)
        .current_dir(workspace)
        .stdin(Stdio::null())
        .stdout(capture.try_clone()?)
        .stderr(capture.try_clone()?)
        // No pager or prompt may wait for a human who is not there.
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .process_group(0)
        .spawn();
    let _ = std::fs::remove_file(&path); // the open handle keeps it readable
    let child = child?;

    // Wait blocked in waitpid, woken every TICK to check the deadline and the output size;
    // Ctrl-C wakes it at once.
    let pid = child.id() as c_int;
    let start = Instant::now();
    let interrupted = |e: &io::Error| e.kind() == io::ErrorKind::Interrupted;
    let end = loop {
        let stop = match signal::with_deadline(TICK, || wait(pid), interrupted) {
            Ok(status) => {
                break match status.code() {
                    Some(code) => End::Exited(code),
                    None => End::Signaled(status.signal().unwrap_or(0)),
                }
            }
            Err(Cut::Failed(e)) => return Err(e),
            Err(Cut::Interrupted) => End::Interrupted,
            Err(Cut::Timeout) if start.elapsed() >= timeout => End::TimedOut,
            Err(Cut::Timeout) if capture.metadata()?.len() > MAX_CAPTURE => End::TooMuchOutput,
            Err(Cut::Timeout) => continue,
        };
        // SAFETY: kill has no memory effects; a negative pid names the process group.
        unsafe { kill(-pid, SIGKILL) };
        while matches!(wait(pid), Err(ref e) if interrupted(e)) {}
        break stop;
    };
    let cut = truncate::file_middle(&mut capture, max_output)?;
    Ok(Outcome {
        output: cut.text,
        elided: cut.elided,
        end,
    })
}

/// A new file only this process can name, in the system temp dir.
fn temp_file() -> io::Result<(File, std::path::PathBuf)> {
    let dir = std::env::temp_dir();
    for n in 0.. {
        let path = dir.join(format!("turn-{}-{n}.out", std::process::id()));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("the loop returns")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deadline and Ctrl-C need the binary's single thread to take the signals; the test
    /// harness has many, so those are tested end to end (tests/tools_sandbox.rs, tests/cli.rs).
    fn sh(command: &str, secs: u64) -> Outcome {
        signal::install();
        run(
            command,
            Path::new("/"),
            Duration::from_secs(secs),
            1000,
            None,
        )
        .unwrap()
    }

    #[test]
    fn captures_both_streams_and_the_exit_code() {
        let out = sh("echo out; echo err >&2; exit 3", 10);
        assert_eq!(out.output, "out\nerr\n");
        assert_eq!(out.end, End::Exited(3));
    }

    #[test]
    fn background_children_do_not_hold_the_wait() {
        let start = Instant::now();
        let out = sh("(sleep 5 &) ; echo quick", 10);
        assert_eq!(out.end, End::Exited(0));
        assert!(start.elapsed() < Duration::from_secs(4));
    }

    #[test]
    fn long_output_is_cut_in_the_middle() {
        let out = sh("seq 1 100000", 10);
        assert!(out.output.starts_with("1\n2\n"));
        assert!(out.output.ends_with("99999\n100000\n"));
        assert!(out
            .output
            .contains(&format!("[... {} chars elided ...]", out.elided)));
        assert!(out.elided > 500_000);
    }

    #[test]
    fn stdin_is_empty_not_the_terminal() {
        assert_eq!(sh("cat; echo done", 10).output, "done\n");
    }
}
