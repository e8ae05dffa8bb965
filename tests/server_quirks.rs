//! What real servers send and how turn copes: odd tool-call shapes, error bodies, retries,
//! timeouts, and a history that strict servers accept every time.

mod util;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use util::*;

fn sse(chunks: &[Value]) -> Reply {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    Reply::Sse(body)
}

fn call_chunk(call: Value) -> Value {
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
}

#[test]
fn object_arguments_and_missing_ids_are_repaired() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        sse(&[
            // llama.cpp-style: arguments as an object, no id; Ollama-style: a numeric id.
            call_chunk(
                json!({"index": 0, "function": {"name": "bash", "arguments": {"command": "echo one"}}}),
            ),
            call_chunk(
                json!({"index": 1, "id": 5, "function": {"name": "bash", "arguments": "{\"command\":\"echo two\"}"}}),
            ),
        ]),
        Reply::Text("ok"),
    ]);
    go(&ws, &mock, &["go"]).expect(0);
    let messages = mock.chats()[1].messages().clone();
    let calls = messages[2]["tool_calls"].as_array().unwrap();
    assert_eq!(
        calls[0]["function"]["arguments"],
        "{\"command\":\"echo one\"}"
    );
    for (i, call) in calls.iter().enumerate() {
        let id = call["id"].as_str().unwrap();
        assert!(
            id.starts_with("call_") && id.len() > 10,
            "generated id: {id}"
        );
        assert_eq!(messages[3 + i]["tool_call_id"], id);
    }
    assert_ne!(calls[0]["id"], calls[1]["id"]);
    assert_eq!(messages[3]["content"], "one\n");
    assert_eq!(messages[4]["content"], "two\n");
}

#[test]
fn bad_json_arguments_are_reported_to_the_model_and_the_history_stays_valid() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        sse(&[call_chunk(
            json!({"index": 0, "id": "c1", "function": {"name": "bash", "arguments": "{\"command\": \"ls"}}),
        )]),
        Reply::Text("sorry"),
    ]);
    go(&ws, &mock, &["go"]).expect(0);
    let messages = mock.chats()[1].messages().clone();
    assert_eq!(messages[2]["tool_calls"][0]["function"]["arguments"], "{}");
    let result = messages[3]["content"].as_str().unwrap();
    assert!(
        result.starts_with("Error: the arguments for bash were not valid JSON"),
        "{result}"
    );
    assert!(
        result.contains("{\"command\": \"ls"),
        "shows what was sent: {result}"
    );
}

#[test]
fn an_unknown_tool_is_an_error_for_the_model() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        calls(&[("launch_rocket", json!({}))]),
        Reply::Text("ok"),
    ]);
    let run = go(&ws, &mock, &["go"]).expect(0);
    let result = mock.chats()[1].last_content();
    assert!(
        result.starts_with("Error: Unknown tool: launch_rocket"),
        "{result}"
    );
    assert_has(&run.stderr, "[launch_rocket]");
}

#[test]
fn a_500_is_retried_then_succeeds() {
    let ws = Workspace::new();
    let error = |status| Reply::Raw {
        status,
        headers: vec![("Retry-After", "0".into())],
        body: "{\"error\":{\"message\":\"overloaded\"}}".into(),
    };
    let mock = Mock::start(vec![error(500), error(429), Reply::Text("finally")]);
    let run = go(&ws, &mock, &["go"]).expect(0);
    assert_eq!(run.stdout, "finally\n");
    assert_eq!(mock.chats().len(), 3);
    assert_has(
        &run.stderr,
        "server error 500: overloaded; retrying in 0s (try 2 of 3)",
    );
}

#[test]
fn retries_back_off_and_give_up_after_three_tries() {
    let ws = Workspace::new();
    let error = || Reply::Raw {
        status: 503,
        headers: vec![],
        body: "busy".into(),
    };
    let mock = Mock::start(vec![error(), error(), error(), Reply::Text("never")]);
    let start = Instant::now();
    let run = go(&ws, &mock, &["go"]).expect(1);
    assert!(
        start.elapsed() >= Duration::from_secs(3),
        "waits 1s then 2s"
    );
    assert_eq!(mock.chats().len(), 3);
    assert_has(&run.stderr, "turn: server error 503: busy");
}

#[test]
fn a_400_shows_the_servers_message_and_is_not_retried() {
    for body in [
        json!({"error": {"message": "model 'nope' does not exist", "type": "invalid_request_error"}}),
        json!({"object": "error", "message": "model 'nope' does not exist", "code": 400}),
        json!({"error": "model 'nope' does not exist"}),
    ] {
        let ws = Workspace::new();
        let reply = Reply::Raw {
            status: 400,
            headers: vec![],
            body: body.to_string(),
        };
        let mock = Mock::start(vec![reply, Reply::Text("never")]);
        let run = go(&ws, &mock, &["go"]).expect(1);
        assert_eq!(
            run.stderr.lines().next(),
            Some("turn: server error 400: model 'nope' does not exist")
        );
        assert_eq!(mock.chats().len(), 1);
    }
}

#[test]
fn a_json_error_where_sse_was_expected() {
    let ws = Workspace::new();
    let body = json!({"error": {"message": "context length exceeded"}}).to_string();
    let reply = Reply::Raw {
        status: 200,
        headers: vec![("Content-Type", "application/json".into())],
        body,
    };
    let mock = Mock::start(vec![reply]);
    let run = go(&ws, &mock, &["go"]).expect(1);
    // An overflow: with nothing to compact in the first request, it ends the run at once.
    assert_has(&run.stderr, "context length exceeded");
    assert_eq!(mock.chats().len(), 1);
}

#[test]
fn an_error_event_inside_the_stream() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Sse(
        "data: {\"error\":{\"message\":\"rate limited mid-stream\"}}\n\n".into(),
    )]);
    let run = go(&ws, &mock, &["go"]).expect(1);
    assert_has(&run.stderr, "server error: rate limited mid-stream");
}

#[test]
fn a_cache_that_ran_out_of_room_mid_reply_is_tried_again_then_ends_the_run() {
    // llama-server, when its slots' shared cache is full while it generates (measured: a
    // reply turn had cut as a loop was still being generated beside the next request).
    let full = || {
        Reply::Sse(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Le\"}}]}\n\n\
             data: {\"error\":{\"code\":500,\"message\":\"Context size has been exceeded.\",\"type\":\"server_error\"}}\n\n"
                .into(),
        )
    };
    let ws = Workspace::new();
    let mock = Mock::start(vec![full(), Reply::Text("room again")]);
    let run = go(&ws, &mock, &["go"]).expect(0);
    assert_eq!(run.stdout.lines().last(), Some("room again"));
    assert_has(
        &run.stderr,
        "server error: Context size has been exceeded. (its cache is shared with other requests); retrying in 1s (try 2 of 3)",
    );
    // Still full after three tries: the error ends the run.
    let mock = Mock::start(vec![full(), full(), full(), Reply::Text("never")]);
    let run = go(&ws, &mock, &["go"]).expect(1);
    assert_eq!(mock.chats().len(), 3);
    assert_has(&run.stderr, "server error: Context size has been exceeded.");
}

#[test]
fn a_server_that_ignores_stream_true_still_works() {
    let ws = Workspace::new();
    let body = json!({"choices": [{"message": {"role": "assistant", "content": "whole"}, "finish_reason": "stop"}]});
    let reply = Reply::Raw {
        status: 200,
        headers: vec![("Content-Type", "application/json".into())],
        body: body.to_string(),
    };
    let mock = Mock::start(vec![reply]);
    assert_eq!(go(&ws, &mock, &["go"]).expect(0).stdout, "whole\n");
}

#[test]
fn keep_alive_comments_and_usage_chunks_are_skipped() {
    let ws = Workspace::new();
    let body = ": ping\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n: ping\n\n\
                data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
                data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n";
    let mock = Mock::start(vec![Reply::Sse(body.into())]);
    let run = go(&ws, &mock, &["go"]).expect(0);
    assert_eq!(run.stdout, "hi\n");
}

#[test]
fn a_stream_that_is_empty_or_breaks_off_is_an_error() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Sse(String::new())]);
    let run = go(&ws, &mock, &["go"]).expect(1);
    assert_has(&run.stderr, "the reply stream was empty");
    let cut = "data: {\"choices\":[{\"delta\":{\"content\":\"partial\"}}]}\n\n";
    let mock = Mock::start(vec![Reply::Sse(cut.into())]);
    let run = go(&ws, &mock, &["go"]).expect(1);
    assert!(run.stdout.starts_with("partial"));
    assert_has(&run.stderr, "ended before the reply was complete");
}

#[test]
fn connection_refused_says_where_and_hints_at_the_base_url() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![]);
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut command = turn(&ws, &mock);
    command
        .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .arg("go");
    let run = run(command).expect(1);
    assert_has(
        &run.stderr,
        &format!("turn: cannot reach http://127.0.0.1:{port}/v1/chat/completions"),
    );
    assert_has(
        &run.stderr,
        "hint: nothing answers there: is the server running?",
    );
}

#[test]
fn a_silent_server_times_out() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Stall(
        Duration::from_secs(5),
        Box::new(Reply::Text("late")),
    )]);
    let start = Instant::now();
    let run = go(&ws, &mock, &["--request-timeout", "1", "go"]).expect(1);
    assert!(start.elapsed() < Duration::from_secs(4));
    assert_has(&run.stderr, "the server sent nothing for 1s");
}

#[test]
fn the_model_is_taken_from_the_server_when_it_has_just_one() {
    let ws = Workspace::new();
    let mock = Mock::with_models(
        vec![Reply::Text("ok")],
        json!({"data": [{"id": "only-one"}]}),
    );
    let mut command = turn(&ws, &mock);
    command.env_remove("TURN_MODEL").arg("go");
    run(command).expect(0);
    assert_eq!(mock.chats()[0].body["model"], "only-one");
}

#[test]
fn several_models_and_none_chosen_is_a_usage_error_listing_them() {
    let ws = Workspace::new();
    let mock = Mock::with_models(vec![], json!({"data": [{"id": "a"}, {"id": "b"}]}));
    let mut command = turn(&ws, &mock);
    command.env_remove("TURN_MODEL").arg("go");
    let run = run(command).expect(2);
    assert_has(
        &run.stderr,
        "no model given (-m or TURN_MODEL) and the server has several: a, b",
    );
}
