//! The HTTP side: one blocking ureq agent, POST /chat/completions (streamed or whole), GET
//! /models, retries with backoff for what may pass (connection failures, 408, 429, 5xx that
//! are not about the request itself: see `failure`), and error bodies read in every shape
//! servers use.
//!
//! ureq's own read timeouts are off on purpose: a read with a timeout retries through EINTR,
//! which would make Ctrl-C wait. Instead every blocking read runs under `signal::with_deadline`,
//! an idle timeout that Ctrl-C can cut short, and no later than the request's total deadline
//! (`--request-deadline`), which a server trickling bytes or keep-alive comments cannot put
//! off. Redirects are followed here, not by ureq: 307/308 re-send the POST body, to at most
//! `MAX_REDIRECTS` hops, and the API key goes only to the original origin. Addresses are shown
//! with their credentials hidden.

use crate::context::window;
use crate::error::{Error, Reach, Result};
use crate::report::{Event, Reporter};
use crate::signal::{self, Cut, Guarded};
use crate::wire::failure;
use crate::wire::network;
use crate::wire::server;
use crate::wire::stream::{self, Assembler, Ends, Fault, Piece, Reply, Sse, MAX_EVENT};
use crate::wire::url;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Read};
use std::time::{Duration, Instant};
use ureq::http::Response;
use ureq::Body;

/// Tries per request: the first and up to two retries.
const ATTEMPTS: u32 = 3;
/// The longest wait a Retry-After header can ask for.
const MAX_RETRY_AFTER: u64 = 120;
/// How long to wait for the end of a stream after its `[DONE]`.
const DRAIN: Duration = Duration::from_millis(500);
/// A reply body larger than this is refused (a whole response, or an error page).
const MAX_BODY: u64 = 64 * 1024 * 1024;
/// Redirects followed for one request.
const MAX_REDIRECTS: usize = 5;
/// The total deadline of one request unless `with_deadline` says otherwise (--request-deadline).
pub const DEADLINE_SECS: u64 = 3600;

pub struct Client {
    agent: ureq::Agent,
    /// The proxy requests go through, if any: named when it fails.
    proxy: Option<network::Proxy>,
    base_url: String,
    api_key: Option<String>,
    /// Seconds the server may stay silent: before the reply starts, and between chunks.
    idle: Duration,
    /// How long one request may take in all, retries included.
    deadline: Duration,
    /// Request fields this server refused, learned on the way (see `complete`).
    refused: Cell<Refused>,
}

/// The CAs a TLS connection trusts: `None` for the compiled-in roots.
#[cfg(feature = "tls")]
pub type Trust = Option<Vec<ureq::tls::Certificate<'static>>>;
#[cfg(not(feature = "tls"))]
pub type Trust = ();

/// Optional request fields a server refused with a 400, so they are left out (or renamed)
/// from then on.
#[derive(Clone, Copy, Default)]
struct Refused {
    stream_options: bool,
    /// `max_tokens` is refused: OpenAI's reasoning models want `max_completion_tokens`.
    max_tokens: bool,
    /// Neither name of the reply budget is accepted.
    budget: bool,
}

/// How long a probe of the server (`Client::probe`) may take.
const PROBE_IDLE: Duration = Duration::from_secs(10);

/// What one model request asks for. Messages and tools come serialized already: the agent
/// serializes each message once, not once per request.
pub struct Request<'a> {
    pub model: &'a str,
    pub messages: &'a [Box<RawValue>],
    /// `None` sends no `tools` at all (the text tool protocol, a summary, an answer under
    /// --output-schema; OpenAI refuses an empty list).
    pub tools: Option<&'a RawValue>,
    pub temperature: Option<f64>,
    pub stream: bool,
    /// The reply budget, sent as `max_tokens`.
    pub max_tokens: Option<u64>,
    /// OpenAI's `response_format`, e.g. a `json_schema` for --output-schema.
    pub response_format: Option<&'a Value>,
    /// Where the reply's text ends by the protocol's own rule (the text protocol's first
    /// call; see textproto::first_call_end), given the text and how much of it was looked at
    /// before: once text comes after that end, turn stops reading (the server stops
    /// generating) and the reply is what came before.
    pub ends: Option<&'a Ends<'a>>,
}

#[derive(Serialize)]
struct Payload<'a> {
    model: &'a str,
    messages: &'a [Box<RawValue>],
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<&'a Value>,
}

impl Client {
    /// `trust`: the CAs to trust, or `None` for the compiled-in roots (see `wire::network`).
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        idle_secs: u64,
        proxy: Option<network::Proxy>,
        trust: Trust,
    ) -> Result<Client> {
        let ureq_proxy = match &proxy {
            None => None,
            Some(p) => Some(ureq::Proxy::new(&p.url).map_err(|e| {
                Error::Usage(format!(
                    "{} is not a proxy address turn can use ({e}): '{}'",
                    p.var,
                    url::redact(&p.url)
                ))
            })?),
        };
        let config = ureq::Agent::config_builder()
            .proxy(ureq_proxy)
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(15)))
            .timeout_send_request(Some(Duration::from_secs(60)))
            .timeout_send_body(Some(Duration::from_secs(120)))
            .user_agent(concat!("turn/", env!("CARGO_PKG_VERSION")))
            // ureq zeroes its buffers for every request; 128 KiB each (its default) cost more
            // CPU than the rest of a step. Bodies stream through in pieces either way.
            .input_buffer_size(16 * 1024)
            .output_buffer_size(16 * 1024)
            .max_response_header_size(16 * 1024)
            // Followed in `try_once`, where a 307/308 can re-send the POST body.
            .max_redirects(0);
        #[cfg(feature = "tls")]
        let config = match trust {
            Some(certs) => config.tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::new_with_certs(&certs))
                    .build(),
            ),
            None => config,
        };
        #[cfg(not(feature = "tls"))]
        let () = trust;
        Ok(Client {
            agent: config.build().into(),
            proxy,
            base_url: base_url.to_string(),
            api_key,
            idle: Duration::from_secs(idle_secs),
            deadline: Duration::from_secs(DEADLINE_SECS),
            refused: Cell::default(),
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// GETs `url` once, with a short deadline, for what a server tells about itself: its JSON
    /// on a 2xx, else `None`. Only Ctrl-C is an error.
    pub fn probe(&self, url: &str) -> Result<Option<Value>> {
        let probe = Client {
            agent: self.agent.clone(),
            proxy: self.proxy.clone(),
            base_url: String::new(),
            api_key: self.api_key.clone(),
            idle: self.idle.min(PROBE_IDLE),
            deadline: PROBE_IDLE,
            refused: Cell::default(),
        };
        let until = probe.until();
        let response = match probe.try_once(url, None, until) {
            Try::Done(response) => response,
            Try::Fail(Error::Interrupted) => return Err(Error::Interrupted),
            _ => return Ok(None),
        };
        let text = match read_body(probe.reader(response, until)) {
            Ok(text) => text,
            Err(Error::Interrupted) => return Err(Error::Interrupted),
            Err(_) => return Ok(None),
        };
        Ok(serde_json::from_str(&text).ok())
    }

    /// Sets the total deadline of one request (--request-deadline).
    pub fn with_deadline(mut self, secs: u64) -> Client {
        self.deadline = Duration::from_secs(secs);
        self
    }

    /// The instant a request started now must be over by.
    fn until(&self) -> Instant {
        let now = Instant::now();
        now.checked_add(self.deadline)
            .unwrap_or(now + Duration::from_secs(u32::MAX.into()))
    }

    /// A reader of a response body, bounded by the idle timeout and by `until`.
    fn reader(&self, response: Response<Body>, until: Instant) -> Bounded<impl Read> {
        Bounded {
            inner: Guarded {
                inner: response.into_body().into_reader(),
                idle: self.idle,
            },
            idle: self.idle,
            until,
            deadline: self.deadline,
        }
    }

    /// Asks the model for its next message; streamed text is reported as it arrives.
    pub fn complete(
        &self,
        request: &Request,
        new_id: &mut dyn FnMut() -> String,
        reporter: &mut dyn Reporter,
    ) -> Result<Reply> {
        let mut tries = 1;
        loop {
            match self.complete_once(request, new_id, reporter) {
                // llama-server's slots share one cache: a reply still being generated for a
                // request turn gave up on (a loop it cut) can take the room this one needs,
                // until the server sees the closed connection. A little later there is room.
                Err(Error::Api {
                    status: None,
                    message,
                }) if failure::cache_full(&message) && tries < ATTEMPTS => {
                    let notice = format!(
                        "server error: {message} (its cache is shared with other requests); \
                         retrying in {tries}s (try {} of {ATTEMPTS})",
                        tries + 1
                    );
                    reporter.report(Event::Notice(&notice));
                    sleep(Duration::from_secs(tries as u64))?;
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    /// One request for the model's next message.
    fn complete_once(
        &self,
        request: &Request,
        new_id: &mut dyn FnMut() -> String,
        reporter: &mut dyn Reporter,
    ) -> Result<Reply> {
        let until = self.until();
        // A server that refuses an optional field (the usage in streams, the reply budget or
        // its name) gets the request again without it; each field can be
        // refused once.
        let response = loop {
            let refused = self.refused.get();
            let budget = request.max_tokens.filter(|_| !refused.budget);
            let body = Payload {
                model: request.model,
                messages: request.messages,
                tools: request.tools,
                temperature: request.temperature,
                stream: request.stream,
                stream_options: (request.stream && !refused.stream_options)
                    .then(|| serde_json::json!({"include_usage": true})),
                max_tokens: budget.filter(|_| !refused.max_tokens),
                max_completion_tokens: budget.filter(|_| refused.max_tokens),
                response_format: request.response_format,
            };
            let body = serde_json::to_vec(&body)
                .map_err(|e| Error::Protocol(format!("cannot encode the request: {e}")))?;
            match self.send("/chat/completions", Some(&body), reporter, until) {
                Err(Error::Api {
                    status: Some(400),
                    message,
                }) if self.refuse(&message, &body) => {}
                other => break other?,
            }
        };
        let sse = content_type(&response).contains("event-stream");
        let mut assembler = Assembler::default();
        let mut show = |piece: Piece| match piece {
            Piece::Content(text) => reporter.report(Event::Content(text)),
            Piece::Reasoning(text) => reporter.report(Event::Reasoning(text)),
        };
        let reader = self.reader(response, until);
        let ends = request.ends;
        if sse {
            read_events(reader, &mut assembler, &mut show, ends)?;
            if assembler.looping() {
                reporter.report(Event::Notice(
                    "the reply repeated the same lines over and over; turn stopped reading it",
                ));
            }
        } else {
            // A whole response: asked for, or a server that ignored `stream` or sent an error.
            let text = read_body(reader)?;
            assembler.feed(&text, &mut show).map_err(from_server)?;
        }
        if ends.is_some_and(|ends| assembler.past_end(ends)) {
            reporter.report(Event::Notice(
                "the reply went on after its first call; turn read it up to that call (one call \
                 a reply)",
            ));
        }
        if !assembler.has_choice() {
            return Err(Error::Protocol(
                "the reply held no message (no choices)".into(),
            ));
        }
        Ok(assembler.finish(new_id))
    }

    /// Whether a 400 `message` refused an optional field that `body` carried; if so, it is
    /// left out from now on.
    fn refuse(&self, message: &str, body: &[u8]) -> bool {
        let mut refused = self.refused.get();
        let sent = |field: &str| {
            let field = format!("\"{field}\"");
            body.windows(field.len()).any(|w| w == field.as_bytes())
        };
        let lower = message.to_ascii_lowercase();
        if lower.contains("stream_options") && sent("stream_options") {
            refused.stream_options = true;
        } else if lower.contains("max_completion_tokens")
            && sent("max_tokens")
            && !refused.max_tokens
        {
            refused.max_tokens = true;
        } else if (lower.contains("max_tokens") || lower.contains("max_completion_tokens"))
            && (sent("max_tokens") || sent("max_completion_tokens"))
        {
            refused.budget = true;
        } else {
            return false;
        }
        self.refused.set(refused);
        true
    }

    /// The ids the server lists under GET /models.
    pub fn models(&self, reporter: &mut dyn Reporter) -> Result<Vec<String>> {
        let until = self.until();
        let response = self.send("/models", None, reporter, until)?;
        let text = read_body(self.reader(response, until))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|_| Error::Protocol(format!("GET /models: {text:.200}")))?;
        let list = value
            .get("data")
            .or_else(|| value.get("models"))
            .and_then(Value::as_array);
        Ok(list
            .into_iter()
            .flatten()
            .filter_map(|m| {
                m.get("id")
                    .or_else(|| m.get("name"))
                    .and_then(Value::as_str)
            })
            .map(str::to_string)
            .collect())
    }

    /// Sends with retries; returns a 2xx response, or the error that ended the tries.
    fn send(
        &self,
        path: &str,
        body: Option<&[u8]>,
        reporter: &mut dyn Reporter,
        until: Instant,
    ) -> Result<Response<Body>> {
        let url = format!("{}{path}", self.base_url);
        let mut attempt = 1;
        // A kept-alive connection the server closed while it sat in the pool (llama-server
        // closes idle ones after 5 s) fails the request as it is sent: the first such failure
        // is tried again at once, on a new connection, without a notice or a try counted.
        let mut fresh = false;
        loop {
            let (error, after) = match self.try_once(&url, body, until) {
                Try::Done(response) => return Ok(response),
                Try::Fail(error) => return Err(error),
                Try::Stale(_) if !fresh => {
                    fresh = true;
                    continue;
                }
                Try::Stale(error) if attempt == ATTEMPTS => return Err(error),
                Try::Stale(error) => (error, None),
                Try::Again(error, _) if attempt == ATTEMPTS => return Err(error),
                Try::Again(error, after) => (error, after),
            };
            let secs = after.unwrap_or(1 << (attempt - 1));
            if Instant::now() + Duration::from_secs(secs) >= until {
                return Err(error); // no time left for another try
            }
            let notice = format!(
                "{error}; retrying in {secs}s (try {} of {ATTEMPTS})",
                attempt + 1
            );
            reporter.report(Event::Notice(&notice));
            sleep(Duration::from_secs(secs))?;
            attempt += 1;
        }
    }

    /// One try, following redirects: any for GET, 307 and 308 for POST (which re-send the
    /// body; a 301, 302 or 303 would turn it into a GET, so they end the try with an error
    /// naming the new address).
    fn try_once(&self, url: &str, body: Option<&[u8]>, until: Instant) -> Try {
        let mut url = url.to_string();
        let mut auth = self.api_key.as_ref().map(|key| format!("Bearer {key}"));
        let mut hops = 0;
        let response = loop {
            let response = match self.call(&url, body, auth.as_deref(), until) {
                Try::Done(response) => response,
                failed => return failed,
            };
            let status = response.status().as_u16();
            if !matches!(status, 301 | 302 | 303 | 307 | 308) {
                break response;
            }
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .and_then(|location| url::resolve(&url, location));
            let shown = url::redact(&url);
            let Some(location) = location else {
                return Try::Fail(Error::Protocol(format!(
                    "{shown} answered {status} (a redirect) without a usable Location"
                )));
            };
            let moved = url::redact(&location);
            if body.is_some() && !matches!(status, 307 | 308) {
                return Try::Fail(Error::Protocol(format!(
                    "{shown} redirects to {moved} with {status}, which would turn the request \
                     into a GET; set --base-url (or OPENAI_BASE_URL) to the new address"
                )));
            }
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Try::Fail(Error::Protocol(format!(
                    "more than {MAX_REDIRECTS} redirects, the last from {shown} to {moved}"
                )));
            }
            // The key goes to the address the user gave, not wherever a redirect points.
            if !url::same_origin(&url, &location) {
                auth = None;
            }
            url = location;
        };
        let status = response.status().as_u16();
        if response.status().is_success() {
            return Try::Done(response);
        }
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|secs| secs.min(MAX_RETRY_AFTER));
        let (message, text) = error_text(response);
        let json: Option<Value> = serde_json::from_str(&text).ok();
        if let Some(overflow) = window::overflow(&message, json.as_ref()) {
            return Try::Fail(Error::Overflow {
                window: overflow.window,
                prompt: overflow.prompt,
                message,
            });
        }
        let mut message = url::redact_all(&message);
        if let Some(index) = failure::blamed_message(&text) {
            message.push_str(&blamed(body, index));
        }
        // A refusal of tools will not pass (llama-server words it as a 500): the agent falls
        // back at once instead.
        let retry = failure::retryable(status, &message) && server::refusal(&message).is_none();
        let error = Error::Api {
            status: Some(status),
            message,
        };
        if retry {
            Try::Again(error, retry_after)
        } else {
            Try::Fail(error)
        }
    }
}

impl Client {
    /// Sends one request to `url`, waiting for the response head no longer than the idle
    /// timeout and `until` allow; `Done` holds any response, whatever its status.
    fn call(&self, url: &str, body: Option<&[u8]>, auth: Option<&str>, until: Instant) -> Try {
        let call = || match body {
            Some(body) => {
                let mut request = self
                    .agent
                    .post(url)
                    .header("Content-Type", "application/json");
                if let Some(auth) = auth {
                    request = request.header("Authorization", auth);
                }
                request.send(body)
            }
            None => {
                let mut request = self.agent.get(url);
                if let Some(auth) = auth {
                    request = request.header("Authorization", auth);
                }
                request.call()
            }
        };
        let was_signal = |e: &ureq::Error| matches!(e, ureq::Error::Io(io) if io.kind() == io::ErrorKind::Interrupted);
        let limit = self.idle.min(left(until));
        match signal::with_deadline(limit, call, was_signal) {
            Ok(response) => Try::Done(response),
            Err(Cut::Interrupted) => Try::Fail(Error::Interrupted),
            Err(Cut::Timeout) if Instant::now() >= until => {
                Try::Fail(Error::Deadline(self.deadline.as_secs()))
            }
            Err(Cut::Timeout) => Try::Fail(Error::Timeout(self.idle.as_secs())),
            Err(Cut::Failed(error)) => transport_error(url, error, self.proxy.as_ref()),
        }
    }
}

/// The shortest wait armed: a zero would disarm the alarm and wait for good.
const MIN_WAIT: Duration = Duration::from_millis(1);

/// The time left until `until`, at least `MIN_WAIT`.
fn left(until: Instant) -> Duration {
    until
        .saturating_duration_since(Instant::now())
        .max(MIN_WAIT)
}

/// A response body's reader that gives up after `idle` without a byte, and at `until` in any
/// case: a server sending keep-alive comments or one byte at a time resets the idle timeout
/// forever, but not this.
struct Bounded<R> {
    inner: Guarded<R>,
    idle: Duration,
    until: Instant,
    /// The whole deadline, for the error.
    deadline: Duration,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if Instant::now() >= self.until {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline"));
        }
        self.inner.idle = self.idle.min(left(self.until));
        self.inner.read(buf)
    }
}

/// How one try went.
enum Try {
    Done(Response<Body>),
    /// Worth another try, after the server's Retry-After seconds if it sent them.
    Again(Error, Option<u64>),
    /// The connection was dropped or reset with no response: worth another try, and at once
    /// the first time (a pooled connection the server had closed).
    Stale(Error),
    Fail(Error),
}

/// A request that got no response: a refused or dropped connection may pass, a name that does
/// not resolve, a TLS failure or a failing proxy will not.
fn transport_error(url: &str, error: ureq::Error, proxy: Option<&network::Proxy>) -> Try {
    use ureq::Error as E;
    let stale = matches!(&error, E::Io(io) if matches!(
        io.kind(),
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::UnexpectedEof
    ));
    let passing = match &error {
        E::Io(io) => matches!(
            io.kind(),
            io::ErrorKind::ConnectionRefused
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::UnexpectedEof
                | io::ErrorKind::TimedOut
        ),
        E::ConnectionFailed | E::Timeout(_) => true,
        _ => false,
    };
    match network::explain(&error, url, proxy) {
        error @ Error::Connect { .. } if stale => Try::Stale(error),
        error @ Error::Connect { .. } if passing => Try::Again(error, None),
        error => Try::Fail(error),
    }
}

fn content_type(response: &Response<Body>) -> String {
    let value = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok());
    value.unwrap_or_default().to_ascii_lowercase()
}

/// Feeds SSE lines to the assembler until `[DONE]` or the end of the stream.
fn read_events(
    reader: Bounded<impl Read>,
    assembler: &mut Assembler,
    show: &mut dyn FnMut(Piece),
    ends: Option<&Ends<'_>>,
) -> Result<()> {
    let mut reader = BufReader::new(reader);
    let mut sse = Sse::default();
    let (mut line, mut events) = (Vec::new(), 0usize);
    // Lines that are not SSE at all: a server that sent plain JSON under an SSE content type.
    let mut plain = String::new();
    loop {
        line.clear();
        // One line at most MAX_EVENT long: a server sending one endless line ends here.
        let n = (&mut reader)
            .take(MAX_EVENT as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| read_error(reader.get_ref(), e))?;
        if line.len() > MAX_EVENT {
            return Err(Error::Protocol(format!(
                "a line of the reply stream went over {} MiB; a broken or hostile server? \
                 (turn's cap on one reply)",
                MAX_EVENT >> 20
            )));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches('\n');
        let data = if n == 0 { sse.finish() } else { sse.line(text) };
        if sse.too_long() {
            return Err(Error::Protocol(format!(
                "an event of the reply stream went over {} MiB; a broken or hostile server? \
                 (turn's cap on one reply)",
                MAX_EVENT >> 20
            )));
        }
        if let Some(data) = data {
            events += 1;
            assembler.feed(&data, show).map_err(from_server)?;
            if assembler.looping() || ends.is_some_and(|ends| assembler.past_end(ends)) {
                // Dropping the reader closes the connection: the server stops generating.
                return Ok(());
            }
            if assembler.done() {
                // Read the little that follows so the connection can serve the next request
                // (a new TLS handshake per step is slow); a server that keeps the stream open
                // after [DONE] costs only this short wait.
                reader.get_mut().idle = DRAIN;
                let _ = io::copy(&mut reader, &mut io::sink());
                return Ok(());
            }
        } else if n > 0 && !Sse::is_sse(text) && plain.len() < MAX_BODY as usize {
            plain.push_str(text);
            plain.push('\n');
        }
        if n == 0 {
            break;
        }
    }
    if events == 0 && !plain.trim().is_empty() {
        return assembler.feed(&plain, show).map_err(from_server);
    }
    if events == 0 {
        return Err(Error::Protocol("the reply stream was empty".into()));
    }
    if !assembler.complete() {
        return Err(Error::Protocol(
            "the reply stream ended before the reply was complete".into(),
        ));
    }
    Ok(())
}

fn read_body(mut reader: Bounded<impl Read>) -> Result<String> {
    let mut bytes = Vec::new();
    let result = (&mut reader).take(MAX_BODY + 1).read_to_end(&mut bytes);
    result.map_err(|e| read_error(&reader, e))?;
    if bytes.len() as u64 > MAX_BODY {
        return Err(Error::Protocol(format!(
            "the reply went over {} MiB; a broken or hostile server? (turn's cap on one reply)",
            MAX_BODY >> 20
        )));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A failed read of a reply, as the user should hear it.
fn read_error(reader: &Bounded<impl Read>, e: std::io::Error) -> Error {
    if signal::interrupted() {
        Error::Interrupted
    } else if e.kind() == std::io::ErrorKind::TimedOut && Instant::now() >= reader.until {
        Error::Deadline(reader.deadline.as_secs())
    } else if e.kind() == std::io::ErrorKind::TimedOut {
        Error::Timeout(reader.idle.as_secs())
    } else {
        Error::Connect {
            url: "the server".into(),
            detail: format!("the reply broke off: {e}"),
            reach: Reach::Broken,
        }
    }
}

/// An error the server put in a 2xx body or an SSE event, or a payload turn cannot read.
fn from_server(fault: Fault) -> Error {
    match fault {
        Fault::Server(message) => match window::overflow(&message, None) {
            Some(overflow) => Error::Overflow {
                window: overflow.window,
                prompt: overflow.prompt,
                message,
            },
            None => Error::Api {
                status: None,
                message,
            },
        },
        Fault::Garbled(message) => Error::Protocol(message),
    }
}

/// " (message N of the request: …)", for the message an error blames, as the user knows it.
fn blamed(request: Option<&[u8]>, index: usize) -> String {
    let request: Value = request
        .and_then(|body| serde_json::from_slice(body).ok())
        .unwrap_or_default();
    let role = request["messages"][index]["role"].as_str();
    let what = match (index, role) {
        (0, Some("system")) => "the system prompt",
        (_, Some("user")) => "a user message",
        (_, Some("assistant")) => "an assistant message",
        (_, Some("tool")) => "a tool result",
        _ => return format!(" (message {index} of the request)"),
    };
    format!(" (message {index} of the request: {what}; message 0 is the system prompt)")
}

/// The message in a failed response's body (JSON in any known shape, else the text itself),
/// and the body's text.
fn error_text(response: Response<Body>) -> (String, String) {
    let reason = response
        .status()
        .canonical_reason()
        .unwrap_or("error")
        .to_string();
    let mut bytes = Vec::new();
    let _ = response
        .into_body()
        .into_reader()
        .take(1024 * 1024)
        .read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if let Some(message) = serde_json::from_str(&text)
        .ok()
        .and_then(|v: Value| stream::error_message(&v))
    {
        return (message, text);
    }
    let trimmed = text.trim();
    if trimmed.is_empty() {
        (reason, text)
    } else {
        (trimmed.chars().take(500).collect(), text)
    }
}

/// Sleeps in short steps so Ctrl-C is noticed.
fn sleep(total: Duration) -> Result<()> {
    let start = std::time::Instant::now();
    while start.elapsed() < total {
        if signal::interrupted() {
            return Err(Error::Interrupted);
        }
        std::thread::sleep(Duration::from_millis(50).min(total - start.elapsed().min(total)));
    }
    Ok(())
}
