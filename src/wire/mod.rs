//! Everything that crosses the wire to the model server: the HTTP client with its retries
//! (`client`), the SSE stream and its assembly into one reply (`stream`), the history's
//! message types with their normalization (`message`), what a server's error says
//! (`failure`), and server addresses as text (`url`: credentials hidden, redirects resolved).
//!
//! Architecture invariant: `stream`, `message`, `failure` and `url` are pure; only `client`
//! does I/O.

pub mod client;
pub mod failure;
pub mod message;
pub mod stream;
pub mod url;
