//! For scripts: the --json event stream, checked line by line against the documented schema,
//! on success, on error and on interrupt.

mod util;

use serde_json::{json, Value};
use util::*;

fn events(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

/// Every event has exactly the documented keys, with the documented types.
fn check_schema(event: &Value) {
    let keys = |list: &[&str]| {
        let mut have: Vec<&str> = event
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        have.sort();
        let mut want = list.to_vec();
        want.sort();
        assert_eq!(have, want, "keys of {event}");
    };
    match event["type"].as_str().unwrap() {
        "start" => {
            keys(&["type", "model", "base_url", "workspace", "context"]);
            assert!(
                event["model"].is_string()
                    && event["base_url"].is_string()
                    && event["workspace"].is_string()
                    && (event["context"].is_u64() || event["context"].is_null())
            );
        }
        "checkpoint" => {
            keys(&["type", "id", "files"]);
            assert!(event["id"].is_u64());
            for file in event["files"].as_array().unwrap() {
                assert!(file["path"].is_string() && file["change"].is_string());
            }
        }
        "assistant" => {
            keys(&["type", "text"]);
            assert!(event["text"].is_string());
        }
        "tool_call" => {
            keys(&["type", "id", "name", "arguments", "origin"]);
            assert!(event["arguments"].is_string());
            assert!(["native", "text"].contains(&event["origin"].as_str().unwrap()));
        }
        "tool_result" => {
            keys(&["type", "id", "name", "ok", "output", "elided", "origin"]);
            assert!(
                event["ok"].is_boolean() && event["output"].is_string() && event["elided"].is_u64()
            );
            assert!(["native", "text"].contains(&event["origin"].as_str().unwrap()));
        }
        "fallback" => {
            keys(&["type", "protocol", "reason", "hint"]);
            assert_eq!(event["protocol"], "text");
            assert!(event["reason"].is_string() && event["hint"].is_string());
        }
        "compacted" => {
            keys(&["type", "stage", "before", "after", "window"]);
            assert!(event["stage"] == "elide" || event["stage"] == "summary");
            assert!(event["before"].is_u64() && event["after"].is_u64());
            assert!(event["window"].is_u64() || event["window"].is_null());
        }
        "error" => {
            keys(&["type", "message", "hint"]);
            assert!(
                event["message"].is_string()
                    && (event["hint"].is_string() || event["hint"].is_null())
            );
        }
        "done" => {
            if event.get("output").is_some() {
                keys(&["type", "status", "steps", "usage", "text", "output"]);
            } else {
                keys(&["type", "status", "steps", "usage", "text"]);
            }
            let status = event["status"].as_str().unwrap();
            assert!(
                [
                    "ok",
                    "max_steps",
                    "repeating",
                    "error",
                    "interrupted",
                    "schema"
                ]
                .contains(&status),
                "{status}"
            );
            assert!(event["steps"].is_u64() && event["text"].is_string());
            assert!(
                event["usage"]["prompt_tokens"].is_u64()
                    && event["usage"]["completion_tokens"].is_u64()
            );
        }
        other => panic!("undocumented event type {other}"),
    }
}

fn json_run(ws: &Workspace, mock: &Mock, args: &[&str]) -> (Run, Vec<Value>) {
    let mut command = turn(ws, mock);
    command.arg("--json").args(args);
    let run = run(command);
    let events = events(&run);
    events.iter().for_each(check_schema);
    (run, events)
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[test]
fn a_successful_run() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![bash("seq 1 1000"), Reply::Text("Counted.")]);
    let (run, events) = json_run(&ws, &mock, &["--max-output", "100", "count"]);
    run.expect(0);
    assert_eq!(
        types(&events),
        ["start", "tool_call", "tool_result", "assistant", "done"]
    );
    assert_eq!(events[0]["model"], "mock-model");
    assert_eq!(events[0]["base_url"], mock.url);
    assert_eq!(events[0]["workspace"], ws.dir.to_str().unwrap());
    assert_eq!(events[1]["name"], "bash");
    assert_eq!(
        events[1]["arguments"],
        json!({"command": "seq 1 1000"}).to_string()
    );
    assert_eq!(events[2]["id"], events[1]["id"]);
    assert_eq!(events[2]["ok"], true);
    assert_eq!(events[2]["elided"], 3893 - 100);
    assert_eq!(events[3]["text"], "Counted.");
    assert_eq!(
        events[4],
        json!({"type": "done", "status": "ok", "steps": 2, "usage": {"prompt_tokens": 20, "completion_tokens": 10}, "text": "Counted."})
    );
}

#[test]
fn an_error_run_ends_with_error_and_done() {
    let ws = Workspace::new();
    let reply = Reply::Raw {
        status: 401,
        headers: vec![],
        body: json!({"error": {"message": "bad key"}}).to_string(),
    };
    let mock = Mock::start(vec![reply]);
    let (run, events) = json_run(&ws, &mock, &["hi"]);
    let run = run.expect(1);
    assert_eq!(types(&events), ["start", "error", "done"]);
    assert_eq!(events[1]["message"], "server error 401: bad key");
    assert_eq!(
        events[1]["hint"],
        "set OPENAI_API_KEY to a key this server accepts"
    );
    assert_eq!(events[2]["status"], "error");
    assert!(run.stderr.contains("turn: server error 401: bad key"));
}

#[test]
fn a_setup_error_also_ends_with_done() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![]);
    let (run, events) = json_run(&ws, &mock, &["-C", "/no/such/dir", "hi"]);
    run.expect(2);
    assert_eq!(types(&events), ["error", "done"]);
    assert_eq!(events[1]["status"], "error");
}

#[test]
fn max_steps_status() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![bash("true")]);
    let (run, events) = json_run(&ws, &mock, &["--max-steps", "1", "hi"]);
    run.expect(3);
    assert_eq!(events.last().unwrap()["status"], "max_steps");
    assert_eq!(events.last().unwrap()["steps"], 1);
}

#[test]
fn an_interrupted_run_still_ends_with_done() {
    let ws = Workspace::new();
    let marker = ws.path("running");
    let mock = Mock::start(vec![
        bash(&format!("touch {}; sleep 30", marker.display())),
        Reply::Text("never"),
    ]);
    let mut command = turn(&ws, &mock);
    command.args(["--json", "go"]);
    let (run, _) = interrupt(command, || exists(&marker));
    let run = run.expect(130);
    let events = events(&run);
    events.iter().for_each(check_schema);
    // The file the interrupted command made is in the turn's checkpoint, for an undo.
    assert_eq!(
        types(&events),
        [
            "start",
            "tool_call",
            "tool_result",
            "checkpoint",
            "error",
            "done"
        ]
    );
    assert_eq!(events[2]["ok"], false);
    assert!(events[2]["output"]
        .as_str()
        .unwrap()
        .contains("interrupted"));
    assert_eq!(
        events[3]["files"],
        json!([{"path": "running", "change": "created"}])
    );
    assert_eq!(events[5]["status"], "interrupted");
}

#[test]
fn nothing_but_events_on_stdout() {
    let ws = Workspace::new();
    let sse = "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\",\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let mock = Mock::start(vec![Reply::Sse(sse.into())]);
    let (run, events) = json_run(&ws, &mock, &["hi"]);
    run.expect(0);
    assert_eq!(types(&events), ["start", "assistant", "done"]);
}

#[test]
fn a_fallback_and_a_repeating_model_follow_the_schema() {
    let ws = Workspace::new();
    let call = "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"false\"}}\n```";
    let refusal = Reply::Raw {
        status: 400,
        headers: vec![("Content-Type", "application/json".into())],
        body: json!({"error": {"message": "registry.ollama.ai/library/m does not support tools"}})
            .to_string(),
    };
    let mock = Mock::refusing_tools(vec![Reply::Text(call); 9], refusal);
    let (run, events) = json_run(&ws, &mock, &["go"]);
    run.expect(4);
    let kinds = types(&events);
    assert_eq!(kinds[..2], ["start", "fallback"]);
    assert_eq!(kinds[kinds.len() - 2..], ["error", "done"]);
    assert_eq!(events.last().unwrap()["status"], "repeating");
}

#[test]
fn done_usage_carries_cached_prompt_tokens_where_the_server_tells() {
    let ws = Workspace::new();
    let reply = |cached: u64| {
        Reply::Raw {
        status: 200,
        headers: vec![("Content-Type", "application/json".into())],
        body: json!({
            "choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 5},
            "timings": {"cache_n": cached, "prompt_n": 100 - cached}
        })
        .to_string(),
    }
    };
    let mock = Mock::start(vec![reply(80)]);
    let (_, events) = json_run(&ws, &mock, &["--no-stream", "hi"]);
    let done = events.last().unwrap();
    assert_eq!(
        done["usage"],
        json!({"prompt_tokens": 100, "completion_tokens": 5, "cached_tokens": 80})
    );
    // A server that does not tell: no cached_tokens at all, rather than a made-up 0.
    let mock = Mock::start(vec![Reply::Text("ok")]);
    let (_, events) = json_run(&ws, &mock, &["hi"]);
    assert!(events.last().unwrap()["usage"]
        .get("cached_tokens")
        .is_none());
}
