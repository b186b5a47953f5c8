//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST.
//! The sketch lives in a string value in Redis's own layout
//! (`util::hll`), so GET and SET move it between rlockd and Redis.

use bytes::Bytes;

use super::Ctx;
use super::presets::{RO_ACCESS, WRITE_FAST, key1, keys_all};
use super::spec::acl::HYPERLOGLOG;
use super::spec::flag::{ADMIN, DENYOOM, MAY_REPLICATE, READONLY, WRITE};
use super::spec::{CommandSpec, Group, KeySpec};
use super::values::edit_string;
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Db, Ttl, Value};
use crate::protocol::Reply;
use crate::pubsub::Event;
use crate::util::hll::{self, Corrupt, REGISTERS};

fn not_hll() -> CmdError {
    CmdError::other("WRONGTYPE Key is not a valid HyperLogLog string value.")
}

impl From<Corrupt> for CmdError {
    fn from(_: Corrupt) -> Self {
        CmdError::other("INVALIDOBJ Corrupted HLL object detected")
    }
}

/// The HLL at `key` for reading: `None` if absent; WRONGTYPE for another
/// type or a string that is not an HLL.
fn hll_at(db: &mut Db, key: &[u8]) -> CmdResult<Option<Bytes>> {
    match db.typed::<Bytes>(key)?.cloned() {
        Some(s) if !hll::is_hll(&s) => Err(not_hll()),
        found => Ok(found),
    }
}

/// Makes sure `key` holds an HLL to write, creating an empty one (and
/// saying so) if absent.
fn hll_for_write(db: &mut Db, key: &[u8]) -> CmdResult<bool> {
    match db.get_mut(key)? {
        None => {
            db.insert(key, Value::string(hll::new_sparse().into()), Ttl::Clear)?;
            Ok(true)
        }
        Some(Value::Str(s, _)) if hll::is_hll(s) => Ok(false),
        Some(Value::Str(_, _)) => Err(not_hll()),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// PFADD: 1 if the key was created or a register changed.
pub fn pfadd(ctx: &mut Ctx) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let created = hll_for_write(&mut db, &key)?;
    let elements = &ctx.args[2..];
    let changed = edit_string(&mut db, &key, 0, |data| {
        let mut changed = false;
        for element in elements {
            changed |= hll::add(data, element)?;
        }
        if changed || created {
            hll::invalidate_cache(data);
        }
        Ok::<_, Corrupt>(changed)
    })??;
    if changed || created {
        db.modified(&key, Event::Pfadd)?;
    }
    Ok(Reply::Int((changed || created) as i64))
}

/// PFCOUNT: one key answers from (and refreshes) the cached count kept in
/// its header; several keys count their union.
pub fn pfcount(ctx: &mut Ctx) -> CmdResult<Reply> {
    if ctx.args.len() > 2 {
        let mut db = ctx.locked.db(ctx.client.db);
        let mut max = [0u8; REGISTERS];
        for key in &ctx.args[1..] {
            if let Some(data) = hll_at(&mut db, key)? {
                hll::merge_into(&mut max, &data)?;
            }
        }
        return Ok(Reply::Int(hll::count_registers(&max) as i64));
    }
    let key = ctx.arg(1).clone();
    let mut db = ctx.db();
    let Some(data) = hll_at(&mut db, &key)? else {
        return Ok(Reply::Int(0));
    };
    if let Some(count) = hll::cached_count(&data) {
        return Ok(Reply::Int(count as i64));
    }
    let count = hll::count(&data)?;
    edit_string(&mut db, &key, 0, |data| hll::set_cached_count(data, count))?;
    db.touched(&key)?;
    Ok(Reply::Int(count as i64))
}

/// PFMERGE: the union of the sources and the destination itself, stored
/// dense if any input was dense.
pub fn pfmerge(ctx: &mut Ctx) -> CmdResult<Reply> {
    let dest = ctx.arg(1).clone();
    let mut db = ctx.locked.db(ctx.client.db);
    let mut max = [0u8; REGISTERS];
    let mut dense = false;
    for key in &ctx.args[1..] {
        if let Some(data) = hll_at(&mut db, key)? {
            dense |= !hll::is_sparse(&data);
            hll::merge_into(&mut max, &data)?;
        }
    }
    hll_for_write(&mut db, &dest)?;
    edit_string(&mut db, &dest, 0, |data| {
        if dense {
            hll::to_dense(data)?;
        }
        for (i, &rank) in max.iter().enumerate().filter(|(_, r)| **r > 0) {
            hll::set_register(data, i, rank)?;
        }
        hll::invalidate_cache(data);
        Ok::<_, Corrupt>(())
    })??;
    db.modified(&dest, Event::Pfadd)?;
    Ok(Reply::OK)
}

/// PFDEBUG GETREG | DECODE | ENCODING | TODENSE key. The key is checked
/// before the subcommand, as Redis does.
pub fn pfdebug(ctx: &mut Ctx) -> CmdResult<Reply> {
    let (sub, key) = (ctx.arg(1).clone(), ctx.arg(2).clone());
    let mut db = ctx.db();
    let data = match db.get_mut(&key)? {
        None => return Err(CmdError::other("ERR The specified key does not exist")),
        Some(Value::Str(s, _)) if hll::is_hll(s) => s.clone(),
        Some(Value::Str(_, _)) => return Err(not_hll()),
        Some(_) => return Err(CmdError::WrongType),
    };
    match &sub.to_ascii_lowercase()[..] {
        b"getreg" => {
            let converted = edit_string(&mut db, &key, 0, hll::to_dense)??;
            if converted {
                db.touched(&key)?;
            }
            Ok(Reply::Array(
                hll::registers(&data)?
                    .into_iter()
                    .map(|r| Reply::Int(r as i64))
                    .collect(),
            ))
        }
        b"decode" if hll::is_sparse(&data) => Ok(Reply::bulk_str(&hll::decode_sparse(&data))),
        b"decode" => Err(CmdError::other("ERR HLL encoding is not sparse")),
        b"encoding" => Ok(Reply::status(if hll::is_sparse(&data) {
            "sparse"
        } else {
            "dense"
        })),
        b"todense" => {
            let converted = edit_string(&mut db, &key, 0, hll::to_dense)??;
            if converted {
                db.touched(&key)?;
            }
            Ok(Reply::Int(converted as i64))
        }
        _ => Err(CmdError::other(format!(
            "ERR Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(&sub)
        ))),
    }
}

/// PFSELFTEST: checks that the sparse and dense forms agree register by
/// register and on the estimate, over a sketch that turns dense midway.
pub fn pfselftest(_ctx: &mut Ctx) -> CmdResult<Reply> {
    let mut sparse = hll::new_sparse();
    let mut dense = hll::new_sparse();
    hll::to_dense(&mut dense)?;
    for i in 0..5000u32 {
        let element = i.to_be_bytes();
        hll::add(&mut sparse, &element)?;
        hll::add(&mut dense, &element)?;
        if i % 500 == 0 && hll::registers(&sparse)? != hll::registers(&dense)? {
            return Err(CmdError::other(format!(
                "TESTFAILED Sparse and dense registers differ after {i} elements"
            )));
        }
    }
    if hll::count(&sparse)? != hll::count(&dense)? {
        return Err(CmdError::other(
            "TESTFAILED Sparse and dense estimates differ",
        ));
    }
    Ok(Reply::OK)
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("pfadd", -2, Group::Hyperloglog, pfadd)
        .records_itself()
        .flags(WRITE_FAST)
        .acl(HYPERLOGLOG)
        .keys(&key1(&["RW", "insert"]))
        .syntax("key [element...]")
        .doc(
            "2.8.9",
            "Adds elements to a HyperLogLog; returns 1 if its estimate may have changed.",
        ),
    CommandSpec::new("pfcount", -2, Group::Hyperloglog, pfcount)
        .flags(READONLY | MAY_REPLICATE)
        .acl(HYPERLOGLOG)
        .keys(&keys_all(&["RW", "access"]))
        .syntax("key...")
        .doc(
            "2.8.9",
            "Returns the estimated number of distinct elements of HyperLogLogs (of their union).",
        ),
    CommandSpec::new("pfmerge", -2, Group::Hyperloglog, pfmerge)
        .records_itself()
        .flags(WRITE | DENYOOM)
        .acl(HYPERLOGLOG)
        .keys(&[
            KeySpec::range(1, 0, 1, &["RW", "access", "insert"]),
            KeySpec::range(2, -1, 1, RO_ACCESS),
        ])
        .syntax("destkey sourcekey...")
        .doc("2.8.9", "Stores the union of HyperLogLogs at a key."),
    CommandSpec::new("pfdebug", 3, Group::Hyperloglog, pfdebug)
        .flags(WRITE | DENYOOM | ADMIN)
        .acl(HYPERLOGLOG)
        .keys(&[KeySpec::range(2, 0, 1, &["RW", "access"])])
        .syntax("subcommand key")
        .doc(
            "2.8.9",
            "Shows or changes a HyperLogLog's internals (GETREG, DECODE, ENCODING, TODENSE).",
        ),
    CommandSpec::new("pfselftest", 1, Group::Hyperloglog, pfselftest)
        .flags(ADMIN)
        .acl(HYPERLOGLOG)
        .doc("2.8.9", "Checks the HyperLogLog implementation."),
];
