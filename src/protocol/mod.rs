//! The wire: request framing and reply encoding (RESP2 and RESP3).

pub mod parse;
pub mod reply;

pub use parse::{ProtocolError, RequestParser, next_request};
pub use reply::{Protocol, Reply};

/// The Redis version rlockd answers as: clients gate features on it.
pub const REDIS_VERSION: &str = "7.0.15";
