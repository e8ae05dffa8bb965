//! The tools the model can call: their JSON Schema specs and the dispatch, one exhaustive
//! `match` over `Tool`. Built-in names come from `Tool::builtin_name` alone, declared and MCP
//! tools from their lists in `UserTools`, so spec and dispatch cannot drift. Failures are
//! returned as text for the model ("Error: …"), never as `Error`: the model reads them and
//! recovers.

use crate::approve::{Action, Approver};
use crate::sandbox::fsafe::Dir;
use crate::wire::message::{Message, Role};
use files::DEFAULT_LINES;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

pub mod declared;
mod files;
pub use files::{fixable, LINE_CUT};
pub mod mcp;
pub mod nearmatch;
pub mod replace;
mod shell;
pub mod truncate;
pub mod vouch;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tool {
    Bash,
    ReadFile,
    WriteFile,
    EditFile,
    /// A tool from a tools file: its index in `UserTools::declared`.
    Declared(usize),
    /// A tool of an MCP server: its index in `UserTools::mcp.tools`.
    Mcp(usize),
}

/// The user's own tools: declared in tools files, and those of MCP servers.
#[derive(Default)]
pub struct UserTools {
    pub declared: Vec<declared::Declared>,
    pub mcp: mcp::Mcp,
}

/// Marks as seen (`Context::seen`) the files a resumed history read, wrote or edited through
/// read_file, write_file and edit_file, calls whose result was no error: a session goes on
/// where it left off.
pub fn remember_seen(ctx: &Context, history: &[Message]) {
    let failed: Vec<&str> = history
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter(|m| {
            m.content
                .as_deref()
                .is_none_or(|t| t.starts_with("Error: "))
        })
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    for call in history.iter().flat_map(|m| &m.tool_calls) {
        let function = &call.function;
        if !["read_file", "write_file", "edit_file"].contains(&function.name.as_str())
            || failed.contains(&call.id.as_str())
        {
            continue;
        }
        let arguments: Value = serde_json::from_str(&function.arguments).unwrap_or_default();
        if let Some(Ok(path)) = arguments["path"].as_str().map(|p| files::resolve(p, ctx)) {
            files::see(ctx, path);
        }
    }
}

/// What the tools need from the run's configuration.
pub struct Context<'a> {
    /// Canonical, so `safe_path` can compare prefixes.
    pub workspace: &'a Path,
    /// The workspace, opened once: the file tools open what they resolved beneath it.
    pub root: Dir,
    pub timeout: Duration,
    pub max_output: usize,
    /// Runs bash commands inside the sandbox's layers.
    pub sandbox: crate::sandbox::exec::Runner,
    /// `--sandbox read-only`: the file tools write nothing.
    pub read_only: bool,
    /// Paths the file tools write nothing beneath (every .git and .turn, see
    /// `sandbox::protect`), resolved.
    pub protected: Vec<std::path::PathBuf>,
    /// Declared and MCP tools.
    pub user: UserTools,
    /// The files read, written or edited through the file tools in this session (resolved paths).
    pub seen: std::cell::RefCell<Vec<std::path::PathBuf>>,
    /// write_file replaces only files in `seen`: set where the text protocol declares the
    /// edit blocks (see files::write_file).
    pub replace_seen_only: bool,
}

impl Context<'_> {
    /// The tool the model means by `name`.
    pub fn tool(&self, name: &str) -> Option<Tool> {
        Tool::builtin(name)
            .or_else(|| {
                let i = self.user.declared.iter().position(|t| t.name == name)?;
                Some(Tool::Declared(i))
            })
            .or_else(|| {
                let i = self.user.mcp.tools.iter().position(|t| t.name == name)?;
                Some(Tool::Mcp(i))
            })
    }

    /// Every tool offered, in the order of `specs`.
    pub fn tools(&self) -> Vec<Tool> {
        let declared = (0..self.user.declared.len()).map(Tool::Declared);
        let mcp = (0..self.user.mcp.tools.len()).map(Tool::Mcp);
        Tool::ALL.into_iter().chain(declared).chain(mcp).collect()
    }

    pub fn name(&self, tool: Tool) -> &str {
        match tool {
            Tool::Declared(i) => &self.user.declared[i].name,
            Tool::Mcp(i) => &self.user.mcp.tools[i].name,
            builtin => builtin.builtin_name().unwrap_or_default(),
        }
    }

    /// Where a tool comes from, for --list-tools.
    pub fn source(&self, tool: Tool) -> String {
        match tool {
            Tool::Declared(i) => format!("declared in {}", self.user.declared[i].source),
            Tool::Mcp(i) => {
                let tool = &self.user.mcp.tools[i];
                format!(
                    "MCP server {} (as {})",
                    self.user.mcp.server_name(tool.server),
                    tool.remote
                )
            }
            _ => "built-in".into(),
        }
    }
}

/// A tool's reply to the model, whether it counts as success, and how many chars of it
/// --max-output cut out.
#[derive(Debug, PartialEq)]
pub struct Output {
    pub ok: bool,
    pub text: String,
    pub elided: usize,
}

impl Output {
    fn ok(text: String) -> Output {
        Output {
            ok: true,
            text,
            elided: 0,
        }
    }

    /// A failure for the model to read: `Error: ` and what went wrong.
    pub fn error(message: &str) -> Output {
        Output {
            ok: false,
            text: format!("Error: {message}"),
            elided: 0,
        }
    }
}

impl Tool {
    /// The built-in tools.
    pub const ALL: [Tool; 4] = [Tool::Bash, Tool::ReadFile, Tool::WriteFile, Tool::EditFile];

    /// A built-in tool's name; `None` for the user's own.
    pub fn builtin_name(self) -> Option<&'static str> {
        match self {
            Tool::Bash => Some("bash"),
            Tool::ReadFile => Some("read_file"),
            Tool::WriteFile => Some("write_file"),
            Tool::EditFile => Some("edit_file"),
            Tool::Declared(_) | Tool::Mcp(_) => None,
        }
    }

    /// The built-in tool called `name`.
    pub fn builtin(name: &str) -> Option<Tool> {
        Tool::ALL
            .into_iter()
            .find(|tool| tool.builtin_name() == Some(name))
    }

    fn spec(self, ctx: &Context) -> Value {
        let (description, properties, required) = match self {
            Tool::Declared(i) => return declared::spec(&ctx.user.declared[i]),
            Tool::Mcp(i) => return mcp::Mcp::spec(&ctx.user.mcp.tools[i]),
            Tool::Bash => (
                format!(
                    "Run a shell command with `sh -c` in the workspace directory and return its stdout and \
                     stderr together, with the exit code when it is not 0. The command is killed after \
                     {}s. stdin is empty: do not start interactive programs or editors.",
                    ctx.timeout.as_secs()
                ),
                json!({"command": {"type": "string", "description": "The command line to run."}}),
                json!(["command"]),
            ),
            Tool::ReadFile => (
                format!(
                    "Read a UTF-8 text file in the workspace. Returns numbered lines as `N<TAB>text`, at most \
                     `limit` lines (default {DEFAULT_LINES}) from line `offset`."
                ),
                json!({
                    "path": {"type": "string", "description": "File path, relative to the workspace."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based). Default 1."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return."}
                }),
                json!(["path"]),
            ),
            Tool::WriteFile => (
                "Create a file in the workspace, or overwrite it, with `content`. Missing parent \
                 directories are created. Prefer edit_file to change part of an existing file."
                    .to_string(),
                json!({
                    "path": {"type": "string", "description": "File path, relative to the workspace."},
                    "content": {"type": "string", "description": "The whole new content of the file."}
                }),
                json!(["path", "content"]),
            ),
            Tool::EditFile => (
                "Replace exact text in a file in the workspace. `old_text` must match the file exactly, \
                 whitespace and indentation included, and appear exactly once (add surrounding lines to \
                 make it unique) unless `replace_all` is true."
                    .to_string(),
                json!({
                    "path": {"type": "string", "description": "File path, relative to the workspace."},
                    "old_text": {"type": "string", "description": "The exact text to replace."},
                    "new_text": {"type": "string", "description": "The text to put in its place."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence. Default false."}
                }),
                json!(["path", "old_text", "new_text"]),
            ),
        };
        json!({
            "type": "function",
            "function": {
                "name": ctx.name(self),
                "description": description,
                "parameters": {"type": "object", "properties": properties, "required": required}
            }
        })
    }
}

/// The `tools` array for a request.
pub fn specs(ctx: &Context) -> Value {
    Value::Array(ctx.tools().into_iter().map(|tool| tool.spec(ctx)).collect())
}

/// Runs the tool `name` with its raw JSON `arguments`, once `approver` lets it.
pub fn run(name: &str, arguments: &str, ctx: &Context, approver: &mut Approver) -> Output {
    let result = match ctx.tool(name) {
        Some(Tool::Bash) => parse(name, arguments).and_then(|a| shell::bash(a, ctx, approver)),
        Some(Tool::ReadFile) => parse(name, arguments).and_then(|a| files::read_file(a, ctx)),
        Some(Tool::WriteFile) => {
            parse(name, arguments).and_then(|a| files::write_file(a, ctx, approver))
        }
        Some(Tool::EditFile) => {
            parse(name, arguments).and_then(|a| files::edit_file(a, ctx, approver))
        }
        Some(Tool::Declared(i)) => parse(name, arguments)
            .and_then(|a| run_declared(&ctx.user.declared[i], a, ctx, approver)),
        Some(Tool::Mcp(i)) => {
            parse(name, arguments).and_then(|a| run_mcp(&ctx.user.mcp.tools[i], a, ctx, approver))
        }
        None => {
            let names: Vec<_> = ctx.tools().into_iter().map(|t| ctx.name(t)).collect();
            Err(format!(
                "Unknown tool: {name}. Available tools: {}",
                names.join(", ")
            ))
        }
    };
    match result {
        Ok(output) => output,
        Err(message) => Output::error(&message),
    }
}

/// Whether `path` (relative) is a regular file of the workspace, looked up beneath it with no
/// symlink followed (see sandbox::fsafe).
pub fn is_regular_file(ctx: &Context, path: &str) -> bool {
    ctx.root
        .metadata(std::path::Path::new(path))
        .is_ok_and(|meta| meta.is_file())
}

/// --list-tools: every tool with its source, description and parameters.
pub fn listing(ctx: &Context) -> String {
    let mut text = String::new();
    for (tool, spec) in ctx
        .tools()
        .into_iter()
        .zip(specs(ctx).as_array().into_iter().flatten())
    {
        let function = &spec["function"];
        let description = function["description"].as_str().unwrap_or_default();
        let first = description.lines().next().unwrap_or_default();
        text.push_str(&format!(
            "{}  ({})\n    {first}\n    parameters: {}\n",
            ctx.name(tool),
            ctx.source(tool),
            function["parameters"]
        ));
    }
    text
}

/// A declared tool: arguments checked against its schema, then its command line run as `bash`
/// runs commands (the approval shows the tool and its arguments).
fn run_declared(
    tool: &declared::Declared,
    arguments: Value,
    ctx: &Context,
    approver: &mut Approver,
) -> Result<Output, String> {
    let Value::Object(object) = &arguments else {
        return Err(format!(
            "the arguments for {} must be a JSON object",
            tool.name
        ));
    };
    declared::check_arguments(tool, &arguments)?;
    let line = declared::command_line(tool, object)?;
    let shown = format!("{} {arguments}", tool.name);
    approver.check(Action::Command {
        command: &shown,
        danger: None,
    })?;
    shell::run_line(&line, ctx)
}

/// An MCP tool: the call goes to its server, with the bash --timeout as its deadline.
fn run_mcp(
    tool: &mcp::McpTool,
    arguments: Value,
    ctx: &Context,
    approver: &mut Approver,
) -> Result<Output, String> {
    if !arguments.is_object() {
        return Err(format!(
            "the arguments for {} must be a JSON object",
            tool.name
        ));
    }
    let shown = format!("{} {arguments}", tool.name);
    approver.check(Action::Command {
        command: &shown,
        danger: None,
    })?;
    let (text, is_error) = ctx.user.mcp.call(tool, arguments, ctx.timeout)?;
    let cut = truncate::middle(&text, ctx.max_output);
    Ok(Output {
        ok: !is_error,
        text: cut.text,
        elided: cut.elided,
    })
}

/// `arguments` as valid JSON text, for the history: strict servers reject a history whose
/// arguments do not parse, so text that does not is replaced by `{}` (the tool result already
/// told the model what was wrong).
pub fn sanitize_arguments(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(_) => arguments.to_string(),
        Err(_) => "{}".to_string(),
    }
}

/// A short description of a call for the activity line: the command, the path, or for the
/// user's own tools the arguments.
pub fn describe(name: &str, arguments: &str) -> String {
    let value: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let compact;
    let text = match Tool::builtin(name) {
        Some(Tool::Bash) => value.get("command").and_then(Value::as_str),
        Some(_) => value.get("path").and_then(Value::as_str),
        None if value.is_object() => {
            compact = value.to_string();
            Some(compact.as_str())
        }
        None => None,
    };
    let text = text.unwrap_or_default();
    let line = text.lines().next().unwrap_or_default();
    let mut short: String = line.chars().take(80).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

fn parse<T: for<'de> Deserialize<'de>>(name: &str, arguments: &str) -> Result<T, String> {
    let arguments = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let mut value: Value = serde_json::from_str(arguments).map_err(|e| {
        let shown: String = arguments.chars().take(200).collect();
        format!("the arguments for {name} were not valid JSON ({e}): {shown}\nSend them again as one JSON object.")
    })?;
    // Some models encode the object twice, as a JSON string holding JSON.
    if let Some(inner) = value
        .as_str()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
    {
        value = inner;
    }
    serde_json::from_value(value).map_err(|e| format!("invalid arguments for {name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::PathBuf;

    struct Workspace {
        dir: PathBuf,
    }

    impl Workspace {
        fn new(tag: &str) -> Workspace {
            let dir = std::env::temp_dir().join(format!("turn-tools-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Workspace {
                dir: dir.canonicalize().unwrap(),
            }
        }

        fn call(&self, name: &str, args: Value) -> Output {
            self.call_with(name, args, 50_000)
        }

        fn call_with(&self, name: &str, args: Value, max_output: usize) -> Output {
            run(
                name,
                &args.to_string(),
                &context(&self.dir, max_output),
                &mut Approver::never(),
            )
        }

        fn read(&self, path: &str) -> String {
            fs::read_to_string(self.dir.join(path)).unwrap()
        }
    }

    fn context(workspace: &Path, max_output: usize) -> Context<'_> {
        Context {
            workspace,
            root: Dir::open(workspace).unwrap(),
            timeout: Duration::from_secs(10),
            max_output,
            sandbox: crate::sandbox::exec::Runner::unconfined(workspace),
            read_only: false,
            protected: Vec::new(),
            user: UserTools::default(),
            seen: Default::default(),
            replace_seen_only: false,
        }
    }

    impl Drop for Workspace {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }

    #[test]
    fn names_round_trip_and_specs_use_them() {
        let ws = Workspace::new("names");
        let specs = specs(&context(&ws.dir, 10));
        for (tool, spec) in Tool::ALL.iter().zip(specs.as_array().unwrap()) {
            assert_eq!(Tool::builtin(tool.builtin_name().unwrap()), Some(*tool));
            assert_eq!(spec["function"]["name"], tool.builtin_name().unwrap());
            assert_eq!(spec["type"], "function");
        }
    }

    #[test]
    fn unknown_tools_and_bad_arguments_are_errors_for_the_model() {
        let ws = Workspace::new("bad");
        let out = ws.call("fly", json!({}));
        assert!(!out.ok);
        assert!(out.text.starts_with("Error: Unknown tool: fly"));
        let ctx = context(&ws.dir, 100);
        let out = run("bash", "{\"command\": ", &ctx, &mut Approver::never());
        assert!(out.text.contains("not valid JSON"), "{}", out.text);
        let out = run("bash", "{\"cmd\": \"ls\"}", &ctx, &mut Approver::never());
        assert!(out.text.contains("missing field `command`"), "{}", out.text);
        let out = run(
            "bash",
            "\"{\\\"command\\\": \\\"echo twice\\\"}\"",
            &ctx,
            &mut Approver::never(),
        );
        assert_eq!(out.text, "twice\n");
    }

    #[test]
    fn sanitize_keeps_valid_json_only() {
        assert_eq!(sanitize_arguments("{\"a\":1}"), "{\"a\":1}");
        assert_eq!(sanitize_arguments("{\"a\":"), "{}");
    }

    #[test]
    fn write_then_read_with_numbered_lines() {
        let ws = Workspace::new("rw");
        let out = ws.call(
            "write_file",
            json!({"path": "a/b/c.txt", "content": "one\ntwo\n"}),
        );
        assert_eq!(out.text, "Created a/b/c.txt (8 bytes)");
        let out = ws.call(
            "write_file",
            json!({"path": "a/b/c.txt", "content": "one\ntwo\nthree\n"}),
        );
        assert_eq!(out.text, "Overwrote a/b/c.txt (14 bytes)");
        let out = ws.call(
            "write_file",
            json!({"path": "a/b/c.txt", "content": "one\ntwo\nthree\n"}),
        );
        assert_eq!(
            out.text,
            "a/b/c.txt is unchanged: it already holds exactly this content (14 bytes); nothing \
             was written"
        );
        let out = ws.call("read_file", json!({"path": "a/b/c.txt"}));
        assert_eq!(out.text, "     1\tone\n     2\ttwo\n     3\tthree\n");
        let out = ws.call(
            "read_file",
            json!({"path": "a/b/c.txt", "offset": 2, "limit": 1}),
        );
        assert_eq!(
            out.text,
            "     2\ttwo\n[lines 2-2 of 3; call read_file with offset=3 to read more]"
        );
        let out = ws.call("read_file", json!({"path": "a/b/c.txt", "offset": 9}));
        assert!(out.text.contains("past the end"), "{}", out.text);
        // A hostile model's largest numbers: no overflow, a clear answer.
        let huge = json!({"path": "a/b/c.txt", "offset": u64::MAX, "limit": u64::MAX});
        assert!(ws.call("read_file", huge).text.contains("past the end"));
        let huge = json!({"path": "a/b/c.txt", "offset": 2, "limit": u64::MAX});
        assert_eq!(
            ws.call("read_file", huge).text,
            "     2\ttwo\n     3\tthree\n"
        );
    }

    #[test]
    fn read_pages_stay_under_max_output() {
        let ws = Workspace::new("page");
        let content: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        fs::write(ws.dir.join("f"), content).unwrap();
        let out = ws.call_with("read_file", json!({"path": "f"}), 100);
        assert!(out.text.starts_with("     1\tline 1\n"));
        assert!(
            out.text.contains("of 100; call read_file with offset="),
            "{}",
            out.text
        );
    }

    #[test]
    fn read_refuses_binary_and_invalid_utf8_clearly() {
        let ws = Workspace::new("bin");
        fs::write(ws.dir.join("b"), b"\x7fELF\x00\x01").unwrap();
        fs::write(ws.dir.join("l"), b"ok\n\xff\xfe\n").unwrap();
        assert!(ws
            .call("read_file", json!({"path": "b"}))
            .text
            .contains("binary file (6 bytes)"));
        assert!(ws
            .call("read_file", json!({"path": "l"}))
            .text
            .contains("not valid UTF-8 text (line 2)"));
        assert!(ws
            .call("read_file", json!({"path": "nope"}))
            .text
            .contains("nope does not exist"));
        assert!(ws
            .call("read_file", json!({"path": "."}))
            .text
            .contains("is a directory"));
    }

    #[test]
    fn edit_replaces_exactly_once_or_says_why_not() {
        let ws = Workspace::new("edit");
        fs::write(ws.dir.join("f.rs"), "a = 1;\nb = 1;\n").unwrap();
        let edit = |old: &str, new: &str, all: bool| {
            ws.call(
                "edit_file",
                json!({"path": "f.rs", "old_text": old, "new_text": new, "replace_all": all}),
            )
        };
        assert!(edit("= 1", "= 2", false).text.contains("appears 2 times"));
        assert!(edit("c = 1", "x", false).text.contains("not found"));
        assert!(edit("", "x", false).text.contains("empty"));
        assert_eq!(
            ws.read("f.rs"),
            "a = 1;\nb = 1;\n",
            "failed edits change nothing"
        );
        assert_eq!(
            edit("b = 1", "b = 3", false).text,
            "Replaced 1 occurrence in f.rs (first at line 2)"
        );
        assert_eq!(
            edit("= ", "== ", true).text,
            "Replaced 2 occurrences in f.rs (first at line 1)"
        );
        assert_eq!(ws.read("f.rs"), "a == 1;\nb == 3;\n");
        let leftovers: Vec<_> = fs::read_dir(&ws.dir).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp files left behind");
    }

    #[cfg(unix)]
    #[test]
    fn edit_keeps_the_file_mode() {
        use std::os::unix::fs::PermissionsExt;
        let ws = Workspace::new("mode");
        let path = ws.dir.join("run.sh");
        fs::write(&path, "echo a\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        ws.call(
            "edit_file",
            json!({"path": "run.sh", "old_text": "a", "new_text": "b"}),
        );
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }

    #[cfg(unix)]
    #[test]
    fn file_tools_refuse_symlink_escapes() {
        let ws = Workspace::new("escape");
        std::os::unix::fs::symlink("/etc", ws.dir.join("etc")).unwrap();
        for (name, args) in [
            ("read_file", json!({"path": "etc/hostname"})),
            ("write_file", json!({"path": "etc/x", "content": "x"})),
            (
                "edit_file",
                json!({"path": "../x", "old_text": "a", "new_text": "b"}),
            ),
        ] {
            let out = ws.call(name, args);
            assert!(
                out.text.starts_with("Error: Path escapes workspace: "),
                "{name}: {}",
                out.text
            );
        }
    }

    #[test]
    fn read_only_refuses_file_writes() {
        let ws = Workspace::new("ro");
        let ctx = Context {
            read_only: true,
            ..context(&ws.dir, 100)
        };
        let args = json!({"path": "a.txt", "content": "x"}).to_string();
        let out = run("write_file", &args, &ctx, &mut Approver::never());
        assert_eq!(
            out.text,
            "Error: the sandbox is read-only (--sandbox read-only): no file can be written"
        );
        assert!(!ws.dir.join("a.txt").exists());
    }

    #[test]
    fn bash_reports_exit_codes_and_blocks_danger() {
        let ws = Workspace::new("bash");
        let out = ws.call("bash", json!({"command": "echo hi; exit 2"}));
        assert_eq!((out.ok, out.text.as_str()), (false, "hi\n[exit code 2]"));
        assert_eq!(
            ws.call("bash", json!({"command": "true"})).text,
            "(no output)"
        );
        let out = ws.call("bash", json!({"command": "pwd"}));
        assert_eq!(out.text.trim(), ws.dir.to_str().unwrap());
        let out = ws.call("bash", json!({"command": "sudo ls"}));
        assert_eq!(
            out.text,
            "Error: Dangerous command blocked: privilege escalation (sudo)"
        );
    }

    #[test]
    fn describe_is_short() {
        assert_eq!(describe("bash", r#"{"command":"ls -la\nrm x"}"#), "ls -la…");
        assert_eq!(
            describe("read_file", r#"{"path":"src/main.rs"}"#),
            "src/main.rs"
        );
        assert_eq!(describe("nope", "garbage"), "");
    }
}
