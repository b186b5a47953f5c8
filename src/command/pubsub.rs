//! Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
//! SSUBSCRIBE, SUNSUBSCRIBE, PUBLISH, SPUBLISH and PUBSUB.
//!
//! A command about several channels answers with one confirmation per
//! channel. The last is the command's reply; the ones before it go through
//! the client's own mailbox, which the connection empties into its output
//! before writing the reply, so they come out in order.

use bytes::Bytes;

use super::Ctx;
use super::reply::help_reply;
use super::spec::flag::{FAST, LOADING, MAY_REPLICATE, NOSCRIPT, PUBSUB, STALE, WHILE_SUBSCRIBED};
use super::spec::{ChannelArgs, CommandSpec, Group, KeySpec};
use crate::context::Client;
use crate::context::Shared;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::pubsub::{Kind, confirmation};

// Leaving every subscription is pub/sub's to offer to the connection;
// RESET, a command of another family, needs it too, so it lives below.
pub use super::session::forget_subscriptions;

fn confirmation_reply(verb: &'static str, name: Option<&Bytes>, count: usize) -> Reply {
    Reply::Push(vec![
        word(verb),
        name.map_or(Reply::Nil, |n| Reply::Bulk(n.clone())),
        Reply::Int(count as i64),
    ])
}

fn word(text: &'static str) -> Reply {
    Reply::Bulk(Bytes::from_static(text.as_bytes()))
}

/// Answers for `names`, one confirmation each: all but the last are queued
/// through the mailbox, the last is returned.
fn confirm_each(
    client: &mut Client,
    verb: &'static str,
    names: &[Bytes],
    mut act: impl FnMut(&mut Client, &Bytes) -> usize,
) -> Reply {
    let mut reply = None;
    for (i, name) in names.iter().enumerate() {
        let count = act(client, name);
        if i + 1 == names.len() {
            reply = Some(confirmation_reply(verb, Some(name), count));
        } else {
            client.pubsub.push(confirmation(verb, name, count));
        }
    }
    client.note_subscriptions();
    reply.unwrap_or(Reply::Nil)
}

fn subscribe_generic(ctx: &mut Ctx, kind: Kind) -> CmdResult<Reply> {
    let (verb, _) = kind.verbs();
    Ok(confirm_each(
        ctx.client,
        verb,
        &ctx.args[1..],
        |client, name| {
            client.pubsub.subscribe(kind, name);
            client.pubsub.count(kind)
        },
    ))
}

fn unsubscribe_generic(ctx: &mut Ctx, kind: Kind) -> CmdResult<Reply> {
    let (_, verb) = kind.verbs();
    let shared: &Shared = ctx.shared;
    let names = if ctx.args.len() > 1 {
        ctx.args[1..].to_vec()
    } else {
        ctx.client.pubsub.names(kind)
    };
    if names.is_empty() {
        let count = ctx.client.pubsub.count(kind);
        return Ok(confirmation_reply(verb, None, count));
    }
    Ok(confirm_each(ctx.client, verb, &names, |client, name| {
        client.pubsub.unsubscribe(&shared.pubsub, kind, name);
        client.pubsub.count(kind)
    }))
}

pub fn subscribe(ctx: &mut Ctx) -> CmdResult<Reply> {
    subscribe_generic(ctx, Kind::Channel)
}

pub fn psubscribe(ctx: &mut Ctx) -> CmdResult<Reply> {
    subscribe_generic(ctx, Kind::Pattern)
}

pub fn ssubscribe(ctx: &mut Ctx) -> CmdResult<Reply> {
    subscribe_generic(ctx, Kind::Shard)
}

pub fn unsubscribe(ctx: &mut Ctx) -> CmdResult<Reply> {
    unsubscribe_generic(ctx, Kind::Channel)
}

pub fn punsubscribe(ctx: &mut Ctx) -> CmdResult<Reply> {
    unsubscribe_generic(ctx, Kind::Pattern)
}

pub fn sunsubscribe(ctx: &mut Ctx) -> CmdResult<Reply> {
    unsubscribe_generic(ctx, Kind::Shard)
}

/// PUBLISH: delivered here, and on every replica (it goes down the
/// replication stream as it is, as Redis sends it).
pub fn publish(ctx: &mut Ctx) -> CmdResult<Reply> {
    let n = ctx.shared.pubsub.publish(ctx.arg(1), ctx.arg(2));
    propagate(ctx, b"PUBLISH");
    Ok(Reply::Int(n as i64))
}

pub fn spublish(ctx: &mut Ctx) -> CmdResult<Reply> {
    let n = ctx.shared.pubsub.spublish(ctx.arg(1), ctx.arg(2));
    propagate(ctx, b"SPUBLISH");
    Ok(Reply::Int(n as i64))
}

fn propagate(ctx: &Ctx, name: &[u8]) {
    ctx.shared
        .replica
        .backlog
        .command(Some(ctx.client.db), &[name, ctx.arg(1), ctx.arg(2)]);
}

/// PUBSUB CHANNELS / SHARDCHANNELS take at most one pattern.
fn channels_generic(ctx: &mut Ctx, kind: Kind) -> CmdResult<Reply> {
    if ctx.args.len() > 3 {
        return Err(CmdError::other(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            String::from_utf8_lossy(ctx.arg(1))
        )));
    }
    let pattern = ctx.args.get(2).map(|p| &p[..]);
    Ok(Reply::array_of_bulks(
        ctx.shared.pubsub.channels(kind, pattern),
    ))
}

fn numsub_generic(ctx: &mut Ctx, kind: Kind) -> CmdResult<Reply> {
    let mut out = Vec::with_capacity((ctx.args.len() - 2) * 2);
    for channel in &ctx.args[2..] {
        out.push(Reply::Bulk(channel.clone()));
        out.push(Reply::Int(ctx.shared.pubsub.numsub(kind, channel) as i64));
    }
    Ok(Reply::Array(out))
}

pub fn pubsub_channels(ctx: &mut Ctx) -> CmdResult<Reply> {
    channels_generic(ctx, Kind::Channel)
}

pub fn pubsub_shardchannels(ctx: &mut Ctx) -> CmdResult<Reply> {
    channels_generic(ctx, Kind::Shard)
}

pub fn pubsub_numsub(ctx: &mut Ctx) -> CmdResult<Reply> {
    numsub_generic(ctx, Kind::Channel)
}

pub fn pubsub_shardnumsub(ctx: &mut Ctx) -> CmdResult<Reply> {
    numsub_generic(ctx, Kind::Shard)
}

pub fn pubsub_numpat(ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(Reply::Int(ctx.shared.pubsub.numpat() as i64))
}

pub fn pubsub_help(_ctx: &mut Ctx) -> CmdResult<Reply> {
    Ok(help_reply(
        "PUBSUB",
        &[
            "CHANNELS [<pattern>]",
            "    List the channels that have subscribers, optionally only those matching",
            "    a glob-style <pattern>.",
            "NUMPAT",
            "    Count the distinct patterns clients are subscribed to.",
            "NUMSUB [<channel> ...]",
            "    Count each channel's subscribers (pattern subscriptions not included).",
            "SHARDCHANNELS [<pattern>]",
            "    List the shard channels that have subscribers, optionally only those",
            "    matching a glob-style <pattern>.",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Count each shard channel's subscribers.",
        ],
    ))
}

/// Shard channels sit where keys would, but are not keys.
const SHARD_CHANNEL: &[KeySpec] = &[KeySpec::range(1, 0, 1, &["not_key"])];

const SHARD_CHANNELS: &[KeySpec] = &[KeySpec::range(1, -1, 1, &["not_key"])];

const SUB: u32 = PUBSUB | NOSCRIPT | LOADING | STALE | WHILE_SUBSCRIBED;

static PUBSUB_SUBS: &[CommandSpec] = &[
    CommandSpec::new("channels", -2, Group::Pubsub, pubsub_channels)
        .flags(PUBSUB | LOADING | STALE)
        .syntax("[pattern]")
        .doc(
            "2.8.0",
            "Lists the channels that have subscribers, optionally matching a pattern.",
        ),
    CommandSpec::new("numsub", -2, Group::Pubsub, pubsub_numsub)
        .flags(PUBSUB | LOADING | STALE)
        .syntax("[channel...]")
        .doc("2.8.0", "Counts the subscribers of each channel."),
    CommandSpec::new("numpat", 2, Group::Pubsub, pubsub_numpat)
        .flags(PUBSUB | LOADING | STALE)
        .doc("2.8.0", "Counts the distinct patterns subscribed to."),
    CommandSpec::new("shardchannels", -2, Group::Pubsub, pubsub_shardchannels)
        .flags(PUBSUB | LOADING | STALE)
        .syntax("[pattern]")
        .doc(
            "7.0.0",
            "Lists the shard channels that have subscribers, optionally matching a pattern.",
        ),
    CommandSpec::new("shardnumsub", -2, Group::Pubsub, pubsub_shardnumsub)
        .flags(PUBSUB | LOADING | STALE)
        .syntax("[shardchannel...]")
        .doc("7.0.0", "Counts the subscribers of each shard channel."),
    CommandSpec::new("help", 2, Group::Pubsub, pubsub_help)
        .flags(LOADING | STALE)
        .doc("6.2.0", "Lists the PUBSUB subcommands."),
];

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("subscribe", -2, Group::Pubsub, subscribe)
        .channels(ChannelArgs::All)
        .flags(SUB)
        .syntax("channel...")
        .doc(
            "2.0.0",
            "Listens for messages published to the given channels.",
        ),
    CommandSpec::new("unsubscribe", -1, Group::Pubsub, unsubscribe)
        .flags(SUB)
        .syntax("[channel...]")
        .doc(
            "2.0.0",
            "Stops listening to the given channels, or to all of them.",
        ),
    CommandSpec::new("psubscribe", -2, Group::Pubsub, psubscribe)
        .channels(ChannelArgs::AllPatterns)
        .flags(SUB)
        .syntax("pattern...")
        .doc(
            "2.0.0",
            "Listens for messages published to channels matching the given patterns.",
        ),
    CommandSpec::new("punsubscribe", -1, Group::Pubsub, punsubscribe)
        .flags(SUB)
        .syntax("[pattern...]")
        .doc(
            "2.0.0",
            "Stops listening to the given patterns, or to all of them.",
        ),
    CommandSpec::new("ssubscribe", -2, Group::Pubsub, ssubscribe)
        .channels(ChannelArgs::All)
        .flags(SUB)
        .keys(SHARD_CHANNELS)
        .syntax("shardchannel...")
        .doc(
            "7.0.0",
            "Listens for messages published to the given shard channels.",
        ),
    CommandSpec::new("sunsubscribe", -1, Group::Pubsub, sunsubscribe)
        .flags(SUB)
        .keys(SHARD_CHANNELS)
        .syntax("[shardchannel...]")
        .doc(
            "7.0.0",
            "Stops listening to the given shard channels, or to all of them.",
        ),
    CommandSpec::new("publish", 3, Group::Pubsub, publish)
        .channels(ChannelArgs::First)
        .flags(PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE)
        .syntax("channel message")
        .doc(
            "2.0.0",
            "Posts a message to a channel; returns how many subscribers received it.",
        ),
    CommandSpec::new("spublish", 3, Group::Pubsub, spublish)
        .channels(ChannelArgs::First)
        .flags(PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE)
        .keys(SHARD_CHANNEL)
        .syntax("shardchannel message")
        .doc(
            "7.0.0",
            "Posts a message to a shard channel; returns how many subscribers received it.",
        ),
    CommandSpec::container("pubsub", Group::Pubsub, PUBSUB_SUBS)
        .doc("2.8.0", "Inspects the state of pub/sub."),
];
