//! turn: a coding agent's tool-calling loop for any OpenAI-compatible Chat Completions server.
//!
//! `main` parses the arguments, runs, and turns the outcome into an exit code; errors print as
//! `turn: <what went wrong>` with a hint where one helps. See ARCHITECTURE.md for the map.

mod agent;
mod cli;
mod client;
mod error;
mod exec;
mod message;
mod prompt;
mod report;
mod sandbox;
mod signal;
mod stream;
mod tools;
mod truncate;

use crate::agent::Agent;
use crate::cli::{Args, Command, Prompt};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::message::Message;
use crate::report::{Console, Reporter};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("turn: {err}");
            if let Some(hint) = err.hint() {
                eprintln!("hint: {hint}");
            }
            ExitCode::from(err.exit_code())
        }
    }
}

fn run() -> Result<()> {
    let args = match cli::parse(std::env::args_os().skip(1), |name| std::env::var(name).ok())? {
        Command::Help => {
            print!("{}", cli::HELP);
            return Ok(());
        }
        Command::Version => {
            println!("turn {}", env!("CARGO_PKG_VERSION"));
            return Ok(());
        }
        Command::Run(args) => args,
    };
    let workspace = workspace(&args.workspace)?;
    let system = match &args.system {
        Some(path) => read_file(path, "cannot read the --system file")?,
        None => prompt::builtin(&workspace),
    };
    let prompt = read_prompt(&args)?;
    signal::install();

    let mut reporter = Console::new(args.quiet);
    let client = Client::new(&args.base_url, args.api_key.clone(), args.request_timeout);
    let model = model(&args, &client, &mut reporter)?;
    let tools = tools::Context {
        workspace: &workspace,
        timeout: Duration::from_secs(args.timeout),
        max_output: args.max_output,
    };
    let specs = tools::specs(&tools);
    let mut agent = Agent {
        client: &client,
        model,
        tools,
        specs,
        max_steps: args.max_steps,
        stream: args.stream,
        temperature: args.temperature,
        usage: Default::default(),
    };
    let mut history = vec![Message::system(system)];
    agent.turn(&mut history, &prompt, &mut reporter).map(|_| ())
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
    let from_stdin = match &args.prompt {
        Prompt::Text(text) => return Ok(text.clone()),
        Prompt::Stdin => true,
        Prompt::Missing => !std::io::stdin().is_terminal(),
    };
    if !from_stdin {
        return Err(Error::Usage(
            "no prompt given: pass it as arguments, or pipe it to stdin".into(),
        ));
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
