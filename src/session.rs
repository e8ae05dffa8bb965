//! Sessions: a history kept as JSONL, one message per line in the Chat Completions format,
//! appended and flushed as each message happens, so a run killed at any moment can be resumed.
//! Resuming goes through normalization, which drops whatever the kill left half done; a last
//! line that a kill or a full disk cut short is skipped with a notice, also once later lines
//! follow it, so it never breaks a later resume.
//!
//! Runs record to `.turn/sessions/` in the workspace unless told otherwise; `-c` picks the
//! newest file there. The system prompt is not stored: a resumed run uses the current one,
//! and nothing but messages is (no key, no header).
//!
//! Session files are opened before the sandbox exists, with turn's full rights, and a
//! confined command may have planted symlinks to lure those rights elsewhere (a session file
//! that is really `~/.bash_profile`). So they are opened through `sandbox::fsafe`: `.turn`,
//! `.turn/sessions`, a session file, and every directory between the workspace and a
//! `--session` file inside it are never followed when they are symlinks; outside the
//! workspace only the file itself must not be one. Files are created 0600, directories 0700.
//!
//! When the history is compacted to fit the context window, a `{"compacted": {...}}` line
//! holds the whole new history (`history`, without the system prompt) with what was done
//! (`stage`, `before`, `after`, `window`). The file stays append-only and keeps every message
//! ever sent; loading starts over from each such line, so a resumed run gets the compacted
//! state.
//!
//! When notes for a model that cannot call tools well are switched on (see coach), a
//! `{"coaching": {"why": ...}}` line records it, so a resumed run keeps them on. When the run
//! goes over to the text tool protocol (under `auto`, the server refused tools), a
//! `{"protocol": {"name": "text", "why": ...}}` line records it, so a resumed `auto` run
//! starts with the text protocol.

use crate::error::{Error, Result};
use crate::report::{Event, Reporter};
use crate::sandbox::fsafe::{self, Create, Dir};
use crate::wire::message::{Message, Role};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufRead, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

/// A session file larger than this is refused (exit 2): resuming reads it all.
const MAX_FILE: u64 = 256 << 20;
/// A line longer than this is refused: no message turn writes is (a server's reply is capped
/// at 64 MiB).
const MAX_LINE: u64 = 64 << 20;

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

/// A coaching line: notes are on for this session, and why.
#[derive(Serialize, Deserialize)]
struct Coaching {
    why: String,
}

#[derive(Serialize, Deserialize)]
struct CoachingLine {
    coaching: Coaching,
}

/// A protocol line: the tools go as text from here on, and why.
#[derive(Serialize, Deserialize)]
struct ProtocolSwitch {
    name: String,
    why: String,
}

#[derive(Serialize, Deserialize)]
struct ProtocolLine {
    protocol: ProtocolSwitch,
}

/// What a session's records say besides its messages.
#[derive(Default, Debug, PartialEq)]
pub struct Records {
    /// Why notes are on (see coach).
    pub coaching: Option<String>,
    /// The tool protocol the run went over to (see wire::textproto).
    pub protocol: Option<String>,
}

/// A session file: where it is and, once it exists, the file itself, opened once and used
/// for both the resume and the recording.
pub struct Session {
    /// As the user named it, or where a fresh one lives: for notices.
    path: PathBuf,
    place: Place,
    file: Option<File>,
    /// What the loaded file's coaching and protocol lines say.
    records: Records,
}

enum Place {
    /// A new file under `.turn/sessions` of this workspace, named when it is created.
    Fresh { workspace: PathBuf, root: Dir },
    /// `rel` beneath the workspace: no symlink followed anywhere on the way.
    Beneath { root: Dir, rel: PathBuf },
    /// `name` in the directory `parent`, outside the workspace: the file must not be a
    /// symlink; the directories are the user's own path.
    Outside { parent: PathBuf, name: OsString },
}

impl Session {
    /// A new session under `.turn/sessions/` of the workspace (created when recording starts).
    pub fn fresh(workspace: &Path, root: &Dir) -> io::Result<Session> {
        Ok(Session {
            path: dir(workspace),
            place: Place::Fresh {
                workspace: workspace.to_path_buf(),
                root: root.try_clone()?,
            },
            file: None,
            records: Records::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why notes are on, and the protocol the run went over to, as the loaded file records.
    pub fn records(&self) -> &Records {
        &self.records
    }

    /// The messages recorded so far (none for a new file). Torn lines are skipped, each with
    /// a notice; any other line that is not a message is an error naming the file and line.
    pub fn load(&mut self, reporter: &mut dyn Reporter) -> Result<Vec<Message>> {
        let Some(file) = &mut self.file else {
            return Ok(Vec::new());
        };
        let read_error = |err| Error::File {
            path: self.path.clone(),
            what: "cannot read session",
            err,
        };
        let size = file.metadata().map_err(read_error)?.len();
        if size > MAX_FILE {
            return Err(Error::Session {
                path: self.path.clone(),
                detail: format!(
                    "it is {size} bytes, over the {} MiB turn reads as a session; start a new \
                     one (or trim this one)",
                    MAX_FILE >> 20
                ),
            });
        }
        file.seek(SeekFrom::Start(0)).map_err(read_error)?;
        let (messages, torn, records) =
            parse(io::BufReader::new(&*file)).map_err(|detail| Error::Session {
                path: self.path.clone(),
                detail,
            })?;
        self.records = records;
        for line in torn {
            let notice = format!(
                "line {line} of {} was cut short by an interrupted write; it is skipped",
                self.path.display()
            );
            reporter.report(Event::Notice(&notice));
        }
        Ok(messages)
    }

    /// Opens the file for appending, creating it (and its directories) if need be.
    fn start(&mut self) -> io::Result<()> {
        if let Some(file) = self.file.take() {
            self.file = Some(close_torn_line(file)?);
            return Ok(());
        }
        let file = match &self.place {
            Place::Fresh { workspace, root } => {
                let sessions = sessions_dir(root, true)?;
                let (name, file) = create_fresh(&sessions)?;
                record_latest(workspace, &name);
                self.path = dir(workspace).join(name);
                file
            }
            Place::Beneath { root, rel } => {
                let parent = rel.parent().unwrap_or(Path::new(""));
                if rel.starts_with(".turn") {
                    sessions_dir(root, false)?;
                }
                let dir = root.create_dirs(parent, 0o700)?;
                let name = rel.file_name().unwrap_or_default();
                dir.open_append(Path::new(name), Create::IfMissing)?
            }
            Place::Outside { parent, name } => {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(parent)?;
                Dir::open(parent)?.open_append(Path::new(name), Create::IfMissing)?
            }
        };
        self.file = Some(close_torn_line(file)?);
        Ok(())
    }
}

/// The session the flags ask for: a fresh one, `--session FILE`, or the newest (`-c`); an
/// existing file is opened now, for the resume.
pub fn find(workspace: &Path, root: &Dir, which: &crate::cli::Session) -> Result<Option<Session>> {
    use crate::cli::Session as Which;
    let session = match which {
        Which::Off => return Ok(None),
        Which::Fresh => Session::fresh(workspace, root).map_err(|err| Error::File {
            path: workspace.to_path_buf(),
            what: "cannot open workspace",
            err,
        })?,
        Which::Latest => latest(workspace, root)?,
        Which::File(path) => named(workspace, root, path)?,
    };
    Ok(Some(session))
}

/// `--session FILE`: opened now if it exists.
fn named(workspace: &Path, root: &Dir, path: &Path) -> Result<Session> {
    let refuse = |err: io::Error| Error::File {
        path: path.to_path_buf(),
        what: "cannot use the session file",
        err: explain(err),
    };
    let absolute = std::env::current_dir()
        .map(|cwd| lexical(&cwd.join(path)))
        .map_err(refuse)?;
    let Some(name) = absolute.file_name().map(OsString::from) else {
        return Err(Error::Usage(format!(
            "--session needs a file name, not {}",
            path.display()
        )));
    };
    let place = match absolute.strip_prefix(workspace) {
        Ok(rel) => Place::Beneath {
            root: root.try_clone().map_err(refuse)?,
            rel: rel.to_path_buf(),
        },
        Err(_) => Place::Outside {
            parent: absolute.parent().unwrap_or(Path::new("/")).to_path_buf(),
            name,
        },
    };
    let opened = match &place {
        Place::Beneath { root, rel } => root.open_append(rel, Create::No),
        Place::Outside { parent, name } => {
            Dir::open(parent).and_then(|dir| dir.open_append(Path::new(name), Create::No))
        }
        Place::Fresh { .. } => unreachable!("a named session"),
    };
    let file = match opened {
        Ok(file) => Some(file),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(refuse(e)),
    };
    Ok(Session {
        path: path.to_path_buf(),
        place,
        file,
        records: Records::default(),
    })
}

/// `-c`: the most recently written session under `.turn/sessions/` of the workspace.
fn latest(workspace: &Path, root: &Dir) -> Result<Session> {
    let shown = dir(workspace);
    let sessions = root
        .open_dir(Path::new(".turn/sessions"))
        .map_err(|err| Error::File {
            path: shown.clone(),
            what: "no session to continue in",
            err: explain(err),
        })?;
    // The session turn last started here, as it recorded outside the workspace; else the
    // newest by the time in turn's own names (never by mtime, which any command can set).
    // Names are then looked at, and opened, beneath the directory opened above, never
    // through a symlink.
    let recorded = latest_record(workspace)
        .and_then(|path| fs::read_to_string(path).ok())
        .map(|name| OsString::from(name.trim_end()))
        .filter(|name| turn_name(&name.to_string_lossy()))
        .filter(|name| {
            sessions
                .metadata(Path::new(name))
                .is_ok_and(|m| m.is_file())
        });
    let newest = recorded.or_else(|| {
        fs::read_dir(&shown)
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name())
            .filter(|name| turn_name(&name.to_string_lossy()))
            .filter(|name| {
                sessions
                    .metadata(Path::new(name))
                    .is_ok_and(|m| m.is_file())
            })
            .max()
    });
    let Some(name) = newest else {
        return Err(Error::Usage(format!(
            "no session to continue in {}",
            shown.display()
        )));
    };
    let path = shown.join(&name);
    let file = sessions
        .open_append(Path::new(&name), Create::No)
        .map_err(|err| Error::File {
            path: path.clone(),
            what: "cannot continue the session",
            err: explain(err),
        })?;
    Ok(Session {
        path,
        place: Place::Beneath {
            root: root.try_clone().map_err(|err| Error::File {
                path: workspace.to_path_buf(),
                what: "cannot open workspace",
                err,
            })?,
            rel: PathBuf::from(".turn/sessions").join(name),
        },
        file: Some(file),
        records: Records::default(),
    })
}

/// Where turn records the name of the session it last started in `workspace`: under its
/// state directory, out of the commands' reach.
fn latest_record(workspace: &Path) -> Option<PathBuf> {
    let key = crate::sha256::hex(workspace.as_os_str().as_encoded_bytes());
    Some(crate::state::dir()?.join("sessions").join(key))
}

/// Records `name` as the latest session of `workspace` (best effort: without it, `-c` goes
/// by the names).
fn record_latest(workspace: &Path, name: &OsString) {
    let Some(record) = latest_record(workspace) else {
        return;
    };
    if let Some(dir) = record.parent() {
        let _ = fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir);
    }
    let temp = record.with_extension(format!("new-{}", std::process::id()));
    if fs::write(&temp, name.as_encoded_bytes()).is_ok() {
        let _ = fs::rename(&temp, &record);
    }
}

/// Whether `name` is one turn gives a session: `2026-12-02T13-33-25-<pid>[-<n>].jsonl`.
fn turn_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".jsonl") else {
        return false;
    };
    let shape = "dddd-dd-ddTdd-dd-dd-";
    stem.len() > shape.len()
        && stem.bytes().zip(shape.bytes()).all(|(c, s)| match s {
            b'd' => c.is_ascii_digit(),
            s => c == s,
        })
        && stem[shape.len()..]
            .split('-')
            .all(|part| !part.is_empty() && part.bytes().all(|c| c.is_ascii_digit()))
}

/// Errors that mean a planted symlink, said so.
fn explain(err: io::Error) -> io::Error {
    if fsafe::is_symlink(&err) {
        return io::Error::new(
            err.kind(),
            "it is a symbolic link, or one is in its path; turn does not follow symlinks to              session files",
        );
    }
    err
}

/// `path` with `.` and `..` taken out by name, as the user wrote it.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Makes `.turn` (and its `.gitignore`) now, if missing: a run that will record a session
/// makes it before its commands start, so that it is among the protected paths from the
/// start (best effort: recording reports its own failure).
pub fn make_turn_dir(root: &Dir) {
    let _ = sessions_dir(root, false);
}

/// `.turn/sessions` beneath the workspace, made 0700 (and `.turn` with its `.gitignore`).
fn sessions_dir(root: &Dir, sessions: bool) -> io::Result<Dir> {
    let turn = root.create_dirs(Path::new(".turn"), 0o700)?;
    private(&turn);
    // Keep recorded sessions out of the user's git status.
    match turn.create_new(Path::new(".gitignore"), 0o644) {
        Ok(mut file) => file.write_all(b"*\n")?,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    if !sessions {
        return Ok(turn);
    }
    let sessions = turn.create_dirs(Path::new("sessions"), 0o700)?;
    private(&sessions);
    Ok(sessions)
}

/// Takes group and other rights off a directory turn made (older versions made them 0755).
fn private(dir: &Dir) {
    if let Ok(meta) = dir.metadata(Path::new("")) {
        if meta.mode() & 0o077 != 0 {
            let _ = dir.set_permissions(fs::Permissions::from_mode(meta.mode() & 0o700));
        }
    }
}

/// A new file `<UTC time>-<pid>.jsonl` in `sessions`, with `-2`, `-3`… when the name is taken.
fn create_fresh(sessions: &Dir) -> io::Result<(OsString, File)> {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stem = format!("{}-{}", timestamp(secs), std::process::id());
    for n in 1..1000 {
        let name = match n {
            1 => format!("{stem}.jsonl"),
            n => format!("{stem}-{n}.jsonl"),
        };
        match sessions.open_append(Path::new(&name), Create::New) {
            Ok(file) => return Ok((name.into(), file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free session file name"))
}

fn dir(workspace: &Path) -> PathBuf {
    workspace.join(".turn").join("sessions")
}

/// A file whose last line was cut short gets its newline, so the next message starts a line
/// of its own (and the torn one stays recognizable as torn).
fn close_torn_line(mut file: File) -> io::Result<File> {
    let len = file.metadata()?.len();
    if len > 0 {
        let mut last = [0u8];
        file.read_exact_at(&mut last, len - 1)?;
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
        }
    }
    Ok(file)
}

/// What a session file holds: the messages, the (1-based) lines skipped as torn (cut short by a
/// kill or a full disk: JSON that ends too early, or the NUL bytes a crash can leave), and what
/// its coaching and protocol lines say.
type Parsed = (Vec<Message>, Vec<usize>, Records);

/// Reads a session a line at a time, each at most `MAX_LINE` bytes.
fn parse(mut reader: impl io::BufRead) -> std::result::Result<Parsed, String> {
    let (mut messages, mut torn, mut records) = (Vec::new(), Vec::new(), Records::default());
    let mut line = Vec::new();
    for i in 0.. {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("line {}: {e}", i + 1))?;
        if read == 0 {
            break;
        }
        if line.len() as u64 > MAX_LINE {
            return Err(format!(
                "line {} is longer than {} MiB, more than any message turn writes",
                i + 1,
                MAX_LINE >> 20
            ));
        }
        // A line without its newline is the last: a write the kill cut short.
        let cut = !line.ends_with(b"\n");
        let body = line.trim_ascii_end();
        let body = &body[body.iter().take_while(|&&b| b == 0).count()..];
        if body.iter().all(|&b| b == 0 || b.is_ascii_whitespace()) {
            if line.contains(&0) {
                torn.push(i + 1);
            }
            continue;
        }
        match serde_json::from_slice::<Message>(body) {
            Ok(message) if message.role != Role::System => messages.push(message),
            Ok(_) => {}
            Err(_) if body.starts_with(b"{\"compacted\"") => {
                match serde_json::from_slice::<CompactedLine>(body) {
                    Ok(record) => {
                        messages = record.compacted.history;
                        messages.retain(|m| m.role != Role::System);
                    }
                    Err(e) if e.is_eof() => torn.push(i + 1),
                    Err(_) if cut => torn.push(i + 1),
                    Err(e) => return Err(format!("line {}: {e}", i + 1)),
                }
            }
            Err(_) if body.starts_with(b"{\"coaching\"") => {
                match serde_json::from_slice::<CoachingLine>(body) {
                    Ok(record) => records.coaching = Some(record.coaching.why),
                    Err(_) => torn.push(i + 1),
                }
            }
            Err(_) if body.starts_with(b"{\"protocol\"") => {
                match serde_json::from_slice::<ProtocolLine>(body) {
                    Ok(record) => records.protocol = Some(record.protocol.name),
                    Err(_) => torn.push(i + 1),
                }
            }
            Err(e) if e.is_eof() => torn.push(i + 1),
            Err(_) if cut => torn.push(i + 1),
            Err(e) => return Err(format!("line {}: {e}", i + 1)),
        }
    }
    Ok((messages, torn, records))
}

/// `2026-12-02T13-33-25` for seconds since the epoch (UTC; civil-from-days, Howard Hinnant).
pub fn timestamp(secs: u64) -> String {
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
    session: Option<Session>,
}

impl<'a> Recorder<'a> {
    /// Records to `session` (created with its directories), or nowhere when `None`.
    pub fn new(inner: &'a mut dyn Reporter, session: Option<Session>) -> Recorder<'a> {
        let mut recorder = Recorder {
            inner,
            session: None,
        };
        if let Some(session) = session {
            recorder.switch(Ok(session));
        }
        recorder
    }

    /// Records from now on to another session (the REPL's /reset).
    pub fn switch(&mut self, session: io::Result<Session>) {
        self.session = None;
        let started = session.and_then(|mut session| match session.start() {
            Ok(()) => Ok(session),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("{}: {}", session.path.display(), explain(e)),
            )),
        });
        match started {
            Ok(session) => self.session = Some(session),
            Err(e) => {
                let notice = format!("cannot record the session in {e}");
                self.inner.report(Event::Notice(&notice));
            }
        }
    }

    pub fn path(&self) -> Option<&Path> {
        self.session.as_ref().map(Session::path)
    }

    fn append(&mut self, record: &impl Serialize) {
        let Some(session) = &mut self.session else {
            return;
        };
        let Some(file) = &mut session.file else {
            return;
        };
        let mut line = serde_json::to_string(record).unwrap_or_default();
        line.push('\n');
        if let Err(e) = file.write_all(line.as_bytes()) {
            let path = session.path.display().to_string();
            self.session = None;
            let notice = format!("cannot record the session in {path}: {e}; it stops here");
            self.inner.report(Event::Notice(&notice));
        }
    }
}

impl Reporter for Recorder<'_> {
    fn report(&mut self, event: Event<'_>) {
        match &event {
            Event::Message(message) if message.role != Role::System => self.append(message),
            Event::Coaching(why) => self.append(&CoachingLine {
                coaching: Coaching {
                    why: why.to_string(),
                },
            }),
            Event::Fallback { reason: why, .. } => self.append(&ProtocolLine {
                protocol: ProtocolSwitch {
                    name: "text".into(),
                    why: why.to_string(),
                },
            }),
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
    fn a_compaction_line_starts_the_history_over() {
        let compacted = CompactedLine {
            compacted: Compacted {
                stage: "summary".into(),
                before: 900,
                after: 300,
                window: Some(1000),
                history: vec![Message::user("task"), Message::user("[turn] summary")],
            },
        };
        let lines = [
            serde_json::to_string(&Message::user("task")).unwrap(),
            serde_json::to_string(&Message::assistant(Some("a".into()), vec![])).unwrap(),
            serde_json::to_string(&compacted).unwrap(),
            serde_json::to_string(&Message::user("more")).unwrap(),
        ];
        let text = format!("{}\n", lines.join("\n"));
        assert!(lines[2].starts_with(
            r#"{"compacted":{"stage":"summary","before":900,"after":300,"window":1000,"history":[{"role":"user""#
        ));
        let (messages, torn, _) = parse(text.as_bytes()).unwrap();
        assert!(torn.is_empty());
        assert_eq!(
            messages,
            [
                Message::user("task"),
                Message::user("[turn] summary"),
                Message::user("more")
            ]
        );
        let bad = format!("{text}{{\"compacted\": 7}}\n");
        assert!(parse(bad.as_bytes()).unwrap_err().contains("line 5"));
        // A compaction line torn by a kill is skipped like any other.
        let torn_line = format!("{text}{}", &lines[2][..40]);
        assert_eq!(parse(torn_line.as_bytes()).unwrap().1, [5]);
    }

    #[test]
    fn a_coaching_line_survives_compaction_and_is_no_message() {
        let coaching = serde_json::to_string(&CoachingLine {
            coaching: Coaching { why: "why".into() },
        })
        .unwrap();
        assert_eq!(coaching, r#"{"coaching":{"why":"why"}}"#);
        let user = serde_json::to_string(&Message::user("task")).unwrap();
        let compacted =
            r#"{"compacted":{"stage":"elide","before":2,"after":1,"window":null,"history":[]}}"#;
        let protocol = r#"{"protocol":{"name":"text","why":"w"}}"#;
        let text = format!("{user}\n{coaching}\n{protocol}\n{compacted}\n");
        let (messages, torn, records) = parse(text.as_bytes()).unwrap();
        assert!(messages.is_empty() && torn.is_empty());
        assert_eq!(records.coaching.as_deref(), Some("why"));
        assert_eq!(records.protocol.as_deref(), Some("text"));
        let (_, _, records) = parse(format!("{user}\n").as_bytes()).unwrap();
        assert_eq!(records, Records::default());
    }
    use crate::cli::Session as Which;
    use std::os::unix::fs::symlink;

    #[test]
    fn only_turns_own_names_count_as_sessions() {
        for name in [
            "2026-12-02T13-33-25-41.jsonl",
            "2026-12-02T13-33-25-41-2.jsonl",
        ] {
            assert!(turn_name(name), "{name}");
        }
        for name in [
            "zzz.jsonl",
            "2026-12-02T13-33-25.jsonl",
            "2026-12-02T13-33-25-.jsonl",
            "2026-12-02T13-33-25-4x.jsonl",
            "2026-12-02 13-33-25-41.jsonl",
            "2026-12-02T13-33-25-41.json",
        ] {
            assert!(!turn_name(name), "{name}");
        }
    }

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(timestamp(0), "1970-01-01T00-00-00");
        assert_eq!(timestamp(951_782_400), "2000-02-29T00-00-00");
        assert_eq!(timestamp(1_796_218_405), "2026-12-02T13-33-25");
    }

    /// A workspace `ws` and a directory `outside` beside it, removed when dropped.
    struct Place {
        dir: PathBuf,
    }

    impl Place {
        fn new(name: &str) -> Place {
            let dir =
                std::env::temp_dir().join(format!("turn-session-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(dir.join("ws")).unwrap();
            fs::create_dir_all(dir.join("outside")).unwrap();
            Place {
                dir: dir.canonicalize().unwrap(),
            }
        }

        fn ws(&self) -> PathBuf {
            self.dir.join("ws")
        }

        fn find(&self, which: Which) -> Result<Option<Session>> {
            find(&self.ws(), &Dir::open(&self.ws()).unwrap(), &which)
        }

        fn load(&self, which: Which) -> (Result<Vec<Message>>, Vec<String>) {
            let mut notes = Notes::default();
            let loaded = self.find(which).and_then(|s| s.unwrap().load(&mut notes));
            (loaded, notes.0)
        }
    }

    impl Drop for Place {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }

    #[derive(Default)]
    struct Notes(Vec<String>);
    impl Reporter for Notes {
        fn report(&mut self, event: Event<'_>) {
            if let Event::Notice(text) = event {
                self.0.push(text.to_string());
            }
        }
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn records_and_loads_back_without_the_system_prompt() {
        let place = Place::new("roundtrip");
        let mut notes = Notes::default();
        let session = place.find(Which::Fresh).unwrap();
        let mut recorder = Recorder::new(&mut notes, session);
        let messages = [
            Message::system("sys"),
            Message::user("hi"),
            Message::assistant(Some("yo".into()), vec![]),
        ];
        for message in &messages {
            recorder.report(Event::Message(message));
        }
        let path = recorder.path().unwrap().to_path_buf();
        assert!(path.starts_with(place.ws().join(".turn/sessions")));
        let (loaded, notes) = place.load(Which::Latest);
        assert_eq!(loaded.unwrap(), messages[1..]);
        assert!(notes.is_empty());
        let turn = place.ws().join(".turn");
        assert_eq!(fs::read_to_string(turn.join(".gitignore")).unwrap(), "*\n");
        assert_eq!(mode(&turn), 0o700);
        assert_eq!(mode(&turn.join("sessions")), 0o700);
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn old_open_directories_are_made_private() {
        let place = Place::new("private");
        let sessions = place.ws().join(".turn/sessions");
        fs::create_dir_all(&sessions).unwrap();
        fs::set_permissions(&sessions, fs::Permissions::from_mode(0o755)).unwrap();
        let mut notes = Notes::default();
        let _recorder = Recorder::new(&mut notes, place.find(Which::Fresh).unwrap());
        assert_eq!(mode(&sessions), 0o700);
    }

    #[test]
    fn torn_lines_are_skipped_with_a_notice_on_every_resume() {
        let place = Place::new("torn");
        let path = place.ws().join("s.jsonl");
        let which = || Which::File(path.clone());
        fs::write(
            &path,
            "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assis",
        )
        .unwrap();
        let (loaded, notes) = place.load(which());
        assert_eq!(loaded.unwrap(), [Message::user("a")]);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].starts_with("line 2 of "), "{notes:?}");
        for round in ["b", "c"] {
            let mut nothing = Notes::default();
            let mut recorder = Recorder::new(&mut nothing, place.find(which()).unwrap());
            recorder.report(Event::Message(&Message::user(round)));
        }
        let (loaded, notes) = place.load(which());
        let expected = [Message::user("a"), Message::user("b"), Message::user("c")];
        assert_eq!(loaded.unwrap(), expected, "the second resume works too");
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn what_a_crash_leaves_is_torn_and_other_junk_is_an_error() {
        let line = "{\"role\":\"user\",\"content\":\"h\u{e9}\"}\n";
        let cut_in_a_char = &line.as_bytes()[..line.find('\u{e9}').unwrap() + 1];
        let mut bytes = line.as_bytes().to_vec();
        bytes.extend_from_slice(cut_in_a_char);
        bytes.extend_from_slice(b"\n\0\0\0\0\n");
        bytes.extend_from_slice(line.as_bytes());
        let (messages, torn, _) = parse(&bytes[..]).unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(torn, [2, 3]);
        let err = parse(&b"{\"role\":\"user\",\"content\":\"a\"}\nnot json\n"[..]).unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
    }

    #[test]
    fn a_bad_line_is_an_error_naming_it() {
        let place = Place::new("bad");
        let path = place.ws().join("s.jsonl");
        fs::write(&path, "{\"role\":\"user\",\"content\":\"a\"}\nnot json\n{\"role\":\"user\",\"content\":\"b\"}\n").unwrap();
        let err = place
            .load(Which::File(path.clone()))
            .0
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("cannot resume {}: line 2:", path.display())),
            "{err}"
        );
        let missing = Which::File(place.ws().join("missing.jsonl"));
        assert!(place.load(missing).0.unwrap().is_empty());
    }

    #[test]
    fn planted_symlinks_are_never_followed() {
        let place = Place::new("links");
        let target = place.dir.join("outside/profile");
        fs::write(&target, "precious\n").unwrap();
        // --session FILE where FILE, or a directory on its way in the workspace, is a symlink.
        symlink(&target, place.ws().join("task.jsonl")).unwrap();
        symlink(place.dir.join("outside"), place.ws().join("logs")).unwrap();
        for file in ["task.jsonl", "logs/profile"] {
            let err = place
                .find(Which::File(place.ws().join(file)))
                .err()
                .unwrap();
            assert!(err.to_string().contains("symbolic link"), "{err}");
        }
        // .turn planted as a symlink: -c refuses, a fresh session is not recorded.
        symlink(place.dir.join("outside"), place.ws().join(".turn")).unwrap();
        fs::create_dir(place.dir.join("outside/sessions")).unwrap();
        let err = place.find(Which::Latest).err().unwrap().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        let mut notes = Notes::default();
        let mut recorder = Recorder::new(&mut notes, place.find(Which::Fresh).unwrap());
        recorder.report(Event::Message(&Message::user("x")));
        assert!(recorder.path().is_none());
        drop(recorder);
        assert!(notes.0[0].contains("symbolic link"), "{:?}", notes.0);
        // A session in .turn/sessions that is a symlink is not a session.
        fs::remove_file(place.ws().join(".turn")).unwrap();
        fs::create_dir_all(place.ws().join(".turn/sessions")).unwrap();
        symlink(&target, place.ws().join(".turn/sessions/a.jsonl")).unwrap();
        let err = place.find(Which::Latest).err().unwrap().to_string();
        assert!(err.contains("no session to continue"), "{err}");
        assert_eq!(fs::read_to_string(&target).unwrap(), "precious\n");
        assert_eq!(
            fs::read_dir(place.dir.join("outside/sessions"))
                .unwrap()
                .count(),
            0
        );
    }

    #[test]
    fn a_session_outside_the_workspace_must_not_be_a_symlink_itself() {
        let place = Place::new("outside");
        let target = place.dir.join("outside/profile");
        fs::write(&target, "precious\n").unwrap();
        let link = place.dir.join("outside/task.jsonl");
        symlink(&target, &link).unwrap();
        let err = place.find(Which::File(link)).err().unwrap().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        let fine = place.dir.join("outside/new/task.jsonl");
        let mut notes = Notes::default();
        let mut recorder =
            Recorder::new(&mut notes, place.find(Which::File(fine.clone())).unwrap());
        recorder.report(Event::Message(&Message::user("x")));
        assert_eq!(mode(&fine), 0o600);
        assert_eq!(fs::read_to_string(&target).unwrap(), "precious\n");
    }
}
