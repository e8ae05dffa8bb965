//! What a run shows: the agent loop reports `Event`s through the one `Reporter` trait, and the
//! front end decides how they look. `Console` is for people: model text to stdout as it
//! streams; one line per tool call, reasoning and notices to stderr. `Json` is for scripts:
//! one JSON object per line on stdout, and nothing else there. What goes to a terminal passes
//! `terminal::escape` first (stderr always; stdout when it is a terminal, so a pipe gets the
//! model's text exactly).

use crate::error::Error;
use crate::terminal::escape;
use crate::wire::message::{Message, Role};
use crate::wire::stream::Usage;
use serde_json::{json, Value};
use std::io::{self, IsTerminal, Write};
use std::path::Path;

pub enum Event<'a> {
    /// The run starts: what it talks to and where it works.
    Start {
        model: &'a str,
        base_url: &'a str,
        workspace: &'a Path,
        /// The context window in tokens, when known.
        context: Option<u64>,
    },
    /// A piece of the assistant's text, as it arrives.
    Content(&'a str),
    /// A piece of the model's reasoning, as it arrives (never sent back to the model).
    Reasoning(&'a str),
    /// A message joined the history (the user's, the assistant's whole reply, a tool result).
    Message(&'a Message),
    /// Tokens one model request used, as the server counted them.
    Usage(Usage),
    /// A tool call is about to run.
    ToolCall {
        id: &'a str,
        name: &'a str,
        arguments: &'a str,
        origin: Origin,
    },
    /// A tool call finished; `output` is what the model will read.
    ToolResult {
        id: &'a str,
        name: &'a str,
        arguments: &'a str,
        ok: bool,
        output: &'a str,
        elided: usize,
        origin: Origin,
    },
    /// The final answer under --output-schema, checked against the schema.
    Answer(&'a Value),
    /// The server refused native tool calls (`reason`, its words); the run goes on with the
    /// text tool protocol. `hint` says how to switch native calls on there.
    Fallback { reason: &'a str, hint: &'a str },
    /// Something the user should know that is not an error: a retry, a cut-off reply.
    Notice(&'a str),
    /// Notes for a model that cannot call tools well are on from now on in this session, and
    /// why (see coach); the session records it.
    Coaching(&'a str),
    /// The history was compacted to fit the context window: old tool results stubbed
    /// (`stage` "elide") or the work summarized ("summary"); estimated tokens before and after;
    /// `history` is the new history (the session records it).
    Compacted {
        stage: &'a str,
        before: u64,
        after: u64,
        window: Option<u64>,
        history: &'a [Message],
    },
    /// A turn that changed files ended: the checkpoint of what it changed, each path with what
    /// happened to it (created, modified, deleted, mode, link, replaced).
    Checkpoint {
        id: u64,
        files: &'a [(String, &'static str)],
    },
    /// An error ended the turn (and, outside the REPL, the run).
    Failed(&'a Error),
    /// The run is over, with the error that ended it, if any.
    End(Option<&'a Error>),
}

/// Where a tool call came from: the reply's `tool_calls`, the message text (see
/// wire::textcalls::recognize), or turn itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Origin {
    Native,
    Text,
    /// Made by turn itself before the first request: reading the files the prompt names.
    Turn,
}

impl Origin {
    pub fn name(self) -> &'static str {
        match self {
            Origin::Native => "native",
            Origin::Text => "text",
            Origin::Turn => "turn",
        }
    }
}

pub trait Reporter {
    fn report(&mut self, event: Event<'_>);
}

/// Text for people: stdout carries only what the model says; stderr carries the activity.
pub struct Console {
    quiet: bool,
    /// Wrap reasoning in dim escapes: only when stderr is a terminal.
    dim: bool,
    /// stdout is a terminal: the model's text is escaped there.
    tty_out: bool,
    /// The last thing written to stdout did not end its line.
    open_line: bool,
    /// Reasoning was written to stderr and its line is not ended.
    open_reasoning: bool,
    /// --output-schema: stdout is for the answer alone, the model's text goes to stderr.
    text_to_stderr: bool,
}

impl Console {
    pub fn new(quiet: bool, text_to_stderr: bool) -> Console {
        Console {
            quiet,
            dim: io::stderr().is_terminal(),
            tty_out: io::stdout().is_terminal(),
            open_line: false,
            open_reasoning: false,
            text_to_stderr,
        }
    }

    /// Ends reasoning being written to stderr (and its dimming), if any.
    fn end_reasoning(&mut self) {
        if std::mem::take(&mut self.open_reasoning) {
            eprintln!("{}", if self.dim { "\x1b[0m" } else { "" });
        }
    }

    /// Ends any half-written line, so what follows starts on its own.
    fn end_lines(&mut self) {
        self.end_reasoning();
        if std::mem::take(&mut self.open_line) {
            self.write_text("\n");
        }
    }

    /// The model's text: to stdout, or to stderr when stdout is kept for the answer; escaped
    /// where it reaches a terminal, exact through a pipe.
    fn write_text(&self, text: &str) {
        match (self.text_to_stderr, self.tty_out) {
            (true, _) if self.dim => eprint!("{}", escape(text)),
            (true, _) => eprint!("{text}"),
            (false, true) => write_stdout(&escape(text)),
            (false, false) => write_stdout(text),
        }
    }
}

impl Reporter for Console {
    fn report(&mut self, event: Event<'_>) {
        match event {
            Event::Content(text) if !(self.quiet && self.text_to_stderr) => {
                self.end_reasoning();
                self.write_text(text);
                self.open_line = !text.ends_with('\n');
            }
            Event::Answer(value) => {
                self.end_lines();
                write_stdout(&format!("{value}\n"));
            }
            Event::Reasoning(text) if !self.quiet => {
                if !self.open_reasoning && self.dim {
                    eprint!("\x1b[2m");
                }
                self.open_reasoning = true;
                eprint!("{}", escape(text));
            }
            Event::Message(message) if message.role == Role::Assistant => self.end_lines(),
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
                    let last = output
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or_default();
                    let short: String = last
                        .trim_start_matches("Error: ")
                        .chars()
                        .take(100)
                        .collect();
                    format!("error: {}", short.trim_matches(['[', ']']))
                };
                let line = format!(
                    "[{name}] {} ({status})",
                    crate::tools::describe(name, arguments)
                );
                eprintln!("{}", escape(&line));
            }
            Event::Notice(text) if !self.quiet => {
                self.end_lines();
                eprintln!("turn: {}", escape(text));
            }
            Event::Coaching(why) if !self.quiet => {
                self.end_lines();
                eprintln!("turn: {why}: notes after answers that are no answer are on");
            }
            Event::Compacted {
                stage,
                before,
                after,
                window,
                ..
            } if !self.quiet => {
                self.end_lines();
                eprintln!("turn: {}", compacted(stage, before, after, window));
            }
            Event::Fallback { reason, hint } if !self.quiet => {
                self.end_lines();
                print_fallback(reason, hint);
            }
            Event::Checkpoint { id, files } if !self.quiet => {
                self.end_lines();
                let s = if files.len() == 1 { "" } else { "s" };
                eprintln!(
                    "turn: checkpoint {id}: {} path{s} changed (turn --undo takes them back)",
                    files.len()
                );
            }
            Event::Failed(error) => {
                self.end_lines();
                print_error(error);
            }
            Event::End(_) => self.end_lines(),
            _ => {}
        }
    }
}

/// JSONL for scripts: `start`, `assistant`, `tool_call`, `tool_result`, `error`, and always a
/// final `done` with the status, steps, summed usage and the last assistant text.
/// docs/scripting.md documents the schema.
#[derive(Default)]
pub struct Json {
    steps: u32,
    usage: Usage,
    /// The text of the latest assistant message: the final answer once the run is done.
    text: String,
    /// The answer under --output-schema, as a value.
    output: Option<Value>,
}

impl Reporter for Json {
    fn report(&mut self, event: Event<'_>) {
        let line = match event {
            Event::Start {
                model,
                base_url,
                workspace,
                context,
            } => {
                json!({"type": "start", "model": model, "base_url": base_url, "workspace": workspace, "context": context})
            }
            Event::Compacted {
                stage,
                before,
                after,
                window,
                ..
            } => {
                eprintln!("turn: {}", compacted(stage, before, after, window));
                json!({"type": "compacted", "stage": stage, "before": before, "after": after, "window": window})
            }
            Event::Message(message) if message.role == Role::Assistant => {
                self.steps += 1;
                self.text = message.content.clone().unwrap_or_default();
                if self.text.is_empty() {
                    return;
                }
                json!({"type": "assistant", "text": self.text})
            }
            Event::Usage(usage) => {
                self.usage.prompt_tokens += usage.prompt_tokens;
                self.usage.completion_tokens += usage.completion_tokens;
                if let Some(cached) = usage.cached_tokens {
                    *self.usage.cached_tokens.get_or_insert(0) += cached;
                }
                return;
            }
            Event::ToolCall {
                id,
                name,
                arguments,
                origin,
            } => {
                json!({"type": "tool_call", "id": id, "name": name, "arguments": arguments, "origin": origin.name()})
            }
            Event::ToolResult {
                id,
                name,
                ok,
                output,
                elided,
                origin,
                ..
            } => {
                json!({"type": "tool_result", "id": id, "name": name, "ok": ok, "output": output, "elided": elided, "origin": origin.name()})
            }
            Event::Fallback { reason, hint } => {
                print_fallback(reason, hint);
                json!({"type": "fallback", "protocol": "text", "reason": reason, "hint": hint})
            }
            Event::Answer(value) => {
                self.output = Some(value.clone());
                return;
            }
            Event::Checkpoint { id, files } => {
                let files: Vec<Value> = files
                    .iter()
                    .map(|(path, change)| json!({"path": path, "change": change}))
                    .collect();
                json!({"type": "checkpoint", "id": id, "files": files})
            }
            Event::Failed(error) => {
                print_error(error);
                json!({"type": "error", "message": error.to_string(), "hint": error.hint()})
            }
            Event::End(error) => {
                let status = match error {
                    None => "ok",
                    Some(Error::MaxSteps(_)) => "max_steps",
                    Some(Error::Repeating { .. }) => "repeating",
                    Some(Error::Interrupted) => "interrupted",
                    Some(Error::Schema(_)) => "schema",
                    Some(_) => "error",
                };
                let mut done = json!({
                    "type": "done",
                    "status": status,
                    "steps": self.steps,
                    "usage": {"prompt_tokens": self.usage.prompt_tokens, "completion_tokens": self.usage.completion_tokens},
                    "text": self.text,
                });
                if let Some(cached) = self.usage.cached_tokens {
                    done["usage"]["cached_tokens"] = cached.into();
                }
                if let Some(output) = self.output.take() {
                    done["output"] = output;
                }
                done
            }
            Event::Notice(text) => {
                eprintln!("turn: {}", escape(text));
                return;
            }
            Event::Coaching(why) => {
                eprintln!("turn: {why}: notes after answers that are no answer are on");
                return;
            }
            _ => return,
        };
        write_json(&line);
    }
}

/// The one-line notice of a compaction.
fn compacted(stage: &str, before: u64, after: u64, window: Option<u64>) -> String {
    let what = match stage {
        "elide" => "old tool results elided",
        _ => "the work so far summarized",
    };
    let of = window.map_or(String::new(), |w| format!(" of the {w}-token window"));
    format!("context: {what}, about {before} -> {after} tokens{of}")
}

/// `turn: <error>` and its hint on stderr: the one way errors reach people.
pub fn print_error(error: &Error) {
    eprintln!("turn: {}", escape(&error.to_string()));
    if let Some(hint) = error.hint() {
        eprintln!("hint: {hint}");
    }
}

/// The one notice of a fallback to the text tool protocol.
fn print_fallback(reason: &str, hint: &str) {
    eprintln!(
        "turn: the server refuses native tool calls ({reason}); using the text tool protocol \
         for the rest of the run"
    );
    eprintln!("hint: {hint}");
}

fn write_json(value: &Value) {
    write_stdout(&format!("{value}\n"));
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
