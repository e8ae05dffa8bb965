//! Runs the model's shell commands: `sh -c` in the workspace, inside every sandbox layer this
//! machine has, with output (stdout and stderr interleaved) to an unnamed temp file so no
//! thread has to drain pipes. The wait blocks in `waitpid` until the command ends, the
//! deadline passes or Ctrl-C comes.
//!
//! A command is started with raw clones and only system calls until exec, all on memory
//! prepared beforehand (argv, environment, paths, the BPF program). With the namespace layer,
//! a short-lived process joins the holder's namespaces (see `namespaces`) and clones the
//! command as turn's own child (CLONE_PARENT) inside them, so turn waits for it directly.
//! The command then leaves the terminal's session (no controlling terminal), ties itself to
//! turn (PR_SET_PDEATHSIG), drops its capabilities, sets no_new_privs, enters its own Landlock
//! domain (one turn is not in) and installs the seccomp filter, in that order, and execs.
//!
//! Lifetime: a background job may outlive its command and serve the next ones, but not a
//! timeout, Ctrl-C or turn itself. With namespaces, the holder's end kills them all; without,
//! turn is a child subreaper, so orphans become its children, and it kills them all.
//!
//! Architecture invariant: this is the only place that starts the model's commands.

use super::capabilities;
use super::namespaces::{Holder, Recipe, Unavailable};
use super::seccomp::{self, Fprog, Insn};
use super::sys::{self, Failed};
use crate::signal::{self, Cut};
use crate::tools::truncate;
use std::cell::RefCell;
use std::ffi::{CString, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::raw::{c_char, c_int, c_long};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
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

// Steps of a command's start, for error messages (capabilities' steps are 20-24).
const STEP_SETNS: u32 = 30;
const STEP_FORK: u32 = 31;
const STEP_SESSION: u32 = 32;
const STEP_PDEATHSIG: u32 = 33;
const STEP_STDIO: u32 = 34;
const STEP_CHDIR: u32 = 35;
const STEP_LANDLOCK: u32 = 36;
const STEP_SECCOMP: u32 = 37;
const STEP_EXEC: u32 = 38;
/// Not a failure: the joining process reports the command's pid with this tag.
const TAG_PID: u32 = 99;

fn step_name(step: u32) -> &'static str {
    match step {
        STEP_SETNS => "entering the sandbox's namespaces",
        STEP_FORK => "starting the command",
        STEP_SESSION => "leaving the terminal's session",
        STEP_PDEATHSIG => "tying the command to turn",
        STEP_STDIO => "setting up its output",
        STEP_CHDIR => "entering the workspace",
        STEP_LANDLOCK => "entering Landlock",
        STEP_SECCOMP => "installing the seccomp filter",
        STEP_EXEC => "running /bin/sh",
        step => capabilities::step_name(step).unwrap_or("starting the command"),
    }
}

/// The layers a command runs under, as `layers` decided them.
pub struct Config {
    pub workspace: PathBuf,
    /// The command's whole environment (already without withheld variables).
    pub env: Vec<(OsString, OsString)>,
    /// The Landlock ruleset each command enters, if any, and the rights it gives beneath a
    /// writable directory (each holder's private /tmp and /dev/shm get them).
    pub landlock: Option<(OwnedFd, u64)>,
    /// What `TMPDIR` says inside (the private /tmp), if not the user's own.
    pub tmpdir: Option<PathBuf>,
    /// A directory turn made for this run's temp files (without namespaces), removed with
    /// everything in it when the run ends.
    pub own_tmp: Option<PathBuf>,
    /// The seccomp filter, if any.
    pub seccomp: Option<Vec<Insn>>,
    /// Drop capabilities and set no_new_privs (every mode but `off`).
    pub confine: bool,
    /// The namespace holder and how to start another after a kill.
    pub namespaces: Option<(Recipe, Holder)>,
    /// Make turn a child subreaper and kill every leftover child on a stop and at the end
    /// (without namespaces). Only for the binary: in a test process it would take other
    /// threads' children.
    pub subreaper: bool,
}

/// Runs commands under a `Config`; holds what every start needs, prepared once.
pub struct Runner {
    workspace: CString,
    /// Keeps the strings `envp` points into.
    _env: Vec<CString>,
    envp: Vec<*const c_char>,
    devnull: OwnedFd,
    landlock: Option<(OwnedFd, u64)>,
    own_tmp: Option<PathBuf>,
    seccomp: Option<Vec<Insn>>,
    confine: bool,
    /// Whether emptying the bounding set is possible (always in the user namespace).
    privileged: bool,
    recipe: Option<Recipe>,
    holder: RefCell<Option<Holder>>,
    subreaper: bool,
}

impl Runner {
    pub fn new(config: Config) -> io::Result<Runner> {
        let mut env = Vec::new();
        let mut overrides: Vec<(&str, &[u8])> = vec![
            // No pager or prompt may wait for a human who is not there.
            ("PAGER", b"cat"),
            ("GIT_PAGER", b"cat"),
            ("GIT_TERMINAL_PROMPT", b"0"),
            ("PWD", config.workspace.as_os_str().as_bytes()),
        ];
        if let Some(tmpdir) = &config.tmpdir {
            overrides.push(("TMPDIR", tmpdir.as_os_str().as_bytes()));
        }
        for (name, value) in &config.env {
            if name == "OLDPWD" || overrides.iter().any(|(n, _)| name == *n) {
                continue;
            }
            env.push(var(name.as_bytes(), value.as_bytes())?);
        }
        for (name, value) in overrides {
            env.push(var(name.as_bytes(), value)?);
        }
        let mut envp: Vec<*const c_char> = env.iter().map(|v| v.as_ptr()).collect();
        envp.push(std::ptr::null());
        // try_clone duplicates to a descriptor above 2, which the child's dup2s cannot hit.
        let devnull = OwnedFd::from(File::open("/dev/null")?).try_clone()?;
        let (recipe, holder) = match config.namespaces {
            Some((recipe, holder)) => (Some(recipe), Some(holder)),
            None => (None, None),
        };
        if let Some(holder) = &holder {
            admit(config.landlock.as_ref(), holder)?;
        }
        if config.confine {
            // turn's memory holds the API key: no process of the user's may read it or its
            // /proc files without CAP_SYS_PTRACE (where no PID namespace hides turn).
            // SAFETY: a plain prctl.
            unsafe {
                sys::prctl(
                    sys::PR_SET_DUMPABLE,
                    0 as c_long,
                    0 as c_long,
                    0 as c_long,
                    0 as c_long,
                )
            };
        }
        if config.subreaper {
            // SAFETY: a plain prctl.
            unsafe {
                sys::prctl(
                    sys::PR_SET_CHILD_SUBREAPER,
                    1 as c_long,
                    0 as c_long,
                    0 as c_long,
                    0 as c_long,
                )
            };
        }
        Ok(Runner {
            workspace: CString::new(config.workspace.as_os_str().as_bytes())
                .map_err(io::Error::other)?,
            _env: env,
            envp,
            devnull,
            landlock: config.landlock,
            own_tmp: config.own_tmp,
            seccomp: config.seccomp,
            confine: config.confine,
            privileged: recipe.is_some() || capabilities::can_drop_bounding(),
            recipe,
            holder: RefCell::new(holder),
            subreaper: config.subreaper,
        })
    }

    /// A runner without any layer: for tests of the tools, and for --list-tools, which runs
    /// no command at all.
    pub fn unconfined(workspace: &std::path::Path) -> Runner {
        Runner::new(Config {
            workspace: workspace.to_path_buf(),
            env: std::env::vars_os().collect(),
            landlock: None,
            tmpdir: None,
            own_tmp: None,
            seccomp: None,
            confine: false,
            namespaces: None,
            subreaper: false,
        })
        .expect("a runner without layers")
    }

    /// The layers commands run under, in words (the REPL's /status).
    pub fn layers(&self) -> Vec<&'static str> {
        let mut layers = Vec::new();
        if self.recipe.is_some() {
            layers.push("namespaces (read-only host, own PIDs)");
        }
        if self.landlock.is_some() {
            layers.push("Landlock");
        }
        if self.seccomp.is_some() {
            layers.push("seccomp");
        }
        if self.confine {
            layers.push("no capabilities");
        }
        layers
    }

    /// Runs `command`; its output is cut to `max_output` chars.
    pub fn run(&self, command: &str, timeout: Duration, max_output: usize) -> io::Result<Outcome> {
        let mut capture = temp_file()?;
        let command = CString::new(command).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the command contains a NUL byte",
            )
        })?;
        let argv: [*const c_char; 4] = [
            c"/bin/sh".as_ptr(),
            c"-c".as_ptr(),
            command.as_ptr(),
            std::ptr::null(),
        ];
        let out = OwnedFd::from(capture.try_clone()?).try_clone()?;
        let pid = self.spawn(&argv, out.as_raw_fd())?;
        drop(out);

        // Wait blocked in waitpid, woken every TICK to check the deadline and the output size;
        // Ctrl-C wakes it at once.
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
            self.stop_all(pid);
            break stop;
        };
        if self.subreaper {
            reap_orphans();
        }
        let cut = truncate::file_middle(&mut capture, max_output)?;
        Ok(Outcome {
            output: cut.text,
            elided: cut.elided,
            end,
        })
    }

    /// Kills the command's process group and everything else the commands started: the
    /// holder (a fresh one serves the next command) or every child turn has.
    fn stop_all(&self, pid: c_int) {
        // SAFETY: kill has no memory effects; a negative pid names the process group.
        unsafe { sys::kill(-pid, sys::SIGKILL) };
        let _ = wait_uninterrupted(pid);
        if let Some(holder) = self.holder.borrow_mut().take() {
            holder.kill();
        }
        if self.subreaper {
            kill_children();
        }
    }

    /// Starts the command; returns its pid once it has exec'd (or an error saying which step
    /// of its start failed). A failure inside the namespaces is tried once more with a fresh
    /// holder: the old one may have died (killed from outside, say).
    fn spawn(&self, argv: &[*const c_char; 4], out: RawFd) -> io::Result<c_int> {
        match self.spawn_once(argv, out) {
            Err(_) if self.recipe.is_some() => self.spawn_once(argv, out),
            done => done,
        }
    }

    fn spawn_once(&self, argv: &[*const c_char; 4], out: RawFd) -> io::Result<c_int> {
        let mut holder = self.holder.borrow_mut();
        if let (Some(recipe), None) = (&self.recipe, holder.as_ref()) {
            let started = Holder::start(recipe).map_err(|e: Unavailable| {
                io::Error::other(format!("cannot restart the sandbox's namespaces: {e}"))
            })?;
            admit(self.landlock.as_ref(), &started)?;
            *holder = Some(started);
        }
        let (report_in, report) = pipe()?;
        let fprog = self.seccomp.as_deref().map(Fprog::new);
        let plan = Plan {
            argv,
            envp: self.envp.as_ptr(),
            workspace: self.workspace.as_ptr(),
            stdin: self.devnull.as_raw_fd(),
            out,
            report: report.as_raw_fd(),
            landlock: self.landlock.as_ref().map(|(fd, _)| fd.as_raw_fd()),
            seccomp: fprog.as_ref(),
            confine: self.confine,
            privileged: self.privileged,
        };
        // The namespaces to join, on the stack: the joining process must not allocate.
        let mut join = [(-1 as c_int, 0 as c_int); 8];
        let mut joins = 0;
        if let Some(holder) = holder.as_ref() {
            for (slot, ns) in join.iter_mut().zip(holder.namespaces()) {
                *slot = ns;
                joins += 1;
            }
        }
        let via_namespaces = holder.is_some();
        // No signal handler of turn's may run in the new processes: all are blocked until
        // the command has reset them.
        let (all, mut before) = ([!0u64; 16], [0u64; 16]);
        // SAFETY: both are valid signal sets (larger than sigset_t).
        unsafe {
            sys::sigprocmask(
                sys::SIG_BLOCK,
                all.as_ptr().cast(),
                before.as_mut_ptr().cast(),
            )
        };
        // Joining a user namespace needs a process with memory of its own, so that one is a
        // fork; the command itself shares memory until it execs, like posix_spawn.
        let first = if via_namespaces {
            // SAFETY: both children make only system calls on the memory prepared above.
            let pid = unsafe { sys::clone(0) };
            if pid == 0 {
                // SAFETY: as above; this process never returns.
                unsafe { join_and_start(&join[..joins], &plan) }
            }
            pid as c_int
        } else {
            // SAFETY: as above.
            unsafe { start_sharing_memory(0, &plan) }
        };
        let clone_error = io::Error::last_os_error();
        // SAFETY: restores the mask saved above.
        unsafe {
            sys::sigprocmask(
                sys::SIG_SETMASK,
                before.as_ptr().cast(),
                std::ptr::null_mut(),
            )
        };
        if first < 0 {
            return Err(clone_error);
        }
        drop(report);
        // Messages until every writer is gone: the joiner's pid report, and a failure from
        // either process (the command's copy closes at exec).
        let mut bytes = [0u8; 16];
        let got = sys::read_all(report_in.as_raw_fd(), &mut bytes);
        let mut pid = if via_namespaces { None } else { Some(first) };
        let mut failure = None;
        let len = *got.as_ref().unwrap_or(&0) & !7;
        for message in bytes[..len].chunks(8) {
            let message = Failed::from_bytes(message.try_into().expect("8 bytes"));
            match message.step {
                TAG_PID => pid = Some(message.errno),
                _ => failure = Some(message),
            }
        }
        if via_namespaces {
            let _ = wait_uninterrupted(first);
        }
        if let Some(failed) = failure {
            if let Some(pid) = pid {
                let _ = wait_uninterrupted(pid);
            }
            // A holder that cannot take a command (it died, say) is replaced next time.
            if let Some(stale) = holder.take() {
                stale.kill();
            }
            let err = failed.error();
            return Err(io::Error::new(
                err.kind(),
                format!("{}: {err}", step_name(failed.step)),
            ));
        }
        got?;
        pid.ok_or_else(|| io::Error::other("the command's start was lost"))
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        // The holder's Drop ends its namespaces; without one, turn's leftover children go.
        if self.subreaper {
            kill_children();
        }
        if let Some(dir) = &self.own_tmp {
            // Symlinks inside are removed, never followed.
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Lets commands write the holder's private /tmp and /dev/shm under Landlock.
fn admit(landlock: Option<&(OwnedFd, u64)>, holder: &Holder) -> io::Result<()> {
    if let Some((ruleset, rights)) = landlock {
        for dir in &holder.private {
            super::landlock::allow(ruleset, dir.as_raw_fd(), *rights)?;
        }
    }
    Ok(())
}

fn var(name: &[u8], value: &[u8]) -> io::Result<CString> {
    let mut bytes = Vec::with_capacity(name.len() + value.len() + 1);
    bytes.extend_from_slice(name);
    bytes.push(b'=');
    bytes.extend_from_slice(value);
    CString::new(bytes).map_err(io::Error::other)
}

/// What the command's process needs, all pointers into memory prepared before the clone.
struct Plan<'a> {
    argv: &'a [*const c_char; 4],
    envp: *const *const c_char,
    workspace: *const c_char,
    stdin: RawFd,
    out: RawFd,
    report: RawFd,
    landlock: Option<RawFd>,
    seccomp: Option<&'a Fprog>,
    confine: bool,
    privileged: bool,
}

/// The joining process: enters the holder's namespaces (user first), clones the command as a
/// child of turn, reports its pid and exits.
///
/// # Safety
/// Runs in a fresh clone; system calls only.
unsafe fn join_and_start(namespaces: &[(c_int, c_int)], plan: &Plan) -> ! {
    for &(fd, kind) in namespaces {
        if sys::setns(fd, kind) != 0 {
            Failed::now(STEP_SETNS).send(plan.report);
            sys::_exit(127);
        }
    }
    let pid = start_sharing_memory(sys::CLONE_PARENT, plan);
    if pid < 0 {
        Failed::now(STEP_FORK).send(plan.report);
        sys::_exit(127);
    }
    Failed {
        step: TAG_PID,
        errno: pid as i32,
    }
    .send(plan.report);
    sys::_exit(0)
}

/// Starts the command's process with `start`, sharing this process's memory until it execs.
///
/// # Safety
/// As `sys::spawn_sharing_memory`: `start` makes only system calls.
unsafe fn start_sharing_memory(flags: std::os::raw::c_ulong, plan: &Plan) -> c_int {
    extern "C" fn entry(plan: *mut std::os::raw::c_void) -> c_int {
        // SAFETY: the pointer is the Plan below, alive while the caller sleeps (vfork).
        unsafe { start(&*(plan as *const Plan)) }
    }
    // 64 KiB: start's frames are small, and it calls nothing that recurses.
    let mut stack = [0u64; 8192];
    let arg = plan as *const Plan as *mut std::os::raw::c_void;
    sys::spawn_sharing_memory(flags, entry, arg, &mut stack)
}

/// The command's process: every layer, in order, then exec.
///
/// # Safety
/// Runs in a fresh clone; system calls only.
unsafe fn start(plan: &Plan) -> ! {
    let fail = |step: u32| -> ! {
        Failed::now(step).send(plan.report);
        sys::_exit(127)
    };
    let fail_with = |failed: Failed| -> ! {
        failed.send(plan.report);
        sys::_exit(127)
    };
    // A session of its own: no controlling terminal, so no /dev/tty and no TIOCSTI on it;
    // and a process group of its own for the kill.
    if sys::setsid() < 0 {
        fail(STEP_SESSION);
    }
    let none = 0 as c_long;
    if sys::prctl(
        sys::PR_SET_PDEATHSIG,
        sys::SIGKILL as c_long,
        none,
        none,
        none,
    ) != 0
    {
        fail(STEP_PDEATHSIG);
    }
    // Signals as a fresh process has them: Rust ignores SIGPIPE, and a pipeline needs it;
    // turn's own handlers must not run here (this process may share turn's memory). A signal
    // turn ignores (SIGINT in a background job) stays ignored. They were blocked at the clone.
    sys::signal(sys::SIGPIPE, sys::SIG_DFL);
    for signal in [sys::SIGINT, sys::SIGALRM] {
        if sys::signal(signal, sys::SIG_DFL) == sys::SIG_IGN {
            sys::signal(signal, sys::SIG_IGN);
        }
    }
    let empty = [0u64; 16];
    sys::sigprocmask(
        sys::SIG_SETMASK,
        empty.as_ptr().cast(),
        std::ptr::null_mut(),
    );
    if sys::dup2(plan.out, 1) < 0 || sys::dup2(plan.out, 2) < 0 || sys::dup2(plan.stdin, 0) < 0 {
        fail(STEP_STDIO);
    }
    // Descriptors turn inherited without close-on-exec do not reach the command (Linux 5.11+;
    // older kernels refuse the flag, and the command keeps them as before).
    const CLOSE_RANGE_CLOEXEC: c_long = 4;
    sys::syscall(
        sys::CLOSE_RANGE,
        3 as c_long,
        c_int::MAX as c_long,
        CLOSE_RANGE_CLOEXEC,
    );
    if sys::chdir(plan.workspace) != 0 {
        fail(STEP_CHDIR);
    }
    if plan.confine {
        if let Err(failed) = capabilities::drop_all(plan.privileged) {
            fail_with(failed);
        }
    }
    if let Some(ruleset) = plan.landlock {
        if super::landlock::enforce(ruleset).is_err() {
            fail(STEP_LANDLOCK);
        }
    }
    if let Some(fprog) = plan.seccomp {
        if seccomp::install(fprog).is_err() {
            fail(STEP_SECCOMP);
        }
    }
    sys::execve(plan.argv[0], plan.argv.as_ptr(), plan.envp);
    fail(STEP_EXEC)
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: fds is a valid two-int buffer.
    if unsafe { sys::pipe2(fds.as_mut_ptr(), sys::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    use std::os::fd::FromRawFd;
    // SAFETY: the kernel just returned both descriptors to us.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reaps `pid`, blocking; `Interrupted` when a signal comes first.
fn wait(pid: c_int) -> io::Result<ExitStatus> {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer.
    if unsafe { sys::waitpid(pid, &mut status, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ExitStatus::from_raw(status))
}

fn wait_uninterrupted(pid: c_int) -> io::Result<ExitStatus> {
    loop {
        match wait(pid) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Reaps children that have ended since (background jobs reparented to turn).
fn reap_orphans() {
    const WNOHANG: c_int = 1;
    let mut status = 0;
    // SAFETY: status is a valid out-pointer.
    while unsafe { sys::waitpid(-1, &mut status, WNOHANG) } > 0 {}
}

/// Kills every child turn has, then those that become its children as their parents die,
/// until none is left (turn is a child subreaper, so orphans come to it).
fn kill_children() {
    // SAFETY: getpid has no side effects.
    let me = unsafe { sys::getpid() };
    let list = format!("/proc/{me}/task/{me}/children");
    for _round in 0..10_000 {
        let Ok(text) = std::fs::read_to_string(&list) else {
            return;
        };
        let children: Vec<c_int> = text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if children.is_empty() {
            return;
        }
        for &child in &children {
            // SAFETY: signals and waits on our own children.
            unsafe { sys::kill(child, sys::SIGKILL) };
        }
        for child in children {
            let _ = wait_uninterrupted(child);
        }
    }
}

/// A file only this process can reach, for one command's output: unnamed (O_TMPFILE) in the
/// temp dir, or where the file system cannot do that, created under an unpredictable name
/// with O_EXCL and unlinked at once. Either way no other user can plant or block it.
fn temp_file() -> io::Result<File> {
    #[cfg(target_arch = "x86_64")]
    const O_TMPFILE: c_int = 0o20200000;
    #[cfg(target_arch = "aarch64")]
    const O_TMPFILE: c_int = 0o20040000;
    const O_NOFOLLOW: c_int = 0o400000;
    let dir = std::env::temp_dir();
    let unnamed = OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(O_TMPFILE)
        .open(&dir);
    if let Ok(file) = unnamed {
        return Ok(file);
    }
    let mut tries = 0;
    loop {
        let path = dir.join(format!("turn-{:016x}.out", unpredictable()));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(O_NOFOLLOW)
            .open(&path)
        {
            Ok(file) => {
                std::fs::remove_file(&path)?; // the open handle keeps it readable
                return Ok(file);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 100 => tries += 1,
            Err(e) => return Err(e),
        }
    }
}

/// 64 random bits: the standard library seeds each `RandomState` from the OS's generator.
fn unpredictable() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(std::process::id() as u64);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deadline and Ctrl-C need the binary's single thread to take the signals; the test
    /// harness has many, so those are tested end to end (tests/tools_sandbox.rs, tests/cli.rs).
    fn plain() -> Runner {
        Runner::unconfined(std::path::Path::new("/"))
    }

    fn sh(command: &str, secs: u64) -> Outcome {
        signal::install();
        plain()
            .run(command, Duration::from_secs(secs), 1000)
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

    #[test]
    fn a_pipeline_ends_on_sigpipe_and_the_environment_is_the_one_given() {
        assert_eq!(sh("yes | head -n 2", 10).output, "y\ny\n");
        let out = sh("echo \"$PAGER $GIT_TERMINAL_PROMPT $PWD\"", 10);
        assert_eq!(out.output, "cat 0 /\n");
    }

    #[test]
    fn a_failed_start_names_its_step() {
        signal::install();
        let mut runner = plain();
        runner.workspace = CString::new("/no/such/dir").unwrap();
        let err = runner
            .run("true", Duration::from_secs(5), 100)
            .err()
            .unwrap();
        assert!(
            err.to_string().starts_with("entering the workspace: "),
            "{err}"
        );
    }

    #[test]
    fn temp_files_are_private() {
        use std::os::unix::fs::MetadataExt;
        let file = temp_file().unwrap();
        let meta = file.metadata().unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_eq!(meta.nlink(), 0, "no name another user could plant or block");
        assert_ne!(unpredictable(), unpredictable());
    }
}
