//! Asking the user before the model acts (`--approve`): `never` runs whatever the sandbox
//! allows, `ask` shows each command and file write and waits for y/n/always, `dangerous` asks
//! only about commands the keyword check flags. Questions go to the terminal (/dev/tty), so
//! they work while stdin carries the prompt and stdout the answer.

use crate::signal;
use crate::terminal::escape;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Approve {
    Never,
    Ask,
    Dangerous,
}

/// What the model is about to do.
pub enum Action<'a> {
    /// A shell command, with the keyword check's reason when it flagged it.
    Command {
        command: &'a str,
        danger: Option<&'a str>,
    },
    /// A file change: "write 120 bytes to src/a.rs", "edit src/a.rs".
    Write(&'a str),
}

pub struct Approver {
    mode: Approve,
    tty: Option<File>,
    /// The user answered "always": only flagged commands are asked about from now on.
    always: bool,
}

impl Approver {
    /// The approver that asks nothing (`--approve never`).
    pub fn never() -> Approver {
        Approver {
            mode: Approve::Never,
            tty: None,
            always: false,
        }
    }

    /// An approver for `mode`; the asking modes need a terminal.
    pub fn new(mode: Approve) -> Result<Approver, String> {
        let tty = match mode {
            Approve::Never => None,
            _ => Some(OpenOptions::new().read(true).write(true).open("/dev/tty").map_err(|e| {
                format!("--approve {} needs a terminal to ask on (/dev/tty: {e}); use --approve never", mode.name())
            })?),
        };
        Ok(Approver {
            mode,
            tty,
            always: false,
        })
    }

    /// The mode it asks in.
    pub fn mode(&self) -> Approve {
        self.mode
    }

    /// Ok to go ahead; Err with what the model is told when not.
    pub fn check(&mut self, action: Action) -> Result<(), String> {
        let flagged = matches!(
            action,
            Action::Command {
                danger: Some(_),
                ..
            }
        );
        let ask = match self.mode {
            Approve::Never => {
                if let Action::Command {
                    danger: Some(reason),
                    ..
                } = action
                {
                    return Err(format!("Dangerous command blocked: {reason}"));
                }
                false
            }
            Approve::Dangerous => flagged,
            Approve::Ask => flagged || !self.always,
        };
        if !ask {
            return Ok(());
        }
        match self.ask(&action) {
            Answer::Yes => Ok(()),
            Answer::Always => {
                self.always = true;
                Ok(())
            }
            Answer::No => Err("Denied by user".into()),
        }
    }

    fn ask(&mut self, action: &Action) -> Answer {
        let Some(tty) = &mut self.tty else {
            return Answer::No;
        };
        let question = match action {
            Action::Command { command, danger } => {
                let warning = danger
                    .map(|d| format!("  warning: {}\n", escape(d)))
                    .unwrap_or_default();
                // Escaped, so what is shown is what would run: no sequence can hide a part.
                format!(
                    "\nturn wants to run:\n  {}\n{warning}",
                    escape(command).replace('\n', "\n  ")
                )
            }
            Action::Write(what) => format!("\nturn wants to {}\n", escape(what)),
        };
        let _ = write!(tty, "{question}allow? [y]es, [n]o, [a]lways: ");
        let _ = tty.flush();
        let answer = read_answer(tty);
        let _ = writeln!(tty);
        answer
    }
}

impl Approve {
    pub fn name(self) -> &'static str {
        match self {
            Approve::Never => "never",
            Approve::Ask => "ask",
            Approve::Dangerous => "dangerous",
        }
    }
}

enum Answer {
    Yes,
    No,
    Always,
}

/// Reads one line from the terminal; anything but yes or always is no, and so is Ctrl-C.
fn read_answer(tty: &mut File) -> Answer {
    let mut line = Vec::new();
    let mut byte = [0u8];
    loop {
        match tty.read(&mut byte) {
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted && !signal::interrupted() => {}
            Err(_) => return Answer::No,
        }
    }
    match String::from_utf8_lossy(&line)
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "y" | "yes" => Answer::Yes,
        "a" | "always" => Answer::Always,
        _ => Answer::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_runs_everything_but_flagged_commands() {
        let mut approver = Approver::never();
        assert_eq!(
            approver.check(Action::Command {
                command: "ls",
                danger: None
            }),
            Ok(())
        );
        assert_eq!(approver.check(Action::Write("write 1 byte to a")), Ok(()));
        assert_eq!(
            approver.check(Action::Command {
                command: "sudo ls",
                danger: Some("privilege escalation (sudo)")
            }),
            Err("Dangerous command blocked: privilege escalation (sudo)".into())
        );
    }

    #[test]
    fn asking_without_a_terminal_says_no() {
        // No tty: the question cannot be put, so the answer is no.
        let mut approver = Approver {
            mode: Approve::Ask,
            tty: None,
            always: false,
        };
        assert_eq!(
            approver.check(Action::Write("edit a")),
            Err("Denied by user".into())
        );
        let mut approver = Approver {
            mode: Approve::Dangerous,
            tty: None,
            always: false,
        };
        assert_eq!(
            approver.check(Action::Command {
                command: "ls",
                danger: None
            }),
            Ok(())
        );
        assert!(approver
            .check(Action::Command {
                command: "sudo ls",
                danger: Some("x")
            })
            .is_err());
    }
}
