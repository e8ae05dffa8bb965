//! Everything that crosses the wire to the model server: the HTTP client with its retries
//! (`client`), the SSE stream and its assembly into one reply (`stream`), and the history's
//! message types with their normalization (`message`).
//!
//! Architecture invariant: `stream` and `message` are pure; only `client` does I/O.

pub mod client;
pub mod message;
pub mod server;
pub mod stream;
pub mod textcalls;
