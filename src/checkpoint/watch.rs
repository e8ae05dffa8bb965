//! Which directories changed since the last scan, as inotify saw it, so that a scan after the
//! first one in a process lists and stats only those (`fs::scan` with `Partial`).
//!
//! Every directory a scan walks is watched before its names are read, so a change made after
//! the scan saw a file is always an event. A directory is trusted to be as the last scan left
//! it only when nothing can have changed it without an event: its watch was added by this
//! process and is alive, no event named it or a file in it, no file in it has another hard
//! link (a write through the other name is told to that name's directory only), and the queue
//! did not overflow. A `.gitignore` or a marker that changes what is tracked, an overflow, or
//! a watch that could not be added makes the next scan a full one. inotify reports changes
//! made through any mount of the same files, so commands in the sandbox's mount namespace are
//! seen as any other writer; a file changed only through a shared memory mapping is not (its
//! mtime shows at the next full scan, which treats it as a change between turns).

use super::ignore;
use std::collections::HashSet;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::raw::{c_char, c_int};

extern "C" {
    fn inotify_init1(flags: c_int) -> c_int;
    fn inotify_add_watch(fd: c_int, path: *const c_char, mask: u32) -> c_int;
}

const IN_NONBLOCK: c_int = crate::sandbox::sys::O_NONBLOCK;
const IN_CLOEXEC: c_int = crate::sandbox::sys::O_CLOEXEC;
const IN_MODIFY: u32 = 0x2;
const IN_ATTRIB: u32 = 0x4;
const IN_CLOSE_WRITE: u32 = 0x8;
const IN_MOVED_FROM: u32 = 0x40;
const IN_MOVED_TO: u32 = 0x80;
const IN_CREATE: u32 = 0x100;
const IN_DELETE: u32 = 0x200;
const IN_DELETE_SELF: u32 = 0x400;
const IN_MOVE_SELF: u32 = 0x800;
const IN_Q_OVERFLOW: u32 = 0x4000;
const IN_IGNORED: u32 = 0x8000;
const IN_ONLYDIR: u32 = 0x0100_0000;
const MASK: u32 = IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR;

/// The directories a scan may trust, and the watches that tell.
pub struct Watcher {
    events: File,
    /// By watch descriptor: the directory (relative path, "" for the workspace) it was added
    /// as, and its inode then.
    dirs: Vec<Option<(String, u64)>>,
    /// Each watched directory as `"INODE PATH"`: a directory found under the same name with
    /// another inode was replaced, and nothing beneath it is trusted.
    inodes: HashSet<String>,
    /// Directories holding a file with more than one hard link: always listed again.
    pub linked: HashSet<String>,
    /// A watch could not be added, or events were lost: the next scan must be a full one.
    broken: bool,
}

/// What changed since the last scan.
pub enum Changed {
    /// Anything may have: scan it all.
    All,
    /// Only these directories' names and files (relative paths).
    Dirs(HashSet<String>),
}

impl Watcher {
    /// A new inotify instance, or None where there is none to have (the scans stay full).
    pub fn new() -> Option<Watcher> {
        // SAFETY: no pointers; the result is checked.
        let fd = unsafe { inotify_init1(IN_NONBLOCK | IN_CLOEXEC) };
        (fd >= 0).then(|| Watcher {
            // SAFETY: the kernel just returned this descriptor, and nothing else owns it.
            events: File::from(unsafe { OwnedFd::from_raw_fd(fd) }),
            dirs: Vec::new(),
            inodes: HashSet::new(),
            linked: HashSet::new(),
            broken: false,
        })
    }

    /// Whether a scan may trust what the watches did not report.
    pub fn healthy(&self) -> bool {
        !self.broken
    }

    /// The directory `rel` was last watched with inode `ino`.
    pub fn knows(&self, rel: &str, ino: u64) -> bool {
        self.inodes.contains(&format!("{ino} {rel}"))
    }

    /// Watches the open directory `dir`, found at `rel` with inode `ino`; it is named through
    /// /proc/self/fd, so the watch is on that very directory whatever its path is now.
    pub fn add(&mut self, dir: &OwnedFd, rel: &str, ino: u64) {
        if self.broken {
            return;
        }
        let Ok(path) = CString::new(format!("/proc/self/fd/{}", dir.as_raw_fd())) else {
            return;
        };
        // SAFETY: a valid C string and an inotify descriptor.
        let wd = unsafe { inotify_add_watch(self.events.as_raw_fd(), path.as_ptr(), MASK) };
        if wd < 0 {
            self.broken = true;
            return;
        }
        // The same directory again (moved within the workspace) has the same watch, and the
        // name it had is no longer known by it.
        let at = wd as usize;
        if self.dirs.len() <= at {
            self.dirs.resize(at + 1, None);
        }
        if let Some((was, ino)) = self.dirs[at].replace((rel.to_string(), ino)) {
            self.inodes.remove(&format!("{ino} {was}"));
        }
        self.inodes.insert(format!("{ino} {rel}"));
    }

    /// What the events since the last call say changed. Reading them takes them.
    pub fn changed(&mut self) -> Changed {
        let mut dirty = HashSet::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match self.events.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.broken = true;
                    break;
                }
            };
            for (wd, mask, name) in parse(&buf[..n]) {
                self.event(wd, mask, name, &mut dirty);
            }
        }
        match self.broken {
            true => Changed::All,
            false => Changed::Dirs(dirty),
        }
    }

    fn event(&mut self, wd: c_int, mask: u32, name: &[u8], dirty: &mut HashSet<String>) {
        if mask & IN_Q_OVERFLOW != 0 {
            self.broken = true;
            return;
        }
        // What is tracked beneath a directory depends on these names: all is scanned again.
        let name = std::str::from_utf8(name).unwrap_or("");
        if name == ".gitignore" || ignore::MARKERS.contains(&name) {
            self.broken = true;
            return;
        }
        let Some(Some((rel, ino))) = self.dirs.get(wd as usize) else {
            return;
        };
        dirty.insert(rel.clone());
        // The directory itself changed (its mode, or it went away): its entry is its parent's.
        if name.is_empty() {
            dirty.insert(parent(rel).to_string());
        }
        if mask & IN_IGNORED != 0 {
            self.inodes.remove(&format!("{ino} {rel}"));
            self.dirs[wd as usize] = None;
        }
    }
}

/// The directory holding `rel` ("" for a top-level name and for the workspace itself).
fn parent(rel: &str) -> &str {
    rel.rfind('/').map_or("", |i| &rel[..i])
}

/// The events in a read of an inotify descriptor: (watch, mask, name without its NUL padding).
/// A truncated event ends the list.
fn parse(buf: &[u8]) -> Vec<(c_int, u32, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 16 <= buf.len() {
        let word = |i: usize| u32::from_ne_bytes(buf[at + i..at + i + 4].try_into().unwrap());
        let (wd, mask, len) = (word(0) as c_int, word(4), word(12) as usize);
        let Some(name) = buf.get(at + 16..at + 16 + len) else {
            break;
        };
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        out.push((wd, mask, &name[..end]));
        at += 16 + len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(wd: i32, mask: u32, name: &str) -> Vec<u8> {
        let mut padded = name.as_bytes().to_vec();
        if !name.is_empty() {
            padded.resize((name.len() / 16 + 1) * 16, 0);
        }
        let mut out = Vec::new();
        for word in [wd as u32, mask, 0, padded.len() as u32] {
            out.extend_from_slice(&word.to_ne_bytes());
        }
        out.extend_from_slice(&padded);
        out
    }

    fn watcher() -> Watcher {
        let mut w = Watcher::new().expect("inotify");
        w.dirs = vec![None, Some((String::new(), 1)), Some(("src".into(), 2))];
        w.dirs.push(Some(("src/deep".into(), 7)));
        w.inodes.insert("7 src/deep".into());
        w
    }

    fn dirty_after(w: &mut Watcher, events: &[Vec<u8>]) -> Option<Vec<String>> {
        let mut dirty = HashSet::new();
        for (wd, mask, name) in parse(&events.concat()) {
            w.event(wd, mask, name, &mut dirty);
        }
        let mut dirty: Vec<String> = dirty.into_iter().collect();
        dirty.sort();
        w.healthy().then_some(dirty)
    }

    #[test]
    fn events_are_read_with_their_names_and_a_cut_event_ends_the_list() {
        let mut buf = [event(2, IN_MODIFY, "a.py"), event(1, IN_CREATE, "")].concat();
        let whole = parse(&buf);
        assert_eq!(
            whole,
            vec![(2, IN_MODIFY, &b"a.py"[..]), (1, IN_CREATE, &b""[..])]
        );
        buf.extend_from_slice(&event(3, IN_DELETE, "gone.txt")[..20]);
        assert_eq!(parse(&buf).len(), 2);
    }

    #[test]
    fn a_change_in_a_directory_marks_that_directory_only() {
        let mut w = watcher();
        let got = dirty_after(
            &mut w,
            &[
                event(2, IN_MODIFY, "a.py"),
                event(2, IN_CLOSE_WRITE, "a.py"),
            ],
        );
        assert_eq!(got, Some(vec!["src".to_string()]));
    }

    #[test]
    fn a_directory_changed_itself_marks_its_parent_and_a_removed_one_is_forgotten() {
        let mut w = watcher();
        let got = dirty_after(&mut w, &[event(3, IN_ATTRIB, "")]);
        assert_eq!(got, Some(vec!["src".to_string(), "src/deep".to_string()]));
        let got = dirty_after(
            &mut w,
            &[event(3, IN_DELETE_SELF, ""), event(3, IN_IGNORED, "")],
        );
        assert_eq!(got, Some(vec!["src".to_string(), "src/deep".to_string()]));
        assert!(w.dirs[3].is_none() && !w.knows("src/deep", 7));
        assert_eq!(
            dirty_after(&mut w, &[event(3, IN_MODIFY, "x")]),
            Some(vec![])
        );
    }

    #[test]
    fn ignore_rules_markers_and_lost_events_make_the_next_scan_full() {
        for events in [
            vec![event(2, IN_CLOSE_WRITE, ".gitignore")],
            vec![event(1, IN_CREATE, "CACHEDIR.TAG")],
            vec![event(-1, IN_Q_OVERFLOW, "")],
        ] {
            let mut w = watcher();
            assert_eq!(dirty_after(&mut w, &events), None);
        }
    }

    #[test]
    fn a_real_watch_reports_a_write_in_its_directory() {
        let dir = std::env::temp_dir().join(format!("turn-watch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut w = Watcher::new().expect("inotify");
        let fd = OwnedFd::from(File::open(&dir).unwrap());
        w.add(&fd, "d", 1);
        assert!(matches!(w.changed(), Changed::Dirs(d) if d.is_empty()));
        std::fs::write(dir.join("f"), "x").unwrap();
        let changed = w.changed();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(changed, Changed::Dirs(d) if d.contains("d")));
    }
}
