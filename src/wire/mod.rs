//! Everything that crosses the wire to the model server: the HTTP client with its retries
//! (`client`), the SSE stream and its assembly into one reply (`stream`), the history's
//! message types with their normalization (`message`), what a server's error says
//! (`failure`), server addresses as text (`url`: credentials hidden, redirects resolved), calls
//! written as text (`textcalls`), the tool protocols and the text protocol's rendering of a
//! history (`textproto`), the edit blocks that protocol declares (`editblocks`), what each
//! kind of local server can tell (`server`), and how the network is crossed (proxy, CAs, what
//! a failure means: `network`). How answers are judged is not the wire's concern (see coach).
//!
//! Architecture invariant: `stream`, `message`, `failure`, `url`, `textcalls`, `textproto`
//! and `editblocks` are pure; only `client`, `network::load_trust` and `server::discover` do I/O.

pub mod client;
pub mod editblocks;
pub mod failure;
pub mod message;
pub mod network;
pub mod server;
pub mod stream;
pub mod textcalls;
pub mod textproto;
pub mod url;
