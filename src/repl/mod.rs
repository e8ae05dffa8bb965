//! The REPL: `> ` prompts on a terminal (or line by line from stdin with -i), one agent turn
//! per line, the history kept across turns. Ctrl-C during a turn abandons it and comes back to
//! the prompt with the history intact (normalization drops the interrupted calls); Ctrl-C at
//! the prompt, Ctrl-D or /exit leave.

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::report::{Event, Reporter};
use crate::session::{self, Recorder};
use crate::signal;
use crate::wire::message::Message;
use std::io::{self, BufRead, IsTerminal, Write};
use std::path::Path;

const HELP: &str = "\
Type a request and press Enter; the agent works until it answers.
  /reset   forget the conversation (recording goes on in a new session file)
  /help    this help
  /exit    leave (also Ctrl-D, or Ctrl-C at the prompt)
Ctrl-C during a turn stops it and keeps the history.";

pub fn run(
    agent: &mut Agent,
    history: &mut Vec<Message>,
    recorder: &mut Recorder,
    workspace: &Path,
) -> Result<()> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        let resumed = history.len() - 1;
        let resumed = if resumed > 0 {
            format!(", {resumed} messages resumed")
        } else {
            String::new()
        };
        eprintln!(
            "turn {}: {} in {}{resumed}. /help for commands.",
            env!("CARGO_PKG_VERSION"),
            agent.model,
            workspace.display()
        );
    }
    let mut input = stdin.lock();
    loop {
        eprint!("> ");
        let _ = io::stderr().flush();
        let line = read_line(&mut input).inspect_err(|_| eprintln!())?; // ^C: end the prompt's line
        let Some(line) = line else {
            eprintln!();
            return Ok(());
        };
        match line.trim() {
            "" => {}
            "/exit" | "/quit" => return Ok(()),
            "/help" => eprintln!("{HELP}"),
            "/reset" => {
                history.truncate(1); // the system prompt stays
                if recorder.path().is_some() {
                    recorder.switch(session::fresh(workspace));
                }
                eprintln!("history cleared");
            }
            command if command.starts_with('/') => {
                eprintln!("unknown command {command}; /help lists them")
            }
            prompt => {
                signal::clear();
                match agent.turn(history, prompt, recorder) {
                    Ok(_) => {}
                    Err(Error::Interrupted) => {
                        recorder.report(Event::Notice("interrupted; the history is kept"))
                    }
                    Err(error) => recorder.report(Event::Failed(&error)),
                }
                signal::clear();
            }
        }
    }
}

/// One line from stdin, or `None` at its end. Unlike `read_line`, a Ctrl-C is not retried
/// away: it ends the wait with `Error::Interrupted`.
fn read_line(input: &mut impl BufRead) -> Result<Option<String>> {
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
