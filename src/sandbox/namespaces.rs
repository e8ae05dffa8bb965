//! The namespace layer: one set of new user, mount, PID, UTS and IPC namespaces (and a network
//! namespace for `--no-network`) per run, which every command of the run enters.
//!
//! A small process, the holder, creates them and is PID 1 in them. It maps the user's own uid
//! and gid (so files keep their owners), makes its copy of the mount tree private, clones the
//! writable directories (workspace, `--writable`), turns every mount read-only
//! (`mount_setattr`, recursive), mounts a capped tmpfs over /tmp and /dev/shm (the run's own:
//! the host's /tmp, its files and Unix sockets, are out of sight), puts the clones back on top
//! (making their places in the tmpfs when they lie under /tmp), puts a read-only copy of each
//! protected path over itself (every `.git`, `.turn`), and mounts a `/proc` that shows only
//! the sandbox's processes. Outside the writable directories every write, chmod, chown,
//! utime and setxattr then fails with EROFS, also for root. It then gives up its own
//! capabilities, becomes undumpable, and waits: it dies with turn (a pipe's EOF and
//! PR_SET_PDEATHSIG), and when it dies the kernel kills everything left in its PID namespace.
//! So a background job started by one command lives on for the next ones (a server a later
//! command queries), but nothing outlives turn, and `Holder::kill` ends them all at once (turn
//! does that on a timeout or Ctrl-C, then starts a fresh holder).
//!
//! Commands join through descriptors of the namespaces, opened while the holder was still
//! dumpable (see `exec`). Everything the holder does between clone and its wait is a system
//! call on memory prepared before the clone.

use super::capabilities;
use super::sys::{self, Failed};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::raw::{c_char, c_int, c_long, c_uint, c_ulong};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

const MS_REC: c_ulong = 0x4000;
const MS_PRIVATE: c_ulong = 1 << 18;
const MS_RDONLY: c_ulong = 1;
const MS_NOSUID: c_ulong = 2;
const MS_NODEV: c_ulong = 4;
const MS_NOEXEC: c_ulong = 8;
const OPEN_TREE_CLONE: c_uint = 1;
const AT_RECURSIVE: c_uint = 0x8000;
const AT_SYMLINK_NOFOLLOW: c_uint = 0x100;
const MOVE_MOUNT_F_EMPTY_PATH: c_uint = 4;
const AT_EMPTY_PATH: c_uint = 0x1000;
const EEXIST: c_int = 17;
const MOUNT_ATTR_RDONLY: u64 = 1;
const MOUNT_ATTR_NOSUID: u64 = 2;

// Steps of the holder's set-up, for error messages.
const STEP_CLONE: u32 = 1;
const STEP_SETGROUPS: u32 = 2;
const STEP_UID_MAP: u32 = 3;
const STEP_GID_MAP: u32 = 4;
const STEP_PRIVATE: u32 = 5;
const STEP_OPEN_TREE: u32 = 6;
const STEP_MOVED: u32 = 7;
const STEP_READ_ONLY: u32 = 8;
const STEP_MOVE_MOUNT: u32 = 9;
const STEP_SETSID: u32 = 10;
const STEP_DUMPABLE: u32 = 11;
const STEP_PDEATHSIG: u32 = 12;
const STEP_NS_FILES: u32 = 13;
const STEP_GONE: u32 = 14;
const STEP_TMPFS: u32 = 15;
const STEP_MKDIR: u32 = 16;
const STEP_PROTECT: u32 = 17;

fn step_name(step: u32) -> &'static str {
    match step {
        STEP_CLONE => "creating the namespaces",
        STEP_SETGROUPS => "writing /proc/self/setgroups",
        STEP_UID_MAP => "writing the uid map",
        STEP_GID_MAP => "writing the gid map",
        STEP_PRIVATE => "making the mounts private",
        STEP_OPEN_TREE => "cloning a writable directory's mounts",
        STEP_MOVED => "cloning a writable directory (it was moved or replaced)",
        STEP_READ_ONLY => "making the file system read-only (mount_setattr)",
        STEP_MOVE_MOUNT => "mounting a writable directory",
        STEP_SETSID => "leaving the terminal's session",
        STEP_DUMPABLE => "making the holder undumpable",
        STEP_PDEATHSIG => "tying the holder to turn",
        STEP_NS_FILES => "opening the namespaces",
        STEP_GONE => "waiting for the holder (it died)",
        STEP_TMPFS => "mounting a private /tmp or /dev/shm",
        STEP_MKDIR => "making a writable directory's place in the private /tmp",
        STEP_PROTECT => "making a protected path read-only",
        step => capabilities::step_name(step).unwrap_or("setting up"),
    }
}

/// Why the namespace layer is not available.
#[derive(Debug)]
pub struct Unavailable {
    pub step: &'static str,
    pub err: io::Error,
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}: {}", self.step, self.err)?;
        if let Some(why) = self.why() {
            write!(f, " ({why})")?;
        }
        Ok(())
    }
}

impl Unavailable {
    fn new(failed: Failed) -> Unavailable {
        Unavailable {
            step: step_name(failed.step),
            err: failed.error(),
        }
    }

    /// The likely reason, from the usual switches.
    fn why(&self) -> Option<String> {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .ok()
                .map(|s| s.trim().to_string())
        };
        if self.err.raw_os_error() == Some(38) {
            return Some("this kernel lacks a call it needs: Linux 5.12 or later".into());
        }
        if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
            return Some("kernel.unprivileged_userns_clone is 0".into());
        }
        if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
            return Some("user.max_user_namespaces is 0".into());
        }
        if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
            return Some("AppArmor restricts unprivileged user namespaces".into());
        }
        match self.err.raw_os_error() {
            Some(1) | Some(13) => Some("a container or security policy forbids it".into()),
            Some(22) => Some("this kernel has no user namespaces".into()),
            Some(28) => Some("the limit of nested user namespaces is reached".into()),
            _ => None,
        }
    }
}

/// A directory that stays writable inside (or visible: see `Recipe::new`): its path and the
/// inode it must still be.
struct Writable {
    path: CString,
    dev: u64,
    ino: u64,
    read_only: bool,
}

/// A tmpfs mounted over a host directory inside: the run's own /tmp and /dev/shm.
pub struct Private {
    pub path: PathBuf,
    /// The tmpfs options: its size cap and mode.
    pub options: &'static str,
}

/// The private temp dirs every run gets: /tmp (TMPDIR points there) and /dev/shm, each a
/// tmpfs capped so a runaway command cannot take all memory.
pub const PRIVATE: [(&str, &str); 2] = [
    ("/tmp", "size=1g,mode=1777"),
    ("/dev/shm", "size=256m,mode=1777"),
];

/// What the holder needs, prepared before it is cloned.
pub struct Recipe {
    /// Parents before children, so a nested one lands on top.
    writable: Vec<Writable>,
    /// A writable directory is `/`: nothing would be read-only, so no mount is changed.
    all_writable: bool,
    /// tmpfs mounts over host directories, with their options.
    private: Vec<(CString, CString)>,
    /// Directories to make inside the private mounts, parents first: the places where
    /// writable directories beneath them (a workspace under /tmp) are mounted back.
    places: Vec<CString>,
    /// Paths inside writable directories that stay read-only (every `.git`, `.turn`).
    protected: Vec<Writable>,
    network: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Recipe {
    /// `writable` are canonical directories; `network: false` adds a network namespace;
    /// `private` are mounted over (those that exist); `protected` are canonical paths kept
    /// read-only (those that exist).
    /// `visible` are canonical directories mounted back read-only where a private mount
    /// would hide them (the workspace under /tmp in `read-only`).
    pub fn new(
        writable: &[PathBuf],
        visible: &[PathBuf],
        network: bool,
        private: &[Private],
        protected: &[PathBuf],
    ) -> io::Result<Recipe> {
        let hidden = |dir: &PathBuf| {
            private
                .iter()
                .any(|p| p.path.is_dir() && dir.starts_with(&p.path))
        };
        let mut dirs: Vec<&PathBuf> = writable.iter().collect();
        dirs.extend(
            visible
                .iter()
                .filter(|d| !writable.contains(d) && hidden(d)),
        );
        dirs.sort_by_key(|d| d.components().count());
        dirs.dedup();
        let mut list = Vec::new();
        for dir in &dirs {
            let meta = std::fs::metadata(dir)?;
            list.push(Writable {
                path: cstring(dir)?,
                dev: meta.dev(),
                ino: meta.ino(),
                read_only: !writable.contains(dir),
            });
        }
        let private: Vec<&Private> = private.iter().filter(|p| p.path.is_dir()).collect();
        // Each directory's places from the mount down, parents first (mkdir takes EEXIST).
        let mut places: Vec<CString> = Vec::new();
        for dir in &dirs {
            if let Some(mount) = private.iter().find(|p| dir.starts_with(&p.path)) {
                let mut chain: Vec<&Path> =
                    dir.ancestors().take_while(|a| *a != mount.path).collect();
                chain.reverse();
                for place in chain {
                    places.push(cstring(place)?);
                }
            }
        }
        let mut kept = Vec::new();
        for path in protected {
            // Never a symlink: open_tree would not follow it, and git does not need it kept.
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                continue;
            };
            if !meta.file_type().is_symlink() {
                kept.push(Writable {
                    path: cstring(path)?,
                    dev: meta.dev(),
                    ino: meta.ino(),
                    read_only: true,
                });
            }
        }
        // SAFETY: getters without side effects.
        let (uid, gid) = unsafe { (sys::geteuid(), sys::getegid()) };
        Ok(Recipe {
            all_writable: writable.iter().any(|d| d == Path::new("/")),
            writable: list,
            private: private
                .iter()
                .map(|p| Ok((cstring(&p.path)?, CString::new(p.options)?)))
                .collect::<io::Result<_>>()?,
            places,
            protected: kept,
            network,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        })
    }

    /// The private mounts' paths, to open from outside through the holder's root.
    pub fn private_paths(&self) -> impl Iterator<Item = &CString> {
        self.private.iter().map(|(path, _)| path)
    }
}

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)
}

/// The running holder: its pid, the namespaces to join (user first), and the pipe whose EOF
/// tells it turn is gone.
pub struct Holder {
    pid: c_int,
    namespaces: Vec<(OwnedFd, c_int)>,
    _lifeline: OwnedFd,
    network: bool,
    /// Why `/proc` inside is turn's (all processes visible), if the private one failed.
    pub shared_proc: Option<io::Error>,
    /// The private /tmp and /dev/shm as the commands see them, opened through the holder's
    /// root: Landlock's rules for them need these (the host's /tmp is another directory).
    pub private: Vec<OwnedFd>,
}

/// Namespace descriptor files, in the order they must be joined, and their setns type.
const NAMESPACES: [(&str, c_ulong); 6] = [
    ("user", sys::CLONE_NEWUSER),
    ("mnt", sys::CLONE_NEWNS),
    ("uts", sys::CLONE_NEWUTS),
    ("ipc", sys::CLONE_NEWIPC),
    ("net", sys::CLONE_NEWNET),
    ("pid", sys::CLONE_NEWPID),
];

impl Holder {
    pub fn start(recipe: &Recipe) -> Result<Holder, Unavailable> {
        let fail = |step| Unavailable::new(Failed::now(step));
        let (report, report_in) = pipe().map_err(|_| fail(STEP_CLONE))?;
        let (ctl_out, ctl) = pipe().map_err(|_| fail(STEP_CLONE))?;
        let mut flags = sys::CLONE_NEWUSER
            | sys::CLONE_NEWNS
            | sys::CLONE_NEWPID
            | sys::CLONE_NEWUTS
            | sys::CLONE_NEWIPC;
        if !recipe.network {
            flags |= sys::CLONE_NEWNET;
        }
        let keep = [report_in.as_raw_fd(), ctl_out.as_raw_fd()];
        // SAFETY: the child makes only system calls on memory prepared above, then exits.
        let pid = unsafe { sys::clone(flags) };
        if pid == 0 {
            holder(recipe, keep[0], keep[1]);
        }
        if pid < 0 {
            return Err(fail(STEP_CLONE));
        }
        let pid = pid as c_int;
        drop((report_in, ctl_out));
        let started = Holder {
            pid,
            namespaces: Vec::new(),
            _lifeline: ctl,
            network: recipe.network,
            shared_proc: None,
            private: Vec::new(),
        };
        started.finish(report, recipe)
    }

    /// The holder's side of the handshake: it reports its set-up; then its namespaces are
    /// opened, and it is told to lock itself down, which it confirms.
    fn finish(mut self, report: OwnedFd, recipe: &Recipe) -> Result<Holder, Unavailable> {
        let message = |report: &OwnedFd| -> Result<Failed, Unavailable> {
            let mut bytes = [0; 8];
            match sys::read_all(report.as_raw_fd(), &mut bytes) {
                Ok(8) => Ok(Failed::from_bytes(bytes)),
                _ => Err(Unavailable::new(Failed {
                    step: STEP_GONE,
                    errno: 0,
                })),
            }
        };
        let ready = message(&report)?;
        if ready.step != 0 {
            return Err(Unavailable::new(ready));
        }
        if ready.errno != 0 {
            self.shared_proc = Some(ready.error());
        }
        for (name, kind) in NAMESPACES {
            if name == "net" && self.network {
                continue;
            }
            let path = format!("/proc/{}/ns/{name}", self.pid);
            let file = std::fs::File::open(&path).map_err(|err| Unavailable {
                step: step_name(STEP_NS_FILES),
                err,
            })?;
            self.namespaces.push((file.into(), kind as c_int));
        }
        for path in recipe.private_paths() {
            let inside = format!("/proc/{}/root{}", self.pid, path.to_string_lossy());
            let file = std::fs::File::open(&inside).map_err(|err| Unavailable {
                step: step_name(STEP_TMPFS),
                err,
            })?;
            self.private.push(file.into());
        }
        let go = [1u8];
        // SAFETY: go is a valid one-byte buffer.
        unsafe { sys::write(self._lifeline.as_raw_fd(), go.as_ptr().cast(), 1) };
        let locked = message(&report)?;
        if locked.step != 0 {
            return Err(Unavailable::new(locked));
        }
        Ok(self)
    }

    /// The namespaces to join, user namespace first, with their setns types.
    pub fn namespaces(&self) -> impl Iterator<Item = (RawFd, c_int)> + '_ {
        self.namespaces
            .iter()
            .map(|(fd, kind)| (fd.as_raw_fd(), *kind))
    }

    /// Ends the holder and with it every process in its namespaces. Call only after reaping
    /// turn's own children in there: the holder's exit waits for them.
    pub fn kill(self) {
        drop(self);
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        // SAFETY: plain syscalls on our own child's pid.
        unsafe {
            sys::kill(self.pid, sys::SIGKILL);
            let mut status = 0;
            while sys::waitpid(self.pid, &mut status, 0) < 0 && sys::errno() == sys::EINTR {}
        }
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: fds is a valid two-int buffer.
    if unsafe { sys::pipe2(fds.as_mut_ptr(), sys::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned both descriptors to us.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The holder: set up, report, wait for the go, lock down, then wait for turn's end.
fn holder(recipe: &Recipe, report: c_int, ctl: c_int) -> ! {
    let result = set_up(recipe, report, ctl);
    let ready = match result {
        Ok(proc_errno) => Failed {
            step: 0,
            errno: proc_errno,
        },
        Err(failed) => failed,
    };
    ready.send(report);
    if ready.step != 0 {
        // SAFETY: _exit ends only this process.
        unsafe { sys::_exit(1) }
    }
    let mut byte = [0u8; 1];
    if !matches!(sys::read_all(ctl, &mut byte), Ok(1)) {
        // SAFETY: as above.
        unsafe { sys::_exit(0) }
    }
    let locked = match lock_down() {
        Ok(()) => Failed { step: 0, errno: 0 },
        Err(failed) => failed,
    };
    locked.send(report);
    // SAFETY: closing our own descriptor; then waiting on a pipe only turn writes to.
    unsafe {
        sys::close(report);
        if locked.step != 0 {
            sys::_exit(1);
        }
        loop {
            let n = sys::read(ctl, byte.as_mut_ptr().cast(), 1);
            if n == 0 || (n < 0 && sys::errno() != sys::EINTR) {
                sys::_exit(0);
            }
        }
    }
}

/// Maps, mounts and /proc. Returns the errno of a failed private /proc (0 when it worked):
/// not fatal, the host's /proc (read-only) then stays.
fn set_up(recipe: &Recipe, report: c_int, ctl: c_int) -> Result<c_int, Failed> {
    // SAFETY: every call below is a system call on memory prepared before the clone.
    unsafe {
        if sys::prctl(
            sys::PR_SET_PDEATHSIG,
            sys::SIGKILL as c_long,
            0 as c_long,
            0 as c_long,
            0 as c_long,
        ) != 0
        {
            return Err(Failed::now(STEP_PDEATHSIG));
        }
        // turn may be undumpable; until its lock-down the holder must not be, or its /proc
        // files would belong to root: it could not write its uid map, nor turn open its
        // namespaces.
        if sys::prctl(
            sys::PR_SET_DUMPABLE,
            1 as c_long,
            0 as c_long,
            0 as c_long,
            0 as c_long,
        ) != 0
        {
            return Err(Failed::now(STEP_DUMPABLE));
        }
        // Off the terminal: Ctrl-C there must not reach the holder.
        if sys::setsid() < 0 {
            return Err(Failed::now(STEP_SETSID));
        }
        keep_only(report, ctl);
        write_file(c"/proc/self/setgroups", b"deny\n", STEP_SETGROUPS)?;
        write_file(c"/proc/self/uid_map", &recipe.uid_map, STEP_UID_MAP)?;
        write_file(c"/proc/self/gid_map", &recipe.gid_map, STEP_GID_MAP)?;
        let root = c"/".as_ptr();
        let null = std::ptr::null::<c_char>();
        if sys::mount(null, root, null, MS_REC | MS_PRIVATE, std::ptr::null()) != 0 {
            return Err(Failed::now(STEP_PRIVATE));
        }
        if !recipe.all_writable {
            read_only_but(recipe)?;
        }
        let flags = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY;
        let proc_ = c"/proc".as_ptr();
        let done = sys::mount(
            c"proc".as_ptr(),
            proc_,
            c"proc".as_ptr(),
            flags,
            std::ptr::null(),
        );
        Ok(if done == 0 { 0 } else { sys::errno() })
    }
}

/// Clones the writable directories, makes every mount read-only, and mounts the clones back.
///
/// # Safety
/// System calls only; `recipe` was prepared before the clone.
unsafe fn read_only_but(recipe: &Recipe) -> Result<(), Failed> {
    // At most this many writable directories (the workspace, --writable ones).
    const MAX: usize = 64;
    let mut trees = [-1 as c_int; MAX];
    for (i, dir) in recipe.writable.iter().enumerate().take(MAX) {
        trees[i] = clone_tree(dir, STEP_OPEN_TREE)?;
        if dir.read_only && !read_only_tree(trees[i]) {
            return Err(Failed::now(STEP_READ_ONLY));
        }
    }
    let attr = [MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0];
    if sys::syscall(
        sys::MOUNT_SETATTR,
        sys::AT_FDCWD as c_long,
        c"/".as_ptr(),
        AT_RECURSIVE as c_long,
        attr.as_ptr(),
        std::mem::size_of_val(&attr) as c_long,
    ) != 0
    {
        return Err(Failed::now(STEP_READ_ONLY));
    }
    let tmpfs = c"tmpfs".as_ptr();
    for (path, options) in &recipe.private {
        let flags = MS_NOSUID | MS_NODEV;
        if sys::mount(tmpfs, path.as_ptr(), tmpfs, flags, options.as_ptr().cast()) != 0 {
            return Err(Failed::now(STEP_TMPFS));
        }
    }
    for place in &recipe.places {
        if sys::mkdir(place.as_ptr(), 0o755) != 0 && sys::errno() != EEXIST {
            return Err(Failed::now(STEP_MKDIR));
        }
    }
    for (i, dir) in recipe.writable.iter().enumerate().take(MAX) {
        if !move_tree(trees[i], dir) {
            return Err(Failed::now(STEP_MOVE_MOUNT));
        }
        sys::close(trees[i]);
    }
    protect(recipe)
}

/// Puts a read-only copy of each protected path over itself, after the writable
/// directories are back (they hold them). A path moved or replaced since turn looked is an
/// error, as for writable directories.
///
/// # Safety
/// System calls only; `recipe` was prepared before the clone.
unsafe fn protect(recipe: &Recipe) -> Result<(), Failed> {
    for path in &recipe.protected {
        let tree = clone_tree(path, STEP_PROTECT)?;
        if !(read_only_tree(tree) && move_tree(tree, path)) {
            return Err(Failed::now(STEP_PROTECT));
        }
        sys::close(tree);
    }
    Ok(())
}

/// A detached copy of the mount tree at `dir` (open_tree), checked to be the directory turn
/// looked at, not one a command put in its place since; `step` names a failure to clone.
///
/// # Safety
/// System calls only.
unsafe fn clone_tree(dir: &Writable, step: u32) -> Result<c_int, Failed> {
    let flags = OPEN_TREE_CLONE | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW | sys::O_CLOEXEC as c_uint;
    let tree = sys::syscall(
        sys::OPEN_TREE,
        sys::AT_FDCWD as c_long,
        dir.path.as_ptr(),
        flags as c_long,
    );
    if tree < 0 {
        return Err(Failed::now(step));
    }
    let tree = tree as c_int;
    if sys::dev_ino(tree) != Some((dir.dev, dir.ino)) {
        return Err(Failed {
            step: STEP_MOVED,
            errno: 18, // EXDEV
        });
    }
    Ok(tree)
}

/// Mounts the detached `tree` over `dir`'s path.
///
/// # Safety
/// A system call only.
unsafe fn move_tree(tree: c_int, dir: &Writable) -> bool {
    sys::syscall(
        sys::MOVE_MOUNT,
        tree as c_long,
        c"".as_ptr(),
        sys::AT_FDCWD as c_long,
        dir.path.as_ptr(),
        MOVE_MOUNT_F_EMPTY_PATH as c_long,
    ) == 0
}

/// Makes a detached tree (from open_tree) read-only, all of it.
///
/// # Safety
/// A system call only.
unsafe fn read_only_tree(tree: c_int) -> bool {
    let attr = [MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0];
    sys::syscall(
        sys::MOUNT_SETATTR,
        tree as c_long,
        c"".as_ptr(),
        (AT_RECURSIVE | AT_EMPTY_PATH) as c_long,
        attr.as_ptr(),
        std::mem::size_of_val(&attr) as c_long,
    ) == 0
}

/// Gives up the holder's capabilities and makes it undumpable, so no command can read its
/// memory (a copy of turn's) or use it.
fn lock_down() -> Result<(), Failed> {
    // SAFETY: plain prctl and signal calls.
    unsafe {
        sys::signal(sys::SIGCHLD, sys::SIG_IGN); // the kernel reaps orphans it inherits
        if sys::prctl(
            sys::PR_SET_DUMPABLE,
            0 as c_long,
            0 as c_long,
            0 as c_long,
            0 as c_long,
        ) != 0
        {
            return Err(Failed::now(STEP_DUMPABLE));
        }
    }
    capabilities::drop_all(true)
}

/// Writes `data` to a small /proc file.
///
/// # Safety
/// System calls only.
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8], step: u32) -> Result<(), Failed> {
    let fd = sys::open(path.as_ptr(), sys::O_WRONLY | sys::O_CLOEXEC);
    if fd < 0 {
        return Err(Failed::now(step));
    }
    let written = sys::write(fd, data.as_ptr().cast(), data.len());
    let failed = Failed::now(step);
    sys::close(fd);
    if written != data.len() as isize {
        return Err(failed);
    }
    Ok(())
}

/// Closes every descriptor but the two pipes, with stdin, stdout and stderr on /dev/null: the
/// holder must not keep turn's files, sockets or pipes open.
///
/// # Safety
/// System calls only.
unsafe fn keep_only(a: c_int, b: c_int) {
    let null = sys::open(c"/dev/null".as_ptr(), sys::O_RDWR);
    if null >= 0 {
        for fd in 0..3 {
            sys::dup2(null, fd);
        }
    }
    let (low, high) = if a < b { (a, b) } else { (b, a) };
    let close_range = |from: c_int, to: c_int| {
        if from <= to {
            sys::syscall(sys::CLOSE_RANGE, from as c_long, to as c_long, 0 as c_long);
        }
    };
    close_range(3, low - 1);
    close_range(low + 1, high - 1);
    close_range(high + 1, c_int::MAX);
}
