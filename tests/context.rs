//! Small context windows: the real binary against a mock that charges tokens for every request
//! (its compact JSON bytes / 4), knows a window, and answers a request over it the way each
//! server does: llama-server's 400, vLLM's, OpenAI's, an error inside a 200 stream, or
//! Ollama's silent cut. Long tasks finish, nothing known to be too large is sent, the task
//! stays in every request, sessions resume compacted, and replies are bounded.

mod util;

use serde_json::{json, Value};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use util::*;

/// How the mock refuses a request larger than its window.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Refusal {
    /// llama-server: 400, `exceed_context_size_error` with `n_ctx`.
    Llama,
    /// vLLM: 400, `{"object": "error", ...}`, "This model's maximum context length is N".
    Vllm,
    /// OpenAI: 400, `context_length_exceeded`.
    OpenAi,
    /// 200 and an SSE error event with llama-server's message.
    InStream,
    /// Ollama: no error; the front of the prompt is dropped and the count says so.
    Truncate,
}

/// One scripted answer to a request with tools.
#[derive(Clone)]
enum Step {
    Bash(String),
    Text(&'static str),
    /// A tool call whose arguments then stream newlines without end.
    EndlessArguments,
    /// A ```json block in the text, then newlines without end.
    EndlessText,
}

#[derive(Clone)]
struct Config {
    window: u64,
    /// The window the error messages name, when it is not the real one.
    says: Option<u64>,
    refusal: Refusal,
    /// GET /v1/models.
    models: Value,
    /// Other GETs (path, body), e.g. /props.
    gets: Vec<(&'static str, Value)>,
    /// GET /api/ps once a chat request has been answered (Ollama loads on first use).
    ps_loaded: Option<Value>,
    script: Vec<Step>,
    refuse_stream_options: bool,
    refuse_max_tokens: bool,
}

impl Config {
    fn new(window: u64, script: Vec<Step>) -> Config {
        Config {
            window,
            says: None,
            refusal: Refusal::Llama,
            models: json!({"object": "list", "data": [{"id": "mock-model", "object": "model"}]}),
            gets: vec![],
            ps_loaded: None,
            script,
            refuse_stream_options: false,
            refuse_max_tokens: false,
        }
    }

    /// A llama-server that says its window under /props.
    fn llama_server(window: u64, script: Vec<Step>) -> Config {
        let mut config = Config::new(window, script);
        config.models = json!({"object": "list", "data": [{"id": "mock-model", "object": "model", "owned_by": "llamacpp", "meta": {"n_ctx_train": 32768}}]});
        config.gets = vec![(
            "/props",
            json!({"default_generation_settings": {"n_ctx": window}, "total_slots": 1}),
        )];
        config
    }
}

/// A chat request as the mock saw it.
#[derive(Clone, Debug)]
struct Seen {
    body: Value,
    /// What the mock charged for it.
    tokens: u64,
    refused: bool,
}

impl Seen {
    fn summary(&self) -> bool {
        self.body.get("tools").is_none()
    }

    fn max_tokens(&self) -> u64 {
        self.body["max_tokens"]
            .as_u64()
            .or(self.body["max_completion_tokens"].as_u64())
            .unwrap_or(0)
    }

    fn text(&self) -> String {
        self.body["messages"].to_string()
    }
}

struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    gets: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(config: Config) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let gets = Arc::new(Mutex::new(Vec::new()));
        let step = Arc::new(AtomicUsize::new(0));
        let (log, get_log) = (seen.clone(), gets.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (config, log, get_log, step) =
                    (config.clone(), log.clone(), get_log.clone(), step.clone());
                std::thread::spawn(move || serve(stream, &config, &log, &get_log, &step));
            }
        });
        Server { url, seen, gets }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn gets(&self) -> Vec<String> {
        self.gets.lock().unwrap().clone()
    }
}

/// Compact JSON bytes / 4 of the messages and tools: what the mock charges.
fn charge(body: &Value) -> u64 {
    let bytes =
        body["messages"].to_string().len() + body.get("tools").map_or(0, |t| t.to_string().len());
    bytes.div_ceil(4) as u64
}

fn serve(
    stream: TcpStream,
    config: &Config,
    log: &Mutex<Vec<Seen>>,
    get_log: &Mutex<Vec<String>>,
    step: &AtomicUsize,
) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    if request.method == "GET" {
        get_log.lock().unwrap().push(request.path.clone());
        let answered = log.lock().unwrap().iter().any(|s| !s.refused);
        let body = match request.path.as_str() {
            "/v1/models" => Some(config.models.clone()),
            "/api/ps" if answered && config.ps_loaded.is_some() => config.ps_loaded.clone(),
            path => config
                .gets
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, b)| b.clone()),
        };
        return match body {
            Some(body) => write_json(stream, 200, &body),
            None => write_json(stream, 404, &json!({"error": {"message": "no such route"}})),
        };
    }
    let body = request.body;
    let stream_wanted = body["stream"] == json!(true);
    if let Err(why) = check(&body) {
        return write_json(stream, 400, &json!({"error": {"message": why}}));
    }
    if config.refuse_stream_options && body.get("stream_options").is_some() {
        let message = "Unrecognized request argument supplied: stream_options";
        return write_json(stream, 400, &json!({"error": {"message": message}}));
    }
    if config.refuse_max_tokens && body.get("max_tokens").is_some() {
        let message = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.";
        return write_json(
            stream,
            400,
            &json!({"error": {"message": message, "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}),
        );
    }
    let tokens = charge(&body);
    let budget = body["max_tokens"]
        .as_u64()
        .or(body["max_completion_tokens"].as_u64())
        .unwrap_or(0);
    let (window, over) = (config.says.unwrap_or(config.window), tokens > config.window);
    let refused = over && config.refusal != Refusal::Truncate;
    log.lock().unwrap().push(Seen {
        body: body.clone(),
        tokens,
        refused,
    });
    if refused {
        let llama = format!(
            "request ({tokens} tokens) exceeds the available context size ({window} tokens)"
        );
        let error = match config.refusal {
            Refusal::Llama => {
                json!({"error": {"code": 400, "message": llama, "type": "exceed_context_size_error", "n_prompt_tokens": tokens, "n_ctx": window}})
            }
            Refusal::Vllm => {
                let message = format!("This model's maximum context length is {window} tokens. However, you requested {} tokens ({tokens} in the messages, {budget} in the completion). Please reduce the length of the messages or completion.", tokens + budget);
                json!({"object": "error", "message": message, "type": "BadRequestError", "param": null, "code": 400})
            }
            Refusal::OpenAi => {
                let message = format!("This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages.");
                json!({"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
            }
            Refusal::InStream => {
                let event = json!({"error": {"code": 400, "message": llama, "type": "exceed_context_size_error"}});
                return write_sse(stream, &format!("data: {event}\n\n"));
            }
            Refusal::Truncate => unreachable!(),
        };
        return write_json(stream, 400, &error);
    }
    let prompt_tokens = tokens.min(config.window);
    if body.get("tools").is_none() {
        let text = "SUMMARY: ran the steps so far; the task goes on.";
        return reply(stream, stream_wanted, text_message(text), prompt_tokens);
    }
    let n = step.fetch_add(1, Ordering::SeqCst);
    let next = config
        .script
        .get(n)
        .cloned()
        .unwrap_or(Step::Text("all done"));
    match next {
        Step::Bash(command) => {
            let call = json!({"id": format!("call_{n}"), "type": "function", "function": {"name": "bash", "arguments": json!({"command": command}).to_string()}});
            let message = json!({"role": "assistant", "content": null, "tool_calls": [call]});
            reply(stream, stream_wanted, message, prompt_tokens)
        }
        Step::Text(text) => reply(stream, stream_wanted, text_message(text), prompt_tokens),
        Step::EndlessArguments => {
            let start = json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": format!("call_{n}"), "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"touch cut-call-ran"}}]}}]});
            let more = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\\n"}}]}}]});
            endless(stream, &start, &more)
        }
        Step::EndlessText => {
            let start = json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"touch cut-call-ran\"}}\n```"}}]});
            let more = json!({"choices": [{"index": 0, "delta": {"content": "\n\n"}}]});
            endless(stream, &start, &more)
        }
    }
}

fn text_message(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

fn write_json(mut stream: TcpStream, status: u16, body: &Value) {
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(format!("{head}{body}").as_bytes());
}

fn write_sse(mut stream: TcpStream, body: &str) {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    let _ = stream.write_all(format!("{head}{body}").as_bytes());
}

/// A whole response or a stream holding `message`, with the usage the mock counted.
fn reply(stream: TcpStream, stream_wanted: bool, message: Value, prompt_tokens: u64) {
    let usage = json!({"prompt_tokens": prompt_tokens, "completion_tokens": 20, "total_tokens": prompt_tokens + 20});
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    if !stream_wanted {
        let body = json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage});
        return write_json(stream, 200, &body);
    }
    let mut delta = message.clone();
    if let Some(calls) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for (i, call) in calls.iter_mut().enumerate() {
            call["index"] = json!(i);
        }
    }
    let events = [
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
        json!({"choices": [], "usage": usage}),
    ];
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    write_sse(stream, &body);
}

/// `start`, then `more` over and over until the client hangs up (or a generous cap).
fn endless(mut stream: TcpStream, start: &Value, more: &Value) {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    if stream
        .write_all(format!("{head}data: {start}\n\n").as_bytes())
        .is_err()
    {
        return;
    }
    let more = format!("data: {more}\n\n");
    for _ in 0..1_000_000 {
        if stream.write_all(more.as_bytes()).is_err() {
            return;
        }
    }
}

/// A command that prints 2400 bytes: 48 lines of 50.
fn prints_2400(step: usize) -> String {
    format!("yes 'step {step:02}: the quick brown fox jumps over the lazy do' | head -n 48")
}

/// `n` steps of `prints_2400`, then "all done".
fn long_task(n: usize) -> Vec<Step> {
    (0..n).map(|i| Step::Bash(prints_2400(i))).collect()
}

const TASK: &str = "TASK-7f3a: run the fourteen commands and report";

fn turn_at(ws: &Workspace, server: &Server, args: &[&str]) -> Run {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_turn"));
    command
        .current_dir(&ws.dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &ws.dir)
        .env("XDG_STATE_HOME", ws.state())
        .env("OPENAI_BASE_URL", &server.url)
        .env("TURN_MODEL", "mock-model")
        .args(args);
    run(command)
}

fn events(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// Every request turn sent fit the window, reply budget included, and carried the task; the
/// history was kept small enough to leave the reply its whole budget (a quarter of the window).
#[track_caller]
fn all_fit(seen: &[Seen], window: u64) {
    for (i, s) in seen.iter().enumerate() {
        assert!(
            s.summary() || s.max_tokens() == window / 4,
            "request {i}: the reply budget was squeezed to {}",
            s.max_tokens()
        );
        assert!(
            s.tokens + s.max_tokens() <= window,
            "request {i}: {} tokens + {} for the reply, over {window}",
            s.tokens,
            s.max_tokens()
        );
        assert!(s.text().contains(TASK), "request {i} lost the task");
    }
}

#[test]
fn a_long_task_finishes_in_a_4k_window_learned_from_props() {
    let ws = Workspace::new();
    let server = Server::start(Config::llama_server(4096, long_task(14)));
    let run = turn_at(&ws, &server, &["--json", TASK]).expect(0);
    let events = events(&run);
    assert_eq!(of_type(&events, "start")[0]["context"], 4096);
    let seen = server.seen();
    assert_eq!(
        seen.iter().filter(|s| !s.summary()).count(),
        15,
        "14 steps and the answer"
    );
    assert!(seen.iter().all(|s| !s.refused), "nothing refused");
    all_fit(&seen, 4096);
    let compacted = of_type(&events, "compacted");
    assert!(!compacted.is_empty(), "the history had to shrink");
    for event in &compacted {
        assert!(event["after"].as_u64() < event["before"].as_u64());
        assert_eq!(event["window"], 4096);
    }
    assert_has(&run.stderr, "context: old tool results elided");
    assert_eq!(of_type(&events, "done")[0]["text"], "all done");
    assert!(server.gets().contains(&"/props".to_string()));
    // The last request still has the latest result whole, and stubs for old ones.
    let last = seen.iter().rfind(|s| !s.summary()).unwrap().text();
    assert!(last.contains("step 13: the quick brown fox"));
    assert!(last.contains("elided to fit the context window"));
}

#[test]
fn with_the_window_given_nothing_is_sent_over_it() {
    for flags in [
        &["--context", "4096"][..],
        &["--context", "4096", "--no-stream"],
    ] {
        let ws = Workspace::new();
        // A server that says nothing of its window, and refuses what does not fit.
        let server = Server::start(Config::new(4096, long_task(14)));
        let mut args = flags.to_vec();
        args.push(TASK);
        let run = turn_at(&ws, &server, &args).expect(0);
        assert_has(
            &run.stderr,
            "turn: context: old tool results elided, about ",
        );
        assert_eq!(run.stdout.lines().last(), Some("all done"));
        let seen = server.seen();
        assert!(seen.iter().all(|s| !s.refused), "{flags:?}");
        all_fit(&seen, 4096);
    }
}

#[test]
fn a_longer_task_is_summarized_and_still_fits() {
    let ws = Workspace::new();
    let server = Server::start(Config::llama_server(4096, long_task(40)));
    let run = turn_at(&ws, &server, &["--json", "--max-steps", "60", TASK]).expect(0);
    let events = events(&run);
    let seen = server.seen();
    all_fit(&seen, 4096);
    let summaries: Vec<&Seen> = seen.iter().filter(|s| s.summary()).collect();
    assert!(
        !summaries.is_empty(),
        "elision alone is not enough for 40 steps"
    );
    assert!(of_type(&events, "compacted")
        .iter()
        .any(|e| e["stage"] == "summary"));
    // The request after a summary: system, the task verbatim, the summary, recent steps.
    let after = seen
        .iter()
        .skip_while(|s| !s.summary())
        .find(|s| !s.summary())
        .unwrap();
    let messages = after.body["messages"].as_array().unwrap();
    assert_eq!(messages[1], json!({"role": "user", "content": TASK}));
    let summary = messages[2]["content"].as_str().unwrap();
    assert!(summary.starts_with("[turn] ") && summary.contains("SUMMARY: ran the steps"));
    assert_eq!(of_type(&events, "done")[0]["text"], "all done");
    // The summary request asked for a bounded reply and carried the work as text.
    assert!(summaries[0].max_tokens() > 0);
    assert!(summaries[0].text().contains("## Result"));
}

#[test]
fn every_overflow_shape_is_learned_from_and_recovered() {
    for refusal in [
        Refusal::Llama,
        Refusal::Vllm,
        Refusal::OpenAi,
        Refusal::InStream,
    ] {
        let ws = Workspace::new();
        let mut config = Config::new(4096, long_task(14));
        config.refusal = refusal;
        let server = Server::start(config);
        let run = turn_at(&ws, &server, &[TASK]);
        let run = run.expect(0);
        let seen = server.seen();
        let refused: Vec<usize> = (0..seen.len()).filter(|&i| seen[i].refused).collect();
        assert_eq!(
            refused.len(),
            1,
            "{refusal:?}: one refusal teaches the window"
        );
        all_fit(&seen[refused[0] + 1..], 4096);
        assert_has(
            &run.stderr,
            "compacting to fit 4096 tokens and trying again",
        );
        assert_eq!(run.stdout.trim_end().lines().last(), Some("all done"));
    }
}

#[test]
fn a_server_that_keeps_refusing_is_a_clear_error() {
    let ws = Workspace::new();
    // The server names a window larger than the one it enforces, so compacting to what it
    // says never satisfies it.
    let mut config = Config::new(2600, long_task(14));
    config.says = Some(4096);
    config.refusal = Refusal::OpenAi;
    let server = Server::start(config);
    let run = turn_at(&ws, &server, &[TASK]).expect(1);
    assert_has(
        &run.stderr,
        "turn: the request still does not fit the context window of 4096 tokens after 3 compactions",
    );
    assert_has(&run.stderr, "hint: start the server with a larger context");
    // The run ends on a refusal and three more tries of it (an earlier refusal that one
    // compaction answered does not count against the three).
    let seen = server.seen();
    let last = seen.iter().rev().take_while(|s| s.refused).count();
    assert_eq!(last, 4, "the last refusal and three more tries");
    assert!(seen.len() > 4 && !seen[seen.len() - 5].refused);
}

#[test]
fn a_window_of_50_tokens_is_a_clear_error_at_once() {
    let ws = Workspace::new();
    let server = Server::start(Config::new(50, long_task(1)));
    let run = turn_at(&ws, &server, &["--context", "50", TASK]).expect(1);
    assert_has(
        &run.stderr,
        "turn: the context window of 50 tokens is too small",
    );
    let need: u64 = run
        .stderr
        .split("take about ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(need > 500, "names what is needed: {}", run.stderr);
    assert!(server.seen().is_empty(), "no request was sent");
    // Learned from the server's first refusal, it is the same error, with no retry loop.
    let server = Server::start(Config::llama_server(50, long_task(1)));
    let mut config = Config::new(50, long_task(1));
    config.refusal = Refusal::Llama;
    let refusing = Server::start(config);
    for (server, requests) in [(&server, 0), (&refusing, 1)] {
        let run = turn_at(&ws, server, &[TASK]).expect(1);
        assert_has(&run.stderr, "the context window of 50 tokens is too small");
        assert_eq!(server.seen().len(), requests);
    }
}

#[test]
fn a_resumed_compacted_session_fits() {
    let ws = Workspace::new();
    let server = Server::start(Config::llama_server(4096, long_task(30)));
    let args = ["--session", "s.jsonl", "--max-steps", "60", TASK];
    turn_at(&ws, &server, &args).expect(0);
    let text = ws.read("s.jsonl");
    let compactions = text
        .lines()
        .filter(|l| l.starts_with("{\"compacted\""))
        .count();
    assert!(compactions > 0);
    let messages = text.lines().filter(|l| l.starts_with("{\"role\"")).count();
    assert!(
        messages >= 61,
        "every message stays in the file: {messages}"
    );
    // What a resume must load: the last compacted history and the messages after it.
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .rposition(|l| l.starts_with("{\"compacted\""))
        .unwrap();
    let last: Value = serde_json::from_str(lines[at]).unwrap();
    let mut expected = last["compacted"]["history"].as_array().unwrap().clone();
    expected.extend(
        lines[at + 1..]
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()),
    );

    let again = Server::start(Config::llama_server(4096, vec![]));
    let run = turn_at(&ws, &again, &["--session", "s.jsonl", "and now?"]).expect(0);
    assert_has(&run.stderr, "resuming");
    let seen = again.seen();
    assert_eq!(seen.len(), 1);
    all_fit(&seen, 4096);
    let sent = seen[0].body["messages"].as_array().unwrap();
    assert!(
        sent.len() < messages,
        "the compacted state is resumed, not the whole history"
    );
    // The same messages, though a fresh count may stub another old result.
    let shape = |messages: &[Value]| -> Vec<String> {
        messages
            .iter()
            .map(|m| format!("{} {} {}", m["role"], m["tool_call_id"], m["tool_calls"]))
            .collect()
    };
    assert_eq!(shape(&sent[1..sent.len() - 1]), shape(&expected));
    assert_eq!(sent[1]["content"], TASK);
    assert_eq!(sent.last().unwrap()["content"], "and now?");
}

#[test]
fn an_old_session_file_loads_as_before() {
    let ws = Workspace::new();
    ws.write(
        "old.jsonl",
        &format!(
            "{}\n{}\n",
            json!({"role": "user", "content": TASK}),
            json!({"role": "assistant", "content": "hello"})
        ),
    );
    let server = Server::start(Config::llama_server(4096, vec![]));
    turn_at(&ws, &server, &["--session", "old.jsonl", "more"]).expect(0);
    let sent = server.seen()[0].body["messages"].clone();
    assert_eq!(sent[1]["content"], TASK);
    assert_eq!(sent[2]["content"], "hello");
    assert_eq!(sent[3]["content"], "more");
}

#[test]
fn an_oversized_result_is_cut_to_fit_whatever_max_output_says() {
    let ws = Workspace::new();
    let script = vec![Step::Bash(
        "yes 'a long line of output, again and again' | head -n 1000".into(),
    )];
    let server = Server::start(Config::llama_server(4096, script));
    let run = turn_at(&ws, &server, &["--json", "--max-output", "1000000", TASK]).expect(0);
    let seen = server.seen();
    all_fit(&seen, 4096);
    assert!(seen.iter().all(|s| !s.summary()), "cut, not summarized");
    let result = &seen[1].body["messages"][3]["content"];
    assert!(
        result.as_str().unwrap().contains("chars elided"),
        "{result}"
    );
    let events = events(&run);
    assert!(
        of_type(&events, "tool_result")[0]["elided"]
            .as_u64()
            .unwrap()
            > 30_000
    );
}

#[test]
fn ollamas_silent_cut_is_noticed_once_and_becomes_the_window() {
    let ws = Workspace::new();
    let mut config = Config::new(4096, long_task(14));
    config.refusal = Refusal::Truncate;
    config.models = json!({"object": "list", "data": [{"id": "mock-model", "object": "model", "owned_by": "library"}]});
    config.gets = vec![("/api/ps", json!({"models": []}))]; // never says
    let server = Server::start(config);
    let run = turn_at(&ws, &server, &[TASK]).expect(0);
    assert_eq!(
        run.stderr.matches("OLLAMA_CONTEXT_LENGTH").count(),
        1,
        "{}",
        run.stderr
    );
    let seen = server.seen();
    let over = seen.iter().filter(|s| s.tokens > 4096).count();
    assert!(
        over <= 2,
        "a cut is noticed quickly: {over} requests were cut"
    );
    let noticed = seen.iter().rposition(|s| s.tokens > 4096).unwrap();
    all_fit(&seen[noticed + 1..], 4096);
}

#[test]
fn ollamas_window_is_asked_again_once_the_model_is_loaded() {
    let ws = Workspace::new();
    let mut config = Config::new(4096, long_task(14));
    config.refusal = Refusal::Truncate;
    config.models = json!({"object": "list", "data": [{"id": "mock-model:latest", "object": "model", "owned_by": "library"}]});
    config.gets = vec![("/api/ps", json!({"models": []}))];
    config.ps_loaded = Some(
        json!({"models": [{"name": "mock-model:latest", "model": "mock-model:latest", "context_length": 4096}]}),
    );
    let server = Server::start(config);
    let run = turn_at(&ws, &server, &["--json", TASK]).expect(0);
    assert_eq!(of_type(&events(&run), "start")[0]["context"], Value::Null);
    assert_eq!(server.gets().iter().filter(|p| *p == "/api/ps").count(), 2);
    let seen = server.seen();
    assert!(seen.iter().all(|s| s.tokens <= 4096), "never cut");
    all_fit(&seen[1..], 4096);
}

#[test]
fn other_servers_say_their_window_too() {
    let cases = [
        (
            json!({"object": "list", "data": [{"id": "mock-model", "object": "model", "owned_by": "vllm", "max_model_len": 8192}]}),
            vec![],
            json!(8192),
        ),
        (
            json!({"data": [{"id": "mock-model", "object": "model", "owned_by": "organization_owner"}]}),
            vec![(
                "/api/v0/models",
                json!({"data": [{"id": "mock-model", "state": "loaded", "max_context_length": 32768, "loaded_context_length": 16384}]}),
            )],
            json!(16384),
        ),
        (
            json!({"data": [{"id": "mock-model", "object": "model", "owned_by": "library"}]}),
            vec![(
                "/api/ps",
                json!({"models": [{"name": "mock-model", "context_length": 2048}]}),
            )],
            json!(2048),
        ),
        (
            json!({"data": [{"id": "mock-model", "object": "model", "owned_by": "system"}]}),
            vec![],
            Value::Null,
        ),
    ];
    for (models, gets, window) in cases {
        let ws = Workspace::new();
        let mut config = Config::new(100_000, vec![]);
        config.models = models;
        config.gets = gets;
        let server = Server::start(config);
        let run = turn_at(&ws, &server, &["--json", "hi"]).expect(0);
        assert_eq!(of_type(&events(&run), "start")[0]["context"], window);
        let budget = server.seen()[0].max_tokens();
        let expected = window.as_u64().map_or(4096, |w| w / 4);
        assert_eq!(budget, expected, "the reply budget follows the window");
    }
}

#[test]
fn refused_optional_fields_are_left_out() {
    let ws = Workspace::new();
    let mut config = Config::new(100_000, long_task(1));
    config.refuse_stream_options = true;
    config.refuse_max_tokens = true;
    let server = Server::start(config);
    let run = turn_at(&ws, &server, &["--max-tokens", "777", "go"]).expect(0);
    assert_eq!(run.stdout, "all done\n");
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "only accepted requests are charged");
    for s in &seen {
        assert!(s.body.get("stream_options").is_none());
        assert_eq!(s.body["max_completion_tokens"], 777);
    }
}

#[test]
fn endless_newlines_are_cut_and_the_cut_call_is_not_run() {
    for step in [Step::EndlessArguments, Step::EndlessText] {
        let ws = Workspace::new();
        let server = Server::start(Config::new(100_000, vec![step.clone()]));
        let run = turn_at(&ws, &server, &["--context", "8192", TASK]).expect(0);
        assert_has(&run.stderr, "repeated the same lines over and over");
        assert!(
            !exists(&ws.path("cut-call-ran")),
            "the cut call was not run"
        );
        let seen = server.seen();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].max_tokens(), 2048, "a reply budget is sent");
        let last = &seen[1].body["messages"].as_array().unwrap();
        let told = last.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(told.contains("Your last reply was cut short"), "{told}");
        assert_eq!(run.stdout.lines().last(), Some("all done"));
    }
}

#[test]
fn a_reply_cut_at_its_budget_runs_no_cut_call() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        Reply::Sse(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\": \\\"touch ran\"}}]}}]}\n\n\
             data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"
                .into(),
        ),
        Reply::Text("ok"),
    ]);
    let run = go(&ws, &mock, &["--max-tokens", "64", "go"]).expect(0);
    assert_has(&run.stderr, "cut off at its token limit");
    assert!(!exists(&ws.path("ran")));
    let chats = mock.chats();
    assert_eq!(chats[0].body["max_tokens"], 64);
    let result = chats[1].last_content();
    assert!(result.starts_with("Error: not run."), "{result}");
    assert_eq!(run.stdout, "ok\n");
}
