//! The tools the model can call: their JSON Schema specs and the dispatch, one exhaustive
//! `match` over `Tool`, whose names come from `Tool::name` alone so spec and dispatch cannot
//! drift. Failures are returned as text for the model ("Error: …"), never as `Error`: the model
//! reads them and recovers.

use crate::approve::Approver;
use files::DEFAULT_LINES;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

mod files;
pub mod replace;
mod shell;
pub mod truncate;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tool {
    Bash,
    ReadFile,
    WriteFile,
    EditFile,
}

/// What the tools need from the run's configuration.
pub struct Context<'a> {
    /// Canonical, so `safe_path` can compare prefixes.
    pub workspace: &'a Path,
    pub timeout: Duration,
    pub max_output: usize,
    /// Runs bash commands inside the sandbox's layers.
    pub sandbox: crate::sandbox::exec::Runner,
    /// `--sandbox read-only`: the file tools write nothing.
    pub read_only: bool,
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
    pub const ALL: [Tool; 4] = [Tool::Bash, Tool::ReadFile, Tool::WriteFile, Tool::EditFile];

    pub fn name(self) -> &'static str {
        match self {
            Tool::Bash => "bash",
            Tool::ReadFile => "read_file",
            Tool::WriteFile => "write_file",
            Tool::EditFile => "edit_file",
        }
    }

    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    fn spec(self, ctx: &Context) -> Value {
        let (description, properties, required) = match self {
            Tool::Bash => (
                format!(
                    "Run a shell command with `sh -c` in the workspace directory and return its stdout and \
                     stderr together, with the exit code when it is not 0. Long output keeps its head and \
                     tail. The command is killed after {}s. stdin is empty: do not start interactive \
                     programs or editors.",
                    ctx.timeout.as_secs()
                ),
                json!({"command": {"type": "string", "description": "The command line to run."}}),
                json!(["command"]),
            ),
            Tool::ReadFile => (
                format!(
                    "Read a UTF-8 text file in the workspace. Returns numbered lines as `N<TAB>text`, at most \
                     `limit` lines (default {DEFAULT_LINES}) starting at line `offset`; the reply says how \
                     to read the rest."
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
                "name": self.name(),
                "description": description,
                "parameters": {"type": "object", "properties": properties, "required": required}
            }
        })
    }
}

/// The `tools` array for a request.
pub fn specs(ctx: &Context) -> Value {
    Value::Array(Tool::ALL.iter().map(|tool| tool.spec(ctx)).collect())
}

/// Runs the tool `name` with its raw JSON `arguments`, once `approver` lets it.
pub fn run(name: &str, arguments: &str, ctx: &Context, approver: &mut Approver) -> Output {
    let result = match Tool::from_name(name) {
        Some(Tool::Bash) => parse(name, arguments).and_then(|a| shell::bash(a, ctx, approver)),
        Some(Tool::ReadFile) => parse(name, arguments).and_then(|a| files::read_file(a, ctx)),
        Some(Tool::WriteFile) => {
            parse(name, arguments).and_then(|a| files::write_file(a, ctx, approver))
        }
        Some(Tool::EditFile) => {
            parse(name, arguments).and_then(|a| files::edit_file(a, ctx, approver))
        }
        None => {
            let names: Vec<_> = Tool::ALL.iter().map(|t| t.name()).collect();
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

/// `arguments` as valid JSON text, for the history: strict servers reject a history whose
/// arguments do not parse, so text that does not is replaced by `{}` (the tool result already
/// told the model what was wrong).
pub fn sanitize_arguments(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(_) => arguments.to_string(),
        Err(_) => "{}".to_string(),
    }
}

/// A short description of a call for the activity line: the command or the path.
pub fn describe(name: &str, arguments: &str) -> String {
    let value: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let main = match Tool::from_name(name) {
        Some(Tool::Bash) => value.get("command"),
        Some(_) => value.get("path"),
        None => None,
    };
    let text = main.and_then(Value::as_str).unwrap_or_default();
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
            timeout: Duration::from_secs(10),
            max_output,
            sandbox: crate::sandbox::exec::Runner::unconfined(workspace),
            read_only: false,
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
            assert_eq!(Tool::from_name(tool.name()), Some(*tool));
            assert_eq!(spec["function"]["name"], tool.name());
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
