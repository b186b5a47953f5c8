//! The wire: request framing and reply encoding (RESP2 and RESP3).

pub mod parse;
pub(crate) mod reply;

pub(crate) use parse::{ProtocolError, RequestParser};
pub(crate) use reply::Protocol;
pub use reply::Reply;

/// The Redis version rlockd answers as: clients gate features on it.
pub const REDIS_VERSION: &str = "7.0.15";
