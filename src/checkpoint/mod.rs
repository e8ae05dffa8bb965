//! Checkpoints: what each turn changed in the workspace, whoever changed it (the file tools or
//! the commands), and taking it back (`turn --undo`, `--restore ID`, the REPL's `/undo`).
//!
//! Before a turn's first call that may change files (any but `read_file`), the workspace is
//! scanned and the store brought up to date; after the turn, scanned again: the difference is
//! the turn's checkpoint (a turn without such a call scans nothing). No git is needed and none is touched (see
//! `ignore` for what is left out). The store lives outside the workspace, under
//! `$XDG_STATE_HOME/turn/checkpoints/<workspace>-<hash>/` (default `~/.local/state`):
//! - `index`: every tracked path as the last scan saw it, with its kept copy (`manifest`);
//! - `blobs/`: the kept copies, one per version of a file: at most one copy of the tracked
//!   tree (reflinked where the filesystem allows) plus the versions turns changed;
//! - `log.jsonl`: one record per checkpoint: its id, time, session, task, and each path's
//!   entry before and after. An undo is a checkpoint too, so a restore to the one before it
//!   takes it back.
//!
//! Unchanged files are found by their identity (size, mtime, ctime, inode, mode), not re-read.
//! An undo touches only the paths the undone checkpoints changed, and only when each is still
//! as they left it (else it names the conflicts and changes nothing, unless forced).
//!
//! The parts: `ignore` (pure) what is left out, `manifest` (pure) entries, diffs and undo
//! plans, `fs` the scan, the copies and the writes.

mod fs;
mod ignore;
mod manifest;
mod watch;

use crate::error::{Error, Result};
use crate::report::{Event, Reporter};
use crate::sandbox::fsafe::Dir;
use manifest::{Blob, Change, Entry, Kind, Refusal, Tree};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The caps, from the environment: a file bigger than `max_file` or one that would take the
/// store past `max_total` is not kept (an undo that needs it is refused); a tree with more
/// than `max_files` entries gets no checkpoints.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_file: u64,
    pub max_total: u64,
    pub max_files: usize,
}

impl Limits {
    pub fn from_env() -> Limits {
        let get = |name: &str, default: u64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(default)
        };
        Limits {
            max_file: get("TURN_CHECKPOINT_MAX_FILE", 64 << 20),
            max_total: get("TURN_CHECKPOINT_MAX_TOTAL", 2 << 30),
            max_files: get("TURN_CHECKPOINT_MAX_FILES", 100_000) as usize,
        }
    }
}

/// The store's directory for `workspace`: its name, for people, and a hash of its path.
fn store_dir(workspace: &Path) -> Option<PathBuf> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in workspace.as_os_str().as_encoded_bytes() {
        hash = (hash ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
    }
    let name: String = workspace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    Some(
        crate::state::dir()?
            .join("checkpoints")
            .join(format!("{name}-{hash:016x}")),
    )
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// One checkpoint in the log.
#[derive(Clone)]
struct Record {
    id: u64,
    /// Seconds since the epoch.
    time: u64,
    /// "turn", "undo" or "restore".
    kind: String,
    /// The session file it belongs to, as an absolute path.
    session: Option<String>,
    /// The task's first line (turns), or what was undone.
    task: String,
    /// The checkpoints an undo or restore took back.
    undid: Vec<u64>,
    changes: Vec<Change>,
}

impl Record {
    /// One line of `log.jsonl`.
    fn to_json(&self) -> Value {
        let changes: Vec<Value> = self.changes.iter().map(Change::to_json).collect();
        json!({"id": self.id, "time": self.time, "kind": self.kind, "session": self.session,
               "task": self.task, "undid": self.undid, "changes": changes})
    }

    fn from_json(value: &Value) -> Option<Record> {
        let changes = value["changes"].as_array()?;
        Some(Record {
            id: value["id"].as_u64()?,
            time: value["time"].as_u64()?,
            kind: value["kind"].as_str()?.to_string(),
            session: value["session"].as_str().map(String::from),
            task: value["task"].as_str()?.to_string(),
            undid: match value["undid"].as_array() {
                Some(ids) => ids.iter().filter_map(Value::as_u64).collect(),
                None => Vec::new(),
            },
            changes: changes
                .iter()
                .map(Change::from_json)
                .collect::<Option<_>>()?,
        })
    }
}

/// What a scan found besides the new index (`Store::refresh`).
struct Refreshed {
    notices: Vec<String>,
    gone: Vec<Blob>,
    old: Option<Tree>,
}

/// A workspace's store, its index loaded.
struct Store {
    dir: PathBuf,
    workspace: PathBuf,
    root: Dir,
    limits: Limits,
    /// The index was read (`load`): a turn that scans nothing does not read it.
    loaded: bool,
    /// The index as read, until its tree is needed (`decode`): a first scan that finds the
    /// tree as the index has it compares bytes and decodes nothing.
    index: Option<Vec<u8>>,
    /// When the index's scan started (ns), its kept bytes, and its tree.
    scanned: i64,
    stored: u64,
    tree: Tree,
    next_blob: u64,
    /// Watches the directories scanned, so that a scan after the first in this process lists
    /// only what changed; None where inotify is not to be had (every scan is then full).
    watcher: Option<watch::Watcher>,
    /// `tree` is what a scan of this process found, with the watcher healthy since.
    watched: bool,
    /// Held (`flock`) while the store is open: one turn at a time changes it.
    _lock: Option<std::fs::File>,
}

extern "C" {
    fn flock(fd: std::os::raw::c_int, operation: std::os::raw::c_int) -> std::os::raw::c_int;
}

/// The store's lock, taken without waiting: another turn (or undo) working in the same
/// workspace holds it until it ends.
fn lock(dir: &Path) -> io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    const LOCK_EX: std::os::raw::c_int = 2;
    const LOCK_NB: std::os::raw::c_int = 4;
    let file = std::fs::File::options()
        .create(true)
        .append(true)
        .open(dir.join("lock"))?;
    // SAFETY: an open descriptor; no pointers.
    match unsafe { flock(file.as_raw_fd(), LOCK_EX | LOCK_NB) } {
        0 => Ok(file),
        _ => Err(io::Error::other(
            "another turn in this workspace is using its checkpoints (one at a time)",
        )),
    }
}

impl Store {
    /// The store of `workspace`, made if new; `exclusive`: locked for this process (anything
    /// that may change it), else only read.
    fn open(workspace: &Path, exclusive: bool) -> io::Result<Store> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = store_dir(workspace)
            .ok_or_else(|| io::Error::other("neither XDG_STATE_HOME nor HOME is set"))?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir.join("blobs"))?;
        let lock = match exclusive {
            true => Some(lock(&dir)?),
            false => None,
        };
        let marker = dir.join("workspace");
        if !marker.exists() {
            std::fs::write(&marker, workspace.as_os_str().as_encoded_bytes())?;
        }
        Ok(Store {
            root: Dir::open(workspace)?,
            workspace: workspace.to_path_buf(),
            limits: Limits::from_env(),
            loaded: false,
            index: None,
            scanned: 0,
            stored: 0,
            tree: Tree::new(),
            next_blob: now_ns() as u64,
            watcher: None,
            watched: false,
            _lock: lock,
            dir,
        })
    }

    /// Reads the index, once, and its header; one that is not there or not an index is a
    /// fresh start. Its tree is decoded when needed (`decode`).
    fn load(&mut self) {
        if !std::mem::replace(&mut self.loaded, true) {
            let index = std::fs::read(self.dir.join("index")).ok();
            if let Some(header) = index.as_deref().and_then(manifest::header) {
                (self.scanned, self.stored) = header;
                self.index = index;
            }
        }
    }

    /// The index's tree, decoded from what `load` read; a body that is not an index's is a
    /// fresh start.
    fn decode(&mut self) {
        if let Some(index) = self.index.take() {
            (self.scanned, self.stored, self.tree) = manifest::decode(&index).unwrap_or_default();
        }
    }

    fn blob(&self, name: Blob) -> PathBuf {
        self.dir.join("blobs").join(name.to_string())
    }

    /// Scans the workspace and brings the index up to date: files whose identity is unchanged
    /// keep their copy, others are compared with it or kept anew. Returns the notices (files
    /// not kept), the copies no longer in the index, and the index as it was before, unless
    /// every entry was found as it was (then there is nothing to compare).
    fn refresh(&mut self) -> io::Result<Refreshed> {
        self.load();
        let started = now_ns();
        // All of turn's state is left out, when it is inside the workspace (HOME as workspace).
        let skip = crate::state::dir().unwrap_or_else(|| self.dir.clone());
        // After a scan of this process, the watcher says which directories to list again;
        // else (the first scan, lost events) all of them, each watched anew.
        let changed = match (self.watched, self.watcher.as_mut()) {
            (true, Some(watcher)) => watcher.changed(),
            _ => watch::Changed::All,
        };
        let dirty = match changed {
            watch::Changed::Dirs(dirty) => Some(dirty),
            watch::Changed::All => {
                self.watcher = watch::Watcher::new();
                None
            }
        };
        // Nothing reported since this process last scanned: the tree is as that scan left it.
        let linked = self.watcher.as_ref().is_some_and(|w| !w.linked.is_empty());
        if dirty.as_ref().is_some_and(|d| d.is_empty()) && !linked {
            return Ok(Refreshed {
                notices: Vec::new(),
                gone: Vec::new(),
                old: None,
            });
        }
        if dirty.is_some() {
            self.decode();
        }
        let partial = dirty.as_ref().map(|dirty| fs::Partial {
            old: &self.tree,
            dirty,
        });
        self.watched = false;
        let scan = fs::scan(
            &self.workspace,
            Some(&skip),
            self.limits.max_files,
            self.watcher.as_mut(),
            partial,
        )?;
        self.watched = self.watcher.as_ref().is_some_and(|w| w.healthy());
        let mut notices = Vec::new();
        if scan.unnamed > 0 {
            notices.push(format!(
                "checkpoint: {} names that are not UTF-8 are not tracked",
                scan.unnamed
            ));
        }
        let mut entries = scan.entries;
        if let Some(kept) = self.unchanged_since_index(&entries) {
            for ((_, entry), blob) in entries.iter_mut().zip(kept) {
                entry.blob = blob;
            }
            // A file written just before that scan may have changed within its timestamps.
            if !entries
                .iter()
                .any(|(_, e)| e.blob.is_some() && e.racy(self.scanned))
            {
                self.index = None;
                self.tree = entries.into_iter().collect();
                return Ok(Refreshed {
                    notices,
                    gone: Vec::new(),
                    old: None,
                });
            }
        }
        self.decode();
        let mut tree: Tree = entries.into_iter().collect();
        let mut too_big = Vec::new();
        let mut dirty = tree.len() != self.tree.len();
        let mut gone = Vec::new();
        let mut vanished = Vec::new();
        // Both trees are in path order: one pass over each finds every path's old entry.
        let mut olds = self.tree.iter().peekable();
        for (path, entry) in tree.iter_mut() {
            while olds.next_if(|(p, _)| p.as_str() < path.as_str()).is_some() {}
            let old = olds.next_if(|(p, _)| *p == path).map(|(_, e)| e);
            if entry.kind != Kind::File {
                dirty |= old != Some(entry);
                continue;
            }
            if let Some(old) = old.filter(|o| o.same_identity(entry)) {
                if !old.racy(self.scanned) || old.blob.is_none() {
                    entry.blob = old.blob;
                    continue;
                }
            }
            dirty = true;
            if let Some(old) = old.filter(|o| o.kind == Kind::File) {
                if let Some(blob) = old.blob {
                    if old.size == entry.size
                        && fs::same_as_kept(&self.root, path, &self.blob(blob))
                    {
                        entry.blob = Some(blob);
                        continue;
                    }
                }
            }
            if entry.size > self.limits.max_file {
                too_big.push(format!("{path} ({})", size(entry.size)));
                continue;
            }
            if self.stored + entry.size > self.limits.max_total {
                too_big.push(format!("{path} ({}, the store is full)", size(entry.size)));
                continue;
            }
            loop {
                self.next_blob += 1;
                let name = Blob(self.next_blob);
                match fs::keep(&self.root, path, entry, &self.blob(name)) {
                    Ok(()) => {
                        self.stored += entry.size;
                        entry.blob = Some(name);
                    }
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                    // Gone since the scan: as if the scan had not seen it.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => vanished.push(path.clone()),
                    Err(e) => notices.push(format!("checkpoint: {path} could not be kept: {e}")),
                }
                break;
            }
        }
        if !too_big.is_empty() {
            let more = match too_big.len() {
                n if n > 5 => format!(" and {} more", n - 5),
                _ => String::new(),
            };
            too_big.truncate(5);
            notices.push(format!(
                "checkpoint: not kept, too big (over {} a file, TURN_CHECKPOINT_MAX_FILE, or \
                 {} in all, TURN_CHECKPOINT_MAX_TOTAL): {}{more}; an undo that needs them is refused",
                size(self.limits.max_file),
                size(self.limits.max_total),
                too_big.join(", ")
            ));
        }
        for path in &vanished {
            tree.remove(path);
        }
        // Unless something changed, every copy is still in use.
        if dirty {
            let kept: HashSet<Blob> = tree.values().filter_map(|e| e.blob).collect();
            for old in self.tree.values() {
                if let Some(blob) = old.blob.filter(|b| !kept.contains(b)) {
                    gone.push(blob);
                }
            }
        }
        let old = std::mem::replace(&mut self.tree, tree);
        if dirty || self.scanned == 0 {
            self.scanned = started;
            self.save()?;
        }
        Ok(Refreshed {
            notices,
            gone,
            old: dirty.then_some(old),
        })
    }

    /// When a scan (`entries`, in walk order) finds every entry as the index, still undecoded,
    /// has it: the index's kept copy of each.
    fn unchanged_since_index(&self, entries: &[(String, Entry)]) -> Option<Vec<Option<Blob>>> {
        let index = self.index.as_deref().filter(|_| self.scanned != 0)?;
        let mut identities = Vec::with_capacity(index.len());
        for (path, entry) in entries {
            manifest::identity(&mut identities, path, entry);
        }
        manifest::kept_if_same(index, &identities).filter(|kept| kept.len() == entries.len())
    }

    fn save(&self) -> io::Result<()> {
        // Only an index that was read and decoded is written back: never an empty one over it.
        if !self.loaded || self.index.is_some() {
            return Err(io::Error::other("the index was not read"));
        }
        let temp = self.dir.join(format!("index.{}", std::process::id()));
        std::fs::write(
            &temp,
            manifest::encode(self.scanned, self.stored, &self.tree),
        )?;
        std::fs::rename(&temp, self.dir.join("index"))
    }

    /// Removes the copies in `gone` that no checkpoint refers to.
    fn collect(&mut self, gone: Vec<Blob>) -> io::Result<()> {
        if gone.is_empty() {
            return Ok(());
        }
        let mut used = HashSet::new();
        for record in self.log()? {
            for change in &record.changes {
                for e in change.before.iter().chain(change.after.iter()) {
                    used.extend(e.blob);
                }
            }
        }
        for blob in gone.into_iter().filter(|b| !used.contains(b)) {
            let path = self.blob(blob);
            if let Ok(meta) = std::fs::metadata(&path) {
                if std::fs::remove_file(&path).is_ok() {
                    self.stored = self.stored.saturating_sub(meta.len());
                }
            }
        }
        self.save()
    }

    fn log(&self) -> io::Result<Vec<Record>> {
        let text = match std::fs::read_to_string(self.dir.join("log.jsonl")) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        // A line a kill cut short is skipped.
        Ok(text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter_map(|value| Record::from_json(&value))
            .collect())
    }

    /// Appends a record with the next id; returns the id.
    fn append(&self, mut record: Record) -> io::Result<u64> {
        record.id = self.log()?.last().map_or(1, |r| r.id + 1);
        let mut line = record.to_json().to_string();
        line.push('\n');
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("log.jsonl"))?
            .write_all(line.as_bytes())?;
        Ok(record.id)
    }

    /// Whether two entries' files hold the same bytes (their copies, or the file itself).
    fn same_bytes(&self, a: &Entry, b: &Entry) -> bool {
        if a.size != b.size {
            return false;
        }
        match (a.blob, b.blob) {
            (Some(x), Some(y)) => match (
                std::fs::File::open(self.blob(x)),
                std::fs::File::open(self.blob(y)),
            ) {
                (Ok(x), Ok(y)) => fs::same_bytes(x, y),
                _ => false,
            },
            _ => false,
        }
    }

    /// Carries out `plan` (each change: the path now, and what to put there); returns the
    /// changes made, for the undo's own checkpoint, and notices of what could not be done.
    fn apply(&mut self, plan: &[Change]) -> (Vec<Change>, Vec<String>) {
        let mut done = Vec::new();
        let mut notices = Vec::new();
        let mut failed: BTreeSet<&str> = BTreeSet::new();
        // Removals deepest first, so a directory is empty by its turn.
        for change in plan.iter().rev().filter(|c| c.after.is_none()) {
            if let Err(e) = fs::remove(&self.root, &change.path) {
                notices.push(format!("{} was left: {e}", change.path));
                failed.insert(&change.path);
            }
        }
        for change in plan {
            let Some(target) = &change.after else {
                continue;
            };
            let blob = target.blob.map(|b| self.blob(b));
            if let Err(e) = fs::put_back(&self.root, &change.path, target, blob.as_deref()) {
                notices.push(format!("{} could not be restored: {e}", change.path));
                failed.insert(&change.path);
            }
        }
        for change in plan.iter().rev() {
            if let Some(target) = change.after.as_ref().filter(|t| t.kind == Kind::Dir) {
                if let Err(e) = fs::set_dir_mode(&self.root, &change.path, target.mode) {
                    notices.push(format!("{}: its mode could not be set: {e}", change.path));
                }
            }
        }
        for change in plan {
            let now = fs::entry_now(&self.root, &change.path).ok().map(|mut e| {
                if let Some(target) = change.after.as_ref().filter(|t| t.kind == e.kind) {
                    e.blob = target.blob;
                    e.target = target.target.clone();
                }
                e
            });
            let now = match now {
                Some(e) if e.kind == Kind::File && e.blob.is_none() => None,
                other => other,
            };
            if failed.contains(change.path.as_str()) && now.is_some() {
                // Left as it was: the index keeps what the scan found.
                continue;
            }
            match &now {
                Some(e) => self.tree.insert(change.path.clone(), e.clone()),
                None => self.tree.remove(&change.path),
            };
            done.push(Change {
                path: change.path.clone(),
                before: change.before.clone(),
                after: now,
            });
        }
        (done, notices)
    }
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

/// Two entries the same for a checkpoint: by their kept copies, else by identity.
fn unchanged(a: &Entry, b: &Entry) -> bool {
    match (a.kind, &a.blob, &b.blob) {
        (Kind::File, Some(x), Some(y)) => a.kind == b.kind && a.mode == b.mode && x == y,
        _ => a.same_identity(b),
    }
}

/// The paths of `changes` with what happened to each, for reports.
fn files(changes: &[Change]) -> Vec<(String, &'static str)> {
    changes.iter().map(|c| (c.path.clone(), c.what())).collect()
}

/// What the turn hooks keep between a turn's start and its end.
pub struct Keeper {
    store: Option<Store>,
    /// Checkpoints are on for this run (the store may still be closed, or held by another).
    on: bool,
    /// A turn started and has run no call that may change files yet: none is recorded.
    armed: bool,
    /// The index holds the workspace as this turn found it (its own tree is not copied: the
    /// next scan's `Refreshed::old` is it).
    recorded: bool,
}

/// The reporter a turn runs with (`Keeper::watch`): it records the workspace just before the
/// turn's first call that may change files.
pub struct Watch<'a> {
    keeper: &'a mut Keeper,
    inner: &'a mut dyn Reporter,
}

impl Reporter for Watch<'_> {
    fn report(&mut self, event: Event<'_>) {
        // Every call is reported before it runs (the agent loop guarantees it).
        if let Event::ToolCall { name, .. } = &event {
            self.keeper.before_call(name, self.inner);
        }
        self.inner.report(event);
    }
}

impl Keeper {
    /// Checkpoints for `workspace`, unless `off` or TURN_CHECKPOINTS=off. A store that cannot
    /// be opened is said once, and the run goes on without checkpoints.
    pub fn open(workspace: &Path, off: bool, reporter: &mut dyn Reporter) -> Keeper {
        let off = off || std::env::var("TURN_CHECKPOINTS").is_ok_and(|v| v.trim() == "off");
        let store = match off {
            true => None,
            false => match Store::open(workspace, true) {
                Ok(store) => Some(store),
                Err(e) => {
                    let notice = format!("checkpoints are off (no undo): {e}");
                    reporter.report(Event::Notice(&notice));
                    None
                }
            },
        };
        Keeper {
            store,
            on: !off,
            armed: false,
            recorded: false,
        }
    }

    /// Lets go of the store, and its lock, so that an undo in this process can take it.
    pub fn close(&mut self) {
        self.store = None;
    }

    /// The store as another command left it (after the REPL's /undo).
    pub fn reload(&mut self, workspace: &Path) {
        if self.on {
            self.store = Store::open(workspace, true).ok();
        }
    }

    /// A turn starts; run it with `watch`. Nothing is recorded yet: the workspace is scanned
    /// just before the turn's first call that may change files, so a turn that only answers
    /// or reads costs no scan, and what changed before that call is not the turn's doing (it
    /// is found by the scan, as a change between turns).
    pub fn begin(&mut self) {
        self.recorded = false;
        self.armed = self.store.is_some();
    }

    /// The reporter to run the turn with: `inner`, and the scan before the first call that
    /// may change files.
    pub fn watch<'a>(&'a mut self, inner: &'a mut dyn Reporter) -> Watch<'a> {
        Watch {
            keeper: self,
            inner,
        }
    }

    /// Before the call `name` runs. Every call may change files (a command, a file tool, a
    /// declared or MCP tool, inside the sandbox or not) but the built-in `read_file`, which a
    /// declared tool cannot shadow: the first such call of the turn records the workspace.
    fn before_call(&mut self, name: &str, reporter: &mut dyn Reporter) {
        if !self.armed || name == "read_file" {
            return;
        }
        self.armed = false;
        let Some(store) = &mut self.store else { return };
        let refreshed = store.refresh().and_then(|found| {
            store.collect(found.gone)?;
            Ok(found.notices)
        });
        match refreshed {
            Ok(notices) => {
                for notice in notices {
                    reporter.report(Event::Notice(&notice));
                }
                self.recorded = true;
            }
            Err(e) => {
                let notice = format!("checkpoint: none for this turn (no undo for it): {e}");
                reporter.report(Event::Notice(&notice));
            }
        }
    }

    /// After a turn: what it changed becomes a checkpoint, reported with its id.
    pub fn end(&mut self, task: &str, session: Option<&Path>, reporter: &mut dyn Reporter) {
        self.armed = false;
        let (Some(store), true) = (&mut self.store, std::mem::take(&mut self.recorded)) else {
            return;
        };
        let result = store.refresh().and_then(|found| {
            let notices = found.notices;
            let changes = match &found.old {
                Some(before) => manifest::diff(before, &store.tree, unchanged),
                None => Vec::new(),
            };
            if changes.is_empty() {
                return Ok((notices, None, changes));
            }
            let record = Record {
                id: 0,
                time: (now_ns() / 1_000_000_000) as u64,
                kind: "turn".into(),
                session: session.map(absolute),
                task: first_line(task),
                undid: Vec::new(),
                changes,
            };
            let changes = record.changes.clone();
            Ok((notices, Some(store.append(record)?), changes))
        });
        match result {
            Ok((notices, id, changes)) => {
                for notice in notices {
                    reporter.report(Event::Notice(&notice));
                }
                if let Some(id) = id {
                    let files = files(&changes);
                    reporter.report(Event::Checkpoint { id, files: &files });
                }
            }
            Err(e) => {
                let notice = format!("checkpoint: this turn's changes were not recorded: {e}");
                reporter.report(Event::Notice(&notice));
            }
        }
    }
}

fn absolute(path: &Path) -> String {
    let path = match path.is_absolute() {
        true => path.to_path_buf(),
        false => std::env::current_dir().unwrap_or_default().join(path),
    };
    path.to_string_lossy().into_owned()
}

fn first_line(task: &str) -> String {
    let line = task.trim().lines().next().unwrap_or_default();
    let mut short: String = line.chars().take(80).collect();
    if short.len() < line.len() {
        short.push('…');
    }
    short
}

/// What the user asked of the checkpoints.
#[derive(Debug, PartialEq, Clone)]
pub enum Action {
    /// Take back the newest turn of the session not taken back yet.
    Undo,
    /// Take the workspace back to before this checkpoint.
    Restore(u64),
    /// List the checkpoints.
    List,
    /// Delete this workspace's checkpoints (and those of workspaces that are gone).
    Prune,
}

/// The outcome of an undo or restore, for the front ends.
pub struct Undone {
    /// What was said, line by line.
    pub lines: Vec<String>,
    /// The note for the model's next turn in that session, when files changed.
    pub note: Option<String>,
}

/// Records that `undid` took back others: an undo of an undo brings back what it undid.
fn undone(records: &[Record]) -> HashSet<u64> {
    let mut undone = HashSet::new();
    for record in records {
        for id in &record.undid {
            if let Some(earlier) = records.iter().find(|r| r.id == *id) {
                for back in &earlier.undid {
                    if !record.undid.contains(back) {
                        undone.remove(back);
                    }
                }
            }
        }
        undone.extend(record.undid.iter().copied());
    }
    undone
}

/// `--undo`, `--restore ID`: plans from the log, checks, and (unless `dry_run`) puts the
/// paths back, recording the undo as a checkpoint of its own. `session`: the session whose
/// turn `--undo` takes back (None: the newest turn of any).
pub fn undo(
    workspace: &Path,
    action: &Action,
    session: Option<&Path>,
    dry_run: bool,
    force: bool,
    reporter: &mut dyn Reporter,
) -> Result<Undone> {
    let failed = |e: io::Error| Error::Undo(format!("the checkpoint store: {e}"));
    if !store_dir(workspace).is_some_and(|dir| dir.join("log.jsonl").exists()) {
        return Ok(Undone {
            lines: vec![format!(
                "nothing to undo: no checkpoints for {}",
                workspace.display()
            )],
            note: None,
        });
    }
    let mut store = Store::open(workspace, true).map_err(failed)?;
    let records = store.log().map_err(failed)?;
    let session = session.map(absolute);
    let (chosen, kind, what): (Vec<&Record>, &str, String) = match action {
        Action::Undo => {
            let undone = undone(&records);
            let last = records.iter().rev().find(|r| {
                r.kind == "turn"
                    && !undone.contains(&r.id)
                    && (session.is_none() || r.session == session)
            });
            let Some(last) = last else {
                let whose = session.map_or(String::new(), |s| format!(" of {s}"));
                return Ok(Undone {
                    lines: vec![format!("nothing to undo: no turn{whose} with changes left")],
                    note: None,
                });
            };
            (
                vec![last],
                "undo",
                format!("checkpoint {} ({})", last.id, last.task),
            )
        }
        Action::Restore(id) => {
            if !records.iter().any(|r| r.id == *id) {
                return Err(Error::Usage(format!(
                    "no checkpoint {id} for this workspace (turn --checkpoints lists them)"
                )));
            }
            let chosen: Vec<&Record> = records.iter().rev().filter(|r| r.id >= *id).collect();
            (chosen, "restore", format!("checkpoint {id}"))
        }
        Action::List | Action::Prune => unreachable!("not an undo"),
    };
    let found = store.refresh().map_err(failed)?;
    for notice in found.notices {
        reporter.report(Event::Notice(&notice));
    }
    let lists: Vec<&[Change]> = chosen.iter().map(|r| r.changes.as_slice()).collect();
    let same = |a: &Entry, b: &Entry| store.same_bytes(a, b);
    let plan = match manifest::plan(&lists, &store.tree, force, &same) {
        Ok(plan) => plan,
        Err(Refusal::Conflicts(paths)) => {
            let named: Vec<String> = paths
                .iter()
                .map(|(p, how)| format!("{p} ({how})"))
                .collect();
            return Err(Error::Undo(format!(
                "nothing was changed: these paths changed after {what}: {}; --force puts them \
                 back all the same (and that undo can be taken back too)",
                named.join(", ")
            )));
        }
        Err(Refusal::NotKept(paths)) => {
            return Err(Error::Undo(not_kept(&what, &paths)));
        }
    };
    let missing: Vec<String> = plan
        .iter()
        .filter_map(|c| c.after.as_ref()?.blob.map(|b| (c, b)))
        .filter(|(_, b)| !store.blob(*b).exists())
        .map(|(c, _)| c.path.clone())
        .collect();
    if !missing.is_empty() {
        return Err(Error::Undo(not_kept(&what, &missing)));
    }
    let verb = |c: &Change| match (&c.before, &c.after) {
        (_, None) => "remove",
        (None, Some(_)) => "recreate",
        (Some(b), Some(a)) if b.kind != a.kind => "replace",
        _ => "restore",
    };
    let mut lines = Vec::new();
    if dry_run {
        lines.push(format!("--dry-run: {kind} of {what} would change:"));
        lines.extend(plan.iter().map(|c| format!("  {} {}", verb(c), c.path)));
        if plan.is_empty() {
            lines.push("  nothing".into());
        }
        return Ok(Undone { lines, note: None });
    }
    let (done, problems) = store.apply(&plan);
    store.save().map_err(failed)?;
    let record = Record {
        id: 0,
        time: (now_ns() / 1_000_000_000) as u64,
        kind: kind.into(),
        session: chosen
            .first()
            .and_then(|r| r.session.clone())
            .filter(|_| kind == "undo"),
        task: what.clone(),
        undid: chosen.iter().map(|r| r.id).collect(),
        changes: done.clone(),
    };
    let id = store.append(record).map_err(failed)?;
    lines.push(format!(
        "{kind} of {what}: {} paths put back (checkpoint {id}; turn --restore {id} takes this back)",
        done.len()
    ));
    lines.extend(done.iter().map(|c| format!("  {} {}", verb(c), c.path)));
    lines.extend(problems.iter().map(|p| format!("  not done: {p}")));
    let note = (!done.is_empty()).then(|| {
        let paths: Vec<&str> = done.iter().map(|c| c.path.as_str()).collect();
        format!(
            "[turn] The user took back {what} with turn's undo: these files are again as they \
             were before it: {}. Changes made to them in that turn are gone; read a file again \
             before relying on what it holds.",
            paths.join(", ")
        )
    });
    if !problems.is_empty() {
        lines.push("some paths could not be put back (see above)".into());
    }
    Ok(Undone { lines, note })
}

fn not_kept(what: &str, paths: &[String]) -> String {
    format!(
        "nothing was changed: undoing {what} needs the earlier content of {}, which was not \
         kept (over the size caps, TURN_CHECKPOINT_MAX_FILE / TURN_CHECKPOINT_MAX_TOTAL, or \
         pruned)",
        paths.join(", ")
    )
}

/// `--checkpoints`: one line per checkpoint, oldest first.
pub fn list(workspace: &Path) -> Result<String> {
    let failed = |e: io::Error| Error::Undo(format!("the checkpoint store: {e}"));
    let Some(dir) = store_dir(workspace) else {
        return Err(Error::Undo("neither XDG_STATE_HOME nor HOME is set".into()));
    };
    if !dir.join("log.jsonl").exists() {
        return Ok(format!("no checkpoints for {}\n", workspace.display()));
    }
    let mut store = Store::open(workspace, false).map_err(failed)?;
    store.load();
    let records = store.log().map_err(failed)?;
    let undone = undone(&records);
    // Sessions are named s1, s2… in the order they first appear; turns counted per session.
    let mut sessions: Vec<(Option<String>, u32)> = Vec::new();
    let mut rows = String::new();
    for r in &records {
        let label = match r.kind.as_str() {
            "turn" => {
                let at = match sessions.iter().position(|(s, _)| *s == r.session) {
                    Some(at) => at,
                    None => {
                        sessions.push((r.session.clone(), 0));
                        sessions.len() - 1
                    }
                };
                sessions[at].1 += 1;
                format!("s{}#{}", at + 1, sessions[at].1)
            }
            other => other.to_string(),
        };
        let mark = if undone.contains(&r.id) {
            " (undone)"
        } else {
            ""
        };
        rows.push_str(&format!(
            "{:>4}  {:<19}  {:<8}  {:>5}  {}{mark}\n",
            r.id,
            crate::session::timestamp(r.time),
            label,
            r.changes.len(),
            crate::terminal::escape(&r.task)
        ));
    }
    let mut out = format!(
        "checkpoints of {} (store: {}, {} kept)\n",
        workspace.display(),
        store.dir.display(),
        size(store.stored),
    );
    for (i, (session, _)) in sessions.iter().enumerate() {
        let name = session.as_deref().unwrap_or("(no session)");
        out.push_str(&format!(
            "  s{}: {}\n",
            i + 1,
            crate::terminal::escape(name)
        ));
    }
    out.push_str(&format!(
        "{:>4}  {:<19}  {:<8}  {:>5}  task\n{rows}",
        "id", "time (UTC)", "turn", "files"
    ));
    Ok(out)
}

/// `--prune-checkpoints`: deletes this workspace's store and the stores of workspaces that no
/// longer exist; returns what was freed, in words.
pub fn prune(workspace: &Path) -> Result<String> {
    let Some(state) = crate::state::dir() else {
        return Err(Error::Undo("neither XDG_STATE_HOME nor HOME is set".into()));
    };
    let mine = store_dir(workspace);
    let mut freed = 0u64;
    let mut stores = 0;
    let mut busy = Vec::new();
    for entry in std::fs::read_dir(state.join("checkpoints"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let dir = entry.path();
        let owner = std::fs::read(dir.join("workspace")).ok();
        let gone = owner.is_some_and(|o| !Path::new(&*String::from_utf8_lossy(&o)).is_dir());
        if Some(&dir) != mine.as_ref() && !gone {
            continue;
        }
        // A store a turn is using now stays.
        let Ok(_held) = lock(&dir) else {
            busy.push(dir.display().to_string());
            continue;
        };
        freed += du(&dir);
        std::fs::remove_dir_all(&dir)
            .map_err(|e| Error::Undo(format!("cannot remove {}: {e}", dir.display())))?;
        stores += 1;
    }
    let mut out = format!(
        "pruned {stores} checkpoint store{}: {} freed\n",
        if stores == 1 { "" } else { "s" },
        size(freed)
    );
    for dir in busy {
        out.push_str(&format!("kept {dir}: a turn is using it\n"));
    }
    Ok(out)
}

/// The bytes of the files beneath `dir`.
fn du(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => du(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: u64, kind: &str, undid: &[u64]) -> Record {
        Record {
            id,
            time: 0,
            kind: kind.into(),
            session: None,
            task: String::new(),
            undid: undid.to_vec(),
            changes: Vec::new(),
        }
    }

    #[test]
    fn an_undo_of_an_undo_brings_back_what_it_undid() {
        let turns = [record(1, "turn", &[]), record(2, "turn", &[])];
        let undo = record(3, "undo", &[2]);
        let mut log = turns.to_vec();
        log.push(undo);
        assert_eq!(undone(&log), HashSet::from([2]));
        // A restore to before the undo takes the undo back: turn 2 is live again.
        log.push(record(4, "restore", &[3]));
        assert_eq!(undone(&log), HashSet::from([3]));
        // A restore to before turn 2 covers the undo too: turn 2 stays undone.
        log.push(record(5, "restore", &[2, 3, 4]));
        assert_eq!(undone(&log), HashSet::from([2, 3, 4]));
    }

    #[test]
    fn tasks_are_listed_by_their_first_line_cut_short() {
        assert_eq!(first_line("  fix it\nthen more"), "fix it");
        let long = "x".repeat(100);
        assert_eq!(first_line(&long).chars().count(), 81);
    }

    /// A fresh workspace of this process for a test named `name`: `src/a.txt` and `b.txt`.
    fn workspace(name: &str) -> PathBuf {
        let ws = std::env::temp_dir().join(format!("turn-unit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&ws);
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/a.txt"), "a").unwrap();
        std::fs::write(ws.join("b.txt"), "b").unwrap();
        ws
    }

    #[test]
    fn a_later_process_takes_the_index_when_unchanged_and_finds_a_change_made_between() {
        let ws = workspace("index");
        std::os::unix::fs::symlink("b.txt", ws.join("l")).unwrap();
        // Older than a racy file: the next process may trust their timestamps.
        std::thread::sleep(std::time::Duration::from_millis(
            manifest::RACY_NS as u64 / 500_000,
        ));
        let first = {
            let mut store = Store::open(&ws, true).unwrap();
            store.refresh().unwrap();
            store.tree.clone()
        };
        let index = std::fs::read(store_dir(&ws).unwrap().join("index")).unwrap();
        assert!(index.starts_with(b"turn-index 2 "));
        // Unchanged: the same tree and copies, nothing to compare, the index not rewritten.
        let mut store = Store::open(&ws, true).unwrap();
        assert!(store.refresh().unwrap().old.is_none());
        assert_eq!(store.tree, first);
        assert!(store.index.is_none());
        drop(store);
        assert_eq!(
            std::fs::read(store_dir(&ws).unwrap().join("index")).unwrap(),
            index
        );
        // Changed between processes, same size: found, and kept anew.
        std::fs::write(ws.join("src/a.txt"), "A").unwrap();
        let mut store = Store::open(&ws, true).unwrap();
        let found = store.refresh().unwrap();
        let changes = manifest::diff(&found.old.unwrap(), &store.tree, unchanged);
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["src/a.txt"]);
        assert_ne!(store.tree["src/a.txt"].blob, first["src/a.txt"].blob);
        drop(store);
        // A version 1 index is read, and written back as version 2.
        let tree = first.clone();
        let v1 = format!("turn-index 1 1 0\n{}", {
            let mut text = String::new();
            for (path, e) in &tree {
                let kind = match e.kind {
                    Kind::File => 'f',
                    Kind::Link => 'l',
                    Kind::Dir => 'd',
                };
                let blob = e.blob.map_or("-".to_string(), |b| b.to_string());
                let target = e.target.clone().unwrap_or_default();
                text += &format!(
                    "{kind} {:o} {} {} {} {} {blob} {path}\0{target}\0",
                    e.mode, e.size, e.mtime, e.ctime, e.ino
                );
            }
            text
        });
        std::fs::write(store_dir(&ws).unwrap().join("index"), v1).unwrap();
        let mut store = Store::open(&ws, true).unwrap();
        let found = store.refresh().unwrap();
        let changes = manifest::diff(&found.old.unwrap(), &store.tree, unchanged);
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            ["src/a.txt"],
            "only the change since version 1 was written"
        );
        assert_eq!(store.tree["b.txt"].blob, first["b.txt"].blob);
        drop(store);
        let index = std::fs::read(store_dir(&ws).unwrap().join("index")).unwrap();
        assert!(index.starts_with(b"turn-index 2 "));
        std::fs::remove_dir_all(&ws).unwrap();
        let _ = std::fs::remove_dir_all(store_dir(&ws).unwrap());
    }

    #[test]
    fn scans_after_the_first_in_a_process_find_what_changed_and_only_that() {
        let ws = workspace("store");
        let mut store = Store::open(&ws, true).unwrap();
        store.refresh().unwrap();
        assert!(store.watched, "the first scan watches the workspace");
        // Nothing happened since: no walk, nothing to compare.
        assert!(store.refresh().unwrap().old.is_none());
        std::fs::write(ws.join("src/a.txt"), "changed").unwrap();
        std::fs::write(ws.join("src/new.txt"), "new").unwrap();
        let found = store.refresh().unwrap();
        let changes = manifest::diff(&found.old.unwrap(), &store.tree, unchanged);
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["src/a.txt", "src/new.txt"]);
        // A second store of the same workspace waits its turn; reading it does not.
        assert!(Store::open(&ws, true).is_err());
        assert!(Store::open(&ws, false).is_ok());
        drop(store);
        assert!(Store::open(&ws, true).is_ok());
        std::fs::remove_dir_all(&ws).unwrap();
    }
}
