//! Command-line arguments: flags, environment defaults and the help text.
//!
//! One table of flags (`FLAGS`) is printed by --help and by the man page (manpage.rs).
//! `parse` takes the arguments and the environment as values, so tests feed plain arrays.

use crate::approve::Approve;
use crate::checkpoint::Action;
use crate::error::{Error, Result};
use crate::sandbox::Mode;
use crate::wire::editblocks::Format;
use crate::wire::server::{self, Probe};
use crate::wire::textproto::Protocol;
use crate::wire::url;
use lexopt::prelude::*;
use std::ffi::OsString;
use std::path::PathBuf;

/// The first line of --help, and the man page's NAME.
pub const ABOUT: &str = "a coding agent's tool-calling loop for any OpenAI-compatible server";

/// How turn is called: the command line, and what it does.
pub const USAGE: &[(&str, &str)] = &[
    ("turn [OPTIONS] PROMPT...", "one turn, then exit"),
    ("echo PROMPT | turn [OPTIONS]", "the prompt from stdin"),
    ("turn [OPTIONS] -", "the prompt from stdin, said explicitly"),
    (
        "turn [OPTIONS]",
        "on a terminal: a REPL (/help lists its commands)",
    ),
];

/// What a run does, wrapped for --help; the man page's DESCRIPTION.
pub const DESCRIPTION: &str = "\
The model may run shell commands and read, write and edit files in the workspace until it
answers without calling a tool. Its text goes to stdout as it arrives; one line per tool call
goes to stderr. AGENTS.md files in the workspace and its parents up to the git root are added
to the system prompt. Every run is recorded under .turn/sessions/ in the workspace.";

/// Every flag `parse` takes, as --help and the man page show it: the names and value, then
/// paragraphs of text (lines wrapped for --help; the man page fills them). tests/docs.rs
/// checks this table, the man page and docs/ against what `parse` accepts.
pub const FLAGS: &[(&str, &[&str])] = &[
    (
        "-m, --model NAME",
        &[
            "model to ask [env TURN_MODEL]; if unset and the server lists
exactly one model, that one",
        ],
    ),
    (
        "--base-url URL",
        &[
            "server address [env OPENAI_BASE_URL]; the API key comes from
OPENAI_API_KEY (unset: no Authorization header). With neither set,
turn looks for a local llama-server (127.0.0.1:8080), Ollama (:11434),
LM Studio (:1234) or vLLM (:8000) [env TURN_LOCAL_SERVERS lists other
HOST:PORTs, or 'off'], else uses https://api.openai.com/v1",
        ],
    ),
    (
        "--ca-cert FILE",
        &[
            "also trust the CA certificates in FILE (PEM; repeatable), beside
the system's bundle or SSL_CERT_FILE / SSL_CERT_DIR",
        ],
    ),
    (
        "--tool-protocol P",
        &[
            "how tool calls travel [env TURN_TOOL_PROTOCOL, default auto]:",
            "native: the API's tools and tool_calls only",
            "text: tools described in the system prompt, calls written as a
  JSON block; the prompt also declares edit blocks (--edit-format)",
            "auto: native, plus calls written as text; a server that refuses
  tools gets the text protocol (the session keeps it for -c)",
            "turn runs the calls the model makes and nothing else; a reply
without calls is the answer. Under auto and text, once a model
writes a call as text, begins one, or gets the text protocol, an
answer that is no answer (empty, a call unfinished, commands shown
instead of called, a failed change not made since, a result
echoed, a reply cut short) gets a note, twice a turn at most;
the session keeps that switch for -c (docs/local-models.md)",
        ],
    ),
    (
        "--edit-format F",
        &[
            "the edit blocks the text protocol declares, run as write_file and
edit_file [env TURN_EDIT_FORMAT, default both]:",
            "whole: a line that is only the file's path (bare or in backticks,
  with a / or a . in it), then a fenced block with the whole file",
            "both: that, and for part of a file the path line, then
  <<<<<<< SEARCH, the old lines, =======, the new lines,
  >>>>>>> REPLACE",
            "one block per file a reply; a malformed block's error goes back to
the model; a reply of blocks alone is the last, once all are
written. Under native and auto nothing is declared",
        ],
    ),
    (
        "-C, --cd DIR",
        &["workspace the tools are confined to [default: current directory]"],
    ),
    (
        "--max-steps N",
        &["stop after N model requests in one turn [default: 50]"],
    ),
    (
        "--timeout SECS",
        &[
            "kill a bash command (and all the commands started) after SECS
[default: 120]",
        ],
    ),
    (
        "--max-output CHARS",
        &[
            "keep at most CHARS of a tool's output, head and tail [default: 50000]
(numbers: steps up to 1000000, seconds up to 1000000, CHARS up
to 100000000)",
        ],
    ),
    (
        "--request-timeout SECS",
        &["give up when the server sends nothing for SECS [default: 600]"],
    ),
    (
        "--request-deadline SECS",
        &[
            "give up when one request takes longer than SECS in all, even
while the server keeps sending [default: 3600]",
        ],
    ),
    (
        "--system FILE",
        &["replace the built-in system prompt with FILE's text"],
    ),
    (
        "--no-preload",
        &[
            "turn neither lists the workspace's files (at most 2 KB) in a new
session's first message nor reads the files a prompt names (up
to 4) before its first request",
        ],
    ),
    (
        "--no-stream",
        &["ask for whole responses instead of streamed tokens"],
    ),
    (
        "--temperature T",
        &["sampling temperature, 0 to 2 [default: the server's]"],
    ),
    (
        "--context TOKENS",
        &[
            "the model's context window [env TURN_CONTEXT; default: asked of
the server (llama-server, vLLM, Ollama, LM Studio), else unknown];
turn compacts the history to stay inside it",
        ],
    ),
    (
        "--max-tokens N",
        &[
            "reply budget sent as max_tokens [default: a quarter of the window,
at most 8192; 4096 when the window is unknown]",
        ],
    ),
    (
        "-q, --quiet",
        &["print only the model's text: no tool lines, reasoning or notices"],
    ),
    (
        "--sandbox MODE",
        &[
            "what bash and the file tools may change [env TURN_SANDBOX]:",
            "workspace-write (default): writes only in the workspace (but
  its .git and .turn) and --writable dirs, enforced for bash by
  namespaces, Landlock, seccomp and dropped capabilities; commands
  get a private /tmp and /dev/shm (see --sandbox-check)",
            "read-only: no writes anywhere (but /dev/null and the private /tmp)",
            "off: no sandbox layers, only the keyword screen",
        ],
    ),
    (
        "--writable DIR",
        &["with workspace-write, let commands write in DIR too (repeatable)"],
    ),
    (
        "--writable-protected",
        &[
            "let commands and file tools change every .git and .turn in the
workspace (read-only to them otherwise)",
        ],
    ),
    (
        "--host-tmp",
        &[
            "commands use the host's /tmp (writable with workspace-write) and
reach its Unix sockets (tmux's), instead of a private /tmp",
        ],
    ),
    (
        "--no-network",
        &["bash commands get no network: no TCP, UDP or Unix sockets"],
    ),
    (
        "--require-landlock",
        &[
            "refuse to run when the kernel has no Landlock, instead of falling
back to the other layers",
        ],
    ),
    (
        "--require-isolation",
        &[
            "refuse to run unless every sandbox layer works here (namespaces,
Landlock, seccomp), instead of falling back with a notice",
        ],
    ),
    (
        "--pass-env NAME",
        &[
            "give commands the variable NAME although it looks secret (KEY,
TOKEN, SECRET, PASSWORD, ...) or leads to a socket (repeatable)",
        ],
    ),
    (
        "--sandbox-check",
        &["print which sandbox layers work here and why not, then exit
(0: all of them)"],
    ),
    (
        "--approve MODE",
        &[
            "never: run what the sandbox allows (default without a terminal)",
            "ask: confirm each command and file write (default on a terminal)",
            "dangerous: confirm only commands the keyword screen flags",
        ],
    ),
    (
        "--tools FILE",
        &["offer the tools and MCP servers declared in FILE (JSON, see
docs/tools.md; repeatable); .turn/tools.json in the workspace is
read too"],
    ),
    (
        "--mcp NAME=COMMAND",
        &["start the MCP server COMMAND (stdio) and offer its tools as
NAME__tool (repeatable); MCP servers run outside the sandbox"],
    ),
    (
        "--vouch",
        &[
            "vouch again for --tools files and --mcp servers whose file or
workspace scripts changed since turn first started them (turn
refuses to start them otherwise)",
        ],
    ),
    (
        "--list-tools",
        &["print every tool the model would get, with its source, and exit"],
    ),
    (
        "--json",
        &["print JSONL events on stdout instead of text (see docs/scripting.md)"],
    ),
    (
        "-o, --output-last-message FILE",
        &["when the run succeeds, write the model's final answer to
FILE (atomically; a failed run leaves FILE as it was)"],
    ),
    (
        "--output-schema FILE",
        &[
            "the final answer must be JSON matching the JSON Schema in FILE:
asked for with response_format, checked here, re-asked once;
stdout then holds only that JSON, on one line",
        ],
    ),
    (
        "--session FILE",
        &["resume the history in FILE if it exists, and record to it"],
    ),
    (
        "-c, --continue",
        &["resume the newest session of this workspace"],
    ),
    (
        "--no-session",
        &["record nothing (no session file, no REPL history)"],
    ),
    (
        "-i, --interactive",
        &["the REPL even when stdin is not a terminal (line by line)"],
    ),
    (
        "--undo",
        &[
            "take back the newest turn of the newest session (or of --session
FILE) that changed files, commands' changes included; again: the
one before. Only paths that turn changed, and only if unchanged
since (else it names them and changes nothing)",
        ],
    ),
    (
        "--checkpoints",
        &["list the checkpoints of the workspace: id, time, turn, files, task"],
    ),
    (
        "--restore ID",
        &[
            "take the workspace back to before checkpoint ID (an undo is a
checkpoint too: restoring the one before it takes it back)",
        ],
    ),
    (
        "--dry-run",
        &["with --undo or --restore: say what would change, change nothing"],
    ),
    (
        "--force",
        &["with --undo or --restore: put back paths changed since, too"],
    ),
    (
        "--prune-checkpoints",
        &[
            "delete this workspace's checkpoints (and those of workspaces that
are gone). Checkpoints live in $XDG_STATE_HOME/turn (default
~/.local/state/turn), never in the workspace; .git, .gitignore'd
paths, .turn, node_modules, __pycache__ and dirs with CACHEDIR.TAG
or pyvenv.cfg are left out [env TURN_CHECKPOINTS=off: none;
TURN_CHECKPOINT_MAX_FILE / _MAX_TOTAL bytes, _MAX_FILES count]",
        ],
    ),
    (
        "--generate man",
        &["print the manual page (roff, for man) and exit"],
    ),
    ("-V, --version", &["print the version"]),
    ("-h, --help", &["print this help"]),
];

/// Exit codes and what they mean, for --help and the man page.
pub const EXIT_CODES: &[(&str, &str)] = &[
    ("0", "done"),
    ("1", "runtime or server error"),
    ("2", "usage error"),
    ("3", "--max-steps reached"),
    ("4", "the model repeated one call with the same result"),
    ("5", "the answer does not match --output-schema"),
    ("130", "interrupted (Ctrl-C)"),
];

/// Example command lines and what they show.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "turn 'why does make test fail?'",
        "a local server on its usual port",
    ),
    (
        "turn --base-url http://10.0.0.5:8080/v1 'why does make test fail?'",
        "llama.cpp elsewhere",
    ),
    (
        "OPENAI_BASE_URL=http://127.0.0.1:11434/v1 turn -m qwen3 'summarize README.md'",
        "Ollama",
    ),
    (
        "turn -m gpt-4o-mini 'add input validation to parse_args in main.rs'",
        "OpenAI, with OPENAI_API_KEY set",
    ),
    (
        "turn -q -o answer.md 'summarize this branch' >/dev/null",
        "a script",
    ),
];

/// The text `turn --help` prints, made from the tables above.
pub fn help() -> String {
    let mut out = format!("turn: {ABOUT}\n\n");
    for (i, (line, what)) in USAGE.iter().enumerate() {
        let lead = if i == 0 { "Usage: " } else { "       " };
        out += &format!("{lead}{line:<30}{what}\n");
    }
    out += &format!("\n{DESCRIPTION}\n\nOptions:\n");
    for (names, text) in FLAGS {
        let indent = if names.starts_with("--") { "    " } else { "" };
        let names = format!("{indent}{names}");
        out += &format!("  {names:<23}  ");
        for (i, line) in text.iter().flat_map(|p| p.lines()).enumerate() {
            if i > 0 {
                out += &format!("\n{:27}", "");
            }
            out += line;
        }
        out.push('\n');
    }
    out += "\nExit codes:\n";
    for (code, what) in EXIT_CODES {
        out += &format!("  {code:<5}{what}\n");
    }
    out += "\nExamples:\n";
    for (line, what) in EXAMPLES {
        out += &format!("  # {what}\n  {line}\n");
    }
    out
}

#[derive(Debug, PartialEq)]
pub enum Command {
    Run(Box<Args>),
    /// `--undo`, `--restore`, `--checkpoints`, `--prune-checkpoints`, with the workspace and
    /// session flags given beside it.
    Checkpoints {
        args: Box<Args>,
        action: Action,
        dry_run: bool,
        force: bool,
    },
    /// `--sandbox-check`, with the sandbox flags given beside it.
    SandboxCheck(Box<Args>),
    Help,
    Version,
    /// `--generate man`: the manual page.
    Man,
}

#[derive(Debug, PartialEq)]
pub enum Prompt {
    Text(String),
    Stdin,
    /// No PROMPT: read stdin when it is not a terminal.
    Missing,
}

/// Where the history is recorded.
#[derive(Debug, PartialEq)]
pub enum Session {
    /// A new file under .turn/sessions/.
    Fresh,
    /// This file: resumed if it exists.
    File(PathBuf),
    /// The newest file under .turn/sessions/.
    Latest,
    Off,
}

#[derive(Debug, PartialEq)]
pub struct Args {
    pub prompt: Prompt,
    pub model: Option<String>,
    pub base_url: String,
    pub api_key: Option<String>,
    pub workspace: PathBuf,
    pub max_steps: u32,
    pub timeout: u64,
    pub max_output: usize,
    pub request_timeout: u64,
    /// Seconds one model request may take in all (--request-deadline).
    pub request_deadline: u64,
    pub system: Option<PathBuf>,
    /// --no-preload turns it off: the workspace's files listed in the first message, and the
    /// files a prompt names read before its first request.
    pub preload: bool,
    pub stream: bool,
    pub temperature: Option<f64>,
    /// --context / TURN_CONTEXT: the window in tokens; `None` asks the server.
    pub context: Option<u64>,
    /// --max-tokens: the reply budget; `None` derives it from the window.
    pub max_tokens: Option<u64>,
    pub quiet: bool,
    pub json: bool,
    pub session: Session,
    pub interactive: bool,
    pub sandbox: Mode,
    pub writable: Vec<PathBuf>,
    pub no_network: bool,
    pub require_landlock: bool,
    pub require_isolation: bool,
    /// --writable-protected: .git and .turn are writable like the rest of the workspace.
    pub writable_protected: bool,
    /// --host-tmp: the host's /tmp instead of a private one.
    pub host_tmp: bool,
    /// --vouch: record the tools files' and their scripts' hashes anew.
    pub vouch: bool,
    /// Withheld variables that commands get all the same (`--pass-env`).
    pub pass_env: Vec<String>,
    /// `None`: ask on a terminal, never otherwise.
    pub approve: Option<Approve>,
    /// -o: where the final answer goes.
    pub output_last_message: Option<PathBuf>,
    /// --output-schema: the JSON Schema file the final answer must match.
    pub output_schema: Option<PathBuf>,
    /// --ca-cert: PEM files of CAs to trust beside the system's.
    pub ca_certs: Vec<PathBuf>,
    /// --tools: files declaring tools and MCP servers.
    pub tools_files: Vec<PathBuf>,
    /// --mcp NAME=COMMAND.
    pub mcp: Vec<String>,
    /// --list-tools: print the tools the model would get, and exit.
    pub list_tools: bool,
    pub tool_protocol: Protocol,
    /// --edit-format: the edit blocks the text protocol declares.
    pub edit_format: Format,
    /// Where to look for a local server, in order: empty when the base URL or an API key was
    /// given (then `base_url` is the one to use).
    pub local_servers: Vec<Probe>,
}

/// Parses the arguments after the program name; `env` looks up environment variables.
pub fn parse(
    args: impl IntoIterator<Item = OsString>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Command> {
    let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let mut model = env("TURN_MODEL");
    let mut base_url = env("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into());
    let mut base_url_given = env("OPENAI_BASE_URL").is_some() || env("OPENAI_API_KEY").is_some();
    let mut tool_protocol = None;
    let mut edit_format = None;
    let mut workspace = PathBuf::from(".");
    let (mut max_steps, mut timeout, mut max_output, mut request_timeout) = (50, 120, 50_000, 600);
    let mut request_deadline = crate::wire::client::DEADLINE_SECS;
    let (mut system, mut temperature, mut preload) = (None, None, true);
    let (mut stream, mut quiet, mut stdin) = (true, false, false);
    let (mut json, mut interactive, mut session) = (false, false, Session::Fresh);
    let mut sandbox = None;
    let (mut context, mut max_tokens) = (None, None);
    let (mut writable, mut no_network, mut require_landlock, mut approve) =
        (Vec::new(), false, false, None);
    let (mut output_last_message, mut output_schema) = (None, None);
    let mut ca_certs = Vec::new();
    let (mut tools_files, mut mcp, mut list_tools) = (Vec::new(), Vec::new(), false);
    let (mut require_isolation, mut pass_env, mut sandbox_check) = (false, Vec::new(), false);
    let (mut writable_protected, mut host_tmp, mut vouch) = (false, false, false);
    let mut set_session = |new: Session, flag: &str| match session {
        Session::Fresh => {
            session = new;
            Ok(())
        }
        _ => Err(Error::Usage(format!(
            "{flag} cannot be combined with another session flag"
        ))),
    };
    let (mut action, mut dry_run, mut force) = (None, false, false);
    let mut set_action = |new: Action| match action.replace(new) {
        None => Ok(()),
        Some(_) => Err(Error::Usage(
            "--undo, --restore, --checkpoints and --prune-checkpoints go one at a time".into(),
        )),
    };
    let mut words: Vec<String> = Vec::new();

    let mut parser = lexopt::Parser::from_iter(std::iter::once(OsString::from("turn")).chain(args));
    while let Some(arg) = parser.next()? {
        match arg {
            Short('h') | Long("help") => return Ok(Command::Help),
            Short('V') | Long("version") => return Ok(Command::Version),
            Long("generate") => {
                return match text(parser.value()?, "--generate")?.as_str() {
                    "man" => Ok(Command::Man),
                    other => Err(Error::Usage(format!("--generate takes man, not '{other}'"))),
                }
            }
            Short('m') | Long("model") => model = Some(text(parser.value()?, "--model")?),
            Long("base-url") => {
                base_url = text(parser.value()?, "--base-url")?;
                base_url_given = true;
            }
            Long("tool-protocol") => {
                let value = text(parser.value()?, "--tool-protocol")?;
                tool_protocol = Some(Protocol::parse(&value).ok_or_else(|| {
                    Error::Usage(format!("--tool-protocol: {}", bad_protocol(&value)))
                })?);
            }
            Long("edit-format") => {
                let value = text(parser.value()?, "--edit-format")?;
                edit_format = Some(Format::parse(&value).ok_or_else(|| {
                    Error::Usage(format!("--edit-format: {}", bad_format(&value)))
                })?);
            }
            Short('C') | Long("cd") => workspace = parser.value()?.into(),
            Long("max-steps") => max_steps = positive(parser.value()?, "--max-steps", MAX_STEPS)?,
            Long("timeout") => timeout = positive(parser.value()?, "--timeout", MAX_SECS)?,
            Long("max-output") => {
                max_output = positive(parser.value()?, "--max-output", MAX_OUTPUT)?
            }
            Long("request-timeout") => {
                request_timeout = positive(parser.value()?, "--request-timeout", MAX_SECS)?
            }
            Long("request-deadline") => {
                request_deadline = positive(parser.value()?, "--request-deadline", MAX_SECS)?
            }
            Long("system") => system = Some(parser.value()?.into()),
            Long("no-stream") => stream = false,
            Long("no-preload") => preload = false,
            Long("temperature") => {
                let value = text(parser.value()?, "--temperature")?;
                match value.trim().parse::<f64>() {
                    Ok(t) if (0.0..=2.0).contains(&t) => temperature = Some(t),
                    _ => {
                        return Err(Error::Usage(format!(
                            "--temperature must be a number from 0 to 2, not '{value}'"
                        )))
                    }
                }
            }
            Long("context") => context = Some(positive(parser.value()?, "--context", MAX_TOKENS)?),
            Long("max-tokens") => {
                max_tokens = Some(positive(parser.value()?, "--max-tokens", MAX_TOKENS)?)
            }
            Short('q') | Long("quiet") => quiet = true,
            Long("json") => json = true,
            Short('o') | Long("output-last-message") => {
                output_last_message = Some(parser.value()?.into())
            }
            Long("output-schema") => output_schema = Some(parser.value()?.into()),
            Long("ca-cert") => ca_certs.push(parser.value()?.into()),
            Long("tools") => tools_files.push(parser.value()?.into()),
            Long("mcp") => mcp.push(text(parser.value()?, "--mcp")?),
            Long("list-tools") => list_tools = true,
            Long("session") => set_session(Session::File(parser.value()?.into()), "--session")?,
            Short('c') | Long("continue") => set_session(Session::Latest, "--continue")?,
            Long("no-session") => set_session(Session::Off, "--no-session")?,
            Short('i') | Long("interactive") => interactive = true,
            Long("undo") => set_action(Action::Undo)?,
            Long("checkpoints") => set_action(Action::List)?,
            Long("prune-checkpoints") => set_action(Action::Prune)?,
            Long("restore") => {
                let value = text(parser.value()?, "--restore")?;
                let id = value.trim().parse().map_err(|_| {
                    Error::Usage(format!("--restore takes a checkpoint's id, not '{value}'"))
                })?;
                set_action(Action::Restore(id))?
            }
            Long("dry-run") => dry_run = true,
            Long("force") => force = true,
            Long("sandbox") => {
                let value = text(parser.value()?, "--sandbox")?;
                sandbox = Some(
                    Mode::parse(&value)
                        .ok_or_else(|| Error::Usage(format!("--sandbox: {}", bad_mode(&value))))?,
                );
            }
            Long("writable") => writable.push(parser.value()?.into()),
            Long("no-network") => no_network = true,
            Long("writable-protected") => writable_protected = true,
            Long("host-tmp") => host_tmp = true,
            Long("vouch") => vouch = true,
            Long("require-landlock") => require_landlock = true,
            Long("require-isolation") => require_isolation = true,
            Long("sandbox-check") => sandbox_check = true,
            Long("pass-env") => {
                let name = text(parser.value()?, "--pass-env")?;
                if name.is_empty() || name.contains('=') {
                    return Err(Error::Usage(format!(
                        "--pass-env takes a variable's name, not '{name}'"
                    )));
                }
                pass_env.push(name);
            }
            Long("approve") => {
                approve = Some(match text(parser.value()?, "--approve")?.as_str() {
                    "never" => Approve::Never,
                    "ask" => Approve::Ask,
                    "dangerous" => Approve::Dangerous,
                    other => {
                        return Err(Error::Usage(format!(
                            "--approve takes never, ask or dangerous, not '{other}'"
                        )))
                    }
                })
            }
            Value(value) if value == "-" && words.is_empty() => stdin = true,
            Value(value) => words.push(text(value, "PROMPT")?),
            _ => return Err(arg.unexpected().into()),
        }
    }

    let sandbox = match (sandbox, env("TURN_SANDBOX")) {
        (Some(mode), _) => mode,
        (None, None) => Mode::WorkspaceWrite,
        (None, Some(value)) => Mode::parse(value.trim())
            .ok_or_else(|| Error::Usage(format!("TURN_SANDBOX: {}", bad_mode(&value))))?,
    };
    let context = match (context, env("TURN_CONTEXT")) {
        (Some(tokens), _) => Some(tokens),
        (None, None) => None,
        (None, Some(value)) => Some(positive(value.trim().into(), "TURN_CONTEXT", MAX_TOKENS)?),
    };
    let tool_protocol = match (tool_protocol, env("TURN_TOOL_PROTOCOL")) {
        (Some(protocol), _) => protocol,
        (None, None) => Protocol::Auto,
        (None, Some(value)) => Protocol::parse(value.trim())
            .ok_or_else(|| Error::Usage(format!("TURN_TOOL_PROTOCOL: {}", bad_protocol(&value))))?,
    };
    let edit_format = match (edit_format, env("TURN_EDIT_FORMAT")) {
        (Some(format), _) => format,
        (None, None) => Format::Both,
        (None, Some(value)) => Format::parse(value.trim())
            .ok_or_else(|| Error::Usage(format!("TURN_EDIT_FORMAT: {}", bad_format(&value))))?,
    };
    let local_servers = if base_url_given {
        Vec::new()
    } else {
        server::probes(env("TURN_LOCAL_SERVERS").as_deref()).map_err(Error::Usage)?
    };
    let prompt = match (stdin, words.is_empty()) {
        (true, true) => Prompt::Stdin,
        (true, false) => {
            return Err(Error::Usage(
                "give the prompt either as '-' (stdin) or as words, not both".into(),
            ))
        }
        (false, true) => Prompt::Missing,
        (false, false) => Prompt::Text(words.join(" ")),
    };
    if interactive && prompt != Prompt::Missing {
        return Err(Error::Usage(
            "--interactive reads its prompts from stdin: give no PROMPT".into(),
        ));
    }
    if json && interactive {
        return Err(Error::Usage(
            "--json is for one-shot runs, not --interactive".into(),
        ));
    }
    if interactive && (output_last_message.is_some() || output_schema.is_some()) {
        return Err(Error::Usage(
            "-o and --output-schema are for one-shot runs, not --interactive".into(),
        ));
    }
    let undoing = matches!(action, Some(Action::Undo | Action::Restore(_)));
    if (dry_run || force) && !undoing {
        return Err(Error::Usage(
            "--dry-run and --force go with --undo or --restore".into(),
        ));
    }
    if action.is_some() && (prompt != Prompt::Missing || interactive || json) {
        return Err(Error::Usage(
            "--undo, --restore, --checkpoints and --prune-checkpoints take no PROMPT, -i or --json"
                .into(),
        ));
    }
    let base_url = base_url.trim_end_matches('/').to_string();
    // --sandbox-check talks to no server, so its base URL does not matter.
    if base_url.starts_with("https://") && !cfg!(feature = "tls") && !sandbox_check {
        return Err(Error::Usage(format!(
            "this turn was built without TLS (--no-default-features), so it cannot reach {}; \
             use an http:// server or a default build",
            url::redact(&base_url)
        )));
    }
    if !(base_url.starts_with("http://") || base_url.starts_with("https://") || sandbox_check) {
        return Err(Error::Usage(format!(
            "the base URL (--base-url or OPENAI_BASE_URL) must start with http:// or https://, \
             not '{}'",
            url::redact(&base_url)
        )));
    }
    let args = Box::new(Args {
        prompt,
        model,
        base_url,
        api_key: env("OPENAI_API_KEY"),
        workspace,
        max_steps,
        timeout,
        max_output,
        request_timeout,
        request_deadline,
        system,
        preload,
        stream,
        temperature,
        context,
        max_tokens,
        quiet,
        json,
        session,
        interactive,
        sandbox,
        writable,
        no_network,
        require_landlock,
        require_isolation,
        writable_protected,
        host_tmp,
        vouch,
        pass_env,
        approve,
        output_last_message,
        output_schema,
        ca_certs,
        tools_files,
        mcp,
        list_tools,
        tool_protocol,
        edit_format,
        local_servers,
    });
    Ok(if let Some(action) = action {
        Command::Checkpoints {
            args,
            action,
            dry_run,
            force,
        }
    } else if sandbox_check {
        Command::SandboxCheck(args)
    } else {
        Command::Run(args)
    })
}

fn bad_protocol(value: &str) -> String {
    format!("the tool protocol is native, text or auto, not '{value}'")
}

fn bad_format(value: &str) -> String {
    format!("the edit format is whole or both, not '{value}'")
}

fn bad_mode(value: &str) -> String {
    format!("the sandbox mode is workspace-write, read-only or off, not '{value}'")
}

fn text(value: OsString, flag: &str) -> Result<String> {
    value
        .into_string()
        .map_err(|v| Error::Usage(format!("{flag} is not valid UTF-8: {v:?}")))
}

/// The most --max-steps allows.
const MAX_STEPS: u32 = 1_000_000;
/// The most --timeout and --request-timeout allow (over 11 days).
const MAX_SECS: u64 = 1_000_000;
/// The most --context and --max-tokens allow: more than any model's window.
const MAX_TOKENS: u64 = 1 << 30;
/// The most --max-output allows: more than any model's context holds.
const MAX_OUTPUT: usize = 100_000_000;

/// A whole number from 1 to `max`: larger ones are refused, never wrapped or saturated.
fn positive<T>(value: OsString, flag: &str, max: T) -> Result<T>
where
    T: std::str::FromStr + Default + PartialOrd + std::fmt::Display,
{
    let shown = value.to_string_lossy().into_owned();
    let text = text(value, flag)?;
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<T>() {
        Ok(n) if n > max => Err(Error::Usage(format!(
            "{flag} is at most {max}, not '{shown}'"
        ))),
        Ok(n) if n > T::default() => Ok(n),
        // All digits, yet no number of this type: too large for it.
        Err(_) if digits => Err(Error::Usage(format!(
            "{flag} is at most {max}, not '{shown}'"
        ))),
        _ => Err(Error::Usage(format!(
            "{flag} needs a whole number above 0, not '{shown}'"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Command> {
        parse(args.iter().map(OsString::from), |_| None)
    }

    fn args(list: &[&str]) -> Args {
        match run(list) {
            Ok(Command::Run(args)) => *args,
            other => panic!("{other:?}"),
        }
    }

    fn usage(list: &[&str]) -> String {
        match run(list) {
            Err(Error::Usage(message)) => message,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn defaults() {
        let a = args(&["hello", "world"]);
        assert_eq!(a.prompt, Prompt::Text("hello world".into()));
        assert_eq!(a.base_url, "https://api.openai.com/v1");
        assert_eq!(
            (a.max_steps, a.timeout, a.max_output, a.request_timeout),
            (50, 120, 50_000, 600)
        );
        assert!(a.stream && !a.quiet && a.model.is_none() && a.api_key.is_none());
        assert_eq!(a.workspace, PathBuf::from("."));
        assert_eq!(a.request_deadline, 3600);
    }

    #[test]
    fn every_flag() {
        let a = args(&[
            "-m",
            "qwen",
            "--base-url",
            "http://x:1/v1/",
            "-C",
            "/tmp",
            "--max-steps",
            "3",
            "--timeout=9",
            "--max-output",
            "100",
            "--request-timeout",
            "7",
            "--request-deadline",
            "60",
            "--system",
            "sys.txt",
            "--no-stream",
            "--temperature",
            "0.2",
            "-q",
            "go",
        ]);
        assert_eq!(a.model.as_deref(), Some("qwen"));
        assert_eq!(a.base_url, "http://x:1/v1");
        assert_eq!(a.workspace, PathBuf::from("/tmp"));
        assert_eq!(
            (a.max_steps, a.timeout, a.max_output, a.request_timeout),
            (3, 9, 100, 7)
        );
        assert_eq!(a.request_deadline, 60);
        assert_eq!(a.system, Some(PathBuf::from("sys.txt")));
        assert_eq!(a.temperature, Some(0.2));
        assert!(!a.stream && a.quiet);
        assert_eq!(a.prompt, Prompt::Text("go".into()));
    }

    #[test]
    fn environment_gives_defaults_and_flags_win() {
        let env = |name: &str| match name {
            "TURN_MODEL" => Some("env-model".to_string()),
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:8080/v1".to_string()),
            "OPENAI_API_KEY" => Some("  ".to_string()), // blank counts as unset
            _ => None,
        };
        let Ok(Command::Run(a)) = parse(["hi"].map(OsString::from), env) else {
            panic!()
        };
        assert_eq!(a.model.as_deref(), Some("env-model"));
        assert_eq!(a.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(a.api_key, None);
        let Ok(Command::Run(a)) = parse(["-m", "flag", "hi"].map(OsString::from), env) else {
            panic!()
        };
        assert_eq!(a.model.as_deref(), Some("flag"));
    }

    #[test]
    fn prompt_sources() {
        assert_eq!(args(&["-"]).prompt, Prompt::Stdin);
        assert_eq!(args(&[]).prompt, Prompt::Missing);
        assert_eq!(args(&["--", "-q", "x"]).prompt, Prompt::Text("-q x".into()));
        assert!(usage(&["-", "more"]).contains("not both"));
    }

    #[test]
    fn help_and_version() {
        assert_eq!(run(&["--help"]).unwrap(), Command::Help);
        assert_eq!(run(&["x", "-V"]).unwrap(), Command::Version);
        assert_eq!(run(&["--generate", "man"]).unwrap(), Command::Man);
        assert!(usage(&["--generate", "html"]).contains("--generate takes man, not 'html'"));
    }

    #[test]
    fn help_shows_every_flag_in_its_column() {
        let help = help();
        assert!(help.starts_with("turn: a coding agent's"));
        for (names, _) in FLAGS {
            let shown = help.lines().find(|l| l.trim_start().starts_with(names));
            let line = shown.unwrap_or_else(|| panic!("{names} not in --help"));
            let column = line.len() - line.trim_start().len();
            assert_eq!(
                column,
                if names.starts_with("--") { 6 } else { 2 },
                "{line}"
            );
        }
        // The text starts in column 27, or two spaces after names too long for that.
        for line in help.lines().filter(|l| l.starts_with("  -")) {
            let (names, _) = line.trim_start().split_once("  ").unwrap();
            assert!(FLAGS.iter().any(|(n, _)| *n == names), "{line}");
            let end = line.find(names).unwrap() + names.len();
            let text = if end <= 25 { 27 } else { end + 2 };
            assert!(line[end..text].trim().is_empty(), "{line}");
            assert!(!line[text..].starts_with(' '), "{line}");
        }
    }

    #[test]
    fn bad_values_name_the_flag() {
        assert!(usage(&["--max-steps", "0", "x"]).contains("--max-steps"));
        assert!(usage(&["--timeout", "soon", "x"]).contains("'soon'"));
        assert!(usage(&["--temperature", "3", "x"]).contains("--temperature"));
        assert!(usage(&["--temperature", "warm", "x"])
            .contains("--temperature must be a number from 0 to 2, not 'warm'"));
        assert!(usage(&["--base-url", "localhost:8080", "x"]).contains("http://"));
        assert!(usage(&["--request-deadline", "0", "x"]).contains("--request-deadline"));
        let shown = usage(&["--base-url", "u:secret@localhost:8080", "x"]);
        assert!(shown.contains("'***@localhost:8080'"), "{shown}");
        assert!(usage(&["--bogus"]).contains("--bogus"));
        assert!(usage(&["--model"]).contains("--model"));
    }

    #[test]
    fn output_flags() {
        let a = args(&["-o", "last.txt", "--output-schema", "s.json", "go"]);
        assert_eq!(a.output_last_message, Some(PathBuf::from("last.txt")));
        assert_eq!(a.output_schema, Some(PathBuf::from("s.json")));
        let a = args(&["--tools", "t.json", "--mcp", "fs=srv --x", "--list-tools"]);
        assert_eq!(a.tools_files, [PathBuf::from("t.json")]);
        assert_eq!(
            (a.mcp, a.list_tools),
            (vec!["fs=srv --x".to_string()], true)
        );
        let a = args(&["--ca-cert", "a.pem", "--ca-cert=b.pem", "go"]);
        assert_eq!(a.ca_certs, [PathBuf::from("a.pem"), PathBuf::from("b.pem")]);
        let a = args(&["--output-last-message=x", "go"]);
        assert_eq!(a.output_last_message, Some(PathBuf::from("x")));
        assert!(usage(&["-i", "-o", "x"]).contains("one-shot"));
        assert!(usage(&["-i", "--output-schema", "x"]).contains("one-shot"));
    }

    #[test]
    fn numbers_have_sane_bounds() {
        assert_eq!(
            usage(&["--max-output", "4611686018427387904", "x"]),
            "--max-output is at most 100000000, not '4611686018427387904'"
        );
        assert!(usage(&["--max-steps", "99999999999999999999", "x"]).contains("at most 1000000"));
        assert!(usage(&["--timeout", "1000001", "x"]).contains("at most 1000000"));
        assert!(usage(&["--request-timeout", "18446744073709551616", "x"]).contains("at most"));
        assert!(usage(&["--timeout", "-1", "x"]).contains("above 0"));
        let a = args(&["--max-output", "100000000", "--max-steps", "1000000", "x"]);
        assert_eq!((a.max_output, a.max_steps), (100_000_000, 1_000_000));
    }

    #[test]
    fn session_flags() {
        assert_eq!(args(&["x"]).session, Session::Fresh);
        assert_eq!(
            args(&["--session", "s.jsonl", "x"]).session,
            Session::File("s.jsonl".into())
        );
        assert_eq!(args(&["-c", "x"]).session, Session::Latest);
        assert_eq!(args(&["--no-session", "x"]).session, Session::Off);
        assert!(usage(&["-c", "--session", "f", "x"]).contains("cannot be combined"));
    }

    #[test]
    fn checkpoint_flags_are_flags_and_a_task_named_undo_stays_a_task() {
        assert_eq!(args(&["undo"]).prompt, Prompt::Text("undo".into()));
        let Ok(Command::Checkpoints {
            args,
            action,
            dry_run,
            force,
        }) = run(&["--undo", "-C", "/tmp", "--dry-run", "--session", "s.jsonl"])
        else {
            panic!("an undo")
        };
        assert_eq!((action, dry_run, force), (Action::Undo, true, false));
        assert_eq!(args.workspace, PathBuf::from("/tmp"));
        assert_eq!(args.session, Session::File("s.jsonl".into()));
        assert!(matches!(
            run(&["--restore", "7", "--force"]),
            Ok(Command::Checkpoints {
                action: Action::Restore(7),
                force: true,
                ..
            })
        ));
        assert!(matches!(
            run(&["--checkpoints"]),
            Ok(Command::Checkpoints {
                action: Action::List,
                ..
            })
        ));
        assert!(usage(&["--restore", "x"]).contains("checkpoint's id"));
        assert!(usage(&["--undo", "--checkpoints"]).contains("one at a time"));
        assert!(usage(&["--dry-run", "x"]).contains("go with --undo"));
        assert!(usage(&["--checkpoints", "--force"]).contains("go with --undo"));
        assert!(usage(&["--undo", "do it"]).contains("take no PROMPT"));
    }

    #[test]
    fn sandbox_and_approval() {
        let a = args(&["x"]);
        assert_eq!(
            (a.sandbox, a.approve, a.no_network, a.require_landlock),
            (Mode::WorkspaceWrite, None, false, false)
        );
        let a = args(&[
            "--sandbox",
            "read-only",
            "--approve",
            "dangerous",
            "--no-network",
            "--require-landlock",
            "--writable",
            "/a",
            "--writable",
            "/b",
            "x",
        ]);
        assert_eq!(a.sandbox, Mode::ReadOnly);
        assert_eq!(a.approve, Some(Approve::Dangerous));
        assert!(a.no_network && a.require_landlock && !a.require_isolation);
        assert!(!a.host_tmp && !a.writable_protected && !a.vouch);
        assert_eq!(a.writable, [PathBuf::from("/a"), PathBuf::from("/b")]);
        let a = args(&["--host-tmp", "--writable-protected", "--vouch", "x"]);
        assert!(a.host_tmp && a.writable_protected && a.vouch);
        let a = args(&[
            "--require-isolation",
            "--pass-env",
            "GITHUB_TOKEN",
            "--pass-env=TMUX",
            "x",
        ]);
        assert!(a.require_isolation);
        assert_eq!(a.pass_env, ["GITHUB_TOKEN", "TMUX"]);
        assert!(usage(&["--pass-env", "A=b", "x"]).contains("not 'A=b'"));
        assert!(usage(&["--pass-env", "", "x"]).contains("--pass-env"));
        match run(&["--sandbox-check", "--sandbox", "read-only"]) {
            Ok(Command::SandboxCheck(a)) => assert_eq!(a.sandbox, Mode::ReadOnly),
            other => panic!("{other:?}"),
        }
        assert!(usage(&["--sandbox", "strict", "x"]).contains("not 'strict'"));
        assert!(usage(&["--approve", "maybe", "x"]).contains("not 'maybe'"));
        let env = |name: &str| (name == "TURN_SANDBOX").then(|| "off".to_string());
        let Ok(Command::Run(a)) = parse(["x"].map(OsString::from), env) else {
            panic!()
        };
        assert_eq!(a.sandbox, Mode::Off);
        let Ok(Command::Run(a)) = parse(["--sandbox", "read-only", "x"].map(OsString::from), env)
        else {
            panic!()
        };
        assert_eq!(
            a.sandbox,
            Mode::ReadOnly,
            "the flag wins over the environment"
        );
    }

    #[test]
    fn context_and_reply_budget() {
        let a = args(&["x"]);
        assert_eq!((a.context, a.max_tokens), (None, None));
        let a = args(&["--context", "4096", "--max-tokens=512", "x"]);
        assert_eq!((a.context, a.max_tokens), (Some(4096), Some(512)));
        assert!(usage(&["--context", "0", "x"]).contains("--context"));
        assert!(usage(&["--max-tokens", "lots", "x"]).contains("--max-tokens"));
        let env = |name: &str| (name == "TURN_CONTEXT").then(|| "8192".to_string());
        let Ok(Command::Run(a)) = parse(["x"].map(OsString::from), env) else {
            panic!()
        };
        assert_eq!(a.context, Some(8192));
        let Ok(Command::Run(a)) = parse(["--context", "2048", "x"].map(OsString::from), env) else {
            panic!()
        };
        assert_eq!(a.context, Some(2048), "the flag wins over the environment");
        let bad = |name: &str| (name == "TURN_CONTEXT").then(|| "big".to_string());
        match parse(["x"].map(OsString::from), bad) {
            Err(Error::Usage(message)) => assert!(message.contains("TURN_CONTEXT"), "{message}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tool_protocol() {
        assert_eq!(args(&["x"]).tool_protocol, Protocol::Auto);
        assert_eq!(
            args(&["--tool-protocol", "text", "x"]).tool_protocol,
            Protocol::Text
        );
        assert!(usage(&["--tool-protocol", "xml", "x"])
            .contains("--tool-protocol: the tool protocol is native, text or auto, not 'xml'"));
        let env = |name: &str| (name == "TURN_TOOL_PROTOCOL").then(|| "native".to_string());
        let Ok(Command::Run(a)) = parse(["x"].map(OsString::from), env) else {
            panic!()
        };
        assert_eq!(a.tool_protocol, Protocol::Native);
        let Ok(Command::Run(a)) = parse(["--tool-protocol", "auto", "x"].map(OsString::from), env)
        else {
            panic!()
        };
        assert_eq!(a.tool_protocol, Protocol::Auto, "the flag wins");
        let env = |name: &str| (name == "TURN_TOOL_PROTOCOL").then(|| "both".to_string());
        assert!(matches!(
            parse(["x"].map(OsString::from), env),
            Err(Error::Usage(m)) if m.starts_with("TURN_TOOL_PROTOCOL:")
        ));
    }

    #[test]
    fn edit_format() {
        assert_eq!(args(&["x"]).edit_format, Format::Both);
        let a = args(&["--edit-format", "whole", "x"]);
        assert_eq!(a.edit_format, Format::Whole);
        assert!(usage(&["--edit-format", "diff", "x"])
            .contains("--edit-format: the edit format is whole or both, not 'diff'"));
        let env = |name: &str| (name == "TURN_EDIT_FORMAT").then(|| " both\n".to_string());
        let Ok(Command::Run(a)) = parse(["x"].map(OsString::from), env) else {
            panic!()
        };
        assert_eq!(a.edit_format, Format::Both);
        let flag = ["--edit-format", "whole", "x"].map(OsString::from);
        let Ok(Command::Run(a)) = parse(flag, env) else {
            panic!()
        };
        assert_eq!(a.edit_format, Format::Whole, "the flag wins");
        let env = |name: &str| (name == "TURN_EDIT_FORMAT").then(|| "udiff".to_string());
        assert!(matches!(
            parse(["x"].map(OsString::from), env),
            Err(Error::Usage(m)) if m.starts_with("TURN_EDIT_FORMAT:")
        ));
    }

    #[test]
    fn local_servers_are_probed_only_without_an_address_or_key() {
        assert_eq!(args(&["x"]).local_servers.len(), 4);
        assert!(args(&["--base-url", "http://h:1/v1", "x"])
            .local_servers
            .is_empty());
        for var in ["OPENAI_BASE_URL", "OPENAI_API_KEY"] {
            let env = |name: &str| (name == var).then(|| "http://h:1/v1".to_string());
            let Ok(Command::Run(a)) = parse(["x"].map(OsString::from), env) else {
                panic!()
            };
            assert!(a.local_servers.is_empty(), "{var}");
        }
        let env = |name: &str| (name == "TURN_LOCAL_SERVERS").then(|| "127.0.0.1:9".to_string());
        let Ok(Command::Run(a)) = parse(["x"].map(OsString::from), env) else {
            panic!()
        };
        assert_eq!(a.local_servers.len(), 1);
        assert_eq!(a.local_servers[0].base_url, "http://127.0.0.1:9/v1");
        let env = |name: &str| (name == "TURN_LOCAL_SERVERS").then(|| "nowhere".to_string());
        assert!(matches!(
            parse(["x"].map(OsString::from), env),
            Err(Error::Usage(m)) if m.contains("TURN_LOCAL_SERVERS")
        ));
    }

    #[test]
    fn modes() {
        assert!(args(&["--json", "x"]).json);
        assert!(args(&["-i"]).interactive);
        assert!(usage(&["-i", "x"]).contains("give no PROMPT"));
        assert!(usage(&["-i", "--json"]).contains("--json"));
    }
}
