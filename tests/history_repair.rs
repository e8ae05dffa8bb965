//! Histories that real servers refuse are repaired before they are sent, and refusals that a
//! retry cannot change are not retried: a session never gets stuck on a server's 500.

mod util;

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use util::*;

/// llama-server's answer to a history holding arguments that are not JSON, word for word.
const LLAMA_500: &str = r#"{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error at line 1, column 14: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal","type":"server_error"}}"#;

/// POSTs `body` to the mock's chat endpoint; returns the status line and the body.
fn post(mock: &Mock, body: &Value) -> (String, String) {
    let address = mock
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/v1");
    let mut stream = TcpStream::connect(address).unwrap();
    let body = body.to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// A session as an older version, another tool or a hand edit may leave it: arguments that
/// are not JSON, content as parts, a numeric and a repeated call id, a result without an id.
const BROKEN_SESSION: &str = r#"{"role":"user","content":[{"type":"text","text":"list the files"}]}
{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\": \"ls"}}]}
{"role":"tool","tool_call_id":"call_1","content":"Error: the arguments for bash were not valid JSON"}
{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","function":{"name":"bash","arguments":{"command":"ls"}}},{"id":7,"function":{"name":"bash","arguments":""}}]}
{"role":"tool","tool_call_id":"call_1","content":"a.txt"}
{"role":"tool","tool_call_id":"7","content":null}
{"role":"assistant","content":"There is a.txt."}
"#;

#[test]
fn the_llama_mock_refuses_arguments_that_are_not_json_with_the_real_500() {
    let mock = Mock::llama_server(vec![Reply::Text("never")]);
    let call = json!({"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls"}});
    let body = json!({"model": "m", "tools": [], "messages": [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": "x"},
    ]});
    let (status, body) = post(&mock, &body);
    assert!(status.contains(" 500 "), "{status}");
    assert_has(&body, "Failed to parse tool call arguments as JSON");
}

#[test]
fn a_session_with_broken_calls_resumes_against_llama_server() {
    let ws = Workspace::new();
    ws.write("task.jsonl", BROKEN_SESSION);
    let mock = Mock::llama_server(vec![Reply::Text("done")]);
    let mut command = turn(&ws, &mock);
    command.args(["--session", "task.jsonl", "go on"]);
    let first = run(command).expect(0);
    assert_eq!(first.stdout, "done\n");
    assert_eq!(mock.chats().len(), 1, "accepted at the first try");

    let messages = mock.chats()[0].messages().clone();
    let shape: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        shape,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "user"
        ]
    );
    assert_eq!(messages[1]["content"], "list the files");
    // The broken arguments became {}, and the model can still read what they were.
    assert_eq!(messages[2]["tool_calls"][0]["function"]["arguments"], "{}");
    let note = messages[3]["content"].as_str().unwrap();
    assert!(
        note.starts_with("[turn: this call's arguments were not a JSON object"),
        "{note}"
    );
    assert_has(note, r#"they were: {"command": "ls]"#);
    assert!(note.ends_with("Error: the arguments for bash were not valid JSON"));
    // Object arguments became text; the repeated id got a fresh one, its result with it.
    let calls = messages[4]["tool_calls"].as_array().unwrap();
    assert_eq!(calls[0]["function"]["arguments"], r#"{"command":"ls"}"#);
    let (first, second) = (
        calls[0]["id"].as_str().unwrap(),
        calls[1]["id"].as_str().unwrap(),
    );
    assert!(first != "call_1" && first.starts_with("call_"), "{first}");
    assert_eq!(second, "7");
    assert_eq!(messages[5]["tool_call_id"], first);
    assert_eq!(messages[5]["content"], "a.txt");
    assert_eq!(messages[6]["tool_call_id"], "7");
    assert_has(
        messages[6]["content"].as_str().unwrap(),
        "came with no arguments",
    );

    // The file is never rewritten: the run only appended to it.
    let after = ws.read("task.jsonl");
    assert!(after.starts_with(BROKEN_SESSION), "{after}");
    assert!(after.len() > BROKEN_SESSION.len());

    // And it resumes again, the same way.
    let mock = Mock::llama_server(vec![Reply::Text("again")]);
    let mut command = turn(&ws, &mock);
    command.args(["--session", "task.jsonl", "once more"]);
    run(command).expect(0);
    let again = mock.chats()[0].messages().clone();
    assert_eq!(again[..messages.len()], messages[..]);
}

#[test]
fn a_500_about_the_request_itself_is_tried_once() {
    let ws = Workspace::new();
    let refusal = || Reply::Raw {
        status: 500,
        headers: vec![("Content-Type", "application/json".into())],
        body: LLAMA_500.into(),
    };
    let mock = Mock::start(vec![refusal(), refusal(), Reply::Text("never")]);
    let run = go(&ws, &mock, &["go"]).expect(1);
    assert_eq!(mock.chats().len(), 1, "not retried: {}", run.stderr);
    assert!(!run.stderr.contains("retrying"), "{}", run.stderr);
    assert_has(
        &run.stderr,
        "turn: server error 500: Failed to parse tool call arguments as JSON",
    );
}

#[test]
fn a_4xx_names_the_message_the_server_blames() {
    let ws = Workspace::new();
    let body = json!({"error": {
        "message": "Invalid value for 'content': expected a string, got null.",
        "type": "invalid_request_error",
        "param": "messages.[1].content",
    }});
    let reply = Reply::Raw {
        status: 400,
        headers: vec![],
        body: body.to_string(),
    };
    let mock = Mock::start(vec![reply, Reply::Text("never")]);
    let run = go(&ws, &mock, &["go"]).expect(1);
    assert_has(
        &run.stderr,
        "expected a string, got null. (message 1 of the request: a user message; message 0 is the system prompt)",
    );
    assert_eq!(mock.chats().len(), 1);
}

#[test]
fn a_408_is_retried() {
    let ws = Workspace::new();
    let timeout = Reply::Raw {
        status: 408,
        headers: vec![("Retry-After", "0".into())],
        body: "Request Timeout".into(),
    };
    let mock = Mock::start(vec![timeout, Reply::Text("ok")]);
    let run = go(&ws, &mock, &["go"]).expect(0);
    assert_eq!(run.stdout, "ok\n");
    assert_eq!(mock.chats().len(), 2);
}
