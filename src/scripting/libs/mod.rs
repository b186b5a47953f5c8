//! The libraries Redis loads into its Lua state besides the standard ones.

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod structs;
