//! The raw system calls the sandbox layers make, in one place: libc's thin wrappers through
//! `extern "C"`, syscall numbers where libc has no wrapper (per architecture), and the few
//! kernel structures they take. No crate, no allocation: everything here may run between fork
//! and exec.

use std::io;
use std::os::raw::{c_char, c_int, c_long, c_short, c_uint, c_ulong, c_void};

/// One descriptor for `poll`.
#[repr(C)]
pub struct PollFd {
    pub fd: c_int,
    pub events: c_short,
    pub revents: c_short,
}

/// `poll`'s "data to read" event.
pub const POLLIN: c_short = 1;

extern "C" {
    pub fn syscall(number: c_long, ...) -> c_long;
    pub fn poll(fds: *mut PollFd, nfds: c_ulong, timeout: c_int) -> c_int;
    pub fn prctl(option: c_int, ...) -> c_int;
    pub fn open(path: *const c_char, flags: c_int, ...) -> c_int;
    pub fn openat(dirfd: c_int, path: *const c_char, flags: c_int, ...) -> c_int;
    pub fn close(fd: c_int) -> c_int;
    pub fn read(fd: c_int, buf: *mut c_void, count: usize) -> isize;
    pub fn write(fd: c_int, buf: *const c_void, count: usize) -> isize;
    pub fn pipe2(fds: *mut c_int, flags: c_int) -> c_int;
    pub fn dup2(old: c_int, new: c_int) -> c_int;
    pub fn chdir(path: *const c_char) -> c_int;
    pub fn mkdir(path: *const c_char, mode: c_uint) -> c_int;
    pub fn setsid() -> c_int;
    pub fn setns(fd: c_int, nstype: c_int) -> c_int;
    pub fn mount(
        source: *const c_char,
        target: *const c_char,
        fstype: *const c_char,
        flags: c_ulong,
        data: *const c_void,
    ) -> c_int;
    pub fn execve(
        path: *const c_char,
        argv: *const *const c_char,
        envp: *const *const c_char,
    ) -> c_int;
    pub fn kill(pid: c_int, sig: c_int) -> c_int;
    pub fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    pub fn signal(signum: c_int, handler: usize) -> usize;
    pub fn sigprocmask(how: c_int, set: *const c_void, old: *mut c_void) -> c_int;
    pub fn getpid() -> c_int;
    pub fn geteuid() -> c_uint;
    pub fn getegid() -> c_uint;
    pub fn _exit(status: c_int) -> !;
    fn __errno_location() -> *mut c_int;
    #[link_name = "clone"]
    fn libc_clone(
        f: extern "C" fn(*mut c_void) -> c_int,
        stack: *mut c_void,
        flags: c_int,
        arg: *mut c_void,
        ...
    ) -> c_int;
}

/// Syscall numbers libc has no portable wrapper for.
#[cfg(target_arch = "x86_64")]
pub mod nr {
    use std::os::raw::c_long;
    pub const CLONE: c_long = 56;
    pub const FSTAT: c_long = 5;
    pub const CAPGET: c_long = 125;
    pub const CAPSET: c_long = 126;
    pub const GETDENTS64: c_long = 217;
    pub const STATX: c_long = 332;
}

#[cfg(target_arch = "aarch64")]
pub mod nr {
    use std::os::raw::c_long;
    pub const CLONE: c_long = 220;
    pub const FSTAT: c_long = 80;
    pub const CAPGET: c_long = 90;
    pub const CAPSET: c_long = 91;
    pub const GETDENTS64: c_long = 61;
    pub const STATX: c_long = 291;
}

/// The same number on every architecture (the generic table starts at 403).
pub const OPEN_TREE: c_long = 428;
pub const MOVE_MOUNT: c_long = 429;
pub const MOUNT_SETATTR: c_long = 442;
pub const CLOSE_RANGE: c_long = 436;

pub const CLONE_NEWNS: c_ulong = 0x0002_0000;
pub const CLONE_PARENT: c_ulong = 0x0000_8000;
pub const CLONE_NEWUTS: c_ulong = 0x0400_0000;
pub const CLONE_NEWIPC: c_ulong = 0x0800_0000;
pub const CLONE_NEWUSER: c_ulong = 0x1000_0000;
pub const CLONE_NEWPID: c_ulong = 0x2000_0000;
pub const CLONE_NEWNET: c_ulong = 0x4000_0000;

pub const SIGINT: c_int = 2;
pub const SIGKILL: c_int = 9;
pub const SIGALRM: c_int = 14;
pub const SIGPIPE: c_int = 13;
pub const SIGCHLD: c_int = 17;
pub const SIG_DFL: usize = 0;
pub const SIG_IGN: usize = 1;
pub const SIG_BLOCK: c_int = 0;
pub const SIG_SETMASK: c_int = 2;

pub const O_RDONLY: c_int = 0;
pub const O_RDWR: c_int = 2;
pub const O_WRONLY: c_int = 1;
pub const O_NONBLOCK: c_int = 0o4000;
pub const O_CLOEXEC: c_int = 0o2000000;
pub const O_PATH: c_int = 0o10000000;
/// O_DIRECTORY and O_NOFOLLOW, which these architectures number differently.
#[cfg(any(
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "powerpc",
    target_arch = "powerpc64"
))]
const DIRECTORY_NOFOLLOW: (c_int, c_int) = (0o40000, 0o100000);
#[cfg(not(any(
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "powerpc",
    target_arch = "powerpc64"
)))]
const DIRECTORY_NOFOLLOW: (c_int, c_int) = (0o200000, 0o400000);
pub const O_DIRECTORY: c_int = DIRECTORY_NOFOLLOW.0;
pub const O_NOFOLLOW: c_int = DIRECTORY_NOFOLLOW.1;
pub const AT_FDCWD: c_int = -100;

pub const EINTR: c_int = 4;
pub const EINVAL: c_int = 22;

pub const PR_SET_PDEATHSIG: c_int = 1;
pub const PR_SET_DUMPABLE: c_int = 4;
pub const PR_SET_CHILD_SUBREAPER: c_int = 36;
pub const PR_SET_NO_NEW_PRIVS: c_int = 38;

/// errno of the last failed call on this thread.
pub fn errno() -> c_int {
    // SAFETY: __errno_location returns this thread's errno slot (glibc and musl).
    unsafe { *__errno_location() }
}

/// A failure inside a process being set up: which step (a small number, named by the
/// caller's table) and the errno. Eight bytes on a pipe, so the child allocates nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Failed {
    pub step: u32,
    pub errno: i32,
}

impl Failed {
    pub fn now(step: u32) -> Failed {
        Failed {
            step,
            errno: errno(),
        }
    }

    pub fn to_bytes(self) -> [u8; 8] {
        let mut bytes = [0; 8];
        bytes[..4].copy_from_slice(&self.step.to_ne_bytes());
        bytes[4..].copy_from_slice(&self.errno.to_ne_bytes());
        bytes
    }

    pub fn from_bytes(bytes: [u8; 8]) -> Failed {
        Failed {
            step: u32::from_ne_bytes(bytes[..4].try_into().expect("4 bytes")),
            errno: i32::from_ne_bytes(bytes[4..].try_into().expect("4 bytes")),
        }
    }

    pub fn error(self) -> io::Error {
        io::Error::from_raw_os_error(self.errno)
    }

    /// Sends this failure on `fd` (best effort: the reader sees EOF otherwise).
    pub fn send(self, fd: c_int) {
        let bytes = self.to_bytes();
        // SAFETY: bytes is a valid buffer of its length.
        unsafe { write(fd, bytes.as_ptr().cast(), bytes.len()) };
    }
}

/// Reads up to `buf.len()` bytes until EOF, retrying on EINTR; returns how many came.
pub fn read_all(fd: c_int, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: the range is within buf.
        let n = unsafe { read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        match n {
            0 => break,
            n if n > 0 => got += n as usize,
            _ if errno() == EINTR => continue,
            _ => return Err(io::Error::last_os_error()),
        }
    }
    Ok(got)
}

/// A plain fork through the raw clone syscall (`flags` adds namespaces or CLONE_PARENT; the
/// exit signal is SIGCHLD). Unlike libc's fork it runs no atfork handlers, so the child may
/// only make system calls until it execs or exits.
///
/// # Safety
/// The child must restrict itself to async-signal-safe system calls and end with exec or
/// `_exit`.
pub unsafe fn clone(flags: c_ulong) -> c_long {
    // With a null stack the child runs on a copy of the parent's, as after fork. The
    // remaining arguments (parent tid, child tid, tls) are unused and zero on every arch.
    syscall(
        nr::CLONE,
        flags | SIGCHLD as c_ulong,
        0 as c_long,
        0 as c_long,
        0 as c_long,
        0 as c_long,
    )
}

const CLONE_VM: c_ulong = 0x100;
const CLONE_VFORK: c_ulong = 0x4000;

/// Starts `f(arg)` in a new process that shares this one's memory and runs on `stack`, the
/// way posix_spawn does: no page tables are copied, and the caller sleeps until the child
/// execs or exits. `flags` may add CLONE_PARENT. Returns the child's pid (or -1).
///
/// # Safety
/// `f` must only make system calls (it shares the caller's memory: anything it writes, the
/// caller sees) and end with exec or `_exit`; `arg` must be what `f` expects; `stack` must
/// stay untouched by the caller until then, which vfork semantics ensure for a stack of the
/// caller's own frame.
pub unsafe fn spawn_sharing_memory(
    flags: c_ulong,
    f: extern "C" fn(*mut c_void) -> c_int,
    arg: *mut c_void,
    stack: &mut [u64],
) -> c_int {
    // The stack grows down from its end, which is 16-byte aligned as u64 pairs are.
    let len = stack.len() & !1;
    let top = stack.as_mut_ptr().add(len).cast::<c_void>();
    let flags = CLONE_VM | CLONE_VFORK | flags | SIGCHLD as c_ulong;
    libc_clone(f, top, flags as c_int, arg)
}

/// The device and inode of an open file, as `fstat` reports them (st_dev, st_ino lead
/// `struct stat` on both supported architectures).
pub fn dev_ino(fd: c_int) -> Option<(u64, u64)> {
    let mut stat = [0u64; 32];
    // SAFETY: stat is larger than the kernel's struct stat on these architectures.
    let done = unsafe { syscall(nr::FSTAT, fd as c_long, stat.as_mut_ptr()) };
    (done == 0).then_some((stat[0], stat[1]))
}
