//! The state of a workspace as checkpoints see it, and the decisions made on it (pure): what
//! a turn changed (`diff`), whether an undo may go ahead (`plan`), and the index's encoding.
//!
//! An `Entry` is a file, a symlink or a directory: its kind, mode and what identifies its
//! content cheaply (size, mtime and ctime in nanoseconds, inode). Two scans that see the same
//! identity see the same file, so an unchanged tree is never re-read; a file written within
//! `RACY_NS` before a scan could change again within the same timestamp tick, so its identity
//! is not trusted next time (the content is compared), as git does with "racily clean" files.

use serde_json::{json, Value};
use std::collections::BTreeMap;

/// How close to a scan a change must be for its timestamps not to be trusted (coarse kernel
/// clocks tick every few milliseconds).
pub const RACY_NS: i64 = 50_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Link,
    Dir,
}

impl Kind {
    /// The letter the index writes for it (`f`, `l`, `d`).
    fn letter(self) -> u8 {
        match self {
            Kind::File => b'f',
            Kind::Link => b'l',
            Kind::Dir => b'd',
        }
    }

    /// The kind an index field of one letter names.
    fn read(field: &[u8]) -> Option<Kind> {
        [Kind::File, Kind::Link, Kind::Dir]
            .into_iter()
            .find(|k| field == [k.letter()])
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: Kind,
    /// Permission bits (0o7777).
    pub mode: u32,
    pub size: u64,
    pub mtime: i64,
    pub ctime: i64,
    pub ino: u64,
    /// A file's stored copy; None when it was too big to keep.
    pub blob: Option<Blob>,
    /// A symlink's target.
    pub target: Option<String>,
}

/// A kept copy in the store, by its number (its file name is the number in hex).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Blob(pub u64);

impl Blob {
    /// A name as the index and the log hold it (lowercase hex digits, as `Display` writes it).
    pub fn parse(name: &[u8]) -> Option<Blob> {
        number::<16>(name).map(Blob)
    }
}

impl std::fmt::Display for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:x}", self.0)
    }
}

impl Entry {
    /// The same file as a scan saw it before: same kind and mode, and the same content by its
    /// identity (file), target (symlink) or nothing more (directory).
    pub fn same_identity(&self, other: &Entry) -> bool {
        self.kind == other.kind
            && self.mode == other.mode
            && match self.kind {
                Kind::Dir => true,
                Kind::Link => self.target == other.target,
                Kind::File => {
                    (self.size, self.mtime, self.ctime, self.ino)
                        == (other.size, other.mtime, other.ctime, other.ino)
                }
            }
    }

    /// Whether this entry's timestamps came too close to the scan at `scanned` to be trusted.
    pub fn racy(&self, scanned: i64) -> bool {
        self.kind == Kind::File && self.ctime.max(self.mtime) + RACY_NS >= scanned
    }
}

/// Every tracked path (`/`-separated, from the workspace root) and its entry.
pub type Tree = BTreeMap<String, Entry>;

/// One path a checkpoint changed: its entry before and after (None: absent).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub path: String,
    pub before: Option<Entry>,
    pub after: Option<Entry>,
}

impl Change {
    /// In a word: created, deleted, modified, mode, link, or replaced (another kind).
    pub fn what(&self) -> &'static str {
        match (&self.before, &self.after) {
            (None, _) => "created",
            (_, None) => "deleted",
            (Some(b), Some(a)) if b.kind != a.kind => "replaced",
            (Some(b), Some(_)) if b.kind == Kind::Link => "link",
            (Some(b), Some(a)) if b.kind == Kind::File && b.blob != a.blob => "modified",
            _ => "mode",
        }
    }
}

impl Change {
    /// As a log line holds it: `{"path", "before", "after"}`, an entry being
    /// `[kind, mode, size, mtime, ctime, ino, blob, target]` (null: absent).
    pub fn to_json(&self) -> Value {
        let entry = |e: &Option<Entry>| match e {
            None => Value::Null,
            Some(e) => json!([
                match e.kind {
                    Kind::File => "f",
                    Kind::Link => "l",
                    Kind::Dir => "d",
                },
                e.mode,
                e.size,
                e.mtime,
                e.ctime,
                e.ino,
                e.blob.map(|b| b.to_string()),
                e.target
            ]),
        };
        json!({"path": self.path, "before": entry(&self.before), "after": entry(&self.after)})
    }

    pub fn from_json(value: &Value) -> Option<Change> {
        let entry = |v: &Value| -> Option<Option<Entry>> {
            if v.is_null() {
                return Some(None);
            }
            let f = v.as_array().filter(|f| f.len() == 8)?;
            let text = |v: &Value| v.as_str().map(String::from);
            Some(Some(Entry {
                kind: match f[0].as_str()? {
                    "f" => Kind::File,
                    "l" => Kind::Link,
                    "d" => Kind::Dir,
                    _ => return None,
                },
                mode: u32::try_from(f[1].as_u64()?).ok()?,
                size: f[2].as_u64()?,
                mtime: f[3].as_i64()?,
                ctime: f[4].as_i64()?,
                ino: f[5].as_u64()?,
                blob: match &f[6] {
                    Value::Null => None,
                    name => Some(Blob::parse(name.as_str()?.as_bytes())?),
                },
                target: text(&f[7]),
            }))
        };
        Some(Change {
            path: value["path"].as_str()?.to_string(),
            before: entry(&value["before"])?,
            after: entry(&value["after"])?,
        })
    }
}

/// The paths whose entries differ between `old` and `new`, by `same`; in path order.
pub fn diff(old: &Tree, new: &Tree, same: impl Fn(&Entry, &Entry) -> bool) -> Vec<Change> {
    let mut changes = Vec::new();
    for (path, before) in old {
        match new.get(path) {
            Some(after) if same(before, after) => {}
            after => changes.push(Change {
                path: path.clone(),
                before: Some(before.clone()),
                after: after.cloned(),
            }),
        }
    }
    for (path, after) in new {
        if !old.contains_key(path) {
            changes.push(Change {
                path: path.clone(),
                before: None,
                after: Some(after.clone()),
            });
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

/// Two entries hold the same state for an undo: same kind and mode, and the same content
/// (the same stored copy, the same identity, or `same_bytes` says so).
pub fn same_state(a: &Entry, b: &Entry, same_bytes: &dyn Fn(&Entry, &Entry) -> bool) -> bool {
    if a.kind != b.kind || a.mode != b.mode {
        return false;
    }
    match a.kind {
        Kind::Dir => true,
        Kind::Link => a.target == b.target,
        Kind::File => {
            (a.blob.is_some() && a.blob == b.blob) || a.same_identity(b) || same_bytes(a, b)
        }
    }
}

/// Why an undo cannot go ahead.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// These paths changed again since (path, how it is now); `--force` overrides.
    Conflicts(Vec<(String, &'static str)>),
    /// These paths' earlier content was too big to keep, or its copy is gone.
    NotKept(Vec<String>),
}

/// What undoing `checkpoints` (newest first) needs: for each path they changed, the entry to
/// put back (None: remove it). Each checkpoint is taken back in turn: a path must be as that
/// checkpoint left it (`after`) unless `force`, then it becomes what it was before. `current`
/// is the workspace now.
pub fn plan(
    checkpoints: &[&[Change]],
    current: &Tree,
    force: bool,
    same_bytes: &dyn Fn(&Entry, &Entry) -> bool,
) -> Result<Vec<Change>, Refusal> {
    // path -> (the state expected now at this step, the state as found in the workspace)
    let mut state: BTreeMap<&str, Option<&Entry>> = BTreeMap::new();
    let mut conflicts = Vec::new();
    for changes in checkpoints {
        for change in *changes {
            let path = change.path.as_str();
            let now = *state.entry(path).or_insert_with(|| current.get(path));
            let same = match (now, &change.after) {
                (None, None) => true,
                (Some(a), Some(b)) => same_state(a, b, same_bytes),
                _ => false,
            };
            if !same && !force && !conflicts.iter().any(|(p, _)| p == path) {
                let how = match now {
                    None => "deleted since",
                    Some(_) if change.after.is_none() => "created again since",
                    Some(_) => "changed since",
                };
                conflicts.push((path.to_string(), how));
            }
            state.insert(path, change.before.as_ref());
        }
    }
    if !conflicts.is_empty() {
        return Err(Refusal::Conflicts(conflicts));
    }
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for (path, target) in state {
        let before = current.get(path).cloned();
        let same = match (&before, target) {
            (None, None) => true,
            (Some(a), Some(b)) => same_state(a, b, same_bytes),
            _ => false,
        };
        if same {
            continue;
        }
        if target.is_some_and(|t| t.kind == Kind::File && t.blob.is_none()) {
            missing.push(path.to_string());
        }
        out.push(Change {
            path: path.to_string(),
            before,
            after: target.cloned(),
        });
    }
    if !missing.is_empty() {
        return Err(Refusal::NotKept(missing));
    }
    Ok(out)
}

/// The index file: a header line `turn-index 2 <scanned> <stored> <entries> <bytes>`, then
/// each entry's `identity` in walk order (`walk_order`; `<bytes>` in all), then each entry's
/// kept copy in the same order (8 bytes, little-endian, 0 for none: copies are numbered from
/// the clock). A scan of a tree unchanged since produces the identities byte for byte, so the
/// common case is one comparison and no decoding (`kept_if_same`). Version 1 (text) is still
/// read.
pub fn encode(scanned: i64, stored: u64, tree: &Tree) -> Vec<u8> {
    let mut order: Vec<(&String, &Entry)> = tree.iter().collect();
    order.sort_by(|a, b| walk_order(a.0, b.0));
    let mut identities = Vec::with_capacity(order.len() * 64);
    for (path, e) in &order {
        identity(&mut identities, path, e);
    }
    let mut out = format!(
        "turn-index 2 {scanned} {stored} {} {}\n",
        order.len(),
        identities.len()
    )
    .into_bytes();
    out.append(&mut identities);
    for (_, e) in &order {
        out.extend_from_slice(&e.blob.map_or(0, |b| b.0).to_le_bytes());
    }
    out
}

/// The order a scan walks in: by path components, each directory's names in byte order, and
/// a directory followed by what is beneath it (`a`, `a/b`, `a.txt`); that is byte order with
/// `/` below every other byte (no name holds a `/` or a NUL).
pub fn walk_order(a: &str, b: &str) -> std::cmp::Ordering {
    let key = |c: u8| if c == b'/' { 0 } else { c };
    a.bytes().map(key).cmp(b.bytes().map(key))
}

/// Appends what identifies `e` at `path` (all but its kept copy): the kind (`f`, `l`, `d`),
/// mode, size, mtime, ctime and inode, little-endian, then the path and the symlink's target,
/// each after its length.
pub fn identity(out: &mut Vec<u8>, path: &str, e: &Entry) {
    // The fixed part in one piece: this runs for every file of every scan.
    let mut fixed = [0u8; 41];
    fixed[0] = e.kind.letter();
    fixed[1..5].copy_from_slice(&e.mode.to_le_bytes());
    for (at, n) in [e.size, e.mtime as u64, e.ctime as u64, e.ino]
        .iter()
        .enumerate()
    {
        fixed[5 + 8 * at..13 + 8 * at].copy_from_slice(&n.to_le_bytes());
    }
    fixed[37..].copy_from_slice(&(path.len() as u32).to_le_bytes());
    out.extend_from_slice(&fixed);
    out.extend_from_slice(path.as_bytes());
    let target = e.target.as_deref().unwrap_or("");
    out.extend_from_slice(&(target.len() as u32).to_le_bytes());
    out.extend_from_slice(target.as_bytes());
}

/// A version 2 index, in its parts.
struct Parts<'a> {
    scanned: i64,
    stored: u64,
    count: usize,
    identities: &'a [u8],
    kept: &'a [u8],
}

fn parts(bytes: &[u8]) -> Option<Parts<'_>> {
    let end = bytes.iter().position(|&b| b == b'\n')?;
    let mut fields = std::str::from_utf8(&bytes[..end]).ok()?.split(' ');
    if (fields.next()?, fields.next()?) != ("turn-index", "2") {
        return None;
    }
    let scanned = fields.next()?.parse().ok()?;
    let stored = fields.next()?.parse().ok()?;
    let count: usize = fields.next()?.parse().ok()?;
    let length: usize = fields.next()?.parse().ok()?;
    let body = &bytes[end + 1..];
    if fields.next().is_some() || body.len() != length.checked_add(count.checked_mul(8)?)? {
        return None;
    }
    let (identities, kept) = body.split_at(length);
    Some(Parts {
        scanned,
        stored,
        count,
        identities,
        kept,
    })
}

/// An index's scan time and stored bytes, without decoding its tree.
pub fn header(bytes: &[u8]) -> Option<(i64, u64)> {
    match parts(bytes) {
        Some(p) => Some((p.scanned, p.stored)),
        None => decode_v1(bytes).map(|(scanned, stored, _)| (scanned, stored)),
    }
}

/// When `identities` (a scan's, in walk order) are the index's byte for byte: each entry's
/// kept copy, in that order; else None (the index is then decoded and compared).
pub fn kept_if_same(index: &[u8], identities: &[u8]) -> Option<Vec<Option<Blob>>> {
    let Parts {
        identities: stored,
        kept,
        ..
    } = parts(index)?;
    if stored != identities {
        return None;
    }
    Some(kept.chunks_exact(8).map(kept_copy).collect())
}

/// A kept copy as the index holds it: 8 bytes, little-endian, 0 for none (copies are numbered
/// from the clock).
fn kept_copy(bytes: &[u8]) -> Option<Blob> {
    let number = u64::from_le_bytes(bytes.try_into().ok()?);
    (number != 0).then_some(Blob(number))
}

/// The index's scan time, stored bytes and tree; None when it is not one (a fresh start).
pub fn decode(bytes: &[u8]) -> Option<(i64, u64, Tree)> {
    let Some(Parts {
        scanned,
        stored,
        count,
        identities,
        kept,
    }) = parts(bytes)
    else {
        return decode_v1(bytes);
    };
    let mut rest = identities;
    let mut take = |n: usize| -> Option<&[u8]> {
        let (field, after) = rest.split_at_checked(n)?;
        rest = after;
        Some(field)
    };
    let mut entries = Vec::with_capacity(count);
    for copy in kept.chunks_exact(8) {
        let kind = Kind::read(take(1)?)?;
        let mode = u32::from_le_bytes(take(4)?.try_into().ok()?);
        let mut number = || Some(u64::from_le_bytes(take(8)?.try_into().ok()?));
        let (size, mtime, ctime, ino) = (number()?, number()? as i64, number()? as i64, number()?);
        let mut text = || {
            let length = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
            String::from_utf8(take(length)?.to_vec()).ok()
        };
        let path = text()?;
        let target = text()?;
        let entry = Entry {
            kind,
            mode,
            size,
            mtime,
            ctime,
            ino,
            blob: kept_copy(copy),
            target: (kind == Kind::Link).then_some(target),
        };
        entries.push((path, entry));
    }
    rest.is_empty()
        .then(|| (scanned, stored, entries.into_iter().collect()))
}

/// Version 1: a header line, then per entry `K mode size mtime ctime ino blob path\0
/// target\0` (K: f, l or d; blob `-` for none).
fn decode_v1(bytes: &[u8]) -> Option<(i64, u64, Tree)> {
    let end = bytes.iter().position(|&b| b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..end]).ok()?;
    let mut fields = header.split(' ');
    if (fields.next()?, fields.next()?) != ("turn-index", "1") {
        return None;
    }
    let scanned = fields.next()?.parse().ok()?;
    let stored = fields.next()?.parse().ok()?;
    // Collected first: a tree built from sorted pairs at once is much cheaper than by inserts.
    let mut entries = Vec::new();
    let mut rest = Fields(&bytes[end + 1..]);
    while !rest.0.is_empty() {
        let kind = Kind::read(rest.until(b' ')?)?;
        let mode = u32::try_from(number::<8>(rest.until(b' ')?)?).ok()?;
        let size = number::<10>(rest.until(b' ')?)?;
        let mtime = signed(rest.until(b' ')?)?;
        let ctime = signed(rest.until(b' ')?)?;
        let ino = number::<10>(rest.until(b' ')?)?;
        let blob = match rest.until(b' ')? {
            b"-" => None,
            name => Some(Blob::parse(name)?),
        };
        let path = String::from_utf8(rest.until(0)?.to_vec()).ok()?;
        let target = rest.until(0)?;
        let target = match kind {
            Kind::Link => Some(std::str::from_utf8(target).ok()?.to_string()),
            _ => None,
        };
        let entry = Entry {
            kind,
            mode,
            size,
            mtime,
            ctime,
            ino,
            blob,
            target,
        };
        entries.push((path, entry));
    }
    Some((scanned, stored, entries.into_iter().collect()))
}

/// The index's fields, read in order from its bytes: the index is read before every turn
/// that may change files, so it is parsed without splitting into strings.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    /// The bytes up to the next `end`, which is passed over.
    fn until(&mut self, end: u8) -> Option<&'a [u8]> {
        let at = self.0.iter().position(|&b| b == end)?;
        let field = &self.0[..at];
        self.0 = &self.0[at + 1..];
        Some(field)
    }
}

/// A number in `RADIX` (8, 10 or 16, lowercase), all of `field`; None when it is not one. The
/// index holds five numbers a file and is read before every turn that may change files, so a
/// field too short to overflow is summed without checks.
fn number<const RADIX: u64>(field: &[u8]) -> Option<u64> {
    let short = field.len() <= if RADIX == 16 { 15 } else { 19 };
    if field.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &b in field {
        let digit = u64::from(match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => return None,
        });
        if digit >= RADIX {
            return None;
        }
        n = if short {
            n * RADIX + digit
        } else {
            n.checked_mul(RADIX)?.checked_add(digit)?
        };
    }
    Some(n)
}

/// A decimal number with an optional `-`.
fn signed(field: &[u8]) -> Option<i64> {
    match field.split_first() {
        Some((b'-', digits)) => i64::try_from(number::<10>(digits)?).ok().map(|n| -n),
        _ => i64::try_from(number::<10>(field)?).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept copy named for the reader: a distinct number for each short name.
    fn b(name: &str) -> Blob {
        Blob(name.bytes().fold(0, |n, c| n * 257 + u64::from(c)))
    }

    fn file(blob: &str, ino: u64) -> Entry {
        let blob = b(blob);
        Entry {
            kind: Kind::File,
            mode: 0o644,
            size: 3,
            mtime: 10,
            ctime: 10,
            ino,
            blob: Some(blob),
            target: None,
        }
    }

    fn tree(entries: &[(&str, Entry)]) -> Tree {
        entries
            .iter()
            .map(|(p, e)| (p.to_string(), e.clone()))
            .collect()
    }

    fn never(_: &Entry, _: &Entry) -> bool {
        false
    }

    #[test]
    fn the_index_round_trips_any_path_but_nul() {
        let mut link = file("-", 9);
        link.kind = Kind::Link;
        link.blob = None;
        link.target = Some("a b\nc".into());
        let mut big = file("x", 3);
        big.blob = None;
        let t = tree(&[
            ("a dir/with space\nand newline", file("b1", 1)),
            ("l", link),
            ("big", big),
        ]);
        let bytes = encode(42, 7, &t);
        assert_eq!(decode(&bytes), Some((42, 7, t.clone())));
        assert_eq!(header(&bytes), Some((42, 7)));
        assert_eq!(decode(b"something else\n"), None);
        assert_eq!(header(b"something else\n"), None);
        assert_eq!(decode(&bytes[..bytes.len() - 3]), None);
        // Negative times.
        let mut old = file("ff", 5);
        (old.mtime, old.ctime) = (-3, i64::MAX);
        let t = tree(&[("old", old)]);
        assert_eq!(decode(&encode(1, 2, &t)), Some((1, 2, t.clone())));
        // A header that does not count what follows, a kind that is none, a path cut short.
        let good = encode(1, 2, &t);
        let body = good.iter().position(|&b| b == b'\n').unwrap() + 1;
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let retold = |header: &str| [header.as_bytes(), &good[body..]].concat();
        assert_eq!(text(&good[..body]), "turn-index 2 1 2 1 48\n");
        assert!(decode(&retold("turn-index 2 1 2 1 48\n")).is_some());
        for bad in [
            "turn-index 2 1 2 2 48\n",
            "turn-index 2 1 2 1 47\n",
            "turn-index 2 1 2 1 48 0\n",
        ] {
            assert_eq!(decode(&retold(bad)), None, "{bad}");
        }
        let mut kind = good.clone();
        kind[body] = b'x';
        assert_eq!(decode(&kind), None);
        let mut long = good.clone();
        long[body + 37] = 4; // the path's length, past the identities' end
        assert_eq!(decode(&long), None);
        // Version 1 (text) is still read, each field's number checked whole.
        let v1 = b"turn-index 1 9 8\nf 644 3 10 10 1 1f p\0\0";
        assert_eq!(header(v1), Some((9, 8)));
        assert_eq!(decode(v1).unwrap().2["p"].blob, Some(Blob(0x1f)));
        let entry = |fields: &str| decode(format!("turn-index 1 0 0\n{fields} p\0\0").as_bytes());
        assert!(entry("f 644 3 10 10 1 1f").is_some());
        for bad in [
            "f 648 3 10 10 1 -",                  // not octal
            "f 644 3a 10 10 1 -",                 // not decimal
            "f 644 3 10 10 1 1F",                 // kept copies are lowercase hex
            "f 644 3  10 1 -",                    // an empty field
            "f 644 18446744073709551616 1 1 1 -", // over u64
            "f 644 3 9223372036854775808 1 1 -",  // over i64
            "f 644 99999999999999999999 1 1 1 -", // over u64, as long as its digits
            "f 644 3 10 10 1 10000000000000000",  // a kept copy over u64
            "x 644 3 10 10 1 -",                  // no such kind
            "f 644 3 10 10 1",                    // a field short
        ] {
            assert_eq!(entry(bad), None, "{bad}");
        }
    }

    #[test]
    fn walk_order_puts_a_directory_before_what_is_beneath_it_then_its_siblings() {
        let mut paths = vec!["ab", "a.txt", "a/b", "a-c", "a", "a/b/c", "a/a"];
        paths.sort_by(|a, b| walk_order(a, b));
        assert_eq!(paths, ["a", "a/a", "a/b", "a/b/c", "a-c", "a.txt", "ab"]);
    }

    #[test]
    fn a_scan_that_finds_the_index_unchanged_takes_its_copies_without_decoding() {
        let mut link = file("-", 9);
        link.kind = Kind::Link;
        link.blob = None;
        link.target = Some("a.txt".into());
        let t = tree(&[("a.txt", file("x", 1)), ("a/b", file("y", 2)), ("l", link)]);
        let index = encode(5, 6, &t);
        // What a scan finds: the same entries, in walk order, with no copies yet.
        let scanned = |t: &Tree| {
            let mut order: Vec<(&String, &Entry)> = t.iter().collect();
            order.sort_by(|a, b| walk_order(a.0, b.0));
            let mut bytes = Vec::new();
            for (path, e) in order {
                identity(
                    &mut bytes,
                    path,
                    &Entry {
                        blob: None,
                        ..e.clone()
                    },
                );
            }
            bytes
        };
        assert_eq!(
            kept_if_same(&index, &scanned(&t)),
            Some(vec![Some(b("y")), Some(b("x")), None])
        );
        // Any difference in any entry, or an entry more or less: decoded and compared.
        let mut touched = t.clone();
        touched.get_mut("a/b").unwrap().mtime += 1;
        assert_eq!(kept_if_same(&index, &scanned(&touched)), None);
        let mut more = t.clone();
        more.insert("z".into(), file("z", 3));
        assert_eq!(kept_if_same(&index, &scanned(&more)), None);
        let mut less = t.clone();
        less.remove("l");
        assert_eq!(kept_if_same(&index, &scanned(&less)), None);
        // A version 1 index is always decoded.
        assert_eq!(kept_if_same(b"turn-index 1 0 0\n", &[]), None);
    }

    #[test]
    fn changes_round_trip_through_their_log_form() {
        let mut link = file("-", 9);
        link.kind = Kind::Link;
        link.blob = None;
        link.target = Some("../t".into());
        for change in [
            Change {
                path: "a b".into(),
                before: Some(file("1", 1)),
                after: None,
            },
            Change {
                path: "l".into(),
                before: None,
                after: Some(link),
            },
        ] {
            let text = change.to_json().to_string();
            let back: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(Change::from_json(&back), Some(change));
        }
        assert_eq!(
            Change::from_json(&json!({"path": "x", "before": [1]})),
            None
        );
    }

    #[test]
    fn diff_names_created_changed_and_deleted_paths_in_order() {
        let old = tree(&[
            ("a", file("1", 1)),
            ("b", file("2", 2)),
            ("c", file("3", 3)),
        ]);
        let mut moded = file("2", 2);
        moded.mode = 0o755;
        let new = tree(&[("b", moded), ("c", file("3", 3)), ("d", file("4", 4))]);
        let changes = diff(&old, &new, Entry::same_identity);
        let what: Vec<(&str, &str)> = changes
            .iter()
            .map(|c| (c.path.as_str(), c.what()))
            .collect();
        assert_eq!(what, [("a", "deleted"), ("b", "mode"), ("d", "created")]);
    }

    #[test]
    fn racy_entries_are_those_written_just_before_the_scan() {
        let e = file("1", 1);
        assert!(e.racy(10 + RACY_NS));
        assert!(!e.racy(11 + RACY_NS));
    }

    #[test]
    fn an_undo_puts_back_what_each_checkpoint_found() {
        let turn = [
            Change {
                path: "new".into(),
                before: None,
                after: Some(file("n", 5)),
            },
            Change {
                path: "old".into(),
                before: Some(file("o1", 1)),
                after: Some(file("o2", 2)),
            },
            Change {
                path: "gone".into(),
                before: Some(file("g", 3)),
                after: None,
            },
        ];
        // The workspace as the turn left it, but the restored file now has another inode
        // (content the same stored copy).
        let current = tree(&[("new", file("n", 5)), ("old", file("o2", 2))]);
        let plan = plan(&[&turn], &current, false, &never).unwrap();
        let targets: Vec<(&str, Option<Blob>)> = plan
            .iter()
            .map(|c| (c.path.as_str(), c.after.as_ref().and_then(|e| e.blob)))
            .collect();
        assert_eq!(
            targets,
            [
                ("gone", Some(b("g"))),
                ("new", None),
                ("old", Some(b("o1")))
            ]
        );
    }

    #[test]
    fn a_path_changed_since_is_a_conflict_unless_forced() {
        let turn = [Change {
            path: "f".into(),
            before: Some(file("1", 1)),
            after: Some(file("2", 2)),
        }];
        let current = tree(&[("f", file("3", 3))]);
        assert_eq!(
            plan(&[&turn], &current, false, &never),
            Err(Refusal::Conflicts(vec![("f".into(), "changed since")]))
        );
        assert_eq!(
            plan(&[&turn], &Tree::new(), false, &never),
            Err(Refusal::Conflicts(vec![("f".into(), "deleted since")]))
        );
        // The same bytes under another copy are no conflict.
        assert!(plan(&[&turn], &current, false, &|_, _| true).is_ok());
        let forced = plan(&[&turn], &current, true, &never).unwrap();
        assert_eq!(forced[0].after, Some(file("1", 1)));
    }

    #[test]
    fn content_not_kept_is_refused_up_front() {
        let mut big = file("x", 1);
        big.blob = None;
        let turn = [Change {
            path: "big".into(),
            before: Some(big),
            after: None,
        }];
        assert_eq!(
            plan(&[&turn], &Tree::new(), false, &never),
            Err(Refusal::NotKept(vec!["big".into()]))
        );
    }

    #[test]
    fn several_checkpoints_chain_newest_first() {
        let first = [Change {
            path: "f".into(),
            before: Some(file("1", 1)),
            after: Some(file("2", 2)),
        }];
        let second = [Change {
            path: "f".into(),
            before: Some(file("2", 2)),
            after: Some(file("3", 3)),
        }];
        let current = tree(&[("f", file("3", 3))]);
        let out = plan(&[&second, &first], &current, false, &never).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].after, Some(file("1", 1)));
        // Changed between the two turns by someone else: a conflict.
        let broken = [Change {
            path: "f".into(),
            before: Some(file("9", 9)),
            after: Some(file("3", 3)),
        }];
        assert!(plan(&[&broken, &first], &current, false, &never).is_err());
    }
}
