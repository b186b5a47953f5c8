//! The wire: request framing and reply encoding (RESP2 and RESP3).

pub mod parse;
pub mod reply;

pub use parse::{ProtocolError, RequestParser, next_request};
pub use reply::{Protocol, Reply};
