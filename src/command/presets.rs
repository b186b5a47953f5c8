//! What many command specs share: key access flags and key-spec shapes,
//! flag sets and command tips. Each family declares its own commands
//! (its `COMMANDS`) beside its handlers, from these and `spec`.

use super::spec::KeySpec;
use super::spec::flag::{DENYOOM, FAST, LOADING, NOSCRIPT, READONLY, STALE, WRITE};

pub(super) const RO: &[&str] = &["RO"];

pub(super) const RO_ACCESS: &[&str] = &["RO", "access"];

pub(super) const RW_ACCESS_UPDATE: &[&str] = &["RW", "access", "update"];

pub(super) const RW_UPDATE: &[&str] = &["RW", "update"];

pub(super) const OW_UPDATE: &[&str] = &["OW", "update"];

pub(super) const RW_ACCESS_DELETE: &[&str] = &["RW", "access", "delete"];

pub(super) const RW_DELETE: &[&str] = &["RW", "delete"];

pub(super) const fn key1(flags: &'static [&'static str]) -> [KeySpec; 1] {
    [KeySpec::range(1, 0, 1, flags)]
}

pub(super) const fn keys_all(flags: &'static [&'static str]) -> [KeySpec; 1] {
    [KeySpec::range(1, -1, 1, flags)]
}

/// Flags shared by connection-level commands that work in any server state.
pub(super) const CONN: u32 = NOSCRIPT | LOADING | STALE;

pub(super) const READ_FAST: u32 = READONLY | FAST;

pub(super) const WRITE_FAST: u32 = WRITE | DENYOOM | FAST;

pub(super) const NONDET: &[&str] = &["nondeterministic_output"];

pub(super) const NONDET_ORDER: &[&str] = &["nondeterministic_output_order"];

pub(super) const ALL_SHARDS_OK: &[&str] =
    &["request_policy:all_shards", "response_policy:all_succeeded"];

pub(super) const OBJECT_KEY: &[KeySpec] = &[KeySpec::range(2, 0, 1, RO)];

pub(super) const ALL_SHARDS_SPECIAL: &[&str] = &[
    "nondeterministic_output",
    "request_policy:all_shards",
    "response_policy:special",
];
