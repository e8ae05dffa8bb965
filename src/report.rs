//! What a run shows: the agent loop reports `Event`s through the one `Reporter` trait, and the
//! front end decides how they look. `Console` is the human one: model text to stdout as it
//! streams, one line per tool call and any reasoning or notice to stderr.

use crate::message::Message;
use std::io::{self, IsTerminal, Write};

#[allow(dead_code)] // ids and calls are read by the --json front end
pub enum Event<'a> {
    /// A piece of the assistant's text, as it arrives.
    Content(&'a str),
    /// A piece of the model's reasoning, as it arrives (never sent back to the model).
    Reasoning(&'a str),
    /// A message joined the history (the user's, the assistant's whole reply, a tool result).
    Message(&'a Message),
    /// A tool call is about to run.
    ToolCall {
        id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    /// A tool call finished; `output` is what the model will read.
    ToolResult {
        id: &'a str,
        name: &'a str,
        arguments: &'a str,
        ok: bool,
        output: &'a str,
    },
    /// Something the user should know that is not an error: a retry, a cut-off reply.
    Notice(&'a str),
}

pub trait Reporter {
    fn report(&mut self, event: Event<'_>);
}

/// Text for people: stdout carries only what the model says; stderr carries the activity.
pub struct Console {
    quiet: bool,
    /// Wrap reasoning in dim escapes: only when stderr is a terminal.
    dim: bool,
    /// The last thing written to stdout did not end its line.
    open_line: bool,
    /// Reasoning was written to stderr and its line is not ended.
    open_reasoning: bool,
}

impl Console {
    pub fn new(quiet: bool) -> Console {
        Console {
            quiet,
            dim: io::stderr().is_terminal(),
            open_line: false,
            open_reasoning: false,
        }
    }

    fn end_reasoning(&mut self) {
        if std::mem::take(&mut self.open_reasoning) {
            eprintln!("{}", if self.dim { "\x1b[0m" } else { "" });
        }
    }
}

impl Reporter for Console {
    fn report(&mut self, event: Event<'_>) {
        match event {
            Event::Content(text) => {
                self.end_reasoning();
                write_stdout(text);
                self.open_line = !text.ends_with('\n');
            }
            Event::Reasoning(text) if !self.quiet => {
                if !self.open_reasoning && self.dim {
                    eprint!("\x1b[2m");
                }
                self.open_reasoning = true;
                eprint!("{text}");
            }
            Event::Message(message) if message.role == crate::message::Role::Assistant => {
                self.end_reasoning();
                if std::mem::take(&mut self.open_line) {
                    write_stdout("\n");
                }
            }
            Event::ToolResult {
                name,
                arguments,
                ok,
                output,
                ..
            } if !self.quiet => {
                let status = if ok {
                    "ok".to_string()
                } else {
                    let first = output
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or_default();
                    let short: String = first
                        .trim_start_matches("Error: ")
                        .chars()
                        .take(100)
                        .collect();
                    format!("error: {}", short.trim_matches(['[', ']']))
                };
                eprintln!(
                    "[{name}] {} ({status})",
                    crate::tools::describe(name, arguments)
                );
            }
            Event::Notice(text) if !self.quiet => {
                self.end_reasoning();
                eprintln!("turn: {text}");
            }
            _ => {}
        }
    }
}

/// Writes to stdout now; a closed pipe (`turn … | head -1`) ends the run quietly, as it does
/// for any Unix filter.
fn write_stdout(text: &str) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}
