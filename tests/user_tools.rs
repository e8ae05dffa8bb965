//! The user's own tools: declared command tools (typed arguments that never become shell
//! syntax) and MCP servers over stdio (listed, called, their errors, death and hangs handled,
//! stopped at exit), and tools files that are wrong.

mod util;

use serde_json::{json, Value};
use std::path::Path;
use util::*;

const DEPLOY: &str = r#"{"tools": [{
  "name": "deploy",
  "description": "Deploy a branch to staging.",
  "parameters": {"type": "object",
                 "properties": {"branch": {"type": "string"}, "count": {"type": "integer", "minimum": 1}},
                 "required": ["branch"], "additionalProperties": false},
  "command": "printf 'deploying %s x%s\n' \"$TURN_ARG_branch\" \"${TURN_ARG_count:-1}\""
}]}"#;

fn server_script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp_server.py")
        .display()
        .to_string()
}

#[test]
fn a_declared_tool_runs_with_its_arguments_and_only_them() {
    let ws = Workspace::new();
    ws.write("tools.json", DEPLOY);
    let hostile = "main'; touch pwned; echo '$(touch pwned2)`touch pwned3`";
    let mock = Mock::start(vec![
        calls(&[("deploy", json!({"branch": "main", "count": 2}))]),
        calls(&[("deploy", json!({"branch": hostile}))]),
        calls(&[("deploy", json!({"branch": 5, "rm": "-rf"}))]),
        Reply::Text("deployed"),
    ]);
    let run = go(&ws, &mock, &["--tools", "tools.json", "deploy it"]).expect(0);
    assert_has(&run.stderr, "your tools: deploy");
    let chats = mock.chats();
    // The spec is offered as declared.
    let offered: Vec<&str> = chats[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        ["bash", "read_file", "write_file", "edit_file", "deploy"]
    );
    assert_eq!(chats[1].last_content(), "deploying main x2\n");
    // The hostile value is printed as it is, and nothing else ran.
    assert_eq!(chats[2].last_content(), format!("deploying {hostile} x1\n"));
    for marker in ["pwned", "pwned2", "pwned3"] {
        assert!(!exists(&ws.path(marker)), "{marker} was created");
    }
    // Arguments that break the schema never reach the command.
    assert_eq!(
        chats[3].last_content(),
        "Error: invalid arguments for deploy: $.branch: expected string, got a number; $: property 'rm' is not allowed"
    );
}

#[test]
fn list_tools_shows_every_tool_and_its_source() {
    let ws = Workspace::new();
    ws.write("tools.json", DEPLOY);
    let mock = Mock::start(vec![]);
    let mut command = turn(&ws, &mock);
    command.args([
        "--tools",
        "tools.json",
        "--mcp",
        &format!("t=python3 {}", server_script()),
        "--list-tools",
    ]);
    let run = util::run(command).expect(0);
    assert_has(&run.stdout, "bash  (built-in)\n");
    assert_has(&run.stdout, "deploy  (declared in tools.json)\n    Deploy a branch to staging.\n    parameters: {\"additionalProperties\":false");
    assert_has(&run.stdout, "t__echo  (MCP server t (as echo))\n    Echo the text back.\n    parameters: {\"properties\":{\"text\"");
    assert_has(&run.stdout, "t__hang  (MCP server t (as hang))");
    assert!(mock.received().is_empty(), "--list-tools asked the server");
}

#[test]
fn mcp_tools_are_called_and_their_failures_are_the_models_to_read() {
    let ws = Workspace::new();
    let pid_file = ws.path("server.pid");
    ws.write(
        "mcp.json",
        &json!({"mcpServers": {"t": {"command": "python3", "args": [server_script()],
                                      "env": {"MCP_PID_FILE": pid_file}}}})
        .to_string(),
    );
    let mock = Mock::start(vec![
        calls(&[("t__echo", json!({"text": "hi"}))]),
        calls(&[("t__fail", json!({}))]),
        calls(&[("t__hang", json!({}))]),
        calls(&[("t__die", json!({}))]),
        calls(&[("t__echo", json!({"text": "again"}))]),
        Reply::Text("done"),
    ]);
    let mut command = turn(&ws, &mock);
    command.args([
        "--json",
        "--timeout",
        "2",
        "--tools",
        "mcp.json",
        "use the tools",
    ]);
    let run = util::run(command).expect(0);
    let chats = mock.chats();
    let offered: Vec<String> = chats[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(offered.contains(&"t__echo".to_string()), "{offered:?}");
    assert_eq!(chats[1].last_content(), "echo: hi");
    assert_eq!(chats[2].last_content(), "it went wrong");
    assert_has(
        &chats[3].last_content(),
        "Error: the MCP server t did not answer tools/call within 2s, so it was stopped",
    );
    // Started anew for the next call, which makes it exit: the call's error says so.
    assert_has(
        &chats[4].last_content(),
        "Error: the MCP server t failed: it exited",
    );
    assert_has(&chats[4].last_content(), "dying on purpose");
    // And anew again: it works.
    assert_eq!(chats[5].last_content(), "echo: again");
    // --json marks the isError result as not ok.
    let results: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results[0]["ok"], true);
    assert_eq!(results[1]["ok"], false);
    // The server was stopped.
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "server {pid} still runs"
    );
}

#[test]
fn servers_are_stopped_when_turn_ends() {
    let ws = Workspace::new();
    let pid_file = ws.path("server.pid");
    let mock = Mock::start(vec![Reply::Text("nothing to do")]);
    let mut command = turn(&ws, &mock);
    command.env("MCP_PID_FILE", &pid_file).args([
        "--mcp",
        &format!("t=python3 {}", server_script()),
        "hi",
    ]);
    util::run(command).expect(0);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_for(|| !Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn a_server_that_cannot_start_is_left_out_with_its_reason() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text("ok")]);
    let mut command = turn(&ws, &mock);
    command.env("MCP_CRASH", "1").args([
        "--mcp",
        &format!("bad=python3 {}", server_script()),
        "--mcp",
        "missing=/nonexistent/server",
        "hi",
    ]);
    let run = util::run(command).expect(0);
    assert_has(
        &run.stderr,
        "MCP server bad (--mcp) is not used: the MCP server bad failed: it exited",
    );
    assert_has(&run.stderr, "cannot start: MCP_CRASH is set");
    assert_has(
        &run.stderr,
        "MCP server missing (--mcp) is not used: cannot start '/nonexistent/server'",
    );
    let tools = mock.chats()[0].body["tools"].as_array().unwrap().len();
    assert_eq!(tools, 4, "only the built-in tools");
}

#[test]
fn the_workspace_tools_file_declares_tools_but_starts_no_servers() {
    let ws = Workspace::new();
    let marker = ws.path("started");
    ws.write(
        ".turn/tools.json",
        &json!({
            "tools": [{"name": "hello", "description": "Say hello.", "command": "echo hello"}],
            "mcpServers": {"evil": {"command": "touch", "args": [marker]}}
        })
        .to_string(),
    );
    let mock = Mock::start(vec![calls(&[("hello", json!({}))]), Reply::Text("ok")]);
    let run = go(&ws, &mock, &["hi"]).expect(0);
    assert_has(&run.stderr, "its mcpServers are not started");
    assert_eq!(mock.chats()[1].last_content(), "hello\n");
    assert!(
        !exists(&marker),
        "a server from the workspace's file was started"
    );
}

#[test]
fn bad_tools_files_are_usage_errors_naming_file_and_problem() {
    let ws = Workspace::new();
    ws.write("broken.json", "{\"tools\": [");
    ws.write(
        "badname.json",
        r#"{"tools": [{"name": "read_file", "description": "d", "command": "c"}]}"#,
    );
    ws.write("dup.json", DEPLOY);
    ws.write("dup2.json", DEPLOY);
    let cases: [(&[&str], &str); 5] = [
        (
            &["--tools", "missing.json"],
            "tools file missing.json: cannot read it",
        ),
        (
            &["--tools", "broken.json"],
            "tools file broken.json: not JSON",
        ),
        (
            &["--tools", "badname.json"],
            "tools file badname.json: tools[0]: the name \"read_file\" is taken",
        ),
        (
            &["--tools", "dup.json", "--tools", "dup2.json"],
            "tools file dup2.json: the tool \"deploy\" is already declared in dup.json",
        ),
        (&["--mcp", "nonsense"], "--mcp takes NAME=COMMAND"),
    ];
    for (args, expected) in cases {
        let mock = Mock::start(vec![]);
        let mut all = args.to_vec();
        all.push("hi");
        let run = go(&ws, &mock, &all).expect(2);
        assert_has(&run.stderr, expected);
        assert!(mock.chats().is_empty());
    }
}
