//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! EXEC takes the shards of every queued command and every WATCHed key in
//! one ascending lock, checks the WATCH flag, and runs the queue while
//! holding them: no other command can touch those keys in between.

use std::sync::Arc;

use bytes::Bytes;

use super::permissions::{self, Context};
use super::presets::{RO, keys_all};
use super::registry::{execute, lock_plan, registry};
use super::session::{discard_state, unwatch_all, unwatch_with, watched_plan};
use super::spec::Group;
use super::spec::acl::TRANSACTION;
use super::spec::flag::{
    ALLOW_BUSY, ENDS_MULTI, EXEC, FAST, LOADING, NOSCRIPT, RUNS_IN_MULTI, SKIP_SLOWLOG, STALE,
};
use super::{CommandSpec, Ctx, flag};
use crate::cluster::common_slot;
use crate::context::{Client, WatchState};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{LockPlan, Locked, WatchFlag};
use crate::protocol::Reply;

pub fn multi(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.client.multi.is_some() {
        return Err(CmdError::NestedMulti);
    }
    ctx.client.multi = Some(Vec::new());
    ctx.client.multi_failed = false;
    Ok(Reply::OK)
}

pub fn exec(ctx: &mut Ctx) -> CmdResult<Reply> {
    let Some(queue) = ctx.client.multi.take() else {
        return Err(CmdError::ExecWithoutMulti);
    };
    let shared = ctx.shared;
    let client = &mut *ctx.client;
    if std::mem::take(&mut client.multi_failed) {
        discard_state(shared, client);
        return Err(CmdError::ExecAbort);
    }
    let mut plan = watched_plan(client);
    for (id, args) in &queue {
        let spec = registry().specs[*id];
        // A script may reach keys it did not declare: hold everything.
        let needs = if spec.has(flag::SCRIPT) {
            LockPlan::All
        } else {
            lock_plan(spec, args)
        };
        plan = plan.union(needs);
    }
    let mut locked = match shared.keyspace.lock(&plan) {
        Ok(locked) => locked,
        Err(e) => {
            discard_state(shared, client);
            return Err(e);
        }
    };
    if watch_broken(client, &mut locked)? {
        unwatch_with(client, &mut locked);
        return Ok(Reply::NilArray);
    }
    // In cluster mode the queued commands' keys must share one slot; a
    // transaction already doomed (above) reports that instead.
    if shared.cluster.is_some() {
        let keys = queue
            .iter()
            .flat_map(|(id, args)| registry().specs[*id].routed_args(args));
        if let Err(e) = common_slot(keys) {
            unwatch_with(client, &mut locked);
            return Err(e);
        }
    }
    client.in_exec = true;
    let replies = queue
        .iter()
        .map(|(id, args)| {
            // Rules may have changed since the command was queued.
            if !client.user.unrestricted()
                && let Err(denied) = permissions::check(shared, client, *id, args, Context::Multi)
            {
                return Reply::Error(denied.exec_error());
            }
            execute(shared, client, *id, args, &mut locked)
        })
        .collect();
    client.in_exec = false;
    unwatch_with(client, &mut locked);
    Ok(Reply::Array(replies))
}

pub fn discard(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.client.multi.is_none() {
        return Err(CmdError::DiscardWithoutMulti);
    }
    discard_state(ctx.shared, ctx.client);
    Ok(Reply::OK)
}

pub fn watch(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.client.multi.is_some() {
        return Err(CmdError::WatchInsideMulti);
    }
    let db_index = ctx.client.db;
    let state = ctx.client.watch.get_or_insert_with(|| WatchState {
        flag: Arc::new(WatchFlag::default()),
        keys: Vec::new(),
    });
    let mut db = ctx.locked.db(db_index);
    for key in &ctx.args[1..] {
        if state.keys.iter().any(|(d, k)| *d == db_index && k == key) {
            continue;
        }
        // Reclaim a key that is already past its deadline now, so that its
        // expiry is not mistaken for a change after the WATCH.
        db.entry(key)?;
        db.watch(key, &state.flag)?;
        state.keys.push((db_index, Bytes::copy_from_slice(key)));
    }
    Ok(Reply::OK)
}

pub fn unwatch(ctx: &mut Ctx) -> CmdResult<Reply> {
    unwatch_all(ctx.shared, ctx.client);
    Ok(Reply::OK)
}

/// True if a WATCHed key changed, including by expiring, since the WATCH.
fn watch_broken(client: &Client, locked: &mut Locked<'_>) -> CmdResult<bool> {
    let Some(state) = &client.watch else {
        return Ok(false);
    };
    for (db, key) in &state.keys {
        // Reclaiming an expired key here raises the flag.
        locked.db(*db).entry(key)?;
    }
    Ok(state.flag.is_dirty())
}

const TX: u32 = NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY;

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("multi", 1, Group::Transactions, multi)
        .flags(TX | RUNS_IN_MULTI)
        .acl(TRANSACTION)
        .doc("1.2.0", "Starts a transaction."),
    CommandSpec::new("exec", 1, Group::Transactions, exec)
        .flags(NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG | ENDS_MULTI | EXEC)
        .acl(TRANSACTION)
        .doc("1.2.0", "Runs the queued commands atomically."),
    CommandSpec::new("discard", 1, Group::Transactions, discard)
        .flags(TX | ENDS_MULTI)
        .acl(TRANSACTION)
        .doc("2.0.0", "Drops the queued commands."),
    CommandSpec::new("watch", -2, Group::Transactions, watch)
        .flags(TX | RUNS_IN_MULTI)
        .acl(TRANSACTION)
        .keys(&keys_all(RO))
        .syntax("key...")
        .doc(
            "2.2.0",
            "Makes the next EXEC fail if any of these keys changes first.",
        ),
    CommandSpec::new("unwatch", 1, Group::Transactions, unwatch)
        .flags(TX)
        .acl(TRANSACTION)
        .doc("2.2.0", "Forgets every WATCHed key."),
];
