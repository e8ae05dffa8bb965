//! The file work of checkpoints: listing the workspace (`scan`), keeping a file's bytes in the
//! store (`keep`: reflinked with `FICLONE` where the filesystem shares extents, else copied;
//! never hard-linked, which an in-place write would change too), comparing kept bytes, and
//! putting entries back (`put_back`).
//!
//! The scan walks from a directory descriptor one name at a time, each directory opened
//! `O_NOFOLLOW` beneath the last, with `getdents64` and `statx(AT_SYMLINK_NOFOLLOW)`: about
//! one system call per file, no symlink followed, no other filesystem entered (a mount point
//! inside the workspace is left out). Files are read and written only through
//! `sandbox::fsafe`: beneath the workspace, no symlink followed, regular files only.

use super::ignore::{self, Rules};
use super::manifest::{Entry, Kind, Tree};
use super::watch::Watcher;
use crate::sandbox::fsafe::Dir;
use std::collections::HashSet;
use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::raw::{c_char, c_int, c_long, c_ulong};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::sandbox::sys::nr::{GETDENTS64, STATX};
use crate::sandbox::sys::{
    openat, syscall, AT_FDCWD, O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_RDONLY,
};

extern "C" {
    fn readlinkat(dirfd: c_int, path: *const c_char, buf: *mut c_char, size: usize) -> isize;
    fn ioctl(fd: c_int, request: c_ulong, ...) -> c_int;
}

const AT_SYMLINK_NOFOLLOW: c_int = 0x100;
const AT_NO_AUTOMOUNT: c_int = 0x800;
const STATX_BASIC_STATS: u32 = 0x7ff;
/// `_IOW(0x94, 9, int)`: share the source's extents (btrfs, XFS, bcachefs, OCFS2).
const FICLONE: c_ulong = 0x4004_9409;

const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

/// What a scan found, and what it left out that the user should hear about.
pub struct Scan {
    /// In walk order (`manifest::walk_order`) for a full scan.
    pub entries: Vec<(String, Entry)>,
    /// Names that are not UTF-8, which checkpoints cannot name (left out).
    pub unnamed: usize,
}

/// What the walk needs besides the tree it fills.
struct Walk<'a> {
    /// The workspace's filesystem: another one is a mount point, left out.
    dev: (u32, u32),
    /// The checkpoint store, when it is inside the workspace.
    skip: Option<(u32, u32, u64)>,
    max_files: usize,
    rules: Vec<Rules>,
    /// In walk order; the tree is built from them at the end, at once.
    entries: Vec<(String, Entry)>,
    unnamed: usize,
    /// Watches every directory the walk lists anew, and says which ones it may trust.
    watcher: Option<&'a mut Watcher>,
    partial: Option<Partial<'a>>,
    /// The directories not trusted, and those on the way to them: walked again.
    needed: HashSet<String>,
    /// Where directories are read (`list`).
    buf: Vec<u8>,
    /// The inode of each name stat'ed that is a file with more than one hard link.
    linked: Vec<u64>,
}

/// A scan after an earlier one in this process: the tree it found, and the directories the
/// watcher says changed since (`watch::Changed::Dirs`). Other directories, trusted by the
/// watcher, keep their entries without a `statx`.
pub struct Partial<'a> {
    pub old: &'a Tree,
    pub dirty: &'a HashSet<String>,
}

/// Every tracked entry beneath `workspace` (see `ignore`). More than `max_files` entries is
/// an error: checkpoints of such a tree would cost more than they are worth. With a watcher,
/// every directory listed is watched first; with `partial` too, only the directories it
/// cannot trust are listed and stat'ed.
pub fn scan(
    workspace: &Path,
    skip: Option<&Path>,
    max_files: usize,
    mut watcher: Option<&mut Watcher>,
    partial: Option<Partial>,
) -> io::Result<Scan> {
    let path = CString::new(workspace.as_os_str().as_bytes())?;
    // SAFETY: a valid C string.
    let root = fd(unsafe { openat(AT_FDCWD, path.as_ptr(), O_RDONLY | O_DIRECTORY | O_CLOEXEC) })?;
    let top = statx(&root, c".")?;
    let skip_id = match skip.map(std::fs::metadata) {
        Some(Ok(meta)) => Some((major(meta.dev()), minor(meta.dev()), meta.ino())),
        _ => None,
    };
    let partial = partial.filter(|_| watcher.as_ref().is_some_and(|w| w.knows("", top.ino)));
    let again = partial.is_some();
    let fresh = partial.is_none();
    let mut needed = HashSet::new();
    if let (Some(p), Some(w)) = (&partial, &watcher) {
        for dir in p.dirty.iter().chain(&w.linked) {
            let mut dir = dir.as_str();
            while needed.insert(dir.to_string()) && !dir.is_empty() {
                dir = dir.rfind('/').map_or("", |i| &dir[..i]);
            }
        }
    }
    if let Some(w) = watcher.as_deref_mut().filter(|_| fresh) {
        w.add(&root, "", top.ino);
    }
    let mut walk = Walk {
        dev: (top.dev_major, top.dev_minor),
        skip: skip_id,
        max_files,
        rules: Vec::new(),
        entries: Vec::new(),
        unnamed: 0,
        watcher,
        partial,
        needed,
        buf: vec![0; 32 * 1024],
        linked: Vec::new(),
    };
    walk.again(&root, "", fresh)?;
    // A file with another name kept without a statx may have changed through the name that
    // was stat'ed (a hard link made during the turn is told to its own directory only).
    if again && !walk.linked.is_empty() {
        walk.linked.sort_unstable();
        let named = walk.entries.iter();
        let named = named.filter(|(_, e)| walk.linked.binary_search(&e.ino).is_ok());
        if named.count() > walk.linked.len() {
            return scan(workspace, skip, max_files, walk.watcher, None);
        }
    }
    Ok(Scan {
        entries: walk.entries,
        unnamed: walk.unnamed,
    })
}

fn major(dev: u64) -> u32 {
    (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff)) as u32
}

fn minor(dev: u64) -> u32 {
    (((dev >> 12) & 0xffff_ff00) | (dev & 0xff)) as u32
}

/// `base/name`, or `name` at the top (built by hand: once per entry of every scan).
fn join(base: &str, name: &str) -> String {
    let mut rel = String::with_capacity(base.len() + 1 + name.len());
    if !base.is_empty() {
        rel.push_str(base);
        rel.push('/');
    }
    rel.push_str(name);
    rel
}

impl Walk<'_> {
    /// The directory `dir` at `base`, its `names` listed; `fresh`: nothing in it is trusted.
    fn dir(&mut self, dir: &OwnedFd, base: &str, names: &Names, fresh: bool) -> io::Result<()> {
        let pushed = names.any(|n| n.to_bytes() == b".gitignore") && self.push_rules(dir, base);
        let result = self.entries(dir, base, names, fresh);
        if pushed {
            self.rules.pop();
        }
        result
    }

    /// The directory `dir` at `base`, as the last scan found it unless it is `fresh` or not
    /// trusted; `dir`'s own entry is its parent's business.
    fn again(&mut self, dir: &OwnedFd, base: &str, fresh: bool) -> io::Result<()> {
        if !fresh && self.trusted(base) {
            return self.kept(dir, base);
        }
        let names = list(dir, &mut self.buf)?;
        self.dir(dir, base, &names, fresh)
    }

    /// A directory the watcher trusts: its entries as the last scan found them, with no
    /// listing and no `statx`; only the directories on the way to one it does not trust are
    /// opened (with the `.gitignore` rules on that way).
    fn kept(&mut self, dir: &OwnedFd, base: &str) -> io::Result<()> {
        let Some(old) = self.partial.as_ref().map(|p| p.old) else {
            return Ok(());
        };
        let prefix = match base {
            "" => String::new(),
            _ => format!("{base}/"),
        };
        let mut below: Vec<&String> = Vec::new();
        let subtree = old
            .range::<String, _>(&prefix..)
            .take_while(|(p, _)| p.starts_with(&prefix));
        for (path, entry) in subtree {
            let under = |dir: &&String| {
                path.len() > dir.len()
                    && path.starts_with(dir.as_str())
                    && path.as_bytes()[dir.len()] == b'/'
            };
            if below.iter().any(under) {
                continue;
            }
            if self.entries.len() >= self.max_files {
                return Err(too_many(self.max_files));
            }
            self.entries.push((path.clone(), entry.clone()));
            if entry.kind == Kind::Dir && self.needed.contains(path) {
                below.push(path);
            }
        }
        if below.is_empty() {
            return Ok(());
        }
        let gitignore = format!("{prefix}.gitignore");
        let pushed =
            old.get(&gitignore).is_some_and(|e| e.kind == Kind::File) && self.push_rules(dir, base);
        let mut result = Ok(());
        for path in below {
            let Ok(name) = CString::new(&path[prefix.len()..]) else {
                continue;
            };
            let Ok(sub) = subdir(dir, &name) else {
                continue;
            };
            result = self.again(&sub, path, false);
            if result.is_err() {
                break;
            }
        }
        if pushed {
            self.rules.pop();
        }
        result
    }

    /// Reads the `.gitignore` in `dir` (at `base`) onto the rules in force; false if there is
    /// none to read (then nothing is pushed).
    fn push_rules(&mut self, dir: &OwnedFd, base: &str) -> bool {
        read_small(dir, c".gitignore")
            .map(|text| self.rules.push(Rules::parse(base, &text)))
            .is_some()
    }

    /// Whether the directory `base` is as the last scan left it, by the watcher's word.
    fn trusted(&self, base: &str) -> bool {
        match (&self.partial, &self.watcher) {
            (Some(p), Some(w)) => {
                w.healthy() && !p.dirty.contains(base) && !w.linked.contains(base)
            }
            _ => false,
        }
    }

    fn entries(&mut self, dir: &OwnedFd, base: &str, names: &Names, fresh: bool) -> io::Result<()> {
        if let Some(w) = self.watcher.as_deref_mut() {
            w.linked.remove(base);
        }
        // In name order: the walk then comes nearly in path order, and the tree is built from
        // it with little sorting.
        let mut sorted: Vec<&CStr> = names.iter().collect();
        sorted.sort_unstable();
        for name in sorted {
            let Ok(text) = std::str::from_utf8(name.to_bytes()) else {
                self.unnamed += 1;
                continue;
            };
            if ignore::always(text) {
                continue;
            }
            let rel = join(base, text);
            let Ok(st) = statx(dir, name) else { continue };
            let kind = match st.mode & S_IFMT {
                S_IFREG => Kind::File,
                S_IFLNK => Kind::Link,
                S_IFDIR => Kind::Dir,
                _ => continue, // FIFOs, sockets, devices: not files to restore
            };
            if ignore::ignored(&self.rules, &rel, kind == Kind::Dir) {
                continue;
            }
            if kind == Kind::Dir
                && ((st.dev_major, st.dev_minor) != self.dev
                    || self.skip == Some((st.dev_major, st.dev_minor, st.ino)))
            {
                continue;
            }
            if kind == Kind::File && st.nlink > 1 {
                self.linked.push(st.ino);
                if let Some(w) = self.watcher.as_deref_mut() {
                    w.linked.insert(base.to_string());
                }
            }
            let mut entry = Entry {
                kind,
                mode: st.mode & 0o7777,
                size: st.size,
                mtime: st.mtime,
                ctime: st.ctime,
                ino: st.ino,
                blob: None,
                target: None,
            };
            if self.entries.len() >= self.max_files {
                return Err(too_many(self.max_files));
            }
            match entry.kind {
                Kind::File => {}
                Kind::Link => match link_target(dir, name) {
                    Some(target) => entry.target = Some(target),
                    None => {
                        self.unnamed += 1;
                        continue;
                    }
                },
                Kind::Dir => {
                    let Ok(sub) = subdir(dir, name) else {
                        continue;
                    };
                    // A directory not known by this inode was made or swapped in since.
                    let fresh_below =
                        fresh || !self.watcher.as_ref().is_some_and(|w| w.knows(&rel, st.ino));
                    if let Some(w) = self.watcher.as_deref_mut().filter(|_| fresh_below) {
                        w.add(&sub, &rel, st.ino);
                    }
                    let was_dir = self.partial.as_ref().and_then(|p| p.old.get(&rel));
                    if !fresh_below
                        && was_dir.is_some_and(|e| e.kind == Kind::Dir)
                        && self.trusted(&rel)
                    {
                        (entry.size, entry.mtime, entry.ctime, entry.ino) = (0, 0, 0, 0);
                        self.entries.push((rel.clone(), entry));
                        self.kept(&sub, &rel)?;
                        continue;
                    }
                    // A directory turn may not read is not tracked (nor restored).
                    let Ok(names) = list(&sub, &mut self.buf) else {
                        continue;
                    };
                    if names.any(|n| ignore::MARKERS.iter().any(|m| n.to_bytes() == m.as_bytes())) {
                        continue;
                    }
                    (entry.size, entry.mtime, entry.ctime, entry.ino) = (0, 0, 0, 0);
                    self.entries.push((rel.clone(), entry));
                    self.dir(&sub, &rel, &names, fresh_below)?;
                    continue;
                }
            }
            self.entries.push((rel, entry));
        }
        Ok(())
    }
}

/// The directory `name` in `dir`; O_NOFOLLOW: a directory swapped for a symlink since it was
/// seen is refused.
fn subdir(dir: &OwnedFd, name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: a valid C string and an open descriptor.
    fd(unsafe {
        openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
        )
    })
}

fn too_many(max_files: usize) -> io::Error {
    io::Error::other(format!(
        "the workspace has more than {max_files} files to track (TURN_CHECKPOINT_MAX_FILES)"
    ))
}

fn fd(result: c_int) -> io::Result<OwnedFd> {
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(result) })
}

/// A directory's names, each ended by its NUL, in one buffer (no allocation per name).
struct Names(Vec<u8>);

impl Names {
    fn iter(&self) -> impl Iterator<Item = &CStr> {
        self.0
            .split_inclusive(|&b| b == 0)
            .filter_map(|n| CStr::from_bytes_with_nul(n).ok())
    }

    fn any(&self, test: impl Fn(&CStr) -> bool) -> bool {
        self.iter().any(test)
    }
}

/// The names in a directory but `.` and `..`, read through `buf` (one for a whole walk: a
/// fresh one each time costs its page faults).
fn list(dir: &OwnedFd, buf: &mut [u8]) -> io::Result<Names> {
    let mut names = Vec::new();
    loop {
        // SAFETY: buf is writable for its length; the descriptor is an open directory.
        let n = unsafe {
            syscall(
                GETDENTS64,
                dir.as_raw_fd() as c_long,
                buf.as_mut_ptr(),
                buf.len() as c_long,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Ok(Names(names));
        }
        let mut at = 0usize;
        while at < n as usize {
            let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
            let name = CStr::from_bytes_until_nul(&buf[at + 19..at + reclen])
                .map_err(|_| io::Error::other("a directory entry without its end"))?;
            if name.to_bytes() != b"." && name.to_bytes() != b".." {
                names.extend_from_slice(name.to_bytes_with_nul());
            }
            at += reclen;
        }
    }
}

struct Stat {
    mode: u32,
    nlink: u32,
    ino: u64,
    size: u64,
    mtime: i64,
    ctime: i64,
    dev_major: u32,
    dev_minor: u32,
}

/// `statx` of `name` in `dir`, not following a symlink there.
fn statx(dir: &OwnedFd, name: &CStr) -> io::Result<Stat> {
    let mut buf = [0u64; 32]; // struct statx is 256 bytes
                              // SAFETY: buf is 256 writable bytes, as the kernel's struct statx; name is a C string.
    let done = unsafe {
        syscall(
            STATX,
            dir.as_raw_fd() as c_long,
            name.as_ptr(),
            (AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) as c_long,
            STATX_BASIC_STATS as c_long,
            buf.as_mut_ptr(),
        )
    };
    if done < 0 {
        return Err(io::Error::last_os_error());
    }
    let bytes: &[u8; 256] = unsafe { &*(buf.as_ptr() as *const [u8; 256]) };
    let u32_at = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap());
    let time_at = |at: usize| (u64_at(at) as i64) * 1_000_000_000 + i64::from(u32_at(at + 8));
    Ok(Stat {
        mode: u32::from(u16::from_ne_bytes([bytes[28], bytes[29]])),
        nlink: u32_at(16),
        ino: u64_at(32),
        size: u64_at(40),
        ctime: time_at(96),
        mtime: time_at(112),
        dev_major: u32_at(136),
        dev_minor: u32_at(140),
    })
}

/// A symlink's target, when it is UTF-8.
fn link_target(dir: &OwnedFd, name: &CStr) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    // SAFETY: buf is writable for its length; name is a C string.
    let n = unsafe {
        readlinkat(
            dir.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr() as *mut c_char,
            buf.len(),
        )
    };
    if n < 0 || n as usize >= buf.len() {
        return None;
    }
    buf.truncate(n as usize);
    String::from_utf8(buf).ok()
}

/// A `.gitignore` in `dir`: a regular file, at most 1 MB, not followed if a symlink.
fn read_small(dir: &OwnedFd, name: &CStr) -> Option<String> {
    // SAFETY: a valid C string and an open descriptor.
    let file = File::from(
        fd(unsafe {
            openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
            )
        })
        .ok()?,
    );
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(1 << 20).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The entry `entry` describes, updated from the file as opened now, and its bytes copied to
/// `blob` (a new file): reflinked where the filesystem can, else copied. The entry's identity
/// is taken before the bytes are read, so a change during the copy shows at the next scan.
pub fn keep(root: &Dir, rel: &str, entry: &mut Entry, blob: &Path) -> io::Result<()> {
    let mut source = root.open_read(Path::new(rel))?;
    identity(&source, entry)?;
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(blob)?;
    // SAFETY: both descriptors are open; FICLONE takes the source descriptor as its argument.
    let cloned = unsafe { ioctl(out.as_raw_fd(), FICLONE, source.as_raw_fd()) } == 0;
    let copied = match cloned {
        true => Ok(()),
        false => io::copy(&mut source, &mut out).map(|_| ()),
    };
    if copied.is_err() {
        let _ = std::fs::remove_file(blob);
    }
    copied
}

/// The entry's identity from an open file.
fn identity(file: &File, entry: &mut Entry) -> io::Result<()> {
    let meta = file.metadata()?;
    entry.mode = meta.mode() & 0o7777;
    entry.size = meta.size();
    entry.mtime = meta.mtime() * 1_000_000_000 + meta.mtime_nsec();
    entry.ctime = meta.ctime() * 1_000_000_000 + meta.ctime_nsec();
    entry.ino = meta.ino();
    Ok(())
}

/// Whether two readers give the same bytes.
pub fn same_bytes(mut a: impl Read, mut b: impl Read) -> bool {
    let (mut x, mut y) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let n = match read_full(&mut a, &mut x) {
            Ok(n) => n,
            Err(_) => return false,
        };
        match read_full(&mut b, &mut y[..n.max(1)]) {
            Ok(m) if m == n && x[..n] == y[..n] => {}
            _ => return false,
        }
        if n == 0 {
            return true;
        }
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Whether the workspace file at `rel` holds the bytes of `blob`.
pub fn same_as_kept(root: &Dir, rel: &str, blob: &Path) -> bool {
    match (root.open_read(Path::new(rel)), File::open(blob)) {
        (Ok(a), Ok(b)) => same_bytes(a, b),
        _ => false,
    }
}

/// The directory holding `rel` and its last name.
fn parent<'r>(root: &Dir, rel: &'r str, create: bool) -> io::Result<(Dir, &'r OsStr)> {
    let (up, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    let dir = match create {
        true => root.create_dirs(Path::new(up), 0o755)?,
        false => root.open_dir(Path::new(up))?,
    };
    Ok((dir, OsStr::new(name)))
}

/// Removes what is at `rel` (a file, symlink or empty directory); gone already is fine.
pub fn remove(root: &Dir, rel: &str) -> io::Result<()> {
    let (dir, name) = match parent(root, rel, false) {
        Ok(found) => found,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let is_dir = match dir.metadata(Path::new(name)) {
        Ok(meta) => meta.is_dir(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    dir.remove(name, is_dir)
}

/// Puts `entry` at `rel`, replacing what is there (a directory only when empty): a file's
/// bytes from `blob`, its mode; a symlink; a directory (its mode is set by `set_dir_mode`,
/// last, so a read-only one can be filled first).
pub fn put_back(root: &Dir, rel: &str, entry: &Entry, blob: Option<&Path>) -> io::Result<()> {
    let (dir, name) = parent(root, rel, true)?;
    let now = dir.metadata(Path::new(name)).ok();
    let kind_now = now.as_ref().map(|m| {
        let t = m.file_type();
        match () {
            _ if t.is_symlink() => Kind::Link,
            _ if t.is_dir() => Kind::Dir,
            _ if t.is_file() => Kind::File,
            _ => Kind::Link, // anything else is removed like a symlink
        }
    });
    if kind_now.is_some_and(|k| k != entry.kind) || (entry.kind == Kind::Link && now.is_some()) {
        dir.remove(name, kind_now == Some(Kind::Dir))?;
    }
    match entry.kind {
        Kind::Dir => {
            if kind_now != Some(Kind::Dir) {
                root.create_dirs(Path::new(rel), 0o700)?;
            }
            Ok(())
        }
        Kind::Link => dir.symlink(OsStr::new(entry.target.as_deref().unwrap_or("")), name),
        Kind::File => {
            let blob = blob.ok_or_else(|| io::Error::other("its content was not kept"))?;
            let mut source = File::open(blob)?;
            let existing = match kind_now {
                Some(Kind::File) => dir.open_read(Path::new(name)).ok(),
                _ => None,
            };
            dir.replace(name, existing.as_ref(), |out| {
                io::copy(&mut source, out).map(|_| ())
            })?;
            let file = dir.open_read(Path::new(name))?;
            file.set_permissions(std::fs::Permissions::from_mode(entry.mode))
        }
    }
}

/// Sets a directory's mode (after its contents are back).
pub fn set_dir_mode(root: &Dir, rel: &str, mode: u32) -> io::Result<()> {
    root.open_dir(Path::new(rel))?
        .set_permissions(std::fs::Permissions::from_mode(mode))
}

/// The entry at `rel` as it is now, for the index after a change turn made itself.
pub fn entry_now(root: &Dir, rel: &str) -> io::Result<Entry> {
    let meta = root.metadata(Path::new(rel))?;
    let t = meta.file_type();
    let kind = match () {
        _ if t.is_dir() => Kind::Dir,
        _ if t.is_symlink() => Kind::Link,
        _ => Kind::File,
    };
    let mut entry = Entry {
        kind,
        mode: meta.mode() & 0o7777,
        size: meta.size(),
        mtime: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
        ctime: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
        ino: meta.ino(),
        blob: None,
        target: None,
    };
    if kind == Kind::Dir {
        (entry.size, entry.mtime, entry.ctime, entry.ino) = (0, 0, 0, 0);
    }
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::super::watch::{Changed, Watcher};
    use super::*;
    use std::fs;
    use std::path::PathBuf;

    fn workspace(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("turn-scan-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for dir in ["a", "b/sub"] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        for (file, text) in [("a/x", "x"), ("a/y", "y"), ("b/z", "z"), ("b/sub/w", "w")] {
            fs::write(root.join(file), text).unwrap();
        }
        root
    }

    fn dirty(watcher: &mut Watcher) -> HashSet<String> {
        match watcher.changed() {
            Changed::Dirs(dirs) => dirs,
            Changed::All => panic!("the watcher lost track"),
        }
    }

    /// The first scan with the watcher, then `change`, then a scan again: the tree found, with
    /// every entry of the first scan marked (mtime 42), so that an entry kept without a statx
    /// shows as marked.
    fn again(root: &Path, change: impl FnOnce()) -> Tree {
        let mut watcher = Watcher::new().expect("inotify");
        let mut old = scan(root, None, 1000, Some(&mut watcher), None)
            .unwrap()
            .entries
            .into_iter()
            .collect::<Tree>();
        for entry in old.values_mut().filter(|e| e.kind != Kind::Dir) {
            entry.mtime = 42;
        }
        change();
        let dirs = dirty(&mut watcher);
        let partial = Partial {
            old: &old,
            dirty: &dirs,
        };
        let tree = scan(root, None, 1000, Some(&mut watcher), Some(partial))
            .unwrap()
            .entries
            .into_iter()
            .collect::<Tree>();
        fs::remove_dir_all(root).unwrap();
        tree
    }

    fn marked(tree: &Tree, path: &str) -> bool {
        tree.get(path)
            .unwrap_or_else(|| panic!("{path} not found"))
            .mtime
            == 42
    }

    #[test]
    fn a_scan_again_stats_only_the_directories_that_changed() {
        let root = workspace("changed");
        let tree = again(&root, || {
            fs::write(root.join("b/z"), "changed").unwrap();
            fs::write(root.join("b/sub/new"), "new").unwrap();
        });
        assert!(marked(&tree, "a/x") && marked(&tree, "a/y"));
        assert!(!marked(&tree, "b/z") && tree["b/z"].size == 7 && !marked(&tree, "b/sub/w"));
        assert!(tree.contains_key("b/sub/new"));
        assert_eq!(tree.len(), 8);
    }

    #[test]
    fn an_unchanged_tree_is_kept_whole_and_a_mode_change_is_seen() {
        let root = workspace("unchanged");
        let tree = again(&root, || {});
        assert!(["a/x", "a/y", "b/z", "b/sub/w"]
            .iter()
            .all(|p| marked(&tree, p)));
        let root = workspace("mode");
        let tree = again(&root, || {
            fs::set_permissions(root.join("a"), fs::Permissions::from_mode(0o700)).unwrap();
        });
        assert_eq!(tree["a"].mode, 0o700);
    }

    #[test]
    fn a_renamed_or_replaced_directory_is_scanned_whole() {
        let root = workspace("renamed");
        let tree = again(&root, || {
            fs::rename(root.join("a"), root.join("c")).unwrap();
            fs::rename(root.join("b/sub"), root.join("b/old")).unwrap();
            fs::create_dir(root.join("b/sub")).unwrap();
            fs::write(root.join("b/sub/w"), "other").unwrap();
        });
        assert!(!tree.contains_key("a/x") && !marked(&tree, "c/x") && !marked(&tree, "c/y"));
        assert!(!marked(&tree, "b/sub/w") && tree["b/sub/w"].size == 5);
        assert!(!marked(&tree, "b/old/w"));
    }

    #[test]
    fn a_hard_link_made_during_the_turn_makes_the_scan_full() {
        let root = workspace("linked");
        let tree = again(&root, || {
            fs::hard_link(root.join("a/x"), root.join("b/x")).unwrap();
            fs::write(root.join("b/x"), "through the other name").unwrap();
        });
        // a/x is trusted by its directory's watch, but b/x is the same file: both are new.
        assert!(!marked(&tree, "a/x") && tree["a/x"].size == 22);
        assert!(!marked(&tree, "a/y"));
    }
}
