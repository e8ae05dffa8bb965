//! turn: a coding agent's tool-calling loop for any OpenAI-compatible Chat Completions server.
//!
//! `main` parses the arguments, sets up the run (workspace, prompt, session, model), runs one
//! turn or the REPL, and turns the outcome into an exit code. See ARCHITECTURE.md for the map.

mod agent;
mod approve;
mod cli;
mod error;
mod prompt;
mod repl;
mod report;
mod sandbox;
mod session;
mod signal;
mod tools;
mod wire;

use crate::agent::Agent;
use crate::approve::{Approve, Approver};
use crate::cli::{Args, Command, Prompt, Session};
use crate::error::{Error, Result};
use crate::report::{Console, Event, Json, Reporter};
use crate::sandbox::landlock::{self, Policy};
use crate::sandbox::Mode;
use crate::session::Recorder;
use crate::wire::client::Client;
use crate::wire::message::Message;
use std::io::{IsTerminal, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args = match cli::parse(std::env::args_os().skip(1), |name| std::env::var(name).ok()) {
        Ok(Command::Run(args)) => *args,
        Ok(Command::Help) => {
            print!("{}", cli::HELP);
            return ExitCode::SUCCESS;
        }
        Ok(Command::Version) => {
            println!("turn {}", env!("TURN_LONG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            report::print_error(&error);
            return ExitCode::from(error.exit_code());
        }
    };
    signal::install();
    let (mut console, mut json) = (Console::new(args.quiet), Json::default());
    let front: &mut dyn Reporter = if args.json { &mut json } else { &mut console };
    let result = run(&args, front);
    if let Err(error) = &result {
        front.report(Event::Failed(error));
    }
    front.report(Event::End(result.as_ref().err()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => ExitCode::from(error.exit_code()),
    }
}

fn run(args: &Args, front: &mut dyn Reporter) -> Result<()> {
    let workspace = workspace(&args.workspace)?;
    let system = match &args.system {
        Some(path) => read_file(path, "cannot read the --system file")?,
        None => prompt::builtin(&workspace),
    };
    let system = prompt::with_agents_md(system, &workspace);
    let session = match &args.session {
        Session::Fresh => Some(session::fresh(&workspace)),
        Session::File(path) => Some(path.clone()),
        Session::Latest => Some(session::latest(&workspace)?),
        Session::Off => None,
    };
    let mut history = vec![Message::system(system)];
    if let Some(path) = &session {
        history.extend(session::load(path)?);
        if history.len() > 1 {
            let notice = format!(
                "resuming {} messages from {}",
                history.len() - 1,
                path.display()
            );
            front.report(Event::Notice(&notice));
        }
    }
    let interactive =
        args.interactive || (args.prompt == Prompt::Missing && std::io::stdin().is_terminal());
    if interactive && args.json {
        return Err(Error::Usage(
            "--json needs a prompt: it is for one-shot runs, not the REPL".into(),
        ));
    }
    let prompt = if interactive {
        None
    } else {
        Some(read_prompt(args)?)
    };
    // Everything that can be checked locally is, before the server is asked anything.
    let approver = approver(args)?;
    let ruleset = confinement(args, &workspace)?;
    // With workspace-write (and the network open) turn confines itself, once all it needs
    // outside the workspace is open: every command inherits the ruleset, and the file tools
    // are held to it by the kernel too. The other modes confine each command alone.
    let confine_self = args.sandbox == Mode::WorkspaceWrite && !args.no_network;
    let (own_ruleset, per_command) = match ruleset {
        Some(ruleset) if confine_self => (Some(ruleset), None),
        ruleset => (None, ruleset),
    };
    let tools = tools::Context {
        workspace: &workspace,
        timeout: Duration::from_secs(args.timeout),
        max_output: args.max_output,
        confine: per_command,
        read_only: args.sandbox == Mode::ReadOnly,
    };

    let client = Client::new(&args.base_url, args.api_key.clone(), args.request_timeout);
    let model = model(args, &client, front)?;
    front.report(Event::Start {
        model: &model,
        base_url: &args.base_url,
        workspace: &workspace,
    });
    let mut agent = Agent {
        client: &client,
        specs: serde_json::value::to_raw_value(&tools::specs(&tools)).expect("specs are JSON"),
        model,
        tools,
        max_steps: args.max_steps,
        stream: args.stream,
        temperature: args.temperature,
        approver,
    };
    let mut recorder = Recorder::new(front, session);
    if let Some(ruleset) = own_ruleset {
        landlock::enforce(ruleset.as_raw_fd()).map_err(|err| Error::File {
            path: workspace.clone(),
            what: "cannot enter the Landlock sandbox for",
            err,
        })?;
    }
    match prompt {
        Some(prompt) => agent.turn(&mut history, &prompt, &mut recorder).map(|_| ()),
        None => repl::run(&mut agent, &mut history, &mut recorder, &workspace),
    }
}

/// The Landlock ruleset for bash commands, or `None` (with a warning) where there is none.
fn confinement(args: &Args, workspace: &Path) -> Result<Option<OwnedFd>> {
    let usage = |message: &str| Err(Error::Usage(message.to_string()));
    if args.sandbox != Mode::WorkspaceWrite && !args.writable.is_empty() {
        return usage("--writable goes with --sandbox workspace-write");
    }
    if args.sandbox == Mode::Off {
        if args.no_network {
            return usage("--no-network needs the Landlock sandbox, not --sandbox off");
        }
        eprintln!("turn: warning: --sandbox off: commands run with all your rights, screened by keywords only");
        return Ok(None);
    }
    let Some(abi) = landlock::abi() else {
        if args.require_landlock || args.no_network {
            let flag = if args.no_network {
                "--no-network"
            } else {
                "--require-landlock"
            };
            return usage(&format!("this kernel has no Landlock (Linux 5.13+ with landlock in lsm=), which {flag} needs"));
        }
        eprintln!(
            "turn: warning: this kernel has no Landlock, so bash commands are not confined, only screened by \
             keywords (--require-landlock refuses to run instead)"
        );
        return Ok(None);
    };
    if args.no_network && abi < 4 {
        return usage(&format!(
            "--no-network needs Landlock ABI 4 (Linux 6.7+); this kernel has ABI {abi}"
        ));
    }
    let mut writable_dirs = Vec::new();
    let mut writable_files = vec![PathBuf::from("/dev/null")];
    if args.sandbox == Mode::WorkspaceWrite {
        writable_dirs.push(workspace.to_path_buf());
        writable_dirs.extend(std::env::temp_dir().canonicalize().ok());
        for dir in &args.writable {
            let dir = dir.canonicalize().map_err(|err| Error::File {
                path: dir.clone(),
                what: "cannot use --writable",
                err,
            })?;
            writable_dirs.push(dir);
        }
        writable_files.extend(["/dev/zero", "/dev/full", "/dev/tty"].map(PathBuf::from));
    }
    let policy = Policy {
        abi,
        writable_dirs,
        writable_files,
        no_network: args.no_network,
    };
    let ruleset = policy.ruleset().map_err(|err| Error::File {
        path: workspace.to_path_buf(),
        what: "cannot set up the Landlock sandbox for",
        err,
    })?;
    Ok(Some(ruleset))
}

/// --approve, or its default: ask when there is a terminal to ask on, never otherwise.
fn approver(args: &Args) -> Result<Approver> {
    match args.approve {
        Some(mode) => Approver::new(mode).map_err(Error::Usage),
        None if std::io::stdin().is_terminal() => {
            Ok(Approver::new(Approve::Ask).unwrap_or_else(|_| Approver::never()))
        }
        None => Ok(Approver::never()),
    }
}

/// The workspace as a canonical path, so the sandbox can compare prefixes.
fn workspace(dir: &Path) -> Result<PathBuf> {
    let path = dir.canonicalize().map_err(|err| Error::File {
        path: dir.to_path_buf(),
        what: "cannot use workspace",
        err,
    })?;
    if !path.is_dir() {
        return Err(Error::Usage(format!(
            "the workspace {} is not a directory",
            dir.display()
        )));
    }
    Ok(path)
}

fn read_file(path: &Path, what: &'static str) -> Result<String> {
    std::fs::read_to_string(path).map_err(|err| Error::File {
        path: path.to_path_buf(),
        what,
        err,
    })
}

/// The prompt from the words given, or from stdin when asked (`-`) or when stdin is piped.
fn read_prompt(args: &Args) -> Result<String> {
    if let Prompt::Text(text) = &args.prompt {
        return Ok(text.clone());
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| Error::Usage(format!("cannot read the prompt from stdin: {e}")))?;
    if text.trim().is_empty() {
        return Err(Error::Usage("the prompt read from stdin is empty".into()));
    }
    Ok(text)
}

/// The model named by -m or TURN_MODEL; else the server's only model, if it lists just one.
fn model(args: &Args, client: &Client, reporter: &mut dyn Reporter) -> Result<String> {
    if let Some(model) = &args.model {
        return Ok(model.clone());
    }
    let no_model =
        |detail: String| Error::Usage(format!("no model given (-m or TURN_MODEL) {detail}"));
    match client.models(reporter) {
        Ok(models) if models.len() == 1 => Ok(models[0].clone()),
        Ok(models) if models.is_empty() => Err(no_model("and the server lists none".into())),
        Ok(models) => {
            let shown: Vec<&str> = models.iter().take(10).map(String::as_str).collect();
            let more = if models.len() > 10 { ", …" } else { "" };
            Err(no_model(format!(
                "and the server has several: {}{more}",
                shown.join(", ")
            )))
        }
        Err(err @ (Error::Interrupted | Error::Connect { .. })) => Err(err),
        Err(err) => Err(no_model(format!(
            "and the server's model list is not available ({err})"
        ))),
    }
}
