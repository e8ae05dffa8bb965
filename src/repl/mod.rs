//! The REPL: `> ` prompts on a terminal (or line by line from stdin with -i), one agent turn
//! per line, the history kept across turns, and the `/` commands. Ctrl-C during a turn
//! abandons it and comes back to the prompt with the history intact (normalization drops the
//! interrupted calls); Ctrl-C on an empty prompt, Ctrl-D or /exit leave.
//!
//! The parts: `input` gives the lines, from the line editor on a terminal (`keys` decodes
//! bytes, `editor` is the pure state machine, `render` the pure drawing, `term` the raw-mode
//! I/O, `history` the `.turn/history` file) or from the plain reader elsewhere.

mod editor;
mod history;
mod input;
mod keys;
mod render;
mod term;

use crate::agent::Agent;
use crate::checkpoint;
use crate::cli::{Args, Session};
use crate::error::{Error, Result};
use crate::report::{Event, Reporter};
use crate::sandbox::Mode;
use crate::session::{self, Recorder};
use crate::signal;
use crate::terminal::escape;
use crate::wire::message::{Message, Role};
use crate::wire::stream::Usage;
use input::Reader;
use std::io::{self, IsTerminal};
use std::path::Path;

/// The commands: name and what it does. `/help` lists them, Tab completes them, and `command`
/// dispatches on the name.
const COMMANDS: &[(&str, &str)] = &[
    (
        "/status",
        "model, server, context window, tokens so far, session file, sandbox",
    ),
    (
        "/model",
        "NAME: ask NAME from now on; alone: the model and the server's list",
    ),
    ("/tools", "the tools the model can call"),
    ("/compact", "shorten the history to free context"),
    (
        "/undo",
        "take back the last turn's changes to files (again: the one before)",
    ),
    (
        "/reset",
        "forget the conversation (recording goes on in a new session file)",
    ),
    ("/help", "this help"),
    ("/exit", "leave (also Ctrl-D, or Ctrl-C on an empty line)"),
];

const KEYS: &str = "\
Ctrl-C during a turn stops it and keeps the history.
On a terminal: Left/Right, Home/End (Ctrl-A/E), Alt-B/F by words; Backspace/Delete,
Ctrl-U/K cut to the start/end, Ctrl-W the word before, Ctrl-Y puts it back; Up/Down recall
earlier lines, Ctrl-R searches them; Tab completes a command; Ctrl-L clears the screen;
Ctrl-C drops the line; Alt-Enter starts a new line in it, and pasted text stays one message.";

/// What the REPL shows and keeps besides the agent and its history.
pub struct Setup<'a> {
    pub workspace: &'a Path,
    pub base_url: &'a str,
    /// The sandbox in force, in words, for /status.
    pub sandbox: String,
    /// Write `.turn/history` (not with --no-session).
    pub save_history: bool,
    /// Use the line editor: stdin and stdout are terminals and -i was not given.
    pub editor: bool,
}

impl<'a> Setup<'a> {
    /// `layers`: the sandbox layers commands run under (`exec::Runner::layers`).
    pub fn new(args: &'a Args, workspace: &'a Path, layers: &[&str]) -> Setup<'a> {
        let mode = match args.sandbox {
            Mode::WorkspaceWrite => "workspace-write",
            Mode::ReadOnly => "read-only",
            Mode::Off => "off",
        };
        let mut layers = layers.to_vec();
        if args.no_network && !layers.is_empty() {
            layers.push("no network");
        }
        layers.push("keyword screen");
        let terminal = io::stdin().is_terminal() && io::stdout().is_terminal();
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        Setup {
            workspace,
            base_url: &args.base_url,
            sandbox: format!("{mode}: {}", layers.join(", ")),
            save_history: args.session != Session::Off,
            editor: terminal && !args.interactive && !dumb,
        }
    }
}

pub fn run(
    agent: &mut Agent,
    history: &mut Vec<Message>,
    recorder: &mut Recorder,
    setup: &Setup,
    checkpoints: &mut checkpoint::Keeper,
) -> Result<()> {
    if io::stdin().is_terminal() {
        let resumed = history.len() - 1;
        let resumed = if resumed > 0 {
            format!(", {resumed} messages resumed")
        } else {
            String::new()
        };
        eprintln!(
            "turn {}: {} in {}{resumed}. /help for commands.",
            env!("CARGO_PKG_VERSION"),
            escape(&agent.model),
            escape(&setup.workspace.display().to_string())
        );
    }
    let names = COMMANDS.iter().map(|(name, _)| *name).collect();
    let mut input = Reader::new(
        setup.editor,
        history::path(setup.workspace),
        setup.save_history,
        names,
    );
    let mut tokens = Tokens::default();
    loop {
        let Some(line) = input.read(recorder)? else {
            return Ok(());
        };
        // Leading indentation stays in a prompt (a pasted block's first line keeps it).
        let prompt = line.trim_end();
        let line = line.trim();
        let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        match name {
            "" => {}
            "/exit" | "/quit" => return Ok(()),
            "/help" => eprintln!("{}", help()),
            "/reset" => {
                history.truncate(1); // the system prompt stays
                                     // A new session starts with notes off, as a new run does.
                agent.coach = crate::coach::Coach::default();
                if recorder.path().is_some() {
                    recorder.switch(session::Session::fresh(setup.workspace, &agent.tools.root));
                }
                eprintln!("history cleared");
            }
            "/status" => eprintln!("{}", status(agent, history, recorder, setup, &tokens)),
            "/model" if rest.is_empty() => eprintln!("{}", models(agent, recorder)),
            "/model" if rest.contains(char::is_whitespace) => {
                eprintln!("a model name has no spaces: /model NAME")
            }
            "/model" => {
                agent.model = rest.to_string();
                eprintln!("model: {rest}");
            }
            "/tools" => eprintln!("{}", tools(agent)),
            "/compact" => eprintln!("{}", compact(agent, history, recorder)),
            "/undo" => undo(history, recorder, setup, checkpoints),
            command if command.starts_with('/') => {
                eprintln!("unknown command {}; /help lists them", escape(command))
            }
            _ => {
                signal::clear();
                let mut counted = Counted {
                    inner: recorder,
                    tokens: &mut tokens,
                };
                checkpoints.begin();
                let done = agent.turn(history, prompt, &mut checkpoints.watch(&mut counted));
                let session = counted.inner.path().map(Path::to_path_buf);
                checkpoints.end(prompt, session.as_deref(), &mut counted);
                match done {
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

/// `/undo`: the newest turn of this session that changed files is taken back; the model hears
/// of it with the next prompt.
fn undo(
    history: &mut Vec<Message>,
    recorder: &mut Recorder,
    setup: &Setup,
    checkpoints: &mut checkpoint::Keeper,
) {
    let session = recorder.path().map(Path::to_path_buf);
    let action = checkpoint::Action::Undo;
    checkpoints.close();
    match checkpoint::undo(
        setup.workspace,
        &action,
        session.as_deref(),
        false,
        false,
        recorder,
    ) {
        Ok(undone) => {
            eprintln!("{}", escape(&undone.lines.join("\n")));
            if let Some(note) = undone.note {
                let note = Message::user(note);
                recorder.report(Event::Message(&note));
                history.push(note);
            }
        }
        Err(error) => recorder.report(Event::Failed(&error)),
    }
    checkpoints.reload(setup.workspace);
}

fn help() -> String {
    let mut text =
        String::from("Type a request and press Enter; the agent works until it answers.\n");
    for (name, what) in COMMANDS {
        text.push_str(&format!("  {name:<8} {what}\n"));
    }
    text + KEYS
}

/// Tokens the server counted in this REPL, and the last request's (how full the context is).
#[derive(Default)]
struct Tokens {
    requests: u64,
    sum: Usage,
    last: Option<Usage>,
}

/// Passes every event on, counting the tokens each request used.
struct Counted<'r, 'a> {
    inner: &'r mut Recorder<'a>,
    tokens: &'r mut Tokens,
}

impl Reporter for Counted<'_, '_> {
    fn report(&mut self, event: Event<'_>) {
        if let Event::Usage(usage) = &event {
            self.tokens.requests += 1;
            self.tokens.sum.prompt_tokens += usage.prompt_tokens;
            self.tokens.sum.completion_tokens += usage.completion_tokens;
            self.tokens.last = Some(*usage);
        }
        self.inner.report(event);
    }
}

/// `/compact`: a handoff summary now, whatever the window; the session records it.
fn compact(agent: &mut Agent, history: &mut Vec<Message>, reporter: &mut dyn Reporter) -> String {
    if !history.iter().any(|m| m.role == Role::Assistant) {
        return "nothing to compact yet".into();
    }
    match agent.compact(history, reporter) {
        Ok(()) => agent
            .context
            .status(history)
            .replace("context: ", "compacted; context now "),
        Err(Error::Interrupted) => "compaction interrupted; the history is as it was".into(),
        Err(error) => format!("cannot compact: {error}"),
    }
}

fn status(
    agent: &Agent,
    history: &[Message],
    recorder: &Recorder,
    setup: &Setup,
    tokens: &Tokens,
) -> String {
    let context = agent.context.status(history);
    let context = context.trim_start_matches("context: ");
    let session = match recorder.path() {
        Some(path) => path.display().to_string(),
        None => "not recorded".into(),
    };
    let spent = if tokens.requests == 0 {
        "none counted yet".into()
    } else {
        format!(
            "{} prompt + {} completion in {} requests of this run",
            tokens.sum.prompt_tokens, tokens.sum.completion_tokens, tokens.requests
        )
    };
    format!(
        "model     {}\nserver    {}\ncontext   {context}\ntokens    {spent}\nhistory   {} messages\n\
         session   {session}\nsandbox   {}\napprove   {}",
        agent.model,
        setup.base_url,
        history.len() - 1,
        setup.sandbox,
        agent.approver.mode().name(),
    )
}

/// `/model` alone: the model in use and those the server lists.
fn models(agent: &Agent, reporter: &mut dyn Reporter) -> String {
    let listed = match agent.client.models(reporter) {
        Ok(models) if models.is_empty() => "the server lists none".to_string(),
        Ok(models) => format!("the server has: {}", models.join(", ")),
        Err(error) => format!("the server's list is not available ({error})"),
    };
    format!("model: {}; {listed}\n/model NAME switches", agent.model)
}

/// `/tools`: each tool the model is offered, with the start of its description.
fn tools(agent: &Agent) -> String {
    let specs: Vec<serde_json::Value> = serde_json::from_str(agent.specs.get()).unwrap_or_default();
    let lines: Vec<String> = specs
        .iter()
        .map(|spec| {
            let function = &spec["function"];
            let name = function["name"].as_str().unwrap_or("?");
            let description = function["description"].as_str().unwrap_or("");
            let first = description
                .split_once(". ")
                .map_or(description, |(first, _)| first);
            let mut short: String = first.chars().take(72).collect();
            if short.len() < first.len() {
                short.push('…');
            }
            format!("  {name:<11} {short}")
        })
        .collect();
    lines.join("\n")
}
