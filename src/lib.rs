//! rlockd: an in-memory, Redis-compatible server built for distributed locks.
//!
//! Start one inside a test:
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let server = rlockd::Server::builder().port(0).start().await?;
//! println!("listening on {}", server.url());
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

pub mod clock;
pub mod cluster;
pub mod command;
pub mod config;
pub mod connection;
pub mod context;
pub mod error;
pub mod expiry;
#[doc(hidden)]
pub mod fuzzing;
pub mod keyspace;
pub mod peer;
pub mod persist;
pub mod protocol;
pub mod pubsub;
pub mod scripting;
pub mod server;
pub mod util;

pub use config::{Config, DebugCommand};
pub use server::{BlockingServer, Server, ServerBuilder, ServerHandle};
