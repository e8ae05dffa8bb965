//! turn: a coding agent's tool-calling loop for any OpenAI-compatible Chat Completions server.
//!
//! `main` parses the arguments, sets up the run (workspace, prompt, session, model), runs one
//! turn or the REPL, and turns the outcome into an exit code. See ARCHITECTURE.md for the map.

mod agent;
mod approve;
mod checkpoint;
mod cli;
mod coach;
mod context;
mod error;
mod manpage;
mod prompt;
mod repeat;
mod repl;
mod report;
mod sandbox;
mod schema;
mod session;
mod sha256;
mod signal;
mod state;
mod terminal;
mod tools;
mod wire;

use crate::agent::{Agent, OutputSchema};
use crate::approve::{Approve, Approver};
use crate::cli::{Args, Command, Prompt};
use crate::error::{Error, Result};
use crate::report::{Console, Event, Json, Reporter};
use crate::sandbox::layers::{self, Settings};
use crate::sandbox::Mode;
use crate::session::Recorder;
use crate::wire::client::Client;
use crate::wire::message::Message;
use crate::wire::server;
use crate::wire::textproto::{self, Protocol};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args = match cli::parse(std::env::args_os().skip(1), |name| std::env::var(name).ok()) {
        Ok(Command::Run(args)) => *args,
        Ok(Command::Help) => {
            print!("{}", cli::help());
            return ExitCode::SUCCESS;
        }
        Ok(Command::Man) => {
            print!("{}", manpage::page());
            return ExitCode::SUCCESS;
        }
        Ok(Command::SandboxCheck(args)) => return sandbox_check(&args),
        Ok(Command::Checkpoints {
            args,
            action,
            dry_run,
            force,
        }) => return checkpoints(&args, &action, dry_run, force),
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
    // Under --output-schema stdout holds only the answer, so the model's text goes to stderr.
    let mut console = Console::new(args.quiet, args.output_schema.is_some());
    let mut json = Json::default();
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
    let output_schema = args
        .output_schema
        .as_deref()
        .map(output_schema)
        .transpose()?;
    let system = match &args.system {
        Some(path) => read_file(path, "cannot read the --system file")?,
        None => prompt::builtin(),
    };
    let system = prompt::with_agents_md(system, &workspace);
    let root = open_dir(&workspace)?;
    if args.list_tools {
        let tools = tools::Context {
            workspace: &workspace,
            timeout: Duration::from_secs(args.timeout),
            max_output: args.max_output,
            sandbox: crate::sandbox::exec::Runner::unconfined(&workspace),
            read_only: args.sandbox == Mode::ReadOnly,
            protected: Vec::new(),
            root,
            user: user_tools(args, &workspace, front)?,
            seen: Default::default(),
            replace_seen_only: false,
        };
        print!("{}", tools::listing(&tools));
        return Ok(());
    }
    let mut session = session::find(&workspace, &root, &args.session)?;
    let mut history = vec![Message::system(system)];
    if let Some(session) = &mut session {
        history.extend(session.load(front)?);
        if history.len() > 1 {
            let notice = format!(
                "resuming {} messages from {}",
                history.len() - 1,
                session.path().display()
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
    // MCP servers run as the user set them up, outside the commands' sandbox; vouching for
    // them records state that the protected paths then include.
    let user = user_tools(args, &workspace, front)?;
    if matches!(args.session, cli::Session::Fresh | cli::Session::Latest) {
        session::make_turn_dir(&root);
    }
    let protected = protected(args, &workspace, front);
    let sandbox = layers::runner(&sandbox_settings(args, &workspace, &protected))?;
    let tools = tools::Context {
        workspace: &workspace,
        root,
        timeout: Duration::from_secs(args.timeout),
        max_output: args.max_output,
        sandbox,
        read_only: args.sandbox == Mode::ReadOnly,
        protected,
        user,
        seen: Default::default(),
        replace_seen_only: false,
    };
    tools::remember_seen(&tools, &history);

    let base_url = base_url(args, front)?;
    let client = client(args, &base_url)?.with_deadline(args.request_deadline);
    let model = model(args, &client, front)?;
    let specs = tools::specs(&tools);
    let raw_specs = serde_json::value::to_raw_value(&specs).expect("specs are JSON");
    let context = context::Keeper::learn(&client, &model, args.context, args.max_tokens)?
        .with_specs(&raw_specs);
    front.report(Event::Start {
        model: &model,
        base_url: &crate::wire::url::redact(&base_url),
        workspace: &workspace,
        context: context.window(),
    });
    let mut agent = Agent {
        client: &client,
        specs: raw_specs,
        context,
        protocol: resumed_protocol(args.tool_protocol, session.as_ref()),
        tool_names: textproto::names(&specs),
        text_prompt: textproto::tools_prompt(&specs, args.edit_format),
        model,
        tools,
        max_steps: args.max_steps,
        stream: args.stream,
        temperature: args.temperature,
        approver,
        file_list: None,
        preload: args.preload,
        coach: coach::Coach::resumed(
            session
                .as_ref()
                .and_then(|s| s.records().coaching.as_deref()),
        ),
    };
    // A new session's first message lists the workspace's files (see prompt::file_list).
    if args.preload && history.len() == 1 {
        agent.file_list = prompt::file_list(&workspace);
    }
    let mut recorder = Recorder::new(front, session);
    // Under --sandbox read-only nothing the model runs changes files: no checkpoints to keep.
    let read_only = args.sandbox == Mode::ReadOnly;
    let mut checkpoints = checkpoint::Keeper::open(&workspace, read_only, &mut recorder);
    let Some(prompt) = prompt else {
        let setup = repl::Setup::new(args, &workspace, &agent.tools.sandbox.layers());
        return repl::run(
            &mut agent,
            &mut history,
            &mut recorder,
            &setup,
            &mut checkpoints,
        );
    };
    checkpoints.begin();
    let text = agent.turn(&mut history, &prompt, &mut checkpoints.watch(&mut recorder));
    let session = recorder.path().map(Path::to_path_buf);
    checkpoints.end(&prompt, session.as_deref(), &mut recorder);
    let text = text?;
    let answer = match &output_schema {
        Some(schema) => {
            let value = agent.answer_as(schema, &mut history, &mut recorder)?;
            recorder.report(Event::Answer(&value));
            format!("{value}\n")
        }
        None => text,
    };
    if let Some(path) = &args.output_last_message {
        write_atomic(path, answer.as_bytes()).map_err(|err| Error::File {
            path: path.clone(),
            what: "cannot write the last message (-o) to",
            err,
        })?;
    }
    Ok(())
}

/// `--tool-protocol`, or under `auto` the text protocol when the resumed session records that
/// the run went over to it (see session.rs).
fn resumed_protocol(protocol: Protocol, session: Option<&session::Session>) -> Protocol {
    let recorded = session.and_then(|s| s.records().protocol.as_deref());
    match (protocol, recorded) {
        (Protocol::Auto, Some("text")) => Protocol::Text,
        _ => protocol,
    }
}

/// --output-schema's file, read and checked: a schema this turn cannot use is a usage error,
/// found before the server is asked anything.
fn output_schema(path: &Path) -> Result<OutputSchema> {
    let text = read_file(path, "cannot read the --output-schema file")?;
    let bad =
        |detail: String| Error::Usage(format!("--output-schema {}: {detail}", path.display()));
    let schema: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON ({e})")))?;
    schema::check_schema(&schema).map_err(bad)?;
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = schema::name(&schema, &stem);
    Ok(OutputSchema { schema, name })
}

/// Writes `bytes` to `path` whole or not at all: a new file beside it (same directory, so the
/// rename is atomic), flushed to disk, then renamed over `path`.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"))?;
    let mut attempt = 0u32;
    let (temp, mut file) = loop {
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".turn-{}-{attempt}", std::process::id()));
        let temp = dir.join(temp_name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&temp)
        {
            Ok(file) => break (temp, file),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1
            }
            Err(e) => return Err(e),
        }
    };
    let written = file
        .write_all(bytes)
        .and_then(|_| file.sync_all())
        .and_then(|_| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// The user's own tools: those declared in --tools files and the workspace's
/// .turn/tools.json, and those of the MCP servers from those files and --mcp, started now.
/// A tools file that cannot be used is a usage error naming it.
fn user_tools(args: &Args, workspace: &Path, front: &mut dyn Reporter) -> Result<tools::UserTools> {
    use crate::tools::declared;
    let mut user = tools::UserTools::default();
    let mut servers = Vec::new();
    let local = workspace.join(".turn/tools.json");
    let mut files: Vec<(PathBuf, bool)> =
        args.tools_files.iter().map(|f| (f.clone(), true)).collect();
    if local.is_file()
        && !files
            .iter()
            .any(|(f, _)| f.canonicalize().ok().as_ref() == Some(&local))
    {
        files.push((local, false));
    }
    for (path, named) in files {
        let mut file = declared::load(&path)
            .map_err(|e| Error::Usage(format!("tools file {}: {e}", path.display())))?;
        if named {
            let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
            let key = format!("tools file {}", canonical.display());
            let pins = tools::vouch::vouch_for(workspace, &key, Some(&path), &file, args.vouch)
                .map_err(Error::Usage)?;
            for server in &mut file.servers {
                server.vouched = Some((key.clone(), pins.clone()));
            }
        }
        for tool in std::mem::take(&mut file.tools) {
            if user.declared.iter().any(|t| t.name == tool.name) {
                return Err(Error::Usage(format!(
                    "tools file {}: the tool \"{}\" is already declared in {}",
                    path.display(),
                    tool.name,
                    user.declared
                        .iter()
                        .find(|t| t.name == tool.name)
                        .map_or("", |t| &t.source)
                )));
            }
            user.declared.push(tool);
        }
        if !file.servers.is_empty() && !named {
            // The model can write in the workspace: a file it wrote must not start programs
            // outside the sandbox on the next run.
            let notice = format!(
                "{}: its mcpServers are not started (MCP servers run outside the sandbox); \
                 pass the file with --tools to use them",
                path.display()
            );
            front.report(Event::Notice(&notice));
            continue;
        }
        servers.extend(file.servers);
    }
    for flag in &args.mcp {
        let mut server = declared::mcp_flag(flag).map_err(Error::Usage)?;
        let key = format!("--mcp {flag}");
        let only = declared::ToolsFile {
            tools: Vec::new(),
            servers: vec![server.clone()],
        };
        let pins = tools::vouch::vouch_for(workspace, &key, None, &only, args.vouch);
        server.vouched = Some((key.clone(), pins.map_err(Error::Usage)?));
        servers.push(server);
    }
    for (i, server) in servers.iter().enumerate() {
        if servers[..i].iter().any(|s| s.name == server.name) {
            return Err(Error::Usage(format!(
                "two MCP servers are named {} ({} and {})",
                server.name,
                servers
                    .iter()
                    .find(|s| s.name == server.name)
                    .map_or("", |s| &s.source),
                server.source
            )));
        }
    }
    user.mcp = tools::mcp::Mcp::start(&servers, &mut |warning| {
        front.report(Event::Notice(&warning))
    });
    let names: Vec<&str> = user
        .declared
        .iter()
        .map(|t| t.name.as_str())
        .chain(user.mcp.tools.iter().map(|t| t.name.as_str()))
        .collect();
    if !names.is_empty() && !args.list_tools {
        let notice = format!("your tools: {}", names.join(", "));
        front.report(Event::Notice(&notice));
    }
    Ok(user)
}

/// The client, with the proxy and the CAs the environment and --ca-cert give; warns once when
/// an API key would cross a network in the clear.
fn client(args: &Args, base_url: &str) -> Result<Client> {
    use crate::wire::network;
    let env = |name: &str| std::env::var(name).ok();
    let proxy = network::proxy_for(base_url, &env);
    if let Some(host) = network::key_in_clear(base_url).filter(|_| args.api_key.is_some()) {
        eprintln!(
            "turn: warning: OPENAI_API_KEY is sent in the clear over http:// to {host}; use https:// \
             unless this network is yours"
        );
    }
    #[cfg(feature = "tls")]
    let trust = if base_url.starts_with("https://") {
        let sources = network::trust_files(&env, &args.ca_certs, |p| p.is_file());
        network::load_trust(&sources)?
    } else {
        // Not needed for http://, but a --ca-cert that cannot be used is still an error.
        let sources = network::trust_files(&|_| None, &args.ca_certs, |_| false);
        network::load_trust(&sources)?;
        None
    };
    #[cfg(not(feature = "tls"))]
    let trust = ();
    Client::new(
        base_url,
        args.api_key.clone(),
        args.request_timeout,
        proxy,
        trust,
    )
}

fn sandbox_settings<'a>(
    args: &'a Args,
    workspace: &'a Path,
    protected: &'a [PathBuf],
) -> Settings<'a> {
    Settings {
        protected,
        host_tmp: args.host_tmp,
        mode: args.sandbox,
        workspace,
        writable: &args.writable,
        no_network: args.no_network,
        require_landlock: args.require_landlock,
        require_isolation: args.require_isolation,
        pass_env: &args.pass_env,
    }
}

/// The paths commands and file tools must not change (see sandbox::protect): none with
/// --writable-protected.
fn protected(args: &Args, workspace: &Path, front: &mut dyn Reporter) -> Vec<PathBuf> {
    if args.writable_protected || args.sandbox != Mode::WorkspaceWrite {
        return Vec::new();
    }
    // turn's state inside the workspace (what the user vouched for) is kept read-only too.
    let extra: Vec<PathBuf> = state::dir().into_iter().collect();
    let found = sandbox::protect::scan(workspace, &extra);
    if found.cut {
        let notice = "the workspace is too large to look for every .git in it; only those \
                      found first are read-only to commands";
        front.report(Event::Notice(notice));
    }
    found.paths
}

/// `turn --sandbox-check`: which layers work here; exit 0 when all of them do.
fn sandbox_check(args: &Args) -> ExitCode {
    let checked = workspace(&args.workspace).and_then(|workspace| {
        let protected = protected(args, &workspace, &mut report::Console::new(false, false));
        layers::check(&sandbox_settings(args, &workspace, &protected))
    });
    match checked {
        Ok((report, complete)) => {
            print!("{report}");
            ExitCode::from(if complete { 0 } else { 1 })
        }
        Err(error) => {
            report::print_error(&error);
            ExitCode::from(error.exit_code())
        }
    }
}

/// `--undo`, `--restore`, `--checkpoints`, `--prune-checkpoints`: what they say goes to stdout;
/// an undo that changed files tells the session, so its next turn tells the model.
fn checkpoints(args: &Args, action: &checkpoint::Action, dry_run: bool, force: bool) -> ExitCode {
    use checkpoint::Action;
    let mut console = Console::new(args.quiet, false);
    let result = workspace(&args.workspace).and_then(|workspace| match action {
        Action::List => checkpoint::list(&workspace),
        Action::Prune => checkpoint::prune(&workspace),
        Action::Undo | Action::Restore(_) => {
            let root = open_dir(&workspace)?;
            // The session whose turn is taken back: the one named, else the newest.
            let session = match &args.session {
                cli::Session::Off => None,
                cli::Session::Fresh => session::find(&workspace, &root, &cli::Session::Latest)
                    .ok()
                    .flatten(),
                which => session::find(&workspace, &root, which)?,
            };
            let path = session.as_ref().map(|s| s.path().to_path_buf());
            let undone = checkpoint::undo(
                &workspace,
                action,
                path.as_deref(),
                dry_run,
                force,
                &mut console,
            )?;
            if let (Some(note), Some(session)) = (&undone.note, session) {
                let mut recorder = Recorder::new(&mut console, Some(session));
                recorder.report(Event::Message(&Message::user(note.as_str())));
            }
            Ok(undone.lines.join("\n") + "\n")
        }
    });
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            report::print_error(&error);
            ExitCode::from(error.exit_code())
        }
    }
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

/// The workspace as a directory descriptor, which file tools and sessions open beneath.
fn open_dir(workspace: &Path) -> Result<sandbox::fsafe::Dir> {
    sandbox::fsafe::Dir::open(workspace).map_err(|err| Error::File {
        path: workspace.to_path_buf(),
        what: "cannot open workspace",
        err,
    })
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

/// The server to talk to: the one given; without --base-url, OPENAI_BASE_URL or
/// OPENAI_API_KEY, a local server that answers at one of `args.local_servers`; else the hosted
/// default.
fn base_url(args: &Args, reporter: &mut dyn Reporter) -> Result<String> {
    if args.local_servers.is_empty() {
        return Ok(args.base_url.clone());
    }
    let found = server::discover(&args.local_servers);
    if signal::interrupted() {
        return Err(Error::Interrupted);
    }
    let notice = match &found {
        Some((url, name)) => format!("found {name} at {url} (no --base-url given)"),
        None => {
            let tried: Vec<&str> = args
                .local_servers
                .iter()
                .map(|p| p.base_url.as_str())
                .collect();
            format!(
                "no local server at {}; using {}",
                tried.join(", "),
                args.base_url
            )
        }
    };
    reporter.report(Event::Notice(&notice));
    Ok(found.map_or_else(|| args.base_url.clone(), |(url, _)| url))
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
