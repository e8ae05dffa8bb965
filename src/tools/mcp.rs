//! MCP (Model Context Protocol) servers over stdio: turn starts each configured server, speaks
//! JSON-RPC 2.0 to it one line at a time (`initialize`, `notifications/initialized`,
//! `tools/list`, `tools/call`), and offers its tools to the model as `SERVER__tool`.
//!
//! No threads: every read waits in `poll` with a deadline (the bash `--timeout` for calls),
//! which Ctrl-C cuts short. A server that dies, hangs or answers nonsense is an error for that
//! call, which the model reads; the run goes on, and the server is started anew (a few times
//! at most) for the next call. Servers run in their own process group with
//! the user's rights, outside the command sandbox (they are the user's own configuration),
//! and are stopped when turn ends: stdin closed, then SIGTERM, then SIGKILL; if turn itself is
//! killed, the kernel sends them SIGTERM (PR_SET_PDEATHSIG).

use super::declared::ServerSpec;
use crate::sandbox::sys::{kill, poll, prctl, PollFd, POLLIN};
use crate::signal;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::raw::{c_int, c_ulong};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The protocol revision turn asks for; servers answer with the one they speak.
const PROTOCOL: &str = "2025-06-18";
/// How long a server may take to start and list its tools.
const START: Duration = Duration::from_secs(30);
/// One message from a server may be at most this large.
const MAX_LINE: usize = 16 * 1024 * 1024;
/// Restarts of one server in a run, after it died or hung.
const MAX_RESTARTS: u32 = 3;
/// Pages of `tools/list` read at the most (a server that pages forever).
const MAX_PAGES: usize = 50;

/// One tool an MCP server offers.
#[derive(Debug)]
pub struct McpTool {
    /// Index into the servers.
    pub server: usize,
    /// The name the server knows it by.
    pub remote: String,
    /// `SERVER__tool`: what the model calls it.
    pub name: String,
    pub description: String,
    pub schema: Value,
}

/// The running servers and their tools.
#[derive(Default)]
pub struct Mcp {
    servers: RefCell<Vec<Server>>,
    pub tools: Vec<McpTool>,
}

/// A tool as `tools/list` gives it: name, description, input schema.
type Listed = (String, String, Value);

struct Server {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines,
    /// The server's stderr, in an unlinked temp file: its tail explains a failure.
    log: Option<File>,
    next_id: u64,
    /// Why the server cannot be used any more.
    dead: Option<String>,
    /// How it was started, for a restart.
    spec: ServerSpec,
    restarts: u32,
}

impl Mcp {
    /// Starts every server and lists its tools. A server that fails is reported through
    /// `warn` and left out; the others are used.
    pub fn start(specs: &[ServerSpec], warn: &mut dyn FnMut(String)) -> Mcp {
        let mut mcp = Mcp::default();
        for spec in specs {
            match Server::start(spec) {
                Ok((server, tools)) => {
                    let index = mcp.servers.borrow().len();
                    for tool in tools {
                        let name = tool_name(&spec.name, &tool.0);
                        if mcp.tools.iter().any(|t| t.name == name) {
                            warn(format!(
                                "MCP server {}: tool {name} is listed twice; the first is kept",
                                spec.name
                            ));
                            continue;
                        }
                        mcp.tools.push(McpTool {
                            server: index,
                            remote: tool.0,
                            name,
                            description: tool.1,
                            schema: tool.2,
                        });
                    }
                    mcp.servers.borrow_mut().push(server);
                }
                Err(why) => warn(format!(
                    "MCP server {} ({}) is not used: {why}",
                    spec.name, spec.source
                )),
            }
        }
        mcp
    }

    /// The name of server `index`.
    pub fn server_name(&self, index: usize) -> String {
        self.servers.borrow()[index].name.clone()
    }

    /// The tool's spec for a request.
    pub fn spec(tool: &McpTool) -> Value {
        json!({
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.schema}
        })
    }

    /// Calls `tool` with `arguments` (a JSON object); Ok(text, is_error) or Err for the model.
    pub fn call(
        &self,
        tool: &McpTool,
        arguments: Value,
        timeout: Duration,
    ) -> Result<(String, bool), String> {
        let mut servers = self.servers.borrow_mut();
        let server = &mut servers[tool.server];
        if server.dead.is_some() && server.restarts < MAX_RESTARTS {
            // A server that died or hung gets a new start, a few times in a run.
            let restarts = server.restarts + 1;
            let (mut fresh, _) = Server::start(&server.spec).map_err(|e| {
                format!("the MCP server {} could not be restarted: {e}", server.name)
            })?;
            fresh.restarts = restarts;
            *server = fresh;
        }
        let result = server.request(
            "tools/call",
            json!({"name": tool.remote, "arguments": arguments}),
            timeout,
        )?;
        Ok(render(&result))
    }
}

impl Server {
    /// Spawns the server, initializes it and lists its tools as (name, description, schema).
    fn start(spec: &ServerSpec) -> Result<(Server, Vec<Listed>), String> {
        if let Some((key, pins)) = &spec.vouched {
            super::vouch::recheck(key, pins)?;
        }
        let log = unnamed_file().ok();
        let mut command = Command::new(&spec.command);
        command
            .args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .process_group(0);
        match &log {
            Some(file) => command.stderr(file.try_clone().map_err(|e| e.to_string())?),
            None => command.stderr(Stdio::null()),
        };
        // SAFETY: prctl is async-signal-safe and touches no memory of ours.
        unsafe { command.pre_exec(die_with_parent) };
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start '{}': {e}", spec.command))?;
        let stdin = child.stdin.take();
        let stdout = Lines::new(child.stdout.take().expect("piped stdout"));
        let mut server = Server {
            name: spec.name.clone(),
            child,
            stdin,
            stdout,
            log,
            next_id: 1,
            dead: None,
            spec: spec.clone(),
            restarts: 0,
        };
        let init = server.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "turn", "version": env!("CARGO_PKG_VERSION")}
            }),
            START,
        )?;
        if init
            .get("protocolVersion")
            .and_then(Value::as_str)
            .is_none()
        {
            return Err(format!(
                "its initialize answer has no protocolVersion: {init:.200}"
            ));
        }
        server.notify("notifications/initialized")?;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = server.request("tools/list", params, START)?;
            for tool in page
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(name) = tool.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let description = tool
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let mut schema = tool
                    .get("inputSchema")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object"}));
                if schema.get("type").is_none() {
                    schema["type"] = json!("object");
                }
                tools.push((name.to_string(), description, schema));
            }
            cursor = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
        Ok((server, tools))
    }

    /// Sends a request and waits for its answer's `result`; Err says what went wrong, for
    /// the model (a call) or the user (start-up).
    fn request(&mut self, method: &str, params: Value, timeout: Duration) -> Result<Value, String> {
        if let Some(why) = &self.dead {
            return Err(format!(
                "the MCP server {} is not running ({why})",
                self.name
            ));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + timeout;
        loop {
            let line = match self.stdout.next_line(deadline) {
                Ok(line) => line,
                Err(Miss::Eof) => return Err(self.died("it exited")),
                Err(Miss::Timeout) => {
                    // Like a command past --timeout, a server that hangs is stopped (and
                    // started anew for the next call).
                    let message = format!(
                        "the MCP server {} did not answer {method} within {}s, so it was stopped",
                        self.name,
                        timeout.as_secs()
                    );
                    self.dead = Some("it hung".into());
                    self.stop();
                    return Err(message);
                }
                Err(Miss::Interrupted) => {
                    self.dead = Some("the user interrupted a call".into());
                    self.stop();
                    return Err("interrupted by the user".into());
                }
                Err(Miss::TooLong) => {
                    return Err(self.died("it sent a message over 16 MiB, so it was stopped"))
                }
                Err(Miss::Io(e)) => return Err(self.died(&format!("reading from it failed: {e}"))),
            };
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                // Servers that log to stdout: not a message, not ours to judge.
                continue;
            };
            match classify(&message, id) {
                Incoming::Answer(result) => return result,
                Incoming::Request(request_id, method) => {
                    let answer = if method == "ping" {
                        json!({"jsonrpc": "2.0", "id": request_id, "result": {}})
                    } else {
                        json!({"jsonrpc": "2.0", "id": request_id,
                               "error": {"code": -32601, "message": format!("turn does not offer {method}")}})
                    };
                    self.send(&answer)?;
                }
                Incoming::Other => {}
            }
        }
    }

    fn notify(&mut self, method: &str) -> Result<(), String> {
        self.send(&json!({"jsonrpc": "2.0", "method": method}))
    }

    fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        let written = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(line.as_bytes()).and_then(|_| stdin.flush()),
            None => Err(io::Error::from(io::ErrorKind::BrokenPipe)),
        };
        written.map_err(|e| self.died(&format!("writing to it failed: {e}")))
    }

    /// Marks the server unusable; the message says why, with the end of its stderr.
    fn died(&mut self, why: &str) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(status)) => format!(" ({status})"),
            _ => String::new(),
        };
        let tail = self.log.as_mut().map(log_tail).unwrap_or_default();
        let message = format!("the MCP server {} failed: {why}{status}{tail}", self.name);
        self.dead = Some(why.to_string());
        self.stop();
        message
    }

    /// Closes stdin, waits a moment, then SIGTERM and SIGKILL to its process group.
    fn stop(&mut self) {
        drop(self.stdin.take());
        let pid = self.child.id() as c_int;
        for (signal, wait) in [(0, 500), (SIGTERM, 1000), (SIGKILL, 0)] {
            if signal != 0 {
                // SAFETY: kill has no memory effects; -pid names the server's group.
                unsafe { kill(-pid, signal) };
            }
            let until = Instant::now() + Duration::from_millis(wait);
            loop {
                match self.child.try_wait() {
                    Ok(Some(_)) | Err(_) => return,
                    Ok(None) if Instant::now() >= until => break,
                    Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What a line from the server is, for a request waiting on `id`.
#[derive(Debug, PartialEq)]
enum Incoming {
    /// The answer to our request: its result, or its error as text.
    Answer(Result<Value, String>),
    /// A request from the server, which turn must answer.
    Request(Value, String),
    /// A notification, or an answer to an earlier request that timed out.
    Other,
}

fn classify(message: &Value, id: u64) -> Incoming {
    let method = message.get("method").and_then(Value::as_str);
    match (message.get("id"), method) {
        (Some(request_id), Some(method)) => Incoming::Request(request_id.clone(), method.into()),
        (Some(answer_id), None) if answer_id.as_u64() == Some(id) => {
            if let Some(error) = message.get("error") {
                let text = error
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| error.to_string(), str::to_string);
                Incoming::Answer(Err(format!(
                    "the MCP server answered with an error: {text}"
                )))
            } else {
                Incoming::Answer(Ok(message.get("result").cloned().unwrap_or(Value::Null)))
            }
        }
        _ => Incoming::Other,
    }
}

/// A `tools/call` result as text for the model, and whether it is an error: text content as
/// it is, other content summarized, `structuredContent` as JSON when there is no text.
fn render(result: &Value) -> (String, bool) {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut parts = Vec::new();
    for item in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
        parts.push(match kind {
            "text" => text("text").to_string(),
            "image" | "audio" => format!(
                "[{kind}: {}, {} bytes of base64, not shown]",
                text("mimeType"),
                text("data").len()
            ),
            "resource" => {
                let resource = item.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("?");
                match resource.get("text").and_then(Value::as_str) {
                    Some(body) => format!("[resource {uri}]\n{body}"),
                    None => format!("[resource {uri}: binary, not shown]"),
                }
            }
            "resource_link" => format!("[resource link {} ({})]", text("uri"), text("name")),
            other => format!("[{other} content, not shown]"),
        });
    }
    if parts.is_empty() {
        if let Some(structured) = result.get("structuredContent") {
            parts.push(structured.to_string());
        }
    }
    let text = parts.join("\n");
    (
        if text.is_empty() {
            "(no output)".into()
        } else {
            text
        },
        is_error,
    )
}

/// `SERVER__tool`, in the characters function names allow, at most 64.
fn tool_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut name = format!("{server}__{clean}");
    name.truncate(64);
    name
}

/// The last lines of a server's stderr, for an error message.
fn log_tail(log: &mut File) -> String {
    let len = log.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(600);
    let mut text = String::new();
    if log.seek(SeekFrom::Start(start)).is_err() || log.take(600).read_to_string(&mut text).is_err()
    {
        return String::new();
    }
    let text = text.trim();
    if text.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends: {text}")
    }
}

/// Lines read from a pipe, each read waiting in `poll` until a deadline.
struct Lines {
    pipe: ChildStdout,
    buf: Vec<u8>,
}

#[derive(Debug)]
enum Miss {
    Eof,
    Timeout,
    Interrupted,
    TooLong,
    Io(io::Error),
}

impl Lines {
    fn new(pipe: ChildStdout) -> Lines {
        Lines {
            pipe,
            buf: Vec::new(),
        }
    }

    fn next_line(&mut self, deadline: Instant) -> Result<String, Miss> {
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=end).collect();
                return Ok(String::from_utf8_lossy(&line).trim().to_string());
            }
            if self.buf.len() > MAX_LINE {
                return Err(Miss::TooLong);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Miss::Timeout);
            }
            if signal::interrupted() {
                return Err(Miss::Interrupted);
            }
            let mut fd = PollFd {
                fd: self.pipe.as_raw_fd(),
                events: POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().min(c_int::MAX as u128) as c_int;
            // SAFETY: one valid pollfd.
            let ready = unsafe { poll(&mut fd, 1, ms) };
            if ready < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue; // Ctrl-C is checked at the top
                }
                return Err(Miss::Io(e));
            }
            if ready == 0 {
                continue; // the deadline is checked at the top
            }
            let mut chunk = [0u8; 64 * 1024];
            match self.pipe.read(&mut chunk) {
                Ok(0) => return Err(Miss::Eof),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Miss::Io(e)),
            }
        }
    }
}

const SIGTERM: c_int = 15;
const SIGKILL: c_int = 9;
const PR_SET_PDEATHSIG: c_int = 1;

/// A file with no name in the temp dir (O_TMPFILE), readable only through its handle.
fn unnamed_file() -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    const O_TMPFILE: c_int = 0o20200000;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(O_TMPFILE)
        .open(std::env::temp_dir())
}

/// In the child: SIGTERM when turn dies, so a killed turn leaves no server behind.
fn die_with_parent() -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    if unsafe { prctl(PR_SET_PDEATHSIG, SIGTERM as c_ulong) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_sorted_into_answers_requests_and_the_rest() {
        assert_eq!(
            classify(&json!({"jsonrpc": "2.0", "id": 3, "result": {"a": 1}}), 3),
            Incoming::Answer(Ok(json!({"a": 1})))
        );
        assert_eq!(
            classify(
                &json!({"id": 3, "error": {"code": -1, "message": "no such tool"}}),
                3
            ),
            Incoming::Answer(Err(
                "the MCP server answered with an error: no such tool".into()
            ))
        );
        assert_eq!(
            classify(&json!({"id": 2, "result": {}}), 3),
            Incoming::Other
        );
        assert_eq!(
            classify(&json!({"method": "notifications/progress"}), 3),
            Incoming::Other
        );
        assert_eq!(
            classify(&json!({"id": "s1", "method": "ping"}), 3),
            Incoming::Request(json!("s1"), "ping".into())
        );
    }

    #[test]
    fn results_become_text() {
        let result = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "AA"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"},
            {"type": "video"}
        ]});
        assert_eq!(
            render(&result),
            (
                "hello\n[image: image/png, 4 bytes of base64, not shown]\n[resource file:///a]\nbody\n\
                 [resource file:///b: binary, not shown]\n[resource link file:///c (c)]\n[video content, not shown]"
                    .into(),
                false
            )
        );
        assert_eq!(
            render(&json!({"content": [], "structuredContent": {"n": 1}, "isError": true})),
            ("{\"n\":1}".into(), true)
        );
        assert_eq!(render(&json!({})), ("(no output)".into(), false));
    }

    #[test]
    fn tool_names_are_prefixed_and_clean() {
        assert_eq!(tool_name("fs", "read.file"), "fs__read_file");
        assert_eq!(tool_name("s", &"x".repeat(100)).len(), 64);
    }
}
