//! Where the REPL's lines come from. On a terminal (stdin and stdout both, without `-i`) the
//! line editor: raw mode for the length of one line, bytes → keys → editor → a redraw, the
//! history file appended as lines are sent. Anywhere else the plain line reader, which pipes
//! and `-i` rely on. Both end a wait on Ctrl-C with `Error::Interrupted`.

use super::editor::{Action, Editor};
use super::history;
use super::keys::{Decoder, Key};
use super::render;
use super::term::{self, Input as Got, Raw};
use crate::error::{Error, Result};
use crate::report::{Event, Reporter};
use crate::signal;
use std::collections::VecDeque;
use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;

const PROMPT: &str = "> ";
/// How long an ESC waits for the rest of its sequence before it counts as the Esc key.
const ESC_WAIT: Duration = Duration::from_millis(50);

pub enum Reader {
    Plain(io::StdinLock<'static>),
    Editor(Box<LineEditor>),
}

impl Reader {
    /// The line editor when `editor` holds and the terminal lets itself be set up, else the
    /// plain reader. `history` is the file to load and, when `save`, to append to.
    pub fn new(editor: bool, history: PathBuf, save: bool, commands: Vec<&'static str>) -> Reader {
        if editor && term::init().is_ok() {
            let entries = history::load(&history, save);
            return Reader::Editor(Box::new(LineEditor {
                editor: Editor::new(PROMPT, entries, commands),
                decoder: Decoder::default(),
                queued: VecDeque::new(),
                history: save.then_some(history),
            }));
        }
        Reader::Plain(io::stdin().lock())
    }

    /// The next line (without its newline, for the editor), or `None` at the end of input.
    pub fn read(&mut self, reporter: &mut dyn Reporter) -> Result<Option<String>> {
        match self {
            Reader::Plain(input) => {
                eprint!("{PROMPT}");
                let _ = io::stderr().flush();
                let line = read_line(input).inspect_err(|_| eprintln!())?; // ^C: end the prompt's line
                if line.is_none() {
                    eprintln!();
                }
                Ok(line)
            }
            Reader::Editor(editor) => {
                let line = editor.read()?;
                if let Some(line) = &line {
                    editor.remember(line, reporter);
                }
                Ok(line)
            }
        }
    }
}

pub struct LineEditor {
    editor: Editor,
    decoder: Decoder,
    /// Keys that came after an Enter, for the next line (typed ahead, pasted unbracketed).
    queued: VecDeque<Key>,
    /// The history file, unless nothing is to be written (--no-session) or writing failed.
    history: Option<PathBuf>,
}

/// Where the drawing of the current line stands.
struct Screen {
    columns: usize,
    /// The row (below the prompt's first) the cursor was left on.
    row: usize,
    /// The editor changed since the last drawing.
    dirty: bool,
}

impl LineEditor {
    fn remember(&mut self, line: &str, reporter: &mut dyn Reporter) {
        let Some(path) = &self.history else { return };
        if let Err(e) = history::append(path, line) {
            let notice = format!(
                "cannot save the history in {}: {e}; it is kept for this run only",
                path.display()
            );
            reporter.report(Event::Notice(&notice));
            self.history = None;
        }
    }

    fn read(&mut self) -> Result<Option<String>> {
        // A Ctrl-C that came before the terminal went raw would not be seen as a key.
        if signal::interrupted() {
            return Err(Error::Interrupted);
        }
        let Ok(mut raw) = Raw::enter() else {
            // The terminal refuses raw mode: read the line the plain way.
            eprint!("{PROMPT}");
            return read_line(&mut io::stdin().lock())
                .map(|line| line.map(|l| l.trim_end_matches(['\n', '\r']).to_string()));
        };
        let mut screen = Screen {
            columns: term::columns(),
            row: 0,
            dirty: true,
        };
        let mut buf = [0u8; 4096];
        // The terminal failing (hung up, gone) is the end of input, as for the plain reader.
        let outcome = loop {
            while let Some(key) = self.queued.pop_front() {
                let action = self.editor.key(key);
                match self.act(action, &mut screen, raw) {
                    Ok(Step::Go(still_raw)) => raw = still_raw,
                    Ok(Step::Done(outcome)) => return outcome,
                    Err(_) => return Ok(None),
                }
            }
            if screen.dirty && self.draw(&mut screen).is_err() {
                break Ok(None);
            }
            let timeout = self.decoder.waiting().then_some(ESC_WAIT);
            match term::read_input(&mut buf, timeout) {
                Ok(Got::Bytes(n)) => self.queued.extend(self.decoder.push(&buf[..n])),
                Ok(Got::Quiet) => self.queued.extend(self.decoder.flush()),
                Ok(Got::End) | Err(_) => break Ok(None),
                Ok(Got::Signal) => {
                    if signal::interrupted() {
                        let _ = self.leave(&mut screen);
                        break Err(Error::Interrupted);
                    }
                    if term::take_stop() {
                        match self.suspend(&mut screen, raw) {
                            Ok(still_raw) => raw = still_raw,
                            Err(_) => return Ok(None),
                        }
                    }
                    if term::take_continued() {
                        // Stopped from outside (SIGSTOP): the shell wrote below the line and
                        // may have reset the modes; a fresh drawing where the cursor is.
                        if raw.again().is_err() {
                            break Ok(None);
                        }
                        (screen.row, screen.dirty) = (0, true);
                    }
                    if term::take_resized() {
                        screen.columns = term::columns();
                        screen.dirty = true;
                    }
                }
            }
        };
        drop(raw);
        outcome
    }

    /// Carries out what the editor asked for.
    fn act(&mut self, action: Action, screen: &mut Screen, raw: Raw) -> io::Result<Step> {
        let done = |outcome| Ok(Step::Done(outcome));
        match action {
            Action::Nothing => {}
            Action::Redraw => screen.dirty = true,
            Action::Submit(line) => {
                self.finish(screen, &line, "")?;
                drop(raw);
                return done(Ok(Some(line)));
            }
            Action::Eof => {
                self.finish(screen, "", "")?;
                drop(raw);
                return done(Ok(None));
            }
            Action::Interrupt => {
                self.finish(screen, "", "^C")?;
                drop(raw);
                return done(Err(Error::Interrupted));
            }
            Action::Cancel(line) => {
                self.finish(screen, &line, "^C")?;
                screen.dirty = true;
            }
            Action::ClearScreen => {
                term::out(b"\x1b[H\x1b[2J")?;
                screen.row = 0;
                screen.dirty = true;
            }
            Action::Show(list) => {
                self.leave(screen)?;
                term::out(format!("{list}\r\n").as_bytes())?;
            }
            Action::Suspend => return Ok(Step::Go(self.suspend(screen, raw)?)),
        }
        Ok(Step::Go(raw))
    }

    /// Ctrl-Z: the line is left as it is, the terminal given back until `fg`.
    fn suspend(&mut self, screen: &mut Screen, raw: Raw) -> io::Result<Raw> {
        self.leave(screen)?;
        let raw = term::suspend(raw)?;
        screen.columns = term::columns();
        Ok(raw)
    }

    fn draw(&mut self, screen: &mut Screen) -> io::Result<()> {
        let (prompt, line, cursor) = self.editor.view();
        let (bytes, row) = render::draw(&prompt, line, cursor, screen.columns, screen.row);
        term::out(bytes.as_bytes())?;
        (screen.row, screen.dirty) = (row, false);
        Ok(())
    }

    /// Draws `line` as it was sent (or dropped), with `mark` after it, and moves below it: the
    /// next drawing starts on a fresh row.
    fn finish(&mut self, screen: &mut Screen, line: &str, mark: &str) -> io::Result<()> {
        let chars: Vec<char> = line.chars().chain(mark.chars()).collect();
        let (mut bytes, _) = render::draw(PROMPT, &chars, chars.len(), screen.columns, screen.row);
        bytes.push_str(&render::finish(PROMPT, &chars, chars.len(), screen.columns));
        term::out(bytes.as_bytes())?;
        screen.row = 0;
        Ok(())
    }

    /// Leaves the line as it is shown, for a fresh row below.
    fn leave(&mut self, screen: &mut Screen) -> io::Result<()> {
        if screen.dirty {
            self.draw(screen)?;
        }
        let (prompt, line, cursor) = self.editor.view();
        term::out(render::finish(&prompt, line, cursor, screen.columns).as_bytes())?;
        (screen.row, screen.dirty) = (0, true);
        Ok(())
    }
}

enum Step {
    /// Keep editing, in raw mode.
    Go(Raw),
    /// The line is over.
    Done(Result<Option<String>>),
}

/// One line from stdin, or `None` at its end. Unlike `read_line`, a Ctrl-C is not retried
/// away: it ends the wait with `Error::Interrupted`.
pub fn read_line(input: &mut impl BufRead) -> Result<Option<String>> {
    let mut line = Vec::new();
    loop {
        // A Ctrl-C that came before the read began would not interrupt it.
        if signal::interrupted() {
            return Err(Error::Interrupted);
        }
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted && signal::interrupted() => {
                return Err(Error::Interrupted)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => &[], // stdin is gone: as good as its end
        };
        if buf.is_empty() {
            // The end of input and a Ctrl-C can come together; the Ctrl-C wins.
            if signal::interrupted() {
                return Err(Error::Interrupted);
            }
            return Ok((!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned()));
        }
        let (taken, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(&buf[..taken]);
        input.consume(taken);
        if done {
            return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::read_line;

    #[test]
    fn lines_then_the_end() {
        let mut input = &b"one\ntwo\nlast"[..];
        assert_eq!(read_line(&mut input).unwrap().as_deref(), Some("one\n"));
        assert_eq!(read_line(&mut input).unwrap().as_deref(), Some("two\n"));
        assert_eq!(read_line(&mut input).unwrap().as_deref(), Some("last"));
        assert_eq!(read_line(&mut input).unwrap(), None);
    }
}
