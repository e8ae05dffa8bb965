//! Runs one shell command for the `bash` tool: `sh -c` in the workspace, in a process group of
//! its own, output (stdout and stderr interleaved) to an unlinked temp file so no thread has to
//! drain pipes. The wait polls `try_wait` until the deadline or Ctrl-C, then kills the group.

use crate::landlock::{self, Policy};
use crate::signal;
use crate::truncate;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::raw::c_int;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
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

extern "C" {
    fn kill(pid: c_int, sig: c_int) -> c_int;
}
const SIGKILL: c_int = 9;

/// Runs `command`, confined by `policy` when there is one (Landlock, entered between fork and
/// exec; the output file stays writable whatever the policy).
pub fn run(
    command: &str,
    workspace: &Path,
    timeout: Duration,
    max_output: usize,
    policy: Option<&Policy>,
) -> io::Result<Outcome> {
    let (mut capture, path) = temp_file()?;
    let ruleset = match policy.map(|p| p.ruleset(Some(&path))).transpose() {
        Ok(ruleset) => ruleset,
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
    };
    let mut child = Command::new("sh");
    if let Some(ruleset) = &ruleset {
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
    let mut child = child?;

    let start = Instant::now();
    let mut pause = Duration::from_micros(200);
    let end = loop {
        if let Some(status) = child.try_wait()? {
            break match status.code() {
                Some(code) => End::Exited(code),
                None => End::Signaled(status.signal().unwrap_or(0)),
            };
        }
        let stop = if signal::interrupted() {
            Some(End::Interrupted)
        } else if start.elapsed() >= timeout {
            Some(End::TimedOut)
        } else if capture.metadata()?.len() > MAX_CAPTURE {
            Some(End::TooMuchOutput)
        } else {
            None
        };
        if let Some(stop) = stop {
            // SAFETY: kill has no memory effects; a negative pid names the process group.
            unsafe { kill(-(child.id() as c_int), SIGKILL) };
            child.wait()?;
            break stop;
        }
        // Quick commands return within a millisecond; long ones are checked every 50ms.
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
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

    fn sh(command: &str, secs: u64) -> Outcome {
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
    fn kills_the_whole_group_at_the_deadline() {
        let start = Instant::now();
        let out = sh("sleep 30 & sleep 30; echo never", 1);
        assert_eq!(out.end, End::TimedOut);
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(!out.output.contains("never"));
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
