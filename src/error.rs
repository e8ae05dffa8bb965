//! The one error type: everything that ends a run early. Tool failures are not here: they are
//! data for the model (see tools.rs), so it can recover.
//!
//! Display is what the user reads after `turn: `: lowercase, no trailing period, naming the
//! flag, path or server concerned. `hint` adds a line on how to fix it where one helps.

use std::fmt;
use std::path::PathBuf;

pub enum Error {
    /// Bad flags or values: exit 2.
    Usage(String),
    /// A file turn itself needs (workspace, --system, a session) could not be used: exit 2.
    File {
        path: PathBuf,
        what: &'static str,
        err: std::io::Error,
    },
    /// A session file has a line that is not a message: exit 2.
    Session { path: PathBuf, detail: String },
    /// The server could not be reached, or the connection broke: exit 1.
    Connect {
        url: String,
        detail: String,
        reach: Reach,
    },
    /// The server's certificate was not accepted, or the TLS handshake failed: exit 1.
    Tls {
        host: String,
        detail: String,
        /// The certificate chains to no CA turn trusts (as opposed to a wrong name or date).
        unknown_ca: bool,
    },
    /// The proxy from `var` could not be used: exit 1.
    Proxy {
        var: &'static str,
        proxy: String,
        detail: String,
    },
    /// The server answered with an error (in the status, or inside a 200 reply): exit 1.
    Api {
        status: Option<u16>,
        message: String,
    },
    /// The server answered, but not with anything turn can read: exit 1.
    Protocol(String),
    /// The server said the request does not fit the model's context window (with the window
    /// and the request's tokens, when it said them). The agent recovers from it by
    /// compacting; exit 1 if it escapes.
    Overflow {
        window: Option<u64>,
        prompt: Option<u64>,
        message: String,
    },
    /// The work cannot go on inside the context window: the fixed part of the prompt does not
    /// fit, or the server kept refusing after compaction: exit 1.
    Context(String),
    /// The server went quiet for longer than --request-timeout: exit 1.
    Timeout(u64),
    /// One request took longer than --request-deadline in all: exit 1.
    Deadline(u64),
    /// The model kept calling tools past --max-steps: exit 3.
    MaxSteps(u32),
    /// The final answer did not match --output-schema, also after one re-ask: exit 5.
    Schema(String),
    /// The model made the same call with the same result this many times among its latest: exit 4.
    Repeating { tool: String, times: u32 },
    /// An undo or restore refused (a conflict, content not kept) or its store unusable: exit 1.
    Undo(String),
    /// SIGINT: exit 130.
    Interrupted,
}

/// How a connection failed, for the hint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reach {
    /// Nothing listens at that address.
    Refused,
    /// The host name does not resolve.
    NotFound,
    /// No answer in time.
    TimedOut,
    /// The connection broke, or failed otherwise.
    Broken,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::File { .. } | Error::Session { .. } => 2,
            Error::Connect { .. }
            | Error::Tls { .. }
            | Error::Proxy { .. }
            | Error::Api { .. }
            | Error::Protocol(_)
            | Error::Timeout(_)
            | Error::Overflow { .. }
            | Error::Context(_)
            | Error::Undo(_)
            | Error::Deadline(_) => 1,
            Error::MaxSteps(_) => 3,
            Error::Schema(_) => 5,
            Error::Repeating { .. } => 4,
            Error::Interrupted => 130,
        }
    }

    /// A line on what to do about it, where there is something to say.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            // A server that refuses tools (with --tool-protocol native): how to switch them on.
            Error::Api { message, .. } if crate::wire::server::refusal(message).is_some() => {
                crate::wire::server::refusal(message).map(|(_, hint)| hint)
            }
            Error::Usage(_) => Some("see 'turn --help'"),
            Error::Connect { reach, .. } => Some(match reach {
                Reach::Refused => {
                    "nothing answers there: is the server running? set the address with --base-url or OPENAI_BASE_URL"
                }
                Reach::NotFound => {
                    "the host name does not resolve: check --base-url or OPENAI_BASE_URL (and the DNS)"
                }
                Reach::TimedOut => {
                    "no answer in time: check the address, the port and any firewall in between"
                }
                Reach::Broken => {
                    "the connection broke: is the server running and speaking HTTP(S) at that address?"
                }
            }),
            Error::Tls {
                unknown_ca: true, ..
            } => Some(
                "for a server with a private CA, give its certificate with --ca-cert FILE or SSL_CERT_FILE (PEM)",
            ),
            Error::Tls { .. } => Some(
                "use the host name the certificate was issued for in --base-url, and check the server's certificate",
            ),
            Error::Proxy { .. } => Some(
                "check the proxy, or leave it out for this host with NO_PROXY (e.g. NO_PROXY=localhost,127.0.0.1)",
            ),
            Error::Api {
                status: Some(401 | 403),
                ..
            } => Some("set OPENAI_API_KEY to a key this server accepts"),
            Error::Api {
                status: Some(404), ..
            } => Some(
                "check --base-url (it usually ends in /v1) and the model name (-m or TURN_MODEL)",
            ),
            Error::Timeout(_) => Some("a slow local model may need a larger --request-timeout"),
            Error::Overflow { .. } | Error::Context(_) => Some(
                "start the server with a larger context (llama-server -c N, Ollama num_ctx or \
                 OLLAMA_CONTEXT_LENGTH, vLLM --max-model-len, LM Studio's context length) and \
                 tell turn with --context N; a smaller --max-tokens leaves more room too",
            ),
            Error::Deadline(_) => Some("a slow local model may need a larger --request-deadline"),
            Error::MaxSteps(_) => Some("raise --max-steps, or ask for a smaller step"),
            Error::Schema(_) => Some(
                "a simpler schema, or a prompt that says what each field should hold, helps small models",
            ),
            Error::Repeating { .. } => Some(
                "ask for a smaller or clearer step, or use a larger model; turn -c resumes the session",
            ),
            Error::Session { .. } => {
                Some("fix or remove that line; turn never rewrites a session file")
            }
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(message) => f.write_str(message),
            Error::File { path, what, err } => write!(f, "{what} {}: {err}", path.display()),
            Error::Session { path, detail } => {
                write!(f, "cannot resume {}: {detail}", path.display())
            }
            Error::Connect { url, detail, .. } => write!(f, "cannot reach {url}: {detail}"),
            Error::Tls { host, detail, .. } => {
                write!(f, "cannot connect securely to {host}: {detail}")
            }
            Error::Proxy { var, proxy, detail } => {
                write!(f, "the proxy {proxy} (from {var}) failed: {detail}")
            }
            Error::Api {
                status: Some(status),
                message,
            } => write!(f, "server error {status}: {message}"),
            Error::Api {
                status: None,
                message,
            } => write!(f, "server error: {message}"),
            Error::Protocol(message) => write!(f, "unexpected answer from the server: {message}"),
            Error::Overflow { message, .. } => {
                write!(f, "the request does not fit the context window: {message}")
            }
            Error::Context(message) => f.write_str(message),
            Error::Undo(message) => write!(f, "undo: {message}"),
            Error::Timeout(secs) => {
                write!(f, "the server sent nothing for {secs}s (--request-timeout)")
            }
            Error::Deadline(secs) => write!(
                f,
                "the server's reply took longer than {secs}s in all (--request-deadline)"
            ),
            Error::MaxSteps(n) => write!(
                f,
                "stopped after {n} steps (--max-steps); the task may be unfinished"
            ),
            Error::Schema(detail) => {
                write!(
                    f,
                    "the answer does not match the --output-schema schema: {detail}"
                )
            }
            Error::Repeating { tool, times } => write!(
                f,
                "the model is repeating itself: it made the same {tool} call {times} times among \
                 its latest calls with the same result, so the turn was stopped"
            ),
            Error::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<lexopt::Error> for Error {
    fn from(err: lexopt::Error) -> Self {
        Error::Usage(err.to_string())
    }
}
