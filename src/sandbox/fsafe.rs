//! `fsafe`: the one safe way turn opens files beneath a directory it trusts (the workspace,
//! `.turn/sessions`): from a directory descriptor, never following a symlink, so a path that a
//! confined command changes between turn's check and turn's open cannot lead anywhere else.
//!
//! Where the kernel has `openat2` (Linux 5.6+) a path is opened in one call with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`; elsewhere the same walk is made one component at a
//! time with `O_NOFOLLOW`. Either way a symlink anywhere in the path is the error `ELOOP`
//! (`is_symlink`), never followed. `RESOLVE_IN_ROOT` is not used: it would follow a symlink
//! as if the directory were `/`, which is not what the path the model wrote meant; the file
//! tools resolve the symlinks they allow (`sandbox::safe_path`) and then open what they checked.
//!
//! Files are opened `O_NONBLOCK` and checked with `fstat`: only regular files are read or
//! written, so a FIFO or device swapped in never blocks turn or reaches a disk. `replace`
//! writes a file through a temp file made with `O_TMPFILE` (no name, so nothing is left behind
//! by a kill) or else `O_EXCL` under an unpredictable name, owner and mode set before the first
//! byte, then renamed into place; a file with several hard links is rewritten in place instead,
//! so its links survive.
//!
//! Raw syscalls through `extern "C"`, as `landlock` does: no crate.

use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, Metadata, Permissions};
use std::io::{self, BufWriter, Seek, SeekFrom};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::raw::{c_char, c_int, c_long, c_uint};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path};

use super::sys::{
    openat, syscall, AT_FDCWD, O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_PATH, O_RDONLY,
    O_RDWR, O_WRONLY,
};

const O_CREAT: c_int = 0o100;
const O_EXCL: c_int = 0o200;
const O_NOCTTY: c_int = 0o400;
const O_APPEND: c_int = 0o2000;
const O_TMPFILE_BASE: c_int = 0o20000000;
const O_TMPFILE: c_int = O_TMPFILE_BASE | O_DIRECTORY;

const AT_SYMLINK_FOLLOW: c_int = 0x400;
const AT_EMPTY_PATH: c_int = 0x1000;
const AT_REMOVEDIR: c_int = 0x200;
const F_GETFL: c_int = 3;
const F_SETFL: c_int = 4;

// openat2(2): the same number in the x86_64 and the generic syscall tables.
const SYS_OPENAT2: c_long = 437;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_BENEATH: u64 = 0x08;

const EPERM: i32 = 1;
const ENOENT: i32 = 2;
const EAGAIN: i32 = 11;
const EEXIST: i32 = 17;
const ENOTDIR: i32 = 20;
const EISDIR: i32 = 21;
const ENOSYS: i32 = 38;
const ELOOP: i32 = 40;

extern "C" {
    fn mkdirat(dirfd: c_int, path: *const c_char, mode: c_uint) -> c_int;
    fn linkat(
        olddirfd: c_int,
        oldpath: *const c_char,
        newdirfd: c_int,
        newpath: *const c_char,
        flags: c_int,
    ) -> c_int;
    fn renameat(
        olddirfd: c_int,
        oldpath: *const c_char,
        newdirfd: c_int,
        newpath: *const c_char,
    ) -> c_int;
    fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    fn symlinkat(target: *const c_char, dirfd: c_int, path: *const c_char) -> c_int;
    fn fchown(fd: c_int, owner: c_uint, group: c_uint) -> c_int;
    fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
}

#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// The error for a symlink in the way, as the opens here give it.
pub fn symlink_error() -> io::Error {
    io::Error::from_raw_os_error(ELOOP)
}

/// Whether `err` says a symlink stood in a path opened here (`ELOOP`).
pub fn is_symlink(err: &io::Error) -> bool {
    err.raw_os_error() == Some(ELOOP)
}

/// Whether `err` says the file is not a regular file (a FIFO, socket or device).
pub fn is_not_regular(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|inner| inner.is::<NotRegular>())
}

/// The error for a FIFO, socket or device where a regular file was wanted.
#[derive(Debug)]
struct NotRegular;

impl std::fmt::Display for NotRegular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a regular file (a FIFO, socket or device)")
    }
}

impl std::error::Error for NotRegular {}

/// The error `open_read` gives for a FIFO, socket or device.
pub fn not_regular() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, NotRegular)
}

fn changed() -> io::Error {
    io::Error::other("the file was replaced while turn was writing it; nothing was changed")
}

fn cstr(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte"))
}

/// `Ok(fd)` for a syscall's non-negative result, else the OS error.
fn check(result: c_int) -> io::Result<c_int> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

fn owned(fd: c_int) -> OwnedFd {
    // SAFETY: the kernel just returned this descriptor to us, and nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// An open directory that paths are resolved beneath.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

impl Dir {
    /// Opens the directory at `path`, following symlinks: this is the caller's own trusted
    /// path (the workspace), the anchor that everything else is opened beneath.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let path = cstr(path.as_os_str().as_bytes())?;
        // SAFETY: path is a valid C string.
        let fd =
            check(unsafe { openat(AT_FDCWD, path.as_ptr(), O_PATH | O_DIRECTORY | O_CLOEXEC) })?;
        Ok(Dir { fd: owned(fd) })
    }

    pub fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir {
            fd: self.fd.try_clone()?,
        })
    }

    /// The directory at `rel` beneath this one (itself when `rel` is empty).
    pub fn open_dir(&self, rel: &Path) -> io::Result<Dir> {
        let fd = self.open_beneath(rel, O_PATH | O_DIRECTORY, 0)?;
        Ok(Dir { fd })
    }

    /// The directory at `rel`, creating what is missing of it with `mode` (less the umask);
    /// an existing part that is a symlink or not a directory is an error.
    pub fn create_dirs(&self, rel: &Path, mode: u32) -> io::Result<Dir> {
        let mut dir = self.try_clone()?;
        for part in parts(rel)? {
            let name = cstr(part.as_bytes())?;
            // SAFETY: name is a valid C string; the descriptor is open.
            let made = unsafe { mkdirat(dir.fd.as_raw_fd(), name.as_ptr(), mode as c_uint) };
            if made < 0 {
                let err = io::Error::last_os_error();
                if err.raw_os_error() != Some(EEXIST) {
                    return Err(err);
                }
            }
            dir = dir.open_dir(Path::new(part))?;
        }
        Ok(dir)
    }

    /// What is at `rel`, without following a symlink there (`lstat` beneath this directory).
    pub fn metadata(&self, rel: &Path) -> io::Result<Metadata> {
        let (parent, name) = self.split(rel)?;
        let name = cstr(name.as_bytes())?;
        let dir = parent.as_ref().map_or(&self.fd, |d| &d.fd);
        // SAFETY: name is a valid C string; O_PATH | O_NOFOLLOW opens a symlink itself.
        let fd = check(unsafe {
            openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                O_PATH | O_NOFOLLOW | O_CLOEXEC,
            )
        })?;
        File::from(owned(fd)).metadata()
    }

    /// Changes this directory's mode (`fchmod` on it, so no path is followed).
    pub fn set_permissions(&self, permissions: Permissions) -> io::Result<()> {
        let fd = self.open_beneath(Path::new(""), O_RDONLY | O_DIRECTORY, 0)?;
        File::from(fd).set_permissions(permissions)
    }

    /// Opens the regular file at `rel` for reading.
    pub fn open_read(&self, rel: &Path) -> io::Result<File> {
        regular(self.open_beneath(rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0)?)
    }

    /// Opens the regular file at `rel` for reading and appending, creating it (mode 0600)
    /// when `create` says so; with `Create::New` it must not exist yet.
    pub fn open_append(&self, rel: &Path, create: Create) -> io::Result<File> {
        let flags = O_RDWR | O_APPEND | O_NONBLOCK | O_NOCTTY;
        let flags = match create {
            Create::No => flags,
            Create::IfMissing => flags | O_CREAT,
            Create::New => flags | O_CREAT | O_EXCL,
        };
        regular(self.open_beneath(rel, flags, 0o600)?)
    }

    /// Creates the file `rel` (it must not exist) for writing, with `mode` less the umask.
    pub fn create_new(&self, rel: &Path, mode: u32) -> io::Result<File> {
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY;
        Ok(File::from(self.open_beneath(rel, flags, mode)?))
    }

    /// Writes the file `name` in this directory with what `fill` writes. `existing` is the
    /// file there now (opened with `open_read`), if any: its owner and mode are kept (owner
    /// only where turn may give files away, as root can), and it must still be at `name` when
    /// the new content is ready, or nothing changes. A new file gets 0666 less the umask.
    ///
    /// A file with one link is replaced atomically (a reader sees the old content or the new,
    /// never half); one with several hard links is rewritten in place, which keeps the links
    /// but is not atomic.
    pub fn replace<F>(&self, name: &OsStr, existing: Option<&File>, fill: F) -> io::Result<()>
    where
        F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
    {
        let old = existing.map(File::metadata).transpose()?;
        if old.as_ref().is_some_and(|m| m.nlink() > 1) {
            return self.rewrite(name, old.as_ref().unwrap(), fill);
        }
        let mode = match &old {
            Some(_) => 0o600,
            None => 0o666,
        };
        let temp = self.temp(name, mode)?;
        let result = (|| {
            if let Some(old) = &old {
                keep_owner_and_mode(&temp.file, old)?;
            }
            let mut out = BufWriter::new(temp.file.try_clone()?);
            fill(&mut out)?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            let linked = match &temp.name {
                Some(named) => named.clone(),
                None => self.link(&temp.file, name)?,
            };
            let renamed = (|| {
                if let Some(old) = &old {
                    if !self.still(name, old) {
                        return Err(changed());
                    }
                }
                self.rename(&linked, name)
            })();
            if renamed.is_err() {
                self.unlink(&linked);
            }
            renamed
        })();
        if let (Err(_), Some(named)) = (&result, &temp.name) {
            self.unlink(named);
        }
        result
    }

    /// `replace` for a file with several hard links: the new content goes to a nameless
    /// scratch file first, then over the old content, the file's inode (and so its links,
    /// owner and mode) kept.
    fn rewrite<F>(&self, name: &OsStr, old: &Metadata, fill: F) -> io::Result<()>
    where
        F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
    {
        let scratch = self.temp(name, 0o600)?;
        if let Some(named) = &scratch.name {
            self.unlink(named); // the open descriptor is all that is needed
        }
        let mut out = BufWriter::new(scratch.file);
        fill(&mut out)?;
        let mut scratch = out.into_inner().map_err(|e| e.into_error())?;
        let flags = O_WRONLY | O_NONBLOCK | O_NOCTTY;
        let mut target = regular(self.open_beneath(Path::new(name), flags, 0)?)?;
        let now = target.metadata()?;
        if (now.dev(), now.ino()) != (old.dev(), old.ino()) {
            return Err(changed());
        }
        let len = scratch.stream_position()?;
        scratch.seek(SeekFrom::Start(0))?;
        io::copy(&mut scratch, &mut target)?;
        target.set_len(len)?;
        target.sync_all()
    }

    /// A new file for `replace` in this directory: nameless (`O_TMPFILE`) where the kernel,
    /// the filesystem and /proc allow linking it in later; else a fresh unpredictable name
    /// made with `O_EXCL`.
    fn temp(&self, name: &OsStr, mode: u32) -> io::Result<Temp> {
        if tmpfile_allowed() && Path::new("/proc/self/fd").is_dir() {
            let dot = cstr(b".")?;
            // SAFETY: dot is a valid C string; the descriptor is open.
            let fd = unsafe {
                openat(
                    self.fd.as_raw_fd(),
                    dot.as_ptr(),
                    O_TMPFILE | O_RDWR | O_CLOEXEC,
                    mode as c_uint,
                )
            };
            if fd >= 0 {
                return Ok(Temp {
                    file: File::from(owned(fd)),
                    name: None,
                });
            }
        }
        for _ in 0..100 {
            let temp = temp_name(name);
            let flags = O_RDWR | O_CREAT | O_EXCL | O_NOCTTY;
            match self.open_beneath(Path::new(&temp), flags, mode) {
                Ok(fd) => {
                    return Ok(Temp {
                        file: File::from(fd),
                        name: Some(temp),
                    })
                }
                Err(e) if e.raw_os_error() == Some(EEXIST) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("no free temp file name"))
    }

    /// Gives the nameless `file` a fresh unpredictable name in this directory.
    fn link(&self, file: &File, name: &OsStr) -> io::Result<OsString> {
        let proc = cstr(format!("/proc/self/fd/{}", file.as_raw_fd()).as_bytes())?;
        let empty = cstr(b"")?;
        for _ in 0..100 {
            let temp = temp_name(name);
            let new = cstr(temp.as_bytes())?;
            let dir = self.fd.as_raw_fd();
            // SAFETY: valid C strings and open descriptors. Through /proc the nameless file is
            // linked by anyone who holds it; AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH.
            let mut done = unsafe {
                linkat(
                    AT_FDCWD,
                    proc.as_ptr(),
                    dir,
                    new.as_ptr(),
                    AT_SYMLINK_FOLLOW,
                )
            };
            if done < 0 && io::Error::last_os_error().raw_os_error() == Some(ENOENT) {
                // SAFETY: as above.
                done = unsafe {
                    linkat(
                        file.as_raw_fd(),
                        empty.as_ptr(),
                        dir,
                        new.as_ptr(),
                        AT_EMPTY_PATH,
                    )
                };
            }
            match check(done) {
                Ok(_) => return Ok(temp),
                Err(e) if e.raw_os_error() == Some(EEXIST) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("no free temp file name"))
    }

    /// Whether `name` is still the file `old` describes.
    fn still(&self, name: &OsStr, old: &Metadata) -> bool {
        self.metadata(Path::new(name))
            .is_ok_and(|now| (now.dev(), now.ino()) == (old.dev(), old.ino()))
    }

    fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (from, to) = (cstr(from.as_bytes())?, cstr(to.as_bytes())?);
        let dir = self.fd.as_raw_fd();
        // SAFETY: valid C strings and an open descriptor.
        check(unsafe { renameat(dir, from.as_ptr(), dir, to.as_ptr()) }).map(|_| ())
    }

    fn unlink(&self, name: &OsStr) {
        if let Ok(name) = cstr(name.as_bytes()) {
            // SAFETY: a valid C string and an open descriptor.
            unsafe { unlinkat(self.fd.as_raw_fd(), name.as_ptr(), 0) };
        }
    }

    /// Removes `name` in this directory, never following it: an empty directory with `dir`,
    /// else a file or a symlink itself.
    pub fn remove(&self, name: &OsStr, dir: bool) -> io::Result<()> {
        let name = cstr(name.as_bytes())?;
        let flags = if dir { AT_REMOVEDIR } else { 0 };
        // SAFETY: a valid C string and an open descriptor.
        check(unsafe { unlinkat(self.fd.as_raw_fd(), name.as_ptr(), flags) }).map(|_| ())
    }

    /// Makes `name` in this directory a symlink to `target` (it must not exist).
    pub fn symlink(&self, target: &OsStr, name: &OsStr) -> io::Result<()> {
        let (target, name) = (cstr(target.as_bytes())?, cstr(name.as_bytes())?);
        // SAFETY: valid C strings and an open descriptor.
        check(unsafe { symlinkat(target.as_ptr(), self.fd.as_raw_fd(), name.as_ptr()) }).map(|_| ())
    }

    /// The directory holding `rel`'s last component (None: this one) and that component.
    fn split<'p>(&self, rel: &'p Path) -> io::Result<(Option<Dir>, &'p OsStr)> {
        let all = parts(rel)?;
        let Some((last, above)) = all.split_last() else {
            return Ok((None, OsStr::new(".")));
        };
        if above.is_empty() {
            return Ok((None, last));
        }
        let above: std::path::PathBuf = above.iter().collect();
        Ok((Some(self.open_dir(&above)?), last))
    }

    /// Opens `rel` beneath this directory with `flags`, no symlink followed anywhere in it.
    fn open_beneath(&self, rel: &Path, flags: c_int, mode: u32) -> io::Result<OwnedFd> {
        let parts = parts(rel)?;
        let joined: std::path::PathBuf = parts.iter().collect();
        let path = match joined.as_os_str().is_empty() {
            true => cstr(b".")?,
            false => cstr(joined.as_os_str().as_bytes())?,
        };
        match openat2(&self.fd, &path, flags | O_CLOEXEC, mode) {
            Err(e) if matches!(e.raw_os_error(), Some(ENOSYS) | Some(EPERM)) => {
                walk(&self.fd, &parts, flags | O_CLOEXEC, mode)
            }
            result => result,
        }
    }

    #[cfg(test)]
    fn open_walking(&self, rel: &Path, flags: c_int, mode: u32) -> io::Result<OwnedFd> {
        walk(&self.fd, &parts(rel)?, flags | O_CLOEXEC, mode)
    }
}

/// At most `max` bytes of the regular file at `path` (symlinks followed: for files the user
/// trusts, such as AGENTS.md). A FIFO or device is refused without blocking on it.
pub fn read_regular(path: &Path, max: usize) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let path = cstr(path.as_os_str().as_bytes())?;
    let flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    // SAFETY: path is a valid C string.
    let fd = check(unsafe { openat(AT_FDCWD, path.as_ptr(), flags) })?;
    let mut bytes = Vec::new();
    regular(owned(fd))?
        .take(max as u64)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// How `open_append` treats a missing file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Create {
    No,
    IfMissing,
    New,
}

struct Temp {
    file: File,
    /// The name it was made under, or None when it has none (`O_TMPFILE`).
    name: Option<OsString>,
}

/// The plain names in `rel`; `..`, a root or a prefix would lead out of the directory.
fn parts(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the path leads out of its directory",
            )),
        })
        .collect()
}

/// openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS.
fn openat2(dir: &OwnedFd, path: &CString, flags: c_int, mode: u32) -> io::Result<OwnedFd> {
    let creates = flags & (O_CREAT | O_TMPFILE_BASE) != 0;
    let how = OpenHow {
        flags: flags as u32 as u64,
        mode: if creates { u64::from(mode) } else { 0 },
        resolve: RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    for _ in 0..8 {
        // SAFETY: how is a valid open_how of the size passed; path is a valid C string.
        let fd = unsafe {
            syscall(
                SYS_OPENAT2,
                dir.as_raw_fd() as c_long,
                path.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>() as c_long,
            )
        };
        if fd >= 0 {
            return Ok(owned(fd as RawFd));
        }
        let err = io::Error::last_os_error();
        // EAGAIN: a concurrent rename made the kernel unsure; it may be retried.
        if err.raw_os_error() != Some(EAGAIN) {
            return Err(err);
        }
    }
    Err(io::Error::from_raw_os_error(EAGAIN))
}

/// The same walk without openat2: each directory opened `O_PATH | O_NOFOLLOW` from the last
/// and checked to be a directory (not a symlink), the last component opened `O_NOFOLLOW`.
fn walk(dir: &OwnedFd, parts: &[&OsStr], flags: c_int, mode: u32) -> io::Result<OwnedFd> {
    let Some((last, above)) = parts.split_last() else {
        let dot = cstr(b".")?;
        // SAFETY: a valid C string and an open descriptor.
        return check(unsafe { openat(dir.as_raw_fd(), dot.as_ptr(), flags, mode as c_uint) })
            .map(owned);
    };
    let mut held: Option<OwnedFd> = None;
    for part in above {
        let at = held.as_ref().unwrap_or(dir);
        held = Some(path_beneath(at, part, true)?);
    }
    let at = held.as_ref().unwrap_or(dir);
    if flags & O_PATH != 0 {
        return path_beneath(at, last, flags & O_DIRECTORY != 0);
    }
    let name = cstr(last.as_bytes())?;
    // SAFETY: a valid C string and an open descriptor.
    let fd = unsafe {
        openat(
            at.as_raw_fd(),
            name.as_ptr(),
            flags | O_NOFOLLOW,
            mode as c_uint,
        )
    };
    check(fd).map(owned)
}

/// `name` in `dir` opened `O_PATH`, refused if it is a symlink (or, with `dir_only`, not a
/// directory): the descriptor then pins what was checked.
fn path_beneath(dir: &OwnedFd, name: &OsStr, dir_only: bool) -> io::Result<OwnedFd> {
    let name = cstr(name.as_bytes())?;
    // SAFETY: a valid C string and an open descriptor.
    let fd = unsafe {
        openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            O_PATH | O_NOFOLLOW | O_CLOEXEC,
        )
    };
    let file = File::from(owned(check(fd)?));
    let kind = file.metadata()?.file_type();
    if kind.is_symlink() {
        return Err(io::Error::from_raw_os_error(ELOOP));
    }
    if dir_only && !kind.is_dir() {
        return Err(io::Error::from_raw_os_error(ENOTDIR));
    }
    Ok(OwnedFd::from(file))
}

/// `fd` as a File if it is a regular file (a directory is `EISDIR`), in blocking mode again.
fn regular(fd: OwnedFd) -> io::Result<File> {
    let file = File::from(fd);
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::from_raw_os_error(EISDIR));
    }
    if !meta.is_file() {
        return Err(not_regular());
    }
    let fd = file.as_raw_fd();
    // SAFETY: plain fcntl calls on an open descriptor.
    unsafe {
        let flags = fcntl(fd, F_GETFL);
        if flags >= 0 {
            fcntl(fd, F_SETFL, flags & !O_NONBLOCK);
        }
    }
    Ok(file)
}

/// The owner and mode of `old` on `file`, before anything is written to it. A process that
/// may not give files away (not root) keeps its own: `EPERM` is not an error.
fn keep_owner_and_mode(file: &File, old: &Metadata) -> io::Result<()> {
    let now = file.metadata()?;
    if (now.uid(), now.gid()) != (old.uid(), old.gid()) {
        // SAFETY: fchown on an open descriptor.
        let done = unsafe { fchown(file.as_raw_fd(), old.uid(), old.gid()) };
        if done < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(EPERM) {
                return Err(err);
            }
        }
    }
    // After fchown, which clears set-id bits: the mode goes on last.
    file.set_permissions(Permissions::from_mode(old.mode() & 0o7777))
}

/// `.NAME.turn-XXXXXXXXXX.tmp` with ten random letters and digits; NAME cut to 64 chars so
/// the whole stays a valid file name.
fn temp_name(name: &OsStr) -> OsString {
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    let mut bits = hasher.finish();
    let random: String = (0..10)
        .map(|_| {
            let c = ALPHABET[(bits % 62) as usize] as char;
            bits /= 62;
            c
        })
        .collect();
    let shown: String = name.to_string_lossy().chars().take(64).collect();
    OsString::from(format!(".{shown}.turn-{random}.tmp"))
}

/// Whether `O_TMPFILE` may be tried (tests turn it off to try the named temp files).
#[cfg(not(test))]
fn tmpfile_allowed() -> bool {
    true
}

#[cfg(test)]
fn tmpfile_allowed() -> bool {
    !tests::NO_TMPFILE.with(std::cell::Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        pub static NO_TMPFILE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    use std::fs;
    use std::io::{Read, Write};
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    struct Tree {
        root: PathBuf,
    }

    impl Tree {
        fn new(tag: &str) -> Tree {
            let root =
                std::env::temp_dir().join(format!("turn-fsafe-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&root);
            fs::create_dir_all(root.join("ws/sub")).unwrap();
            fs::create_dir_all(root.join("outside")).unwrap();
            fs::write(root.join("ws/sub/f"), "inside").unwrap();
            fs::write(root.join("outside/f"), "outside").unwrap();
            Tree { root }
        }

        fn ws(&self) -> Dir {
            Dir::open(&self.root.join("ws")).unwrap()
        }

        fn path(&self, rel: &str) -> PathBuf {
            self.root.join(rel)
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.root);
        }
    }

    fn read(file: io::Result<File>) -> String {
        let mut text = String::new();
        file.unwrap().read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn opens_beneath_and_refuses_symlinks_anywhere_in_the_path() {
        let tree = Tree::new("links");
        symlink(tree.path("outside"), tree.path("ws/out")).unwrap();
        symlink(tree.path("outside/f"), tree.path("ws/f-out")).unwrap();
        symlink("sub", tree.path("ws/inside")).unwrap();
        let ws = tree.ws();
        assert_eq!(read(ws.open_read(Path::new("sub/f"))), "inside");
        assert_eq!(read(ws.open_read(Path::new("./sub/./f"))), "inside");
        for rel in ["out/f", "f-out", "inside/f"] {
            let err = ws.open_read(Path::new(rel)).unwrap_err();
            assert!(is_symlink(&err), "{rel}: {err}");
            let flags = O_RDONLY | O_NONBLOCK;
            let err = ws.open_walking(Path::new(rel), flags, 0).unwrap_err();
            assert!(is_symlink(&err), "walk {rel}: {err}");
        }
        for rel in ["../outside/f", "/etc/hostname", "sub/../../outside/f"] {
            assert!(ws.open_read(Path::new(rel)).is_err(), "{rel}");
        }
        assert_eq!(
            ws.open_read(Path::new("sub")).unwrap_err().raw_os_error(),
            Some(EISDIR)
        );
        let walked = ws
            .open_walking(Path::new("sub/f"), O_RDONLY | O_NONBLOCK, 0)
            .unwrap();
        assert_eq!(read(regular(walked)), "inside");
    }

    #[test]
    fn fifos_and_devices_are_refused_without_blocking() {
        let tree = Tree::new("fifo");
        let fifo = tree.path("ws/pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let err = tree.ws().open_read(Path::new("pipe")).unwrap_err();
        assert!(is_not_regular(&err), "{err}");
        let err = tree.ws().open_append(Path::new("pipe"), Create::IfMissing);
        assert!(is_not_regular(&err.unwrap_err()));
        let dev = Dir::open(Path::new("/dev")).unwrap();
        assert!(is_not_regular(
            &dev.open_read(Path::new("zero")).unwrap_err()
        ));
    }

    #[test]
    fn dirs_are_created_without_following_symlinks() {
        let tree = Tree::new("mkdir");
        symlink(tree.path("outside"), tree.path("ws/link")).unwrap();
        let ws = tree.ws();
        ws.create_dirs(Path::new("a/b/c"), 0o700).unwrap();
        assert!(tree.path("ws/a/b/c").is_dir());
        let mode = fs::metadata(tree.path("ws/a/b")).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let err = ws.create_dirs(Path::new("link/new"), 0o700).unwrap_err();
        assert!(is_symlink(&err), "{err}");
        assert!(!tree.path("outside/new").exists());
    }

    #[test]
    fn replace_keeps_owner_mode_and_leaves_no_temp_file() {
        for named in [false, true] {
            NO_TMPFILE.with(|no| no.set(named));
            let tree = Tree::new(if named { "replace-named" } else { "replace" });
            let path = tree.path("ws/sub/secret");
            fs::write(&path, "old").unwrap();
            fs::set_permissions(&path, Permissions::from_mode(0o600)).unwrap();
            // As root, the file belongs to someone else (nobody), as a user's file would.
            let root = fs::metadata(&path).unwrap().uid() == 0;
            if root {
                std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
            }
            let owner = fs::metadata(&path).unwrap().uid();
            let sub = tree.ws().open_dir(Path::new("sub")).unwrap();
            let existing = sub.open_read(Path::new("secret")).unwrap();
            let seen = std::cell::Cell::new((0, 0));
            sub.replace(OsStr::new("secret"), Some(&existing), |out| {
                // Before the first byte the temp file already has the old file's owner and mode.
                let meta = out.get_ref().metadata()?;
                seen.set((meta.mode() & 0o7777, meta.uid()));
                out.write_all(b"new")
            })
            .unwrap();
            assert_eq!(seen.get(), (0o600, owner));
            assert_eq!(fs::read_to_string(&path).unwrap(), "new");
            let meta = fs::metadata(&path).unwrap();
            assert_eq!((meta.mode() & 0o777, meta.uid()), (0o600, owner));
            sub.replace(OsStr::new("fresh"), None, |out| out.write_all(b"x"))
                .unwrap();
            let names: Vec<_> = fs::read_dir(tree.path("ws/sub")).unwrap().collect();
            assert_eq!(
                names.len(),
                3,
                "f, secret, fresh and no temp file: {names:?}"
            );
            NO_TMPFILE.with(|no| no.set(false));
        }
    }

    #[test]
    fn while_the_content_is_written_the_temp_file_has_no_name() {
        // So a kill at that moment (the long part of a write) leaves nothing behind.
        let tree = Tree::new("nameless");
        let sub = tree.ws().open_dir(Path::new("sub")).unwrap();
        let existing = sub.open_read(Path::new("f")).unwrap();
        let during = std::cell::RefCell::new(Vec::new());
        sub.replace(OsStr::new("f"), Some(&existing), |out| {
            *during.borrow_mut() = fs::read_dir(tree.path("ws/sub")).unwrap().collect();
            out.write_all(b"new")
        })
        .unwrap();
        assert_eq!(during.borrow().len(), 1, "only f: {:?}", during.borrow());
    }

    #[test]
    fn a_failed_fill_changes_nothing_and_leaves_nothing() {
        let tree = Tree::new("fail");
        let sub = tree.ws().open_dir(Path::new("sub")).unwrap();
        let existing = sub.open_read(Path::new("f")).unwrap();
        let err = sub
            .replace(OsStr::new("f"), Some(&existing), |out| {
                out.write_all(b"half")?;
                Err(io::Error::other("disk full"))
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(fs::read_to_string(tree.path("ws/sub/f")).unwrap(), "inside");
        assert_eq!(fs::read_dir(tree.path("ws/sub")).unwrap().count(), 1);
    }

    #[test]
    fn hard_links_are_kept() {
        let tree = Tree::new("links2");
        fs::hard_link(tree.path("ws/sub/f"), tree.path("outside/twin")).unwrap();
        let sub = tree.ws().open_dir(Path::new("sub")).unwrap();
        let existing = sub.open_read(Path::new("f")).unwrap();
        sub.replace(OsStr::new("f"), Some(&existing), |out| {
            out.write_all(b"edited")
        })
        .unwrap();
        assert_eq!(
            fs::read_to_string(tree.path("outside/twin")).unwrap(),
            "edited"
        );
        assert_eq!(fs::metadata(tree.path("ws/sub/f")).unwrap().nlink(), 2);
        assert_eq!(fs::read_dir(tree.path("ws/sub")).unwrap().count(), 1);
    }

    #[test]
    fn a_file_swapped_before_the_rename_is_left_alone() {
        let tree = Tree::new("swap");
        let sub = tree.ws().open_dir(Path::new("sub")).unwrap();
        let existing = sub.open_read(Path::new("f")).unwrap();
        let err = sub
            .replace(OsStr::new("f"), Some(&existing), |out| {
                fs::remove_file(tree.path("ws/sub/f"))?;
                symlink(tree.path("outside/f"), tree.path("ws/sub/f"))?;
                out.write_all(b"pwned")
            })
            .unwrap_err();
        assert!(err.to_string().contains("replaced"), "{err}");
        assert_eq!(
            fs::read_to_string(tree.path("outside/f")).unwrap(),
            "outside"
        );
        assert!(fs::symlink_metadata(tree.path("ws/sub/f"))
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn named_temp_files_are_unpredictable() {
        let (a, b) = (temp_name(OsStr::new("x.rs")), temp_name(OsStr::new("x.rs")));
        assert_ne!(a, b);
        assert!(a.to_string_lossy().starts_with(".x.rs.turn-"));
        let long = temp_name(OsStr::new(&"n".repeat(255)));
        assert!(long.len() < 100);
    }

    /// Swaps `a` and `b` atomically (renameat2 RENAME_EXCHANGE), so both names always exist.
    /// Through `syscall`: musl has no renameat2 wrapper.
    pub(crate) fn exchange(a: &Path, b: &Path) -> io::Result<()> {
        #[cfg(target_arch = "x86_64")]
        const SYS_RENAMEAT2: c_long = 316;
        #[cfg(target_arch = "aarch64")]
        const SYS_RENAMEAT2: c_long = 276;
        let (a, b) = (
            cstr(a.as_os_str().as_bytes())?,
            cstr(b.as_os_str().as_bytes())?,
        );
        // SAFETY: valid C strings; RENAME_EXCHANGE is 2.
        let done = unsafe {
            syscall(
                SYS_RENAMEAT2,
                AT_FDCWD as c_long,
                a.as_ptr(),
                AT_FDCWD as c_long,
                b.as_ptr(),
                2 as c_long,
            )
        };
        check(done as c_int).map(|_| ())
    }

    #[test]
    fn racing_symlink_flips_never_lead_outside() {
        let tree = Tree::new("race");
        fs::create_dir(tree.path("ws/d")).unwrap();
        symlink(tree.path("outside"), tree.path("ws/evil")).unwrap();
        let root = tree.root.clone();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        // Flips ws/d between a real directory and a symlink leading outside.
        let flipper = std::thread::spawn(move || {
            let (d, evil) = (root.join("ws/d"), root.join("ws/evil"));
            let mut flips = 0;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                exchange(&d, &evil).unwrap();
                flips += 1;
                // Each state held a moment, so the loop meets both, and the flips between.
                std::thread::sleep(std::time::Duration::from_micros(10 * (flips % 8)));
            }
            flips
        });
        let ws = tree.ws();
        let mut landed = 0;
        // 300 tries, and more (within a bound) until some met d as a directory.
        for i in 0..5000 {
            if i >= 300 && landed > 0 {
                break;
            }
            let name = format!("w{i}");
            if let Ok(dir) = ws.open_dir(Path::new("d")) {
                let done = dir.replace(OsStr::new(&name), None, |out| out.write_all(b"x"));
                landed += usize::from(done.is_ok());
            }
            let flags = O_WRONLY | O_CREAT | O_NONBLOCK;
            let _ = ws.open_walking(&Path::new("d").join(format!("v{i}")), flags, 0o644);
            let _ = ws.open_append(&Path::new("d").join(format!("u{i}")), Create::New);
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(flipper.join().unwrap() > 0);
        let outside: Vec<_> = fs::read_dir(tree.path("outside")).unwrap().collect();
        assert_eq!(outside.len(), 1, "only f: {outside:?}");
        assert!(
            landed > 0,
            "some writes went through while d was a directory"
        );
    }
}
