//! Client-side caching commands: CLIENT TRACKING, CACHING, GETREDIR and
//! TRACKINGINFO. The table of who cached what is `pubsub::tracking`.

use bytes::Bytes;

use crate::command::Ctx;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::pubsub::tracking::{Mode, PrefixError};
use crate::util::parse_i64;

/// CLIENT TRACKING ON|OFF's options, as given.
#[derive(Default)]
struct Request {
    mode: Mode,
    redirect: u64,
    prefixes: Vec<Bytes>,
}

fn parse(ctx: &Ctx) -> CmdResult<Request> {
    let tracking = &ctx.shared.pubsub.tracking;
    let mut req = Request::default();
    let mut args = ctx.args[3..].iter();
    while let Some(arg) = args.next() {
        let more = args.len() > 0;
        match &arg.to_ascii_lowercase()[..] {
            b"redirect" if more => {
                let id = args.next().and_then(|a| parse_i64(a));
                let id = id.ok_or(CmdError::NotInteger)?;
                if req.redirect != 0 {
                    return Err(CmdError::other(
                        "ERR A client can only redirect to a single other client",
                    ));
                }
                // The target must exist now, though it may leave later.
                if id <= 0 || !tracking.exists(id as u64) {
                    return Err(CmdError::other(
                        "ERR The client ID you want redirect to does not exist",
                    ));
                }
                req.redirect = id as u64;
            }
            b"bcast" => req.mode.bcast = true,
            b"optin" => req.mode.optin = true,
            b"optout" => req.mode.optout = true,
            b"noloop" => req.mode.noloop = true,
            b"prefix" if more => req.prefixes.extend(args.next().cloned()),
            _ => return Err(CmdError::Syntax),
        }
    }
    Ok(req)
}

/// Refuses a CLIENT TRACKING ON that conflicts with itself or with how
/// the client tracks now, with Redis's texts in Redis's order.
fn check(ctx: &Ctx, req: &Request) -> CmdResult<()> {
    let tracking = &ctx.shared.pubsub.tracking;
    let mode = &req.mode;
    if !mode.bcast && !req.prefixes.is_empty() {
        return Err(CmdError::other(
            "ERR PREFIX option requires BCAST mode to be enabled",
        ));
    }
    let now = tracking.info(ctx.client.id).map(|i| i.mode);
    if now.as_ref().is_some_and(|now| now.bcast != mode.bcast) {
        return Err(CmdError::other(
            "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.",
        ));
    }
    if mode.bcast && (mode.optin || mode.optout) {
        return Err(CmdError::other(
            "ERR OPTIN and OPTOUT are not compatible with BCAST",
        ));
    }
    if mode.optin && mode.optout {
        return Err(CmdError::other(
            "ERR You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if now.is_some_and(|now| (mode.optin && now.optout) || (mode.optout && now.optin)) {
        return Err(CmdError::other(
            "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.",
        ));
    }
    if mode.bcast {
        let shown = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
        tracking
            .check_prefixes(ctx.client.id, &req.prefixes)
            .map_err(|e| {
                CmdError::other(match e {
                    PrefixError::Existing { new, old } => format!(
                        "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                        shown(&new),
                        shown(&old)
                    ),
                    PrefixError::Provided { first, second } => format!(
                        "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                        shown(&first),
                        shown(&second)
                    ),
                })
            })?;
    }
    Ok(())
}

pub fn client_tracking(ctx: &mut Ctx) -> CmdResult<Reply> {
    let req = parse(ctx)?;
    let tracking = &ctx.shared.pubsub.tracking;
    match &ctx.arg(2).to_ascii_lowercase()[..] {
        b"on" => {
            check(ctx, &req)?;
            tracking.enable(ctx.client.id, req.mode, req.redirect, &req.prefixes);
        }
        b"off" => tracking.disable(ctx.client.id),
        _ => return Err(CmdError::Syntax),
    }
    Ok(Reply::OK)
}

pub fn client_caching(ctx: &mut Ctx) -> CmdResult<Reply> {
    let tracking = &ctx.shared.pubsub.tracking;
    let Some(info) = tracking.info(ctx.client.id) else {
        return Err(CmdError::other(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        ));
    };
    match &ctx.arg(2).to_ascii_lowercase()[..] {
        b"yes" if info.mode.optin => {}
        b"yes" => {
            return Err(CmdError::other(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
        b"no" if info.mode.optout => {}
        b"no" => {
            return Err(CmdError::other(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
        _ => return Err(CmdError::Syntax),
    }
    tracking.set_caching(ctx.client.id);
    Ok(Reply::OK)
}

pub fn client_getredir(ctx: &mut Ctx) -> CmdResult<Reply> {
    let info = ctx.shared.pubsub.tracking.info(ctx.client.id);
    Ok(Reply::Int(info.map_or(-1, |i| i.redirect as i64)))
}

pub fn client_trackinginfo(ctx: &mut Ctx) -> CmdResult<Reply> {
    let info = ctx.shared.pubsub.tracking.info(ctx.client.id);
    let (flags, redirect, prefixes) = match info {
        None => (vec!["off"], -1, Vec::new()),
        Some(i) => {
            let m = &i.mode;
            let flags = [
                (true, "on"),
                (m.bcast, "bcast"),
                (m.optin, "optin"),
                (m.optin && i.caching, "caching-yes"),
                (m.optout, "optout"),
                (m.optout && i.caching, "caching-no"),
                (m.noloop, "noloop"),
                (i.broken, "broken_redirect"),
            ];
            let flags = flags.iter().filter(|(on, _)| *on).map(|(_, f)| *f);
            (flags.collect(), i.redirect as i64, i.prefixes)
        }
    };
    Ok(Reply::Map(vec![
        (
            Reply::bulk_str("flags"),
            Reply::Set(flags.into_iter().map(Reply::bulk_str).collect()),
        ),
        (Reply::bulk_str("redirect"), Reply::Int(redirect)),
        (
            Reply::bulk_str("prefixes"),
            Reply::Array(prefixes.into_iter().map(Reply::Bulk).collect()),
        ),
    ]))
}
