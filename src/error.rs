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
    Connect { url: String, detail: String },
    /// The server answered with an error (in the status, or inside a 200 reply): exit 1.
    Api {
        status: Option<u16>,
        message: String,
    },
    /// The server answered, but not with anything turn can read: exit 1.
    Protocol(String),
    /// The server went quiet for longer than --request-timeout: exit 1.
    Timeout(u64),
    /// One request took longer than --request-deadline in all: exit 1.
    Deadline(u64),
    /// The model kept calling tools past --max-steps: exit 3.
    MaxSteps(u32),
    /// SIGINT: exit 130.
    Interrupted,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::File { .. } | Error::Session { .. } => 2,
            Error::Connect { .. }
            | Error::Api { .. }
            | Error::Protocol(_)
            | Error::Timeout(_)
            | Error::Deadline(_) => 1,
            Error::MaxSteps(_) => 3,
            Error::Interrupted => 130,
        }
    }

    /// A line on what to do about it, where there is something to say.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Error::Usage(_) => Some("see 'turn --help'"),
            Error::Connect { .. } => {
                Some("is the server running? set the address with --base-url or OPENAI_BASE_URL")
            }
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
            Error::Deadline(_) => Some("a slow local model may need a larger --request-deadline"),
            Error::MaxSteps(_) => Some("raise --max-steps, or ask for a smaller step"),
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
            Error::Connect { url, detail } => write!(f, "cannot reach {url}: {detail}"),
            Error::Api {
                status: Some(status),
                message,
            } => write!(f, "server error {status}: {message}"),
            Error::Api {
                status: None,
                message,
            } => write!(f, "server error: {message}"),
            Error::Protocol(message) => write!(f, "unexpected answer from the server: {message}"),
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
