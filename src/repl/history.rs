//! The REPL's history, kept per workspace in `.turn/history`: one entry per line, newlines
//! and backslashes escaped (`\n`, `\\`), so a pasted block stays one entry. Each entry is
//! appended as it is sent (one write, so two REPLs in one workspace interleave whole lines);
//! loading keeps the newest `MAX_ENTRIES` and rewrites the file when it has grown to twice
//! that. The file is private (0600): prompts can hold anything.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Entries kept, in the file and in memory.
pub const MAX_ENTRIES: usize = 1000;
/// Longer entries (a pasted file) are used but not saved: the file stays small.
pub const MAX_ENTRY_BYTES: usize = 8192;

/// `.turn/history` in the workspace.
pub fn path(workspace: &Path) -> PathBuf {
    workspace.join(".turn").join("history")
}

/// One entry as a line (without its newline).
pub fn encode(entry: &str) -> String {
    let mut line = String::with_capacity(entry.len());
    for c in entry.chars() {
        match c {
            '\\' => line.push_str("\\\\"),
            '\n' => line.push_str("\\n"),
            '\r' => line.push_str("\\r"),
            c => line.push(c),
        }
    }
    line
}

/// A line back into its entry; an unknown escape is kept as it is.
pub fn decode(line: &str) -> String {
    let mut entry = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            entry.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => entry.push('\n'),
            Some('r') => entry.push('\r'),
            Some('\\') => entry.push('\\'),
            Some(other) => {
                entry.push('\\');
                entry.push(other);
            }
            None => entry.push('\\'),
        }
    }
    entry
}

/// The newest `MAX_ENTRIES` entries of a history file's text, oldest first.
pub fn parse(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let keep = lines.len().saturating_sub(MAX_ENTRIES);
    lines[keep..].iter().map(|l| decode(l)).collect()
}

/// The entries in `path` (none when it is missing or unreadable). With `writable`, a file
/// grown past twice the bound is rewritten with what is kept.
pub fn load(path: &Path, writable: bool) -> Vec<String> {
    let Ok(bytes) = fs::read(path) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let entries = parse(&text);
    if writable && text.lines().count() > 2 * MAX_ENTRIES {
        let _ = rewrite(path, &entries);
    }
    entries
}

fn rewrite(path: &Path, entries: &[String]) -> io::Result<()> {
    let temp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)?;
    let text: String = entries.iter().map(|e| encode(e) + "\n").collect();
    file.write_all(text.as_bytes())?;
    drop(file);
    fs::rename(&temp, path).inspect_err(|_| {
        let _ = fs::remove_file(&temp);
    })
}

/// Appends one entry (skipped when blank or longer than `MAX_ENTRY_BYTES`), creating
/// `.turn/` (with its `.gitignore`) and the file (0600) as needed.
pub fn append(path: &Path, entry: &str) -> io::Result<()> {
    if entry.trim().is_empty() || entry.len() > MAX_ENTRY_BYTES {
        return Ok(());
    }
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(dir)?;
        if dir.ends_with(".turn") {
            let ignore = dir.join(".gitignore");
            if !ignore.exists() {
                fs::write(ignore, "*\n")?;
            }
        }
    }
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?;
    // A file made by someone else, or before: private all the same.
    if file.metadata()?.permissions().mode() & 0o077 != 0 {
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    file.write_all((encode(entry) + "\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_through_one_line_each() {
        for entry in [
            "plain",
            "two\nlines",
            "back\\slash \\n literal",
            "cr\r\nlf",
            "日本 🙂",
            "\\",
        ] {
            let line = encode(entry);
            assert!(!line.contains('\n'), "{line:?}");
            assert_eq!(decode(&line), entry);
        }
        assert_eq!(decode("odd \\x escape\\"), "odd \\x escape\\");
    }

    #[test]
    fn parse_keeps_the_newest_entries() {
        assert_eq!(parse("a\n\nb\\nc\n"), ["a", "b\nc"]);
        let text: String = (0..MAX_ENTRIES + 5).map(|i| format!("{i}\n")).collect();
        let entries = parse(&text);
        assert_eq!(entries.len(), MAX_ENTRIES);
        assert_eq!(entries[0], "5");
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("turn-history-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn append_creates_a_private_file_and_load_reads_it_back() {
        let dir = temp("append");
        let path = path(&dir);
        assert!(load(&path, true).is_empty());
        append(&path, "first").unwrap();
        append(&path, "multi\nline").unwrap();
        append(&path, "   ").unwrap();
        append(&path, &"x".repeat(MAX_ENTRY_BYTES + 1)).unwrap();
        assert_eq!(load(&path, true), ["first", "multi\nline"]);
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            fs::read_to_string(dir.join(".turn/.gitignore")).unwrap(),
            "*\n"
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_grown_file_is_cut_back_when_loaded_writable() {
        let dir = temp("grown");
        let path = path(&dir);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text: String = (0..2 * MAX_ENTRIES + 1).map(|i| format!("{i}\n")).collect();
        fs::write(&path, &text).unwrap();
        assert_eq!(load(&path, false).len(), MAX_ENTRIES);
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            text,
            "not writable: left alone"
        );
        let entries = load(&path, true);
        assert_eq!(entries.len(), MAX_ENTRIES);
        assert_eq!(parse(&fs::read_to_string(&path).unwrap()), entries);
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        fs::remove_dir_all(dir).unwrap();
    }
}
