//! Vouching for what runs outside the sandbox. MCP servers from a `--tools` file (or `--mcp`)
//! run with the user's full rights, and the model can write in the workspace: a tools file
//! or a server script the model rewrote must not start on the user's next run on the
//! strength of an old `--tools` flag.
//!
//! The first time turn starts a tools file's servers or commands, it records the SHA-256 of
//! the file and of every workspace file its commands name (the script in
//! `python3 tools/server.py`) under `$XDG_STATE_HOME/turn/vouched/`, outside the workspace.
//! Every later start, MCP restarts included, compares them; on a change turn refuses, naming
//! what changed and `--vouch`, which records them anew.
//!
//! `named` and `changes` are pure; `check` and `recheck` read the files and the record.

use crate::sha256::Sha256;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// A file and its hash when vouched for (`missing` when it did not exist).
#[derive(Clone, Debug, PartialEq)]
pub struct Pin {
    pub path: PathBuf,
    pub hash: String,
}

const MISSING: &str = "missing";

/// The files in the workspace a command names: each word (quotes taken off, and the value of
/// a `--flag=value`) that is, relative to the workspace or absolute, a file inside it.
/// `file` gives the canonical path of a regular file, `None` for anything else.
pub fn named(
    workspace: &Path,
    words: &[&str],
    file: impl Fn(&Path) -> Option<PathBuf>,
) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for word in words.iter().flat_map(|w| w.split_whitespace()) {
        let word = word.trim_matches(|c| c == '"' || c == '\'');
        let word = word.rsplit_once('=').map_or(word, |(_, value)| value);
        if word.is_empty() {
            continue;
        }
        let Some(path) = file(&workspace.join(word)) else {
            continue;
        };
        if path.starts_with(workspace) && !found.contains(&path) {
            found.push(path);
        }
    }
    found
}

/// What differs between a record and now, in words, one line each.
pub fn changes(recorded: &[Pin], now: &[Pin]) -> Vec<String> {
    let mut said = Vec::new();
    for pin in now {
        match recorded.iter().find(|r| r.path == pin.path) {
            None => said.push(format!("{} is named now, not before", pin.path.display())),
            Some(r) if r.hash != pin.hash && pin.hash == MISSING => {
                said.push(format!("{} is gone", pin.path.display()))
            }
            Some(r) if r.hash != pin.hash => said.push(format!(
                "{} changed (sha256 {} then, {} now)",
                pin.path.display(),
                &r.hash[..r.hash.len().min(12)],
                &pin.hash[..pin.hash.len().min(12)]
            )),
            Some(_) => {}
        }
    }
    for r in recorded {
        if !now.iter().any(|p| p.path == r.path) {
            said.push(format!("{} is no longer named", r.path.display()));
        }
    }
    said
}

/// The file's SHA-256, read in pieces (any size in bounded memory); `missing` if unreadable.
fn hash(path: &Path) -> String {
    let Ok(mut file) = std::fs::File::open(path) else {
        return MISSING.into();
    };
    let mut sha = Sha256::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return sha.hex(),
            Ok(n) => sha.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return MISSING.into(),
        }
    }
}

fn pins(files: &[PathBuf]) -> Vec<Pin> {
    files
        .iter()
        .map(|path| Pin {
            path: path.clone(),
            hash: hash(path),
        })
        .collect()
}

/// Vouches for `files` (the tools file first) under `key` (`tools file PATH`, `--mcp X`):
/// records them the first time or with `again` (`--vouch`), else compares them with the
/// record. Ok: the pins to recheck at each later start; Err: what changed, for the user.
pub fn check(key: &str, files: &[PathBuf], again: bool) -> Result<Vec<Pin>, String> {
    let Some(state) = crate::state::dir() else {
        return Err(format!(
            "{key}: cannot vouch for it: neither XDG_STATE_HOME nor HOME is set to a full path"
        ));
    };
    let dir = state.join("vouched");
    let record = dir.join(crate::sha256::hex(key.as_bytes()));
    let now = pins(files);
    if !again {
        if let Ok(text) = std::fs::read_to_string(&record) {
            let recorded = parse(&text);
            return refuse(key, &changes(&recorded, &now)).map(|_| now);
        }
    }
    write(&dir, &record, key, &now)
        .map_err(|e| format!("{key}: cannot record it in {}: {e}", dir.display()))?;
    Ok(now)
}

/// Vouches for what a tools file (`path`, none for `--mcp`) starts: the file itself and the
/// workspace files its servers' and tools' commands name (see `check`).
pub fn vouch_for(
    workspace: &Path,
    key: &str,
    path: Option<&Path>,
    file: &super::declared::ToolsFile,
    again: bool,
) -> Result<Vec<Pin>, String> {
    let mut words: Vec<&str> = Vec::new();
    for server in &file.servers {
        words.push(&server.command);
        words.extend(server.args.iter().map(String::as_str));
    }
    words.extend(file.tools.iter().map(|t| t.command.as_str()));
    let canonical = |p: &Path| p.canonicalize().ok().filter(|c| c.is_file());
    let mut files: Vec<PathBuf> = path.and_then(canonical).into_iter().collect();
    for named in named(workspace, &words, canonical) {
        if !files.contains(&named) {
            files.push(named);
        }
    }
    check(key, &files, again)
}

/// Compares `pinned` with the files now, before a restart.
pub fn recheck(key: &str, pinned: &[Pin]) -> Result<(), String> {
    let files: Vec<PathBuf> = pinned.iter().map(|p| p.path.clone()).collect();
    refuse(key, &changes(pinned, &pins(&files)))
}

fn refuse(key: &str, changes: &[String]) -> Result<(), String> {
    if changes.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{key} runs outside the sandbox and has changed since you vouched for it: {}. Look at \
         what changed (a command of the model's may have written it), then pass --vouch to \
         vouch for it again",
        changes.join("; ")
    ))
}

fn parse(text: &str) -> Vec<Pin> {
    text.lines()
        .filter_map(|line| line.split_once(' '))
        .filter(|(hash, _)| *hash == MISSING || hash.len() == 64)
        .map(|(hash, path)| Pin {
            path: PathBuf::from(path),
            hash: hash.to_string(),
        })
        .collect()
}

/// Writes the record whole or not at all (a new file renamed over the old), 0600 in a 0700
/// directory.
fn write(dir: &Path, record: &Path, key: &str, pins: &[Pin]) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut text = format!("# {}\n", key.replace('\n', " "));
    for pin in pins {
        text.push_str(&format!("{} {}\n", pin.hash, pin.path.display()));
    }
    let temp = record.with_extension(format!("new-{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&temp, record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(path: &str, hash: &str) -> Pin {
        Pin {
            path: PathBuf::from(path),
            hash: hash.into(),
        }
    }

    #[test]
    fn commands_name_workspace_files_by_their_words() {
        let ws = Path::new("/w");
        let files = [
            ("/w/tools/server.py", "/w/tools/server.py"),
            ("/w/./run.sh", "/w/run.sh"),
            ("/w/../w/run.sh", "/w/run.sh"),
            ("/w/conf.json", "/w/conf.json"),
            ("/etc/passwd", "/etc/passwd"),
            ("/w/link", "/etc/shadow"),
        ];
        let file = |p: &Path| {
            let hit = files.iter().find(|(f, _)| Path::new(f) == p);
            hit.map(|(_, canonical)| PathBuf::from(canonical))
        };
        let words = [
            "python3",
            "tools/server.py --config=conf.json",
            "'./run.sh'",
            "/etc/passwd",
            "../w/run.sh link",
        ];
        let found = named(ws, &words, file);
        assert_eq!(
            found,
            ["/w/tools/server.py", "/w/conf.json", "/w/run.sh"].map(PathBuf::from)
        );
    }

    #[test]
    fn changes_name_each_file() {
        let a = "a".repeat(64);
        let b = "b".repeat(64);
        let then = [pin("/t.json", &a), pin("/w/s.py", &a), pin("/w/old", &a)];
        let now = [pin("/t.json", &a), pin("/w/s.py", &b), pin("/w/new", &a)];
        assert_eq!(
            changes(&then, &now),
            [
                "/w/s.py changed (sha256 aaaaaaaaaaaa then, bbbbbbbbbbbb now)",
                "/w/new is named now, not before",
                "/w/old is no longer named",
            ]
        );
        assert!(changes(&then, &then).is_empty());
        let gone = [
            pin("/t.json", MISSING),
            pin("/w/s.py", &a),
            pin("/w/old", &a),
        ];
        assert_eq!(changes(&then, &gone), ["/t.json is gone"]);
    }

    #[test]
    fn records_parse_back() {
        let a = "a".repeat(64);
        let text = format!("# tools file /t.json\n{a} /t.json\nmissing /w/a b\njunk\n");
        assert_eq!(parse(&text), [pin("/t.json", &a), pin("/w/a b", MISSING)]);
    }
}
