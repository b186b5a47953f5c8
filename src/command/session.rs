//! The state a connection's commands leave on its client that commands of
//! other families end or look at: the transaction and its WATCHes
//! (DISCARD, RESET, a disconnect), the subscriptions (RESET, a
//! disconnect) and RESP2's subscribed mode (PING, dispatch).

use bytes::Bytes;

use crate::context::{Client, Shared};
use crate::error::CmdError;
use crate::keyspace::{LockPlan, Locked};
use crate::protocol::{Protocol, Reply};

pub fn watched_plan(client: &Client) -> LockPlan {
    client.watch.as_ref().map_or(LockPlan::Nothing, |w| {
        LockPlan::for_keys(w.keys.iter().map(|(_, k)| &k[..]))
    })
}

pub fn unwatch_with(client: &mut Client, locked: &mut Locked<'_>) {
    if let Some(state) = client.watch.take() {
        for (db, key) in &state.keys {
            // The shards were locked for these keys: this cannot fail.
            let _ = locked.db(*db).unwatch(key, &state.flag);
        }
    }
}

/// Forgets every WATCH; the caller must hold no shard.
pub fn unwatch_all(shared: &Shared, client: &mut Client) {
    let plan = watched_plan(client);
    if plan != LockPlan::Nothing {
        // Outwaiting a busy script is right here: the WATCH entries must go.
        loop {
            if let Ok(mut locked) = shared.keyspace.lock(&plan) {
                unwatch_with(client, &mut locked);
                break;
            }
        }
    }
    client.watch = None;
}

/// Leaves any transaction and forgets every WATCH (DISCARD, RESET, disconnect).
pub fn discard_state(shared: &Shared, client: &mut Client) {
    client.multi = None;
    client.multi_failed = false;
    client.handle.info.lock().multi = -1;
    unwatch_all(shared, client);
}

/// The error for any other command in RESP2 subscribed mode.
pub fn subscribed_mode_error(full_name: &str) -> CmdError {
    CmdError::other(format!(
        "ERR Can't execute '{full_name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    ))
}

/// True when a RESP2 client is in subscribed mode.
pub fn in_subscribed_mode(client: &Client) -> bool {
    client.protocol == Protocol::Resp2 && client.pubsub.active()
}

/// The PING reply in RESP2 subscribed mode: `["pong", message]`.
pub fn subscribed_pong(message: Option<&Bytes>) -> Reply {
    Reply::Array(vec![
        Reply::Bulk(Bytes::from_static(b"pong")),
        Reply::Bulk(message.cloned().unwrap_or_default()),
    ])
}

/// Forgets every subscription quietly (RESET, disconnect).
pub fn forget_subscriptions(shared: &Shared, client: &mut Client) {
    client.pubsub.clear(&shared.pubsub);
    client.note_subscriptions();
}
