//! A hostile or broken server cannot exhaust turn's memory or time, nor make it report success
//! for nothing: endless arguments, endless content, one endless SSE line, keep-alive comments
//! forever and one byte at a time each end the run with a clear error (exit 1). Redirects are
//! followed or refused truthfully, and credentials in the base URL are never shown.
//!
//! Every server here listens on 127.0.0.1 and stops on its own (a failed write, a byte budget
//! or a time limit), so a broken turn fails the test instead of hanging it.

mod util;

use serde_json::json;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use util::*;

/// The most a hostile server writes, and for how long, before giving up by itself.
const BUDGET: usize = 256 << 20;
const PATIENCE: Duration = Duration::from_secs(40);

/// A loopback server that hands each request (and how many came so far, this one included)
/// to `serve`, which writes whatever it likes.
struct Hostile {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Hostile {
    fn start(serve: impl Fn(&mut TcpStream, &Received, usize) + Send + Sync + 'static) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        let serve = Arc::new(serve);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (log, serve) = (log.clone(), serve.clone());
                std::thread::spawn(move || {
                    let Some(request) = read_request(&stream) else {
                        return;
                    };
                    let n = {
                        let mut log = log.lock().unwrap();
                        log.push(request.clone());
                        log.len()
                    };
                    serve(&mut stream, &request, n);
                });
            }
        });
        Hostile { url, received }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// Writes the head of a 200 event stream.
fn sse_head(stream: &mut TcpStream) -> std::io::Result<()> {
    stream.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
    )
}

/// Writes `first`, then `next()` again and again until turn hangs up or the budget is spent.
fn endless(stream: &mut TcpStream, first: &[u8], next: impl Fn() -> Vec<u8>) {
    let start = Instant::now();
    if sse_head(stream)
        .and_then(|_| stream.write_all(first))
        .is_err()
    {
        return;
    }
    let mut sent = 0;
    while sent < BUDGET && start.elapsed() < PATIENCE {
        let piece = next();
        if stream.write_all(&piece).is_err() {
            return;
        }
        sent += piece.len();
    }
}

/// `turn -q ARGS… go` against `url`.
fn against(url: &str, args: &[&str]) -> Run {
    let ws = Workspace::new();
    let mock = Mock::start(vec![]); // only for the harness's environment; the URL wins
    let mut command = turn(&ws, &mock);
    // A window given: turn asks the hostile server nothing but the chat request (no probes
    // of /v1/models or /props that a redirect could send elsewhere).
    command
        .env("OPENAI_BASE_URL", url)
        .args(["--context", "32768"])
        .args(args)
        .arg("go");
    run(command)
}

fn chunk(delta: serde_json::Value) -> Vec<u8> {
    let chunk = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    format!("data: {chunk}\n\n").into_bytes()
}

#[test]
fn endless_tool_call_arguments_end_at_the_cap() {
    let server = Hostile::start(|stream, _, _| {
        let first = chunk(
            json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "bash", "arguments": "{\"command\": \""}}]}),
        );
        let piece = chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "a".repeat(64 << 10)}}]}),
        );
        endless(stream, &first, || piece.clone());
    });
    let run = against(&server.url, &["-q"]).expect(1);
    assert_has(
        &run.stderr,
        "turn: unexpected answer from the server: one tool call's arguments went over 16 MiB",
    );
}

#[test]
fn endless_content_ends_at_the_cap() {
    let server = Hostile::start(|stream, _, _| {
        let piece = chunk(json!({"content": "b".repeat(64 << 10)}));
        endless(stream, b"", || piece.clone());
    });
    let run = against(&server.url, &["-q"]).expect(1);
    assert_has(&run.stderr, "the reply's text went over 16 MiB");
    assert!(run.stdout.len() <= (16 << 20) + 1, "{}", run.stdout.len());
}

#[test]
fn endless_calls_end_at_the_cap() {
    let server = Hostile::start(|stream, _, _| {
        let n = std::sync::atomic::AtomicUsize::new(0);
        endless(stream, b"", || {
            let i = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            chunk(
                json!({"tool_calls": [{"index": i, "id": format!("c{i}"), "function": {"name": "bash", "arguments": "{}"}}]}),
            )
        });
    });
    let run = against(&server.url, &["-q"]).expect(1);
    assert_has(&run.stderr, "the reply made more than 1024 tool calls");
}

#[test]
fn one_endless_sse_line_ends_at_the_cap() {
    let server = Hostile::start(|stream, _, _| {
        let piece = vec![b'c'; 1 << 20];
        // 1.5 GB without a newline, were turn to read it all.
        endless(
            stream,
            b"data: {\"choices\":[{\"delta\":{\"content\":\"",
            || piece.clone(),
        );
    });
    let run = against(&server.url, &["-q"]).expect(1);
    assert_has(&run.stderr, "a line of the reply stream went over 32 MiB");
}

#[test]
fn endless_data_lines_of_one_event_end_at_the_cap() {
    let server = Hostile::start(|stream, _, _| {
        let mut piece = b"data: ".to_vec();
        piece.extend(vec![b'd'; 1 << 20]);
        piece.push(b'\n');
        endless(stream, b"", || piece.clone());
    });
    let run = against(&server.url, &["-q"]).expect(1);
    assert_has(&run.stderr, "an event of the reply stream went over 32 MiB");
}

#[test]
fn keep_alive_comments_forever_end_at_the_deadline() {
    let server = Hostile::start(|stream, _, _| {
        endless(stream, b"", || {
            std::thread::sleep(Duration::from_millis(50));
            b": keep-alive\n\n".to_vec()
        });
    });
    let run = against(
        &server.url,
        &["-q", "--request-timeout", "1", "--request-deadline", "2"],
    )
    .expect(1);
    assert_has(
        &run.stderr,
        "turn: the server's reply took longer than 2s in all (--request-deadline)",
    );
    assert_has(
        &run.stderr,
        "hint: a slow local model may need a larger --request-deadline",
    );
}

#[test]
fn one_byte_at_a_time_ends_at_the_deadline() {
    let server = Hostile::start(|stream, _, _| {
        let reply = String::from_utf8(chunk(json!({"content": "x".repeat(1000)}))).unwrap();
        let bytes: Vec<u8> = reply.into_bytes();
        let at = std::sync::atomic::AtomicUsize::new(0);
        endless(stream, b"", || {
            std::thread::sleep(Duration::from_millis(20));
            let i = at.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            vec![bytes[i % bytes.len()]]
        });
    });
    let run = against(
        &server.url,
        &["-q", "--request-timeout", "1", "--request-deadline", "2"],
    )
    .expect(1);
    assert_has(
        &run.stderr,
        "took longer than 2s in all (--request-deadline)",
    );
}

#[test]
fn a_server_silent_before_its_head_ends_at_the_deadline_too() {
    let server = Hostile::start(|_, _, _| {
        // Never answers: holds the connection open while turn waits for the head.
        std::thread::sleep(PATIENCE);
    });
    let run = against(
        &server.url,
        &["-q", "--request-timeout", "30", "--request-deadline", "1"],
    )
    .expect(1);
    assert_has(
        &run.stderr,
        "took longer than 1s in all (--request-deadline)",
    );
    assert_eq!(server.received().len(), 1, "not retried");
}

#[test]
fn a_reply_without_choices_is_an_error() {
    for (content_type, body) in [
        ("text/event-stream", "data: [DONE]\n\n"),
        (
            "text/event-stream",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\n\ndata: [DONE]\n\n",
        ),
        ("application/json", "{}"),
    ] {
        let server = Hostile::start(move |stream, _, _| {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        });
        let run = against(&server.url, &[]).expect(1);
        assert_has(
            &run.stderr,
            "turn: unexpected answer from the server: the reply held no message",
        );
    }
}

/// A server that answers every request with a `status` redirect to `location`.
fn redirecting(status: u16, location: String) -> Hostile {
    Hostile::start(move |stream, _, _| {
        let head = format!(
            "HTTP/1.1 {status} Moved\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let _ = stream.write_all(head.as_bytes());
    })
}

#[test]
fn a_307_is_followed_with_the_body_and_without_the_key_to_another_origin() {
    let target = Mock::start(vec![Reply::Text("moved and answered")]);
    let server = redirecting(307, format!("{}/chat/completions", target.url));
    let ws = Workspace::new();
    let mut command = turn(&ws, &target);
    command
        .env("OPENAI_BASE_URL", &server.url)
        .env("OPENAI_API_KEY", "sk-secret")
        .args(["--context", "32768", "go"]);
    let run = run(command).expect(0);
    assert_eq!(run.stdout, "moved and answered\n");
    let first = &server.received()[0];
    assert_eq!(first.header("authorization"), Some("Bearer sk-secret"));
    let moved = &target.chats()[0];
    assert_eq!(moved.method, "POST");
    assert_eq!(moved.body["model"], "mock-model", "the body was sent again");
    assert_eq!(moved.messages().last().unwrap()["content"], "go");
    assert_eq!(moved.header("authorization"), None, "the key stays home");
}

#[test]
fn a_308_on_the_same_server_keeps_the_key() {
    let server = Hostile::start(|stream, request, _| {
        if request.path == "/v1/chat/completions" {
            let _ = stream.write_all(
                b"HTTP/1.1 308 Permanent Redirect\r\nLocation: /v2/chat/completions\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            return;
        }
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"v2\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        let _ = sse_head(stream).and_then(|_| stream.write_all(body.as_bytes()));
    });
    let ws = Workspace::new();
    let mock = Mock::start(vec![]);
    let mut command = turn(&ws, &mock);
    command
        .env("OPENAI_BASE_URL", &server.url)
        .env("OPENAI_API_KEY", "sk-secret")
        .args(["--context", "32768", "go"]);
    let run = run(command).expect(0);
    assert_eq!(run.stdout, "v2\n");
    let received = server.received();
    assert_eq!(received[1].path, "/v2/chat/completions");
    assert_eq!(
        received[1].header("authorization"),
        Some("Bearer sk-secret")
    );
    assert_eq!(received[1].body, received[0].body);
}

#[test]
fn a_301_for_a_post_is_refused_truthfully() {
    let server = redirecting(
        301,
        "https://new.example.invalid/v1/chat/completions".into(),
    );
    let run = against(&server.url, &[]).expect(1);
    assert_has(
        &run.stderr,
        "redirects to https://new.example.invalid/v1/chat/completions with 301, which would turn the request into a GET; set --base-url",
    );
    assert!(
        !run.stderr.contains("is the server running"),
        "{}",
        run.stderr
    );
    assert_eq!(server.received().len(), 1);
}

#[test]
fn redirects_in_a_loop_stop() {
    let server = Hostile::start(|stream, _, n| {
        let head = format!(
            "HTTP/1.1 307 Again\r\nLocation: /v1/chat/completions?hop={n}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let _ = stream.write_all(head.as_bytes());
    });
    let run = against(&server.url, &[]).expect(1);
    assert_has(&run.stderr, "more than 5 redirects");
    assert_eq!(server.received().len(), 6);
}

#[test]
fn credentials_in_the_base_url_are_never_shown() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text("hi")]);
    let with_secret = mock.url.replace("http://", "http://user:hunter2@");
    let mut command = turn(&ws, &mock);
    command
        .env("OPENAI_BASE_URL", &with_secret)
        .args(["--json", "go"]);
    let shown = run(command).expect(0);
    assert!(!shown.stdout.contains("hunter2"), "{}", shown.stdout);
    let start: serde_json::Value =
        serde_json::from_str(shown.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(start["type"], "start");
    assert_eq!(
        start["base_url"],
        mock.url.replace("http://", "http://***@")
    );

    // An address nothing listens on: the error and the retry notices name it, hidden.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut command = turn(&ws, &mock);
    command
        .env(
            "OPENAI_BASE_URL",
            format!("http://user:hunter2@127.0.0.1:{port}/v1"),
        )
        .args(["--json", "go"]);
    let failed = run(command).expect(1);
    let all = format!("{}{}", failed.stdout, failed.stderr);
    assert!(!all.contains("hunter2"), "{all}");
    assert_has(
        &all,
        &format!("cannot reach http://***@127.0.0.1:{port}/v1/chat/completions"),
    );
}

/// A JSON chat response with `message`, kept alive (no `Connection: close`).
fn kept_alive(stream: &mut TcpStream, message: serde_json::Value) -> std::io::Result<()> {
    let body = json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]});
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())
}

#[test]
fn a_kept_alive_connection_the_server_drops_is_replaced_at_once() {
    // The server answers the first request and keeps the connection, then drops it when the
    // next request comes on it (as llama-server does with one idle for 5 s): turn sends that
    // request again at once on a new connection, with no retry notice and no wait.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let count = Arc::new(Mutex::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { continue };
            let count = count.clone();
            std::thread::spawn(move || {
                while read_request(&stream).is_some() {
                    let n = {
                        let mut count = count.lock().unwrap();
                        *count += 1;
                        *count
                    };
                    let call = json!({"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function",
                         "function": {"name": "bash", "arguments": "{\"command\": \"echo hi\"}"}}]});
                    let sent = match n {
                        1 => kept_alive(&mut stream, call),
                        2 => return, // dropped, no response
                        _ => {
                            kept_alive(&mut stream, json!({"role": "assistant", "content": "done"}))
                        }
                    };
                    if sent.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let started = Instant::now();
    let run = against(&url, &["--no-stream"]).expect(0);
    assert_eq!(run.stdout.trim(), "done");
    assert!(!run.stderr.contains("retrying"), "{}", run.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "no wait before the new try"
    );
}
