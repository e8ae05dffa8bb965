//! Test harness: a temp workspace per test, a scripted OpenAI-compatible mock server on
//! 127.0.0.1 (ephemeral port, one thread), and a runner for the real `turn` binary.
//!
//! The mock checks every history the way a strict server does and answers 400 when one is
//! invalid, so a test fails whenever turn sends something OpenAI would refuse.
#![allow(dead_code, unused_macros)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One scripted answer to a POST /chat/completions.
#[derive(Clone)]
pub enum Reply {
    /// The assistant says this, streamed in small pieces or whole as the request asks.
    Text(&'static str),
    /// The assistant calls these tools: (name, arguments JSON text).
    Calls(Vec<(&'static str, String)>),
    /// Exactly this status, headers and body.
    Raw {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// This SSE body as it is (for odd server behaviour).
    Sse(String),
    /// Waits this long before answering with the next reply in the script.
    Stall(Duration, Box<Reply>),
}

pub fn calls(list: &[(&'static str, Value)]) -> Reply {
    Reply::Calls(
        list.iter()
            .map(|(name, args)| (*name, args.to_string()))
            .collect(),
    )
}

pub fn bash(command: &str) -> Reply {
    calls(&[("bash", json!({ "command": command }))])
}

/// A request the mock received.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn messages(&self) -> &Vec<Value> {
        self.body["messages"].as_array().expect("messages")
    }

    /// The roles of the messages sent, in order.
    pub fn roles(&self) -> Vec<&str> {
        self.messages()
            .iter()
            .map(|m| m["role"].as_str().unwrap_or_default())
            .collect()
    }

    /// The content of the last message (usually the tool result being answered).
    pub fn last_content(&self) -> String {
        self.messages().last().unwrap()["content"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

pub struct Mock {
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Mock {
    /// Serves `script` in order, one reply per chat request; GET /models lists `mock-model`.
    pub fn start(script: Vec<Reply>) -> Mock {
        Mock::with_models(
            script,
            json!({"object": "list", "data": [{"id": "mock-model", "object": "model"}]}),
        )
    }

    pub fn with_models(script: Vec<Reply>, models: Value) -> Mock {
        Mock::serve(script, models, None, false)
    }

    /// A server that answers `refusal` to every chat request that carries `tools` (as Ollama,
    /// llama-server without --jinja or vLLM without auto tool choice do), and serves `script`
    /// to the others.
    pub fn refusing_tools(script: Vec<Reply>, refusal: Reply) -> Mock {
        Mock::serve(
            script,
            json!({"object": "list", "data": [{"id": "mock-model", "object": "model"}]}),
            Some(refusal),
            false,
        )
    }

    /// Like `start`, but first refusing what llama-server refuses before it runs the model,
    /// with its status and words: arguments that do not parse as JSON get a 500 "Failed to
    /// parse tool call arguments as JSON" (llama.cpp's `func_args_not_string`).
    pub fn llama_server(script: Vec<Reply>) -> Mock {
        let models = json!({"object": "list", "data": [{"id": "mock-model", "object": "model"}]});
        Mock::serve(script, models, None, true)
    }

    fn serve(script: Vec<Reply>, models: Value, refusal: Option<Reply>, llama: bool) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        let script = Arc::new(Mutex::new(script.into_iter()));
        std::thread::spawn(move || {
            // A thread per connection, so a stalled reply does not hold up the next request.
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, script, models) = (log.clone(), script.clone(), models.clone());
                let refusal = refusal.clone();
                std::thread::spawn(move || {
                    let Some(request) = read_request(&stream) else {
                        return;
                    };
                    log.lock().unwrap().push(request.clone());
                    let reply = match (request.method.as_str(), request.path.as_str()) {
                        ("GET", "/v1/models") => json_reply(200, &models),
                        ("POST", "/v1/chat/completions")
                            if llama && llama_check(&request.body).is_err() =>
                        {
                            let why = llama_check(&request.body).unwrap_err();
                            json_reply(
                                500,
                                &json!({"error": {"code": 500, "message": why, "type": "server_error"}}),
                            )
                        }
                        ("POST", "/v1/chat/completions") => match check(&request.body) {
                            Err(why) => json_reply(
                                400,
                                &json!({"error": {"message": why, "type": "invalid_request_error"}}),
                            ),
                            Ok(()) if refusal.is_some() && request.body.get("tools").is_some() => {
                                refusal.unwrap()
                            }
                            Ok(()) => script.lock().unwrap().next().unwrap_or(Reply::Raw {
                                status: 500,
                                headers: vec![],
                                body: "{\"error\":{\"message\":\"mock script exhausted\"}}".into(),
                            }),
                        },
                        _ => json_reply(404, &json!({"error": {"message": "no such route"}})),
                    };
                    let stream_wanted = request.body["stream"] == json!(true);
                    let _ = respond(stream, reply, stream_wanted);
                });
            }
        });
        Mock { url, received }
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// The chat requests only.
    pub fn chats(&self) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .collect()
    }
}

fn json_reply(status: u16, body: &Value) -> Reply {
    Reply::Raw {
        status,
        headers: vec![("Content-Type", "application/json".into())],
        body: body.to_string(),
    }
}

pub fn read_request(stream: &TcpStream) -> Option<Received> {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Received {
        method,
        path,
        headers,
        body,
    })
}

/// What llama-server refuses while it renders the history with a chat template.
fn llama_check(body: &Value) -> Result<(), String> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    for message in &messages {
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for call in calls {
            if let Some(args) = call["function"]["arguments"].as_str() {
                serde_json::from_str::<Value>(args).map_err(|e| {
                    format!("Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] {e}")
                })?;
            }
        }
    }
    Ok(())
}

/// Strict-server checks on a chat request, as OpenAI applies them.
pub fn check(body: &Value) -> Result<(), String> {
    let messages = body["messages"]
        .as_array()
        .ok_or("messages must be an array")?;
    if body["model"].as_str().unwrap_or_default().is_empty() {
        return Err("model is required".into());
    }
    let tools = match body.get("tools") {
        None => &[][..],
        Some(tools) => tools.as_array().ok_or("tools must be an array")?,
    };
    for tool in tools {
        if tool["type"] != "function" || tool["function"]["name"].as_str().is_none() {
            return Err(format!("invalid tool spec: {tool}"));
        }
    }
    let mut pending: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        if role == "tool" {
            let id = message["tool_call_id"].as_str().unwrap_or_default();
            if pending.is_empty() || pending[0] != id {
                return Err(format!(
                    "messages[{i}]: tool message with tool_call_id '{id}' does not follow its call"
                ));
            }
            if !message["content"].is_string() {
                return Err(format!("messages[{i}]: tool content must be a string"));
            }
            pending.remove(0);
            continue;
        }
        if let Some(id) = pending.first() {
            return Err(format!(
                "messages[{i}]: tool_call_id '{id}' has no response message"
            ));
        }
        match role {
            "system" | "user" => {
                if !message["content"].is_string() {
                    return Err(format!("messages[{i}]: content must be a string"));
                }
            }
            "assistant" => {
                let calls = message["tool_calls"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if calls.is_empty() && message["content"].as_str().unwrap_or_default().is_empty() {
                    return Err(format!(
                        "messages[{i}]: assistant message needs content or tool_calls"
                    ));
                }
                for call in &calls {
                    let id = call["id"]
                        .as_str()
                        .filter(|id| !id.is_empty())
                        .ok_or(format!("messages[{i}]: tool call without id"))?;
                    let args = call["function"]["arguments"]
                        .as_str()
                        .ok_or(format!("messages[{i}]: arguments must be a string"))?;
                    serde_json::from_str::<Value>(args)
                        .map_err(|_| format!("messages[{i}]: arguments are not valid JSON"))?;
                    if call["type"] != "function" {
                        return Err(format!("messages[{i}]: tool call type must be function"));
                    }
                    if pending.iter().any(|p| p == id) {
                        return Err(format!("messages[{i}]: duplicate tool call id {id}"));
                    }
                    pending.push(id.to_string());
                }
            }
            other => return Err(format!("messages[{i}]: invalid role '{other}'")),
        }
    }
    match pending.first() {
        Some(id) => Err(format!("tool_call_id '{id}' has no response message")),
        None => Ok(()),
    }
}

fn respond(mut stream: TcpStream, reply: Reply, stream_wanted: bool) -> std::io::Result<()> {
    let (status, content_type, body) = match reply {
        Reply::Stall(wait, next) => {
            std::thread::sleep(wait);
            return respond(stream, *next, stream_wanted);
        }
        Reply::Raw {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            return stream.write_all(format!("{head}\r\n{body}").as_bytes());
        }
        Reply::Sse(body) => (200, "text/event-stream", body),
        Reply::Text(text) if stream_wanted => (200, "text/event-stream", sse_text(text)),
        Reply::Calls(calls) if stream_wanted => (200, "text/event-stream", sse_calls(&calls)),
        Reply::Text(text) => (
            200,
            "application/json",
            whole(json!({"role": "assistant", "content": text}), "stop"),
        ),
        Reply::Calls(calls) => {
            let calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| json!({"id": format!("call_{i}_{}", unique()), "type": "function", "function": {"name": name, "arguments": args}}))
                .collect();
            (
                200,
                "application/json",
                whole(
                    json!({"role": "assistant", "content": null, "tool_calls": calls}),
                    "tool_calls",
                ),
            )
        }
    };
    let head = format!(
        "HTTP/1.1 {status} OK\r\nContent-Type: {content_type}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes())?;
    // Written in pieces with flushes, as a real server streams.
    for piece in body.split_inclusive("\n\n") {
        stream.write_all(piece.as_bytes())?;
        stream.flush()?;
    }
    Ok(())
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

fn whole(message: Value, finish: &str) -> String {
    json!({
        "id": "chatcmpl-mock", "object": "chat.completion", "model": "mock-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    })
    .to_string()
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

fn usage_and_done() -> String {
    let usage = json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}});
    format!("data: {usage}\n\ndata: [DONE]\n\n")
}

fn sse_text(text: &str) -> String {
    let mut body = chunk(json!({"role": "assistant", "content": ""}), None);
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(3) {
        body += &chunk(json!({"content": piece.iter().collect::<String>()}), None);
    }
    body + &chunk(json!({}), Some("stop")) + &usage_and_done()
}

/// Each call's arguments split in three fragments, as OpenAI streams them.
fn sse_calls(calls: &[(&str, String)]) -> String {
    let mut body = chunk(json!({"role": "assistant", "content": null}), None);
    for (i, (name, args)) in calls.iter().enumerate() {
        let id = format!("call_{i}_{}", unique());
        body += &chunk(
            json!({"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            None,
        );
        let chars: Vec<char> = args.chars().collect();
        for piece in chars.chunks(chars.len().div_ceil(3).max(1)) {
            let fragment: String = piece.iter().collect();
            body += &chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": fragment}}]}),
                None,
            );
        }
    }
    body + &chunk(json!({}), Some("tool_calls")) + &usage_and_done()
}

/// A temp directory, removed when the test ends.
pub struct Workspace {
    pub dir: PathBuf,
}

impl Workspace {
    pub fn new() -> Workspace {
        let n = unique();
        let dir = std::env::temp_dir().join(format!(
            "turn-it-{}-{n}-{:?}",
            std::process::id(),
            Instant::now()
        ));
        let dir = PathBuf::from(dir.to_string_lossy().replace([' ', '{', '}', ':', ','], ""));
        std::fs::create_dir_all(&dir).unwrap();
        Workspace {
            dir: dir.canonicalize().unwrap(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn write(&self, name: &str, content: &str) {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// turn's state directory for runs in this workspace (XDG_STATE_HOME): beside it, as a
    /// real one is outside the workspace, so what turn records there (vouching, the latest
    /// session, checkpoints) is not among its files.
    pub fn state(&self) -> PathBuf {
        PathBuf::from(format!("{}-state", self.dir.display()))
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_dir_all(self.state());
    }
}

#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for Run {
    fn from(output: std::process::Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// Asserts that `haystack` contains `needle`, showing all of it when not.
#[track_caller]
pub fn assert_has(haystack: &str, needle: &str) {
    assert!(
        haystack.contains(needle),
        "expected {needle:?} in:\n{haystack}"
    );
}

/// `turn ARGS…` in `ws` against `mock`, run to completion.
pub fn go(ws: &Workspace, mock: &Mock, args: &[&str]) -> Run {
    let mut command = turn(ws, mock);
    command.args(args);
    run(command)
}

impl Run {
    /// Panics with the whole run shown unless the exit code is `code`.
    pub fn expect(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "unexpected exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// `turn` with a clean environment pointed at `mock`, in `ws`.
pub fn turn(ws: &Workspace, mock: &Mock) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_turn"));
    command
        .current_dir(&ws.dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    command
        .env("HOME", &ws.dir)
        .env("XDG_STATE_HOME", ws.state())
        .env("OPENAI_BASE_URL", &mock.url)
        .env("TURN_MODEL", "mock-model");
    command.stdin(Stdio::null());
    // turn leaves SIGINT ignored when it starts that way (a background job's lot); the tests
    // send it Ctrl-C, so it must start with the default, however the tests were started.
    // SAFETY: signal() is async-signal-safe.
    unsafe { command.pre_exec(|| default_sigint().map(|_| ())) };
    command
}

fn default_sigint() -> std::io::Result<()> {
    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    // SAFETY: SIGINT (2) back to SIG_DFL (0).
    unsafe { signal(2, 0) };
    Ok(())
}

/// Runs to completion (killed after 60s), capturing both streams.
pub fn run(mut command: Command) -> Run {
    run_with_input(&mut command, None)
}

pub fn run_with_input(command: &mut Command, input: Option<&str>) -> Run {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    if input.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = command.spawn().expect("spawn turn");
    if let Some(input) = input {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    Run::from(with_watchdog(child.id(), || {
        child.wait_with_output().unwrap()
    }))
}

/// Runs `wait`; kills `pid` if it has not returned within 60s, so a hung turn fails the test
/// instead of hanging it.
pub fn with_watchdog<T>(pid: u32, wait: impl FnOnce() -> T) -> T {
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    });
    let result = wait();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    result
}

/// Waits until `what` holds, failing the test after 20 s.
pub fn wait_for(what: impl Fn() -> bool) {
    let start = Instant::now();
    while !what() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends Ctrl-C's signal to process `pid`.
pub fn sigint(pid: u32) {
    Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
}

/// Starts `command`, waits until `ready` holds, sends SIGINT, and returns the finished run
/// with the time it took after the signal.
pub fn interrupt(mut command: Command, ready: impl Fn() -> bool) -> (Run, Duration) {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    wait_for(ready);
    let sent = Instant::now();
    sigint(child.id());
    let run = Run::from(with_watchdog(child.id(), || {
        child.wait_with_output().unwrap()
    }));
    (run, sent.elapsed())
}

/// Waits until process `pid` handles SIGINT itself (its handler is installed), so a SIGINT
/// sent now is turn's to handle and not the default death.
pub fn wait_for_sigint_handler(pid: u32) {
    let start = Instant::now();
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .unwrap_or(0);
        if caught & (1 << 1) != 0 {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "turn never installed its SIGINT handler"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

/// A `sleep` duration no other process uses (e.g. `300.4711`), so a test can find its sleep
/// among the host's processes: a command's own pids are those of its PID namespace.
pub fn unique_sleep() -> String {
    format!("300.{}{:04}", std::process::id(), unique())
}

/// Whether a live (not zombie) process has `arg` among its arguments.
pub fn running_with_arg(arg: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|entry| {
        let path = entry.path();
        let cmdline = std::fs::read(path.join("cmdline")).unwrap_or_default();
        let has = cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes());
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .next();
        has && !matches!(state, None | Some("Z"))
    })
}

/// Whether commands get namespaces here (what `turn --sandbox-check` reports), asked once.
pub fn namespaces_here() -> bool {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        let out = Command::new(env!("CARGO_BIN_EXE_turn"))
            .arg("--sandbox-check")
            .current_dir(env!("CARGO_TARGET_TMPDIR"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.contains("namespaces (") && l.ends_with("active"))
    })
}

/// Whether turn can be run where user namespaces are forbidden: inside `unshare -Ur` with the
/// nested limit at 0, which is how the Landlock-only fallback is tested on a machine that has
/// them.
pub fn fallback_possible() -> bool {
    Command::new("unshare")
        .args([
            "-Ur",
            "sh",
            "-c",
            "echo 0 > /proc/sys/user/max_user_namespaces",
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The wrapper that runs a command where it cannot create user namespaces.
pub const NO_NAMESPACES: [&str; 5] = [
    "unshare",
    "-Ur",
    "sh",
    "-c",
    "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"",
];

/// `command` (a turn invocation) run through `wrapper` (a program and its arguments), with
/// the same environment and directory, and no stdin.
pub fn wrapped(wrapper: &[&str], command: &Command) -> Command {
    let mut outer = Command::new(wrapper[0]);
    outer
        .args(&wrapper[1..])
        .arg(command.get_program())
        .args(command.get_args());
    outer.env_clear();
    for (key, value) in command.get_envs() {
        if let Some(value) = value {
            outer.env(key, value);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        outer.current_dir(dir);
    }
    outer.stdin(Stdio::null());
    outer
}

/// `command` (a turn invocation) run where it cannot create user namespaces.
pub fn without_namespaces(command: &Command) -> Command {
    wrapped(&NO_NAMESPACES, command)
}

/// Ends a test that needs namespaces where there are none, saying it was skipped.
macro_rules! require_namespaces {
    () => {
        if !namespaces_here() {
            println!("skipped: commands cannot get namespaces here (see turn --sandbox-check)");
            return;
        }
    };
}
