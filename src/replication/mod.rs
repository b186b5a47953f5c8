//! This server as a replica: the link to the primary REPLICAOF names.
//! It connects, makes the handshake a Redis 7.0 replica makes (PING,
//! AUTH, REPLCONF listening-port / ip-address / capa, PSYNC), loads the
//! primary's snapshot on a full sync (`$<len>` or diskless `$EOF:<mark>`
//! payloads), then applies the primary's command stream in order as a
//! client of its own, acknowledging its offset every second and on
//! GETACK. A dropped link reconnects and asks to continue where it was.
//!
//! The state it reports into (ROLE, INFO) is `context::replica`; this
//! module only runs the link, so it sits beside `connection`, above the
//! commands it runs.
//!
//! `primary`: the other direction, this server serving its replicas (a
//! connection `crate::connection` hands over once it asked to sync).

mod link;
pub mod primary;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::context::Shared;
use crate::context::replica::LinkState;

/// How long a failed link waits before trying again (Redis's replication
/// cron retries once a second).
const RETRY: Duration = Duration::from_secs(1);

/// Follows whichever primary REPLICAOF names, until the server stops.
pub async fn run(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut primaries = shared.replica.subscribe();
    loop {
        let primary = primaries.borrow_and_update().clone();
        if let Some(primary) = primary {
            let outcome = tokio::select! {
                outcome = link::follow(&shared, &primary) => Some(outcome),
                _ = primaries.changed() => None,
                _ = stop.changed() => return,
            };
            if let Some(Err(e)) = outcome {
                tracing::warn!("Replication link to {}:{}: {e}", primary.host, primary.port);
                shared.replica.set_link(LinkState::Connect);
                tokio::select! {
                    _ = tokio::time::sleep(RETRY) => {}
                    _ = primaries.changed() => {}
                    _ = stop.changed() => return,
                }
            }
        } else {
            tokio::select! {
                r = primaries.changed() => if r.is_err() { return },
                _ = stop.changed() => return,
            }
        }
    }
}
