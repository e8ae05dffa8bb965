//! Landlock, the Linux LSM that lets an unprivileged process give up rights: each bash child
//! is confined so it can read and run anything but write only where the sandbox mode allows
//! (and make no device nodes even there), and, where the kernel supports it, make no TCP
//! connections (ABI 4) and reach no abstract Unix socket outside its domain (ABI 6). Landlock
//! also keeps a command from ptracing any process outside its domain, turn included.
//!
//! Raw syscalls through `extern "C"`, no crate. The ruleset is built once (it is only a file
//! descriptor) and enforced by each command's process between fork and exec, so every command
//! is in a domain of its own that turn is not in.

use super::sys::{open, prctl, syscall};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::raw::{c_int, c_long, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

// Syscall numbers: the same in the generic table (aarch64, riscv64) and on x86_64.
const SYS_CREATE_RULESET: c_long = 444;
const SYS_ADD_RULE: c_long = 445;
const SYS_RESTRICT_SELF: c_long = 446;
// Variadic arguments are passed as c_long: a narrower integer's upper bits are undefined.
const CREATE_RULESET_VERSION: c_long = 1;
const RULE_PATH_BENEATH: c_long = 1;
const PR_SET_NO_NEW_PRIVS: c_int = 38;
use super::sys::{O_CLOEXEC, O_PATH};

// Filesystem rights (ABI 1 unless noted). Reading and executing are never handled, so they
// stay allowed everywhere; these are the ones that change the filesystem.
const WRITE_FILE: u64 = 1 << 1;
const REMOVE_DIR: u64 = 1 << 4;
const REMOVE_FILE: u64 = 1 << 5;
const MAKE_CHAR: u64 = 1 << 6;
const MAKE_DIR: u64 = 1 << 7;
const MAKE_REG: u64 = 1 << 8;
const MAKE_SOCK: u64 = 1 << 9;
const MAKE_FIFO: u64 = 1 << 10;
const MAKE_BLOCK: u64 = 1 << 11;
const MAKE_SYM: u64 = 1 << 12;
const REFER: u64 = 1 << 13; // ABI 2: renames and links across directories
const TRUNCATE: u64 = 1 << 14; // ABI 3
                               // Network rights (ABI 4).
const BIND_TCP: u64 = 1 << 0;
const CONNECT_TCP: u64 = 1 << 1;

// Scopes (ABI 6).
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The kernel's Landlock ABI version, or `None` where Landlock is missing or disabled.
pub fn abi() -> Option<u32> {
    // SAFETY: with a null attribute and size 0, the call only reports the version.
    let version = unsafe {
        syscall(
            SYS_CREATE_RULESET,
            std::ptr::null::<c_void>(),
            0 as c_long,
            CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).ok().filter(|&v| v > 0)
}

/// What a confined command may write.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub abi: u32,
    /// Directories written freely beneath (files and directories made, changed, removed).
    pub writable_dirs: Vec<PathBuf>,
    /// Existing files that may be written, not removed: /dev/null and the like.
    pub writable_files: Vec<PathBuf>,
    /// Refuse TCP bind and connect (ABI 4 and later; ignored before).
    pub no_network: bool,
}

impl Policy {
    fn handled_fs(&self) -> u64 {
        let mut rights = WRITE_FILE
            | REMOVE_DIR
            | REMOVE_FILE
            | MAKE_CHAR
            | MAKE_DIR
            | MAKE_REG
            | MAKE_SOCK
            | MAKE_FIFO
            | MAKE_BLOCK
            | MAKE_SYM;
        if self.abi >= 2 {
            rights |= REFER;
        }
        if self.abi >= 3 {
            rights |= TRUNCATE;
        }
        rights
    }

    /// What a writable directory allows beneath it: everything handled but device nodes (a
    /// block device made in the workspace would reach a disk).
    pub fn dir_rights(&self) -> u64 {
        self.handled_fs() & !(MAKE_CHAR | MAKE_BLOCK)
    }

    /// The ruleset, as a file descriptor to hand to `enforce` in each child: built once, used
    /// for every command. Paths that do not exist are skipped (a machine without /dev/tty).
    pub fn ruleset(&self) -> io::Result<OwnedFd> {
        let handled_fs = self.handled_fs();
        let attr = RulesetAttr {
            handled_access_fs: handled_fs,
            handled_access_net: if self.no_network && self.abi >= 4 {
                BIND_TCP | CONNECT_TCP
            } else {
                0
            },
            scoped: if self.abi >= 6 {
                SCOPE_ABSTRACT_UNIX_SOCKET
            } else {
                0
            },
        };
        let size = match self.abi {
            6.. => std::mem::size_of::<RulesetAttr>(),
            4 | 5 => 2 * std::mem::size_of::<u64>(),
            _ => std::mem::size_of::<u64>(),
        };
        // SAFETY: attr is a valid ruleset attribute of at least `size` bytes.
        let fd = unsafe {
            syscall(
                SYS_CREATE_RULESET,
                &attr as *const RulesetAttr,
                size as c_long,
                0 as c_long,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor to us.
        let ruleset = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let file_rights = handled_fs & (WRITE_FILE | TRUNCATE);
        let dirs = self
            .writable_dirs
            .iter()
            .map(|d| (d.as_path(), self.dir_rights()));
        let files = self
            .writable_files
            .iter()
            .map(|f| (f.as_path(), file_rights));
        for (path, rights) in dirs.chain(files) {
            let Ok(target) = open_path(path) else {
                continue;
            };
            allow(&ruleset, target.as_raw_fd(), rights).map_err(|err| {
                io::Error::new(
                    err.kind(),
                    format!("landlock rule for {}: {err}", path.display()),
                )
            })?;
        }
        Ok(ruleset)
    }
}

/// Adds a rule to `ruleset`: `rights` beneath the directory open at `dir` (any directory,
/// also one only reachable through another mount namespace, like a run's private /tmp).
/// Commands confined from then on get it; those confined before keep what they had.
pub fn allow(ruleset: &OwnedFd, dir: RawFd, rights: u64) -> io::Result<()> {
    let rule = PathBeneathAttr {
        allowed_access: rights,
        parent_fd: dir,
    };
    // SAFETY: rule is a valid path-beneath attribute; both descriptors are open.
    let done = unsafe {
        syscall(
            SYS_ADD_RULE,
            ruleset.as_raw_fd() as c_long,
            RULE_PATH_BENEATH,
            &rule as *const PathBeneathAttr,
            0 as c_long,
        )
    };
    if done < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Confines the calling process, and all it starts from then on, for good. Safe between fork
/// and exec: it makes two syscalls and nothing else.
pub fn enforce(ruleset: RawFd) -> io::Result<()> {
    // SAFETY: plain syscalls on integers.
    unsafe {
        if prctl(
            PR_SET_NO_NEW_PRIVS,
            1 as c_long,
            0 as c_long,
            0 as c_long,
            0 as c_long,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        if syscall(SYS_RESTRICT_SELF, ruleset as c_long, 0 as c_long) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn open_path(path: &Path) -> io::Result<OwnedFd> {
    let path = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: path is a valid C string; O_PATH opens no data.
    let fd = unsafe { open(path.as_ptr(), O_PATH | O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
