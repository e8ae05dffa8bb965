//! Declared tools: a project's own commands offered to the model as typed tools. A tools file
//! (`--tools FILE`, and `.turn/tools.json` in the workspace) declares each as a name, a
//! description, JSON Schema `parameters` and a shell `command`; the same file may hold an
//! `mcpServers` section (the shape Claude Desktop and Codex use), read here and started by
//! `mcp`.
//!
//! The model's arguments never become shell text: they are checked against the declared
//! schema, then reach the command as environment variables (`TURN_ARG_<name>` for each
//! top-level argument, `TURN_ARGS` for the whole JSON object), assigned in single quotes
//! before the user's command. The command runs like `bash`: same sandbox, timeout, output cap,
//! approvals. Parsing a file (`parse`) and building the shell line (`command_line`) are pure.

use crate::schema;
use serde_json::{Map, Value};
use std::path::Path;

/// One declared tool.
#[derive(Debug, PartialEq)]
pub struct Declared {
    pub name: String,
    pub description: String,
    /// A JSON Schema with `"type": "object"`.
    pub parameters: Value,
    /// The shell command, run with `sh -c` in the workspace.
    pub command: String,
    /// Where it was declared, for --list-tools and errors.
    pub source: String,
}

/// An MCP server to start: its name (the tools' prefix), program, arguments and environment.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSpec {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub source: String,
    /// What the user vouched for (see `vouch`), checked again before each start.
    pub vouched: Option<(String, Vec<super::vouch::Pin>)>,
}

/// What a tools file declares.
#[derive(Debug, Default, PartialEq)]
pub struct ToolsFile {
    pub tools: Vec<Declared>,
    pub servers: Vec<ServerSpec>,
}

/// Names OpenAI accepts for functions (and so every server that copies its checks).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A name usable in an environment variable: letters, digits and `_`, not starting with a digit.
fn env_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| !c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses a tools file's text; `source` names it in errors. Err says what is wrong and where.
pub fn parse(text: &str, source: &str) -> Result<ToolsFile, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    let Value::Object(top) = value else {
        return Err("must be a JSON object with \"tools\" and/or \"mcpServers\"".into());
    };
    for key in top.keys() {
        if key != "tools" && key != "mcpServers" {
            return Err(format!(
                "unknown key \"{key}\" (expected \"tools\" or \"mcpServers\")"
            ));
        }
    }
    let mut file = ToolsFile::default();
    if let Some(tools) = top.get("tools") {
        let list = tools.as_array().ok_or("\"tools\" must be a list")?;
        for (i, tool) in list.iter().enumerate() {
            let tool = declared(tool, source).map_err(|e| format!("tools[{i}]: {e}"))?;
            if file.tools.iter().any(|t| t.name == tool.name) {
                return Err(format!(
                    "tools[{i}]: the name \"{}\" is declared twice",
                    tool.name
                ));
            }
            file.tools.push(tool);
        }
    }
    if let Some(servers) = top.get("mcpServers") {
        let map = servers
            .as_object()
            .ok_or("\"mcpServers\" must be an object of name: {command, args, env}")?;
        for (name, spec) in map {
            let server =
                server(name, spec, source).map_err(|e| format!("mcpServers.{name}: {e}"))?;
            file.servers.push(server);
        }
    }
    Ok(file)
}

fn declared(tool: &Value, source: &str) -> Result<Declared, String> {
    let Value::Object(map) = tool else {
        return Err("must be an object with name, description, parameters and command".into());
    };
    for key in map.keys() {
        if !["name", "description", "parameters", "command"].contains(&key.as_str()) {
            return Err(format!("unknown key \"{key}\""));
        }
    }
    let text = |key: &str| -> Result<String, String> {
        match map.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(_) => Err(format!("\"{key}\" must be a non-empty string")),
            None => Err(format!("\"{key}\" is missing")),
        }
    };
    let name = text("name")?;
    if !valid_name(&name) {
        return Err(format!(
            "the name \"{name}\" must be 1 to 64 letters, digits, '_' or '-'"
        ));
    }
    if crate::tools::Tool::builtin(&name).is_some() || name.contains("__") {
        return Err(format!(
            "the name \"{name}\" is taken (built-in tools, and '__' is for MCP tools)"
        ));
    }
    let description = text("description")?;
    let command = text("command")?;
    let parameters = match map.get("parameters") {
        None => serde_json::json!({"type": "object", "properties": {}}),
        Some(p) => p.clone(),
    };
    if parameters.get("type") != Some(&Value::from("object")) {
        return Err("\"parameters\" must be a JSON Schema with \"type\": \"object\"".into());
    }
    schema::check_schema(&parameters).map_err(|e| format!("parameters: {e}"))?;
    if let Some(properties) = parameters.get("properties").and_then(Value::as_object) {
        for key in properties.keys() {
            if !env_name(key) {
                return Err(format!(
                    "parameter \"{key}\": names must be letters, digits and '_' (not starting \
                     with a digit), to become TURN_ARG_{key}"
                ));
            }
        }
    }
    Ok(Declared {
        name,
        description,
        parameters,
        command,
        source: source.to_string(),
    })
}

fn server(name: &str, spec: &Value, source: &str) -> Result<ServerSpec, String> {
    if !valid_name(name) || name.contains("__") || name.len() > 30 {
        return Err("a server name must be 1 to 30 letters, digits, '_' or '-' (no '__')".into());
    }
    let Value::Object(map) = spec else {
        return Err("must be an object with \"command\" (and optional \"args\", \"env\")".into());
    };
    let command = match map.get("command") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        _ => return Err("\"command\" must be a non-empty string".into()),
    };
    let args = match map.get("args") {
        None => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|a| a.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or("\"args\" must be a list of strings")?,
        Some(_) => return Err("\"args\" must be a list of strings".into()),
    };
    let env = match map.get("env") {
        None => Vec::new(),
        Some(Value::Object(vars)) => vars
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
            .collect::<Option<Vec<_>>>()
            .ok_or("\"env\" must map names to strings")?,
        Some(_) => return Err("\"env\" must map names to strings".into()),
    };
    Ok(ServerSpec {
        name: name.to_string(),
        command,
        args,
        env,
        source: source.to_string(),
        vouched: None,
    })
}

/// `--mcp NAME=COMMAND`: a server whose command line is split on whitespace (use a tools
/// file for arguments with spaces).
pub fn mcp_flag(value: &str) -> Result<ServerSpec, String> {
    let Some((name, command)) = value.split_once('=') else {
        return Err(format!("--mcp takes NAME=COMMAND, not '{value}'"));
    };
    let mut words = command.split_whitespace().map(str::to_string);
    let program = words
        .next()
        .ok_or_else(|| format!("--mcp {name}=: the command is empty"))?;
    let spec = serde_json::json!({"command": program, "args": words.collect::<Vec<_>>()});
    server(name.trim(), &spec, "--mcp").map_err(|e| format!("--mcp {name}: {e}"))
}

/// The tool's spec for a request.
pub fn spec(tool: &Declared) -> Value {
    serde_json::json!({
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    })
}

/// Checks `arguments` against the declared parameters: Err is for the model to read.
pub fn check_arguments(tool: &Declared, arguments: &Value) -> Result<(), String> {
    let problems = schema::validate(&tool.parameters, arguments);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid arguments for {}: {}",
            tool.name,
            problems.join("; ")
        ))
    }
}

/// The shell line that runs the tool: each argument assigned, single-quoted, to an exported
/// `TURN_ARG_<name>` (strings as they are, other values as JSON), the whole object to
/// `TURN_ARGS`, then the user's command. No value is ever read as shell syntax.
pub fn command_line(tool: &Declared, arguments: &Map<String, Value>) -> Result<String, String> {
    let mut line = String::new();
    let mut assign = |name: &str, value: &str| -> Result<(), String> {
        if value.contains('\0') {
            return Err(format!("the argument {name} holds a NUL character"));
        }
        line.push_str(&format!("export {name}={}\n", quote(value)));
        Ok(())
    };
    for (key, value) in arguments {
        // Only declared names become variables (unknown ones were refused by the schema, or
        // are dropped here when it allows them).
        let declared = tool
            .parameters
            .get("properties")
            .and_then(|p| p.get(key))
            .is_some();
        if !declared || !env_name(key) {
            continue;
        }
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        assign(&format!("TURN_ARG_{key}"), &text)?;
    }
    assign("TURN_ARGS", &Value::Object(arguments.clone()).to_string())?;
    line.push_str(&tool.command);
    Ok(line)
}

/// `value` in single quotes, each `'` as `'\''`: a shell word that is exactly `value`.
pub fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// Reads and parses a tools file.
pub fn load(path: &Path) -> Result<ToolsFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    parse(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(tool: Value) -> Result<Declared, String> {
        parse(&json!({"tools": [tool]}).to_string(), "t.json").map(|mut f| f.tools.remove(0))
    }

    fn deploy() -> Declared {
        one(json!({
            "name": "deploy",
            "description": "Deploy a branch",
            "parameters": {"type": "object", "properties": {"branch": {"type": "string"}, "dry_run": {"type": "boolean"}}, "required": ["branch"], "additionalProperties": false},
            "command": "echo \"deploying $TURN_ARG_branch\""
        }))
        .unwrap()
    }

    #[test]
    fn a_tools_file_declares_tools_and_servers() {
        let file = parse(
            r#"{"tools": [{"name": "t", "description": "d", "command": "true"}],
                "mcpServers": {"fs": {"command": "python3", "args": ["srv.py"], "env": {"A": "1"}}}}"#,
            "f.json",
        )
        .unwrap();
        assert_eq!(
            file.tools[0].parameters,
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(file.tools[0].source, "f.json");
        assert_eq!(
            file.servers,
            [ServerSpec {
                name: "fs".into(),
                command: "python3".into(),
                args: vec!["srv.py".into()],
                env: vec![("A".into(), "1".into())],
                source: "f.json".into(),
                vouched: None,
            }]
        );
    }

    #[test]
    fn bad_files_say_what_and_where() {
        let cases = [
            ("[]", "must be a JSON object"),
            ("{", "not JSON"),
            (r#"{"tool": []}"#, "unknown key \"tool\""),
            (r#"{"tools": {}}"#, "\"tools\" must be a list"),
            (r#"{"tools": [1]}"#, "tools[0]: must be an object"),
            (
                r#"{"tools": [{"name": "a b", "description": "d", "command": "c"}]}"#,
                "tools[0]: the name \"a b\" must be",
            ),
            (
                r#"{"tools": [{"name": "bash", "description": "d", "command": "c"}]}"#,
                "tools[0]: the name \"bash\" is taken",
            ),
            (
                r#"{"tools": [{"name": "x", "command": "c"}]}"#,
                "tools[0]: \"description\" is missing",
            ),
            (
                r#"{"tools": [{"name": "x", "description": "d", "command": ""}]}"#,
                "tools[0]: \"command\" must be a non-empty string",
            ),
            (
                r#"{"tools": [{"name": "x", "description": "d", "command": "c", "parameters": {"type": "string"}}]}"#,
                "\"type\": \"object\"",
            ),
            (
                r#"{"tools": [{"name": "x", "description": "d", "command": "c", "parameters": {"type": "object", "properties": {"a-b": {}}}}]}"#,
                "parameter \"a-b\"",
            ),
            (
                r#"{"tools": [{"name": "x", "description": "d", "command": "c", "parameters": {"type": "object", "required": 1}}]}"#,
                "parameters: #/required",
            ),
            (
                r#"{"tools": [{"name": "x", "description": "d", "command": "c", "shell": 1}]}"#,
                "unknown key \"shell\"",
            ),
            (
                r#"{"tools": [{"name": "x", "description": "d", "command": "c"}, {"name": "x", "description": "d", "command": "c"}]}"#,
                "tools[1]: the name \"x\" is declared twice",
            ),
            (r#"{"mcpServers": []}"#, "\"mcpServers\" must be an object"),
            (
                r#"{"mcpServers": {"a__b": {"command": "x"}}}"#,
                "mcpServers.a__b: a server name",
            ),
            (
                r#"{"mcpServers": {"s": {"args": []}}}"#,
                "mcpServers.s: \"command\" must be",
            ),
            (
                r#"{"mcpServers": {"s": {"command": "x", "args": [1]}}}"#,
                "\"args\" must be a list of strings",
            ),
            (
                r#"{"mcpServers": {"s": {"command": "x", "env": {"A": 1}}}}"#,
                "\"env\" must map names to strings",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(text, "f.json").unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let tool = deploy();
        assert_eq!(check_arguments(&tool, &json!({"branch": "main"})), Ok(()));
        assert_eq!(
            check_arguments(&tool, &json!({"branch": 1, "x": true})),
            Err("invalid arguments for deploy: $.branch: expected string, got a number; $: property 'x' is not allowed".into())
        );
    }

    #[test]
    fn values_reach_the_command_quoted_never_as_syntax() {
        let tool = deploy();
        let args = json!({"branch": "x'; rm -rf ~; echo '", "dry_run": true});
        let line = command_line(&tool, args.as_object().unwrap()).unwrap();
        assert_eq!(
            line,
            "export TURN_ARG_branch='x'\\''; rm -rf ~; echo '\\'''\n\
             export TURN_ARG_dry_run='true'\n\
             export TURN_ARGS='{\"branch\":\"x'\\''; rm -rf ~; echo '\\''\",\"dry_run\":true}'\n\
             echo \"deploying $TURN_ARG_branch\""
        );
        let nul = json!({"branch": "a\u{0}b"});
        assert!(command_line(&tool, nul.as_object().unwrap()).is_err());
    }

    #[test]
    fn mcp_flags() {
        let spec = mcp_flag("files=python3 server.py --root .").unwrap();
        assert_eq!(
            (spec.name.as_str(), spec.command.as_str()),
            ("files", "python3")
        );
        assert_eq!(spec.args, ["server.py", "--root", "."]);
        assert!(mcp_flag("nocommand").unwrap_err().contains("NAME=COMMAND"));
        assert!(mcp_flag("x=").unwrap_err().contains("empty"));
        assert!(mcp_flag("a b=c").unwrap_err().contains("server name"));
    }
}
