//! The server's TCP and TLS listeners as CONFIG SET sees them: `port`,
//! `tls-port` and `bind` move them at run time, as in Redis 7.0. The
//! server layer above owns the sockets and implements [`Relisten`];
//! `Shared` holds it once the server has started.

use crate::config::Config;

/// Redis's reply when a new `port` or `tls-port` does not bind.
pub const PORT_FAILED: &str = "Unable to listen on this port. Check server logs.";
/// Redis's reply when a new `bind` list does not bind.
pub const BIND_FAILED: &str = "Failed to bind to specified addresses.";

/// Moves the listeners from `old`'s `port`, `tls-port` and `bind` to
/// `new`'s. The old ones close first, so the new ones may take the same
/// addresses; on failure (logged, as Redis logs it) the old ones are
/// listened on again and the answer is Redis's error text.
pub trait Relisten: Send + Sync {
    fn relisten(&self, old: &Config, new: &Config) -> Result<(), &'static str>;
}
