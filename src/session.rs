//! Sessions: a history kept as JSONL, one message per line in the Chat Completions format,
//! appended and flushed as each message happens, so a run killed at any moment can be resumed.
//! Resuming goes through normalization, which drops whatever the kill left half done.
//!
//! Runs record to `.turn/sessions/` in the workspace unless told otherwise; `-c` picks the
//! newest file there. The system prompt is not stored: a resumed run uses the current one.
//!
//! When the history is compacted to fit the context window, a `{"compacted": {...}}` line
//! holds the whole new history (`history`, without the system prompt) with what was done
//! (`stage`, `before`, `after`, `window`). The file stays append-only and keeps every message
//! ever sent; loading starts over from each such line, so a resumed run gets the compacted
//! state.

use crate::error::{Error, Result};
use crate::report::{Event, Reporter};
use crate::wire::message::{Message, Role};
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A compaction line: the history from here on.
#[derive(Serialize, Deserialize)]
struct Compacted {
    stage: String,
    before: u64,
    after: u64,
    window: Option<u64>,
    history: Vec<Message>,
}

#[derive(Serialize, Deserialize)]
struct CompactedLine {
    compacted: Compacted,
}

/// The messages in a session file (none if it does not exist yet).
pub fn load(path: &Path) -> Result<Vec<Message>> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => {
            let path = path.into();
            return Err(Error::File {
                path,
                what: "cannot read session",
                err,
            });
        }
    };
    let mut messages = Vec::new();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Message>(line) {
            Ok(message) if message.role != Role::System => messages.push(message),
            Ok(_) => {}
            Err(_) if line.trim_start().starts_with("{\"compacted\"") => {
                match serde_json::from_str::<CompactedLine>(line) {
                    Ok(record) => {
                        messages = record.compacted.history;
                        messages.retain(|m| m.role != Role::System);
                    }
                    Err(_) if i + 1 == lines.len() && !line.ends_with('\n') => {}
                    Err(e) => {
                        let detail = format!("line {}: {e}", i + 1);
                        return Err(Error::Session {
                            path: path.into(),
                            detail,
                        });
                    }
                }
            }
            // A last line without its newline is a write the kill cut short: nothing to resume.
            Err(_) if i + 1 == lines.len() && !line.ends_with('\n') => {}
            Err(e) => {
                let detail = format!("line {}: {e}", i + 1);
                return Err(Error::Session {
                    path: path.into(),
                    detail,
                });
            }
        }
    }
    Ok(messages)
}

/// The most recently written session under `.turn/sessions/` of the workspace.
pub fn latest(workspace: &Path) -> Result<PathBuf> {
    let dir = dir(workspace);
    let entries = fs::read_dir(&dir).map_err(|err| Error::File {
        path: dir.clone(),
        what: "no session to continue in",
        err,
    })?;
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, path)| path)
        .ok_or_else(|| Error::Usage(format!("no session to continue in {}", dir.display())))
}

/// A new session path: `.turn/sessions/<UTC time>-<pid>.jsonl`, with `-2`, `-3`… when this
/// process already started one in the same second.
pub fn fresh(workspace: &Path) -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stem = format!("{}-{}", timestamp(secs), std::process::id());
    let dir = dir(workspace);
    (1..)
        .map(|n| match n {
            1 => dir.join(format!("{stem}.jsonl")),
            n => dir.join(format!("{stem}-{n}.jsonl")),
        })
        .find(|path| !path.exists())
        .expect("some name is free")
}

fn dir(workspace: &Path) -> PathBuf {
    workspace.join(".turn").join("sessions")
}

/// `2026-12-02T13-33-25` for seconds since the epoch (UTC; civil-from-days, Howard Hinnant).
fn timestamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rest = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rest / 3600, rest / 60 % 60, rest % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}-{m:02}-{s:02}")
}

/// Passes every event on, and appends each message that joins the history to the session
/// file first. A file that cannot be written is reported once; the run goes on without it.
pub struct Recorder<'a> {
    inner: &'a mut dyn Reporter,
    file: Option<File>,
    path: Option<PathBuf>,
}

impl<'a> Recorder<'a> {
    /// Records to `path` (created with its directories), or nowhere when `None`.
    pub fn new(inner: &'a mut dyn Reporter, path: Option<PathBuf>) -> Recorder<'a> {
        let mut recorder = Recorder {
            inner,
            file: None,
            path: None,
        };
        if let Some(path) = path {
            recorder.switch(path);
        }
        recorder
    }

    /// Records from now on to a new file (the REPL's /reset).
    pub fn switch(&mut self, path: PathBuf) {
        match open(&path) {
            Ok(file) => self.file = Some(file),
            Err(e) => {
                self.file = None;
                let notice = format!("cannot record the session in {}: {e}", path.display());
                self.inner.report(Event::Notice(&notice));
            }
        }
        self.path = Some(path);
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref().filter(|_| self.file.is_some())
    }

    fn append(&mut self, record: &impl Serialize) {
        let Some(file) = &mut self.file else { return };
        let mut line = serde_json::to_string(record).unwrap_or_default();
        line.push('\n');
        if let Err(e) = file.write_all(line.as_bytes()) {
            self.file = None;
            let path = self
                .path
                .as_deref()
                .unwrap_or(Path::new("?"))
                .display()
                .to_string();
            let notice = format!("cannot record the session in {path}: {e}; it stops here");
            self.inner.report(Event::Notice(&notice));
        }
    }
}

/// Opens for appending; a file whose last line was cut short gets its newline first, so the
/// next message starts a line of its own.
fn open(path: &Path) -> std::io::Result<File> {
    if let Some(sessions) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(sessions)?;
        // Keep recorded sessions out of the user's git status.
        if let Some(turn_dir) = sessions.parent().filter(|d| d.ends_with(".turn")) {
            let ignore = turn_dir.join(".gitignore");
            if !ignore.exists() {
                fs::write(ignore, "*\n")?;
            }
        }
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)?;
    let len = file.metadata()?.len();
    if len > 0 {
        let mut last = [0u8];
        use std::io::{Seek, SeekFrom};
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
        }
    }
    Ok(file)
}

impl Reporter for Recorder<'_> {
    fn report(&mut self, event: Event<'_>) {
        match &event {
            Event::Message(message) if message.role != Role::System => self.append(message),
            Event::Compacted {
                stage,
                before,
                after,
                window,
                history,
            } => {
                let history = history.iter().filter(|m| m.role != Role::System);
                self.append(&CompactedLine {
                    compacted: Compacted {
                        stage: stage.to_string(),
                        before: *before,
                        after: *after,
                        window: *window,
                        history: history.cloned().collect(),
                    },
                })
            }
            _ => {}
        }
        self.inner.report(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(timestamp(0), "1970-01-01T00-00-00");
        assert_eq!(timestamp(951_782_400), "2000-02-29T00-00-00");
        assert_eq!(timestamp(1_796_218_405), "2026-12-02T13-33-25");
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("turn-session-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    struct Nothing;
    impl Reporter for Nothing {
        fn report(&mut self, _: Event<'_>) {}
    }

    #[test]
    fn records_and_loads_back_without_the_system_prompt() {
        let dir = temp("roundtrip");
        let path = dir.join(".turn/sessions/s.jsonl");
        let mut nothing = Nothing;
        let mut recorder = Recorder::new(&mut nothing, Some(path.clone()));
        let messages = [
            Message::system("sys"),
            Message::user("hi"),
            Message::assistant(Some("yo".into()), vec![]),
        ];
        for message in &messages {
            recorder.report(Event::Message(message));
        }
        assert_eq!(load(&path).unwrap(), messages[1..]);
        assert_eq!(
            fs::read_to_string(dir.join(".turn/.gitignore")).unwrap(),
            "*\n"
        );
        assert_eq!(latest(&dir).unwrap(), path);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_closed_before_appending() {
        let dir = temp("torn");
        let path = dir.join("s.jsonl");
        fs::write(
            &path,
            "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assis",
        )
        .unwrap();
        assert_eq!(load(&path).unwrap(), [Message::user("a")]);
        let mut nothing = Nothing;
        let mut recorder = Recorder::new(&mut nothing, Some(path.clone()));
        recorder.report(Event::Message(&Message::user("b")));
        let err = load(&path).unwrap_err().to_string();
        assert!(
            err.contains("line 2"),
            "the torn line now has a newline and is reported: {err}"
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_compaction_line_starts_the_history_over() {
        let dir = temp("compacted");
        let path = dir.join("s.jsonl");
        let mut nothing = Nothing;
        let mut recorder = Recorder::new(&mut nothing, Some(path.clone()));
        for message in [
            Message::user("task"),
            Message::assistant(Some("a".into()), vec![]),
        ] {
            recorder.report(Event::Message(&message));
        }
        let compacted = [
            Message::system("sys"),
            Message::user("task"),
            Message::user("[turn] summary"),
        ];
        recorder.report(Event::Compacted {
            stage: "summary",
            before: 900,
            after: 300,
            window: Some(1000),
            history: &compacted,
        });
        recorder.report(Event::Message(&Message::user("more")));
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 4, "append-only: every message stays");
        assert!(text.lines().nth(2).unwrap().starts_with(
            r#"{"compacted":{"stage":"summary","before":900,"after":300,"window":1000,"history":[{"role":"user""#
        ));
        assert_eq!(
            load(&path).unwrap(),
            [
                Message::user("task"),
                Message::user("[turn] summary"),
                Message::user("more")
            ]
        );
        fs::write(&path, format!("{text}{{\"compacted\": 7}}\n")).unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(err.contains("line 5"), "{err}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_bad_line_is_an_error_naming_it() {
        let dir = temp("bad");
        let path = dir.join("s.jsonl");
        fs::write(&path, "{\"role\":\"user\",\"content\":\"a\"}\nnot json\n{\"role\":\"user\",\"content\":\"b\"}\n").unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("cannot resume {}: line 2:", path.display())),
            "{err}"
        );
        assert!(load(&dir.join("missing.jsonl")).unwrap().is_empty());
        fs::remove_dir_all(dir).unwrap();
    }
}
