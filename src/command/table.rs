//! The command table: every command rlockd knows, with its arity, flags,
//! ACL categories, key positions and documentation. Dispatch, MULTI,
//! COMMAND INFO/DOCS/GETKEYS and INFO commandstats all read this one list.

use super::pubsub;
use super::spec::acl::{
    self, BITMAP, CONNECTION, DANGEROUS, GEO, HASH, HYPERLOGLOG, KEYSPACE, LIST, SCRIPTING, SET,
    SORTEDSET, STREAM, STRING, TRANSACTION,
};
use super::spec::flag::*;
use super::spec::{CommandSpec as C, Group::*, KeySpec, touches_first, touches_listed};
use super::{
    acl as acls, bitmaps, blocking, cluster, connection as conn, debug, expire, fixture, geo,
    hashes, hyperloglog, keys, lists, memory, migrate, multi, operator, scripting, server, sets,
    sort, streams, strings, tracking, zsets,
};

const RO: &[&str] = &["RO"];
const RO_ACCESS: &[&str] = &["RO", "access"];
const RW_ACCESS_UPDATE: &[&str] = &["RW", "access", "update"];
const RW_UPDATE: &[&str] = &["RW", "update"];
const OW_UPDATE: &[&str] = &["OW", "update"];
const RM_DELETE: &[&str] = &["RM", "delete"];
const RW_ACCESS_DELETE: &[&str] = &["RW", "access", "delete"];
const RW_DELETE: &[&str] = &["RW", "delete"];
const RW_ACCESS_DELETE_INCOMPLETE: &[&str] = &["RW", "access", "delete", "incomplete"];

const fn key1(flags: &'static [&'static str]) -> [KeySpec; 1] {
    [KeySpec::range(1, 0, 1, flags)]
}

/// A source list and a destination list (LMOVE and its kin).
const MOVE_KEYS: [KeySpec; 2] = [
    KeySpec::range(1, 0, 1, RW_ACCESS_DELETE),
    KeySpec::range(2, 0, 1, &["RW", "insert"]),
];

/// A destination, then the source keys (SINTERSTORE and kin).
const fn store_keys(dst: &'static [&'static str]) -> [KeySpec; 2] {
    [
        KeySpec::range(1, 0, 1, dst),
        KeySpec::range(2, -1, 1, RO_ACCESS),
    ]
}

/// A destination, then `numkeys` source keys (ZUNIONSTORE and kin).
const ZSTORE_KEYS: [KeySpec; 2] = [
    KeySpec::range(1, 0, 1, OW_UPDATE),
    KeySpec::keynum(2, RO_ACCESS),
];

const fn keys_all(flags: &'static [&'static str]) -> [KeySpec; 1] {
    [KeySpec::range(1, -1, 1, flags)]
}

/// Flags shared by connection-level commands that work in any server state.
const CONN: u32 = NOSCRIPT | LOADING | STALE;
const ANY_STATE: u32 = NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY;
const TX: u32 = NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY;
const READ_FAST: u32 = READONLY | FAST;
const WRITE_FAST: u32 = WRITE | DENYOOM | FAST;

const NONDET: &[&str] = &["nondeterministic_output"];
const NONDET_ORDER: &[&str] = &["nondeterministic_output_order"];
const MULTI_SHARD_SUM: &[&str] = &["request_policy:multi_shard", "response_policy:agg_sum"];
const ALL_SHARDS_OK: &[&str] = &["request_policy:all_shards", "response_policy:all_succeeded"];

static CLIENT_SUBS: &[C] = &[
    C::new("id", 2, Connection, conn::client_id)
        .flags(CONN)
        .acl(CONNECTION)
        .doc("5.0.0", "Returns the unique id of this connection."),
    C::new("setname", 3, Connection, conn::client_setname)
        .flags(CONN)
        .acl(CONNECTION)
        .syntax("connection-name")
        .doc("2.6.9", "Names this connection."),
    C::new("getname", 2, Connection, conn::client_getname)
        .flags(CONN)
        .acl(CONNECTION)
        .doc("2.6.9", "Returns the name of this connection, or nil."),
    C::new("setinfo", 4, Connection, conn::client_setinfo)
        .flags(CONN)
        .acl(CONNECTION)
        .syntax("LIB-NAME libname | LIB-VER libver")
        .doc(
            "7.2.0",
            "Records the client library's name or version for this connection.",
        ),
    C::new("list", -2, Connection, conn::client_list)
        .flags(ADMIN | CONN)
        .acl(CONNECTION)
        .tips(NONDET)
        .syntax("[TYPE (NORMAL | MASTER | REPLICA | PUBSUB)] [ID (client-id...)]")
        .doc("2.4.0", "Describes every open connection, one line each."),
    C::new("info", 2, Connection, conn::client_info)
        .flags(CONN)
        .acl(CONNECTION)
        .tips(NONDET)
        .doc(
            "6.2.0",
            "Describes this connection in CLIENT LIST's format.",
        ),
    C::new("kill", -3, Connection, conn::client_kill)
        .flags(ADMIN | CONN)
        .acl(CONNECTION)
        .syntax("ip:port | ([ID client-id] | [TYPE (NORMAL | MASTER | SLAVE | REPLICA | PUBSUB)] | [USER username] | [ADDR ip:port] | [LADDR ip:port] | [SKIPME yes/no])...")
        .doc(
            "2.4.0",
            "Closes connections chosen by address, id or other filters.",
        ),
    C::new("no-evict", 3, Connection, conn::client_no_evict)
        .flags(ADMIN | CONN)
        .acl(CONNECTION)
        .syntax("ON | OFF")
        .doc(
            "7.0.0",
            "Exempts this connection from client eviction (accepted; nothing is evicted).",
        ),
    C::new("reply", 3, Connection, conn::client_reply)
        .flags(NOSCRIPT | LOADING | STALE)
        .acl(CONNECTION)
        .syntax("ON | OFF | SKIP")
        .doc("3.2.0", "Turns this connection's replies off, on, or off for the next command only."),
    C::new("pause", -3, Connection, conn::client_pause)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .acl(CONNECTION)
        .syntax("timeout [WRITE | ALL]")
        .doc("2.9.50", "Holds back every client's commands, or only writes, for some milliseconds."),
    C::new("unpause", 2, Connection, conn::client_unpause)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .acl(CONNECTION)
        .doc("6.2.0", "Ends a CLIENT PAUSE at once."),
    C::new("unblock", -3, Connection, conn::client_unblock)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .acl(CONNECTION)
        .syntax("client-id [TIMEOUT | ERROR]")
        .doc("5.0.0", "Ends another client's blocking command, as a timeout or an error."),
    C::new("tracking", -3, Connection, tracking::client_tracking)
        .flags(CONN)
        .acl(CONNECTION)
        .syntax("ON | OFF [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]")
        .doc("6.0.0", "Turns client-side caching's invalidation messages on or off."),
    C::new("caching", 3, Connection, tracking::client_caching)
        .flags(CONN)
        .acl(CONNECTION)
        .syntax("YES | NO")
        .doc(
            "6.0.0",
            "Opts the next command in (OPTIN) or out (OPTOUT) of key tracking.",
        ),
    C::new("getredir", 2, Connection, tracking::client_getredir)
        .flags(CONN)
        .acl(CONNECTION)
        .doc(
            "6.0.0",
            "Returns the client id invalidation messages are redirected to.",
        ),
    C::new("trackinginfo", 2, Connection, tracking::client_trackinginfo)
        .flags(CONN)
        .acl(CONNECTION)
        .doc("6.2.0", "Describes how this connection tracks keys."),
    C::new("help", 2, Connection, conn::client_help)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .doc("5.0.0", "Lists the CLIENT subcommands."),
];

/// ACL's subcommands: all but HELP refuse scripts, and those that reveal or
/// change users are administrative.
const ACL_ADMIN: u32 = ADMIN | NOSCRIPT | LOADING | STALE;
const ACL_OPEN: u32 = NOSCRIPT | LOADING | STALE;

static ACL_SUBS: &[C] = &[
    C::new("cat", -2, Server, acls::cat)
        .flags(ACL_OPEN)
        .syntax("[categoryname]")
        .doc("6.0.0", "Lists the ACL categories, or the commands in one."),
    C::new("deluser", -3, Server, acls::deluser)
        .flags(ACL_ADMIN)
        .syntax("username...")
        .doc("6.0.0", "Deletes users and disconnects their clients."),
    C::new("dryrun", -4, Server, acls::dryrun)
        .flags(ACL_ADMIN)
        .syntax("username command [arg...]")
        .doc(
            "7.0.0",
            "Says whether a user could run a command, without running it.",
        ),
    C::new("genpass", -2, Server, acls::genpass)
        .flags(ACL_OPEN)
        .syntax("[bits]")
        .doc("6.0.0", "Returns a random password (256 bits unless told)."),
    C::new("getuser", 3, Server, acls::getuser)
        .flags(ACL_ADMIN)
        .syntax("username")
        .doc(
            "6.0.0",
            "Describes a user's flags, passwords and permissions.",
        ),
    C::new("help", 2, Server, acls::help)
        .flags(LOADING | STALE)
        .doc("6.0.0", "Describes the ACL subcommands."),
    C::new("list", 2, Server, acls::list)
        .flags(ACL_ADMIN)
        .doc("6.0.0", "Lists every user's rules in ACL file form."),
    C::new("load", 2, Server, acls::load)
        .flags(ACL_ADMIN)
        .doc("6.0.0", "Replaces the users with those of the ACL file."),
    C::new("log", -2, Server, acls::log)
        .flags(ACL_ADMIN)
        .syntax("[count | RESET]")
        .doc(
            "6.0.0",
            "Lists refused commands and logins, newest first, or clears the list.",
        ),
    C::new("save", 2, Server, acls::save)
        .flags(ACL_ADMIN)
        .doc("6.0.0", "Writes the users to the ACL file."),
    C::new("setuser", -3, Server, acls::setuser)
        .flags(ACL_ADMIN)
        .syntax("username [rule...]")
        .doc("6.0.0", "Creates a user or changes its rules."),
    C::new("users", 2, Server, acls::users)
        .flags(ACL_ADMIN)
        .doc("6.0.0", "Lists the user names."),
    C::new("whoami", 2, Server, acls::whoami)
        .flags(ACL_OPEN)
        .doc("6.0.0", "Returns the user this connection runs as."),
];

static SLOWLOG_SUBS: &[C] = &[
    C::new("get", -2, Server, operator::slowlog_get)
        .flags(ADMIN | LOADING | STALE)
        .tips(&["request_policy:all_nodes", "nondeterministic_output"])
        .syntax("[count]")
        .doc("2.2.12", "Returns the slow log's newest entries."),
    C::new("reset", 2, Server, operator::slowlog_reset)
        .flags(ADMIN | LOADING | STALE)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc("2.2.12", "Clears the slow log."),
    C::new("len", 2, Server, operator::slowlog_len)
        .flags(ADMIN | LOADING | STALE)
        .tips(&[
            "request_policy:all_nodes",
            "response_policy:agg_sum",
            "nondeterministic_output",
        ])
        .doc("2.2.12", "Returns the number of entries in the slow log."),
    C::new("help", 2, Server, operator::slowlog_help)
        .flags(LOADING | STALE)
        .doc("6.2.0", "Lists the SLOWLOG subcommands."),
];

/// A LATENCY subcommand that reports.
const fn latency_report(name: &'static str, arity: i32, handler: super::spec::Handler) -> C {
    C::new(name, arity, Server, handler)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ])
}

static LATENCY_SUBS: &[C] = &[
    latency_report("doctor", 2, operator::latency_doctor).doc(
        "2.8.13",
        "Returns a human-readable latency analysis report.",
    ),
    latency_report("graph", 3, operator::latency_graph)
        .syntax("event")
        .doc("2.8.13", "Returns a latency graph for an event."),
    latency_report("latest", 2, operator::latency_latest).doc(
        "2.8.13",
        "Returns the latest latency samples for all events.",
    ),
    C::new("help", 2, Server, operator::latency_help)
        .flags(LOADING | STALE)
        .doc("2.8.13", "Lists the LATENCY subcommands."),
    latency_report("history", 3, operator::latency_history)
        .syntax("event")
        .doc("2.8.13", "Returns timestamp-latency samples for an event."),
    latency_report("histogram", -2, operator::latency_histogram)
        .syntax("[command [command ...]]")
        .doc(
            "7.0.0",
            "Returns the distribution of each command's latency.",
        ),
    C::new("reset", -2, Server, operator::latency_reset)
        .flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .syntax("[event...]")
        .doc(
            "2.8.13",
            "Resets the latency data of events; returns how many were reset.",
        ),
];

/// SORT's BY and GET patterns name keys built from the elements it sorts.
const SORT_PATTERN_KEYS: KeySpec = KeySpec::unknown(
    RO_ACCESS,
    "BY and GET patterns: the key names are made from the sorted elements, so no argument position holds them.",
);
/// STORE may come anywhere among SORT's options.
const SORT_STORE_KEY: KeySpec = KeySpec::unknown(
    OW_UPDATE,
    "STORE's destination: the option may appear anywhere in the arguments.",
);

const RESTORE_SYNTAX: &str =
    "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]";

/// An XGROUP subcommand on the key in argument 2.
const fn xgroup_sub(
    name: &'static str,
    arity: i32,
    handler: super::spec::Handler,
    keys: &'static [KeySpec],
) -> C {
    C::new(name, arity, Stream, handler)
        .flags(WRITE)
        .acl(STREAM)
        .keys(keys)
}

const XGROUP_INSERT: &[KeySpec] = &[KeySpec::range(2, 0, 1, &["RW", "insert"])];

static XGROUP_SUBS: &[C] = &[
    xgroup_sub("create", -5, streams::xgroup_create, XGROUP_INSERT)
        .flags(WRITE | DENYOOM)
        .syntax("key group (id | $) [MKSTREAM] [ENTRIESREAD entries-read]")
        .doc("5.0.0", "Creates a consumer group on a stream."),
    xgroup_sub(
        "setid",
        -5,
        streams::xgroup_setid,
        &[KeySpec::range(2, 0, 1, RW_UPDATE)],
    )
    .syntax("key group (id | $) [ENTRIESREAD entries-read]")
    .doc("5.0.0", "Moves a consumer group's last delivered id."),
    xgroup_sub(
        "destroy",
        4,
        streams::xgroup_destroy,
        &[KeySpec::range(2, 0, 1, RW_DELETE)],
    )
    .syntax("key group")
    .doc("5.0.0", "Deletes a consumer group."),
    xgroup_sub(
        "createconsumer",
        5,
        streams::xgroup_createconsumer,
        XGROUP_INSERT,
    )
    .flags(WRITE | DENYOOM)
    .syntax("key group consumer")
    .doc("6.2.0", "Adds a consumer to a consumer group."),
    xgroup_sub(
        "delconsumer",
        5,
        streams::xgroup_delconsumer,
        &[KeySpec::range(2, 0, 1, RW_DELETE)],
    )
    .syntax("key group consumer")
    .doc(
        "5.0.0",
        "Removes a consumer from a consumer group; returns how many entries it had pending.",
    ),
    C::new("help", 2, Stream, streams::xgroup_help)
        .flags(LOADING | STALE)
        .acl(STREAM)
        .doc("5.0.0", "Lists the XGROUP subcommands."),
];

const XINFO_KEY: &[KeySpec] = &[KeySpec::range(2, 0, 1, RO_ACCESS)];

static XINFO_SUBS: &[C] = &[
    C::new("stream", -3, Stream, streams::xinfo_stream)
        .flags(READONLY)
        .acl(STREAM)
        .keys(XINFO_KEY)
        .syntax("key [FULL [COUNT count]]")
        .doc(
            "5.0.0",
            "Describes a stream, or (FULL) its entries, groups and consumers too.",
        ),
    C::new("groups", 3, Stream, streams::xinfo_groups)
        .flags(READONLY)
        .acl(STREAM)
        .keys(XINFO_KEY)
        .syntax("key")
        .doc("5.0.0", "Describes the consumer groups of a stream."),
    C::new("consumers", 4, Stream, streams::xinfo_consumers)
        .flags(READONLY)
        .acl(STREAM)
        .tips(NONDET)
        .keys(XINFO_KEY)
        .syntax("key group")
        .doc("5.0.0", "Describes the consumers of a consumer group."),
    C::new("help", 2, Stream, streams::xinfo_help)
        .flags(LOADING | STALE)
        .acl(STREAM)
        .doc("5.0.0", "Lists the XINFO subcommands."),
];

const OBJECT_KEY: &[KeySpec] = &[KeySpec::range(2, 0, 1, RO)];

/// An OBJECT subcommand that reads the key in argument 2.
const fn object_key_sub(name: &'static str, handler: super::spec::Handler) -> C {
    C::new(name, 3, Generic, handler)
        .flags(READONLY)
        .acl(KEYSPACE)
        .tips(NONDET)
        .keys(OBJECT_KEY)
        .syntax("key")
}

static OBJECT_SUBS: &[C] = &[
    object_key_sub("encoding", keys::object_encoding).doc(
        "2.2.3",
        "Returns the internal encoding Redis would use for a key's value.",
    ),
    object_key_sub("freq", keys::object_freq).doc(
        "4.0.0",
        "Returns a key's LFU access frequency (rlockd counts none: always 5).",
    ),
    object_key_sub("idletime", keys::object_idletime).doc(
        "2.2.3",
        "Returns the seconds since a key was last used (rlockd tracks none: always 0).",
    ),
    C::new("help", 2, Generic, keys::object_help)
        .flags(LOADING | STALE)
        .acl(KEYSPACE)
        .doc("6.2.0", "Lists the OBJECT subcommands."),
    object_key_sub("refcount", keys::object_refcount).doc(
        "2.2.3",
        "Returns the reference count Redis would report for a key's value.",
    ),
];

static CONFIG_SUBS: &[C] = &[
    C::new("get", -3, Server, server::config_get)
        .flags(ADMIN | CONN)
        .syntax("(parameter)...")
        .doc(
            "2.0.0",
            "Returns the values of settings matching the given patterns.",
        ),
    C::new("set", -4, Server, server::config_set)
        .flags(ADMIN | CONN)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .syntax("(parameter value)...")
        .doc("2.0.0", "Changes settings at run time."),
    C::new("resetstat", 2, Server, server::config_resetstat)
        .flags(ADMIN | CONN)
        .doc("2.0.0", "Zeroes the statistics INFO reports."),
    C::new("rewrite", 2, Server, server::config_rewrite)
        .flags(ADMIN | CONN)
        .doc(
            "2.8.0",
            "Would rewrite the config file; rlockd has none to rewrite.",
        ),
    C::new("help", 2, Server, server::config_help)
        .flags(LOADING | STALE)
        .doc("5.0.0", "Lists the CONFIG subcommands."),
];

static COMMAND_SUBS: &[C] = &[
    C::new("count", 2, Server, server::command_count)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .doc("2.8.13", "Returns how many commands the server knows."),
    C::new("info", -2, Server, server::command_info)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .tips(NONDET_ORDER)
        .syntax("[command-name...]")
        .doc("2.8.13", "Describes the given commands, or all of them."),
    C::new("docs", -2, Server, server::command_docs)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .tips(NONDET_ORDER)
        .syntax("[command-name...]")
        .doc("7.0.0", "Documents the given commands, or all of them."),
    C::new("getkeys", -4, Server, server::command_getkeys)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .syntax("command arg...")
        .doc("2.8.13", "Extracts the key names from a full command line."),
    C::new(
        "getkeysandflags",
        -4,
        Server,
        server::command_getkeysandflags,
    )
    .flags(LOADING | STALE)
    .acl(CONNECTION)
    .syntax("command arg...")
    .doc(
        "7.0.0",
        "Extracts the key names and their access flags from a full command line.",
    ),
    C::new("list", -2, Server, server::command_list)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .tips(NONDET_ORDER)
        .syntax("[FILTERBY (MODULE module-name | ACLCAT category | PATTERN pattern)]")
        .doc("7.0.0", "Lists command names."),
    C::new("help", 2, Server, server::command_help)
        .flags(LOADING | STALE)
        .acl(CONNECTION)
        .doc("5.0.0", "Lists the COMMAND subcommands."),
];

const SCRIPT_KEYS_RW: &[KeySpec] = &[KeySpec::keynum(2, RW_ACCESS_UPDATE)];
const SCRIPT_KEYS_RO: &[KeySpec] = &[KeySpec::keynum(2, RO_ACCESS)];
const EVAL_FLAGS: u32 = NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | SCRIPT;

const ALL_SHARDS_SPECIAL: &[&str] = &[
    "nondeterministic_output",
    "request_policy:all_shards",
    "response_policy:special",
];

static MEMORY_SUBS: &[C] = &[
    C::new("usage", -3, Server, memory::usage)
        .flags(READONLY)
        .keys(OBJECT_KEY)
        .syntax("key [SAMPLES count]")
        .doc(
            "4.0.0",
            "Returns the bytes a key and its value would take in Redis.",
        ),
    C::new("stats", 2, Server, memory::stats)
        .flags(WHOLE_KEYSPACE)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ])
        .doc("4.0.0", "Describes the server's memory use."),
    C::new("doctor", 2, Server, memory::doctor)
        .tips(ALL_SHARDS_SPECIAL)
        .doc("4.0.0", "A short report on the server's memory use."),
    C::new("malloc-stats", 2, Server, memory::malloc_stats)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ])
        .doc("4.0.0", "The allocator's own statistics."),
    C::new("purge", 2, Server, memory::purge)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .doc("4.0.0", "Asks the allocator to give memory back."),
    C::new("help", 2, Server, memory::help)
        .flags(LOADING | STALE)
        .doc("4.0.0", "Lists the MEMORY subcommands."),
];

const ALL_SHARDS_ALL: &[&str] = &["request_policy:all_shards", "response_policy:all_succeeded"];

static FUNCTION_SUBS: &[C] = &[
    C::new("delete", 3, Scripting, scripting::function_delete)
        .flags(WRITE | NOSCRIPT)
        .acl(SCRIPTING)
        .tips(ALL_SHARDS_ALL)
        .syntax("library-name")
        .doc("7.0.0", "Deletes a library and its functions."),
    C::new("dump", 2, Scripting, scripting::function_dump)
        .flags(NOSCRIPT)
        .acl(SCRIPTING)
        .doc(
            "7.0.0",
            "Returns every library as one payload for FUNCTION RESTORE.",
        ),
    C::new("flush", -2, Scripting, scripting::function_flush)
        .flags(WRITE | NOSCRIPT)
        .acl(SCRIPTING)
        .tips(ALL_SHARDS_ALL)
        .syntax("[ASYNC | SYNC]")
        .doc("7.0.0", "Deletes every library."),
    C::new("help", 2, Scripting, scripting::function_help)
        .flags(LOADING | STALE)
        .acl(SCRIPTING)
        .doc("7.0.0", "Lists the FUNCTION subcommands."),
    C::new("kill", 2, Scripting, scripting::function_kill)
        .flags(NOSCRIPT | ALLOW_BUSY)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
        .doc(
            "7.0.0",
            "Stops a function running past the busy threshold, if it has not written.",
        ),
    C::new("list", -2, Scripting, scripting::function_list)
        .flags(NOSCRIPT)
        .acl(SCRIPTING)
        .tips(NONDET_ORDER)
        .syntax("[LIBRARYNAME library-name-pattern] [WITHCODE]")
        .doc(
            "7.0.0",
            "Lists the libraries, their functions and optionally their code.",
        ),
    C::new("load", -3, Scripting, scripting::function_load)
        .flags(WRITE | DENYOOM | NOSCRIPT)
        .acl(SCRIPTING)
        .tips(ALL_SHARDS_ALL)
        .syntax("[REPLACE] function-code")
        .doc("7.0.0", "Loads a library of functions; returns its name."),
    C::new("restore", -3, Scripting, scripting::function_restore)
        .flags(WRITE | DENYOOM | NOSCRIPT)
        .acl(SCRIPTING)
        .tips(ALL_SHARDS_ALL)
        .syntax("serialized-value [FLUSH | APPEND | REPLACE]")
        .doc("7.0.0", "Loads the libraries of a FUNCTION DUMP payload."),
    C::new("stats", 2, Scripting, scripting::function_stats)
        .flags(NOSCRIPT | ALLOW_BUSY)
        .acl(SCRIPTING)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ])
        .doc(
            "7.0.0",
            "Tells which function is running past the busy threshold, and how many are loaded.",
        ),
];

static SCRIPT_SUBS: &[C] = &[
    C::new("load", 3, Scripting, scripting::script_load)
        .flags(NOSCRIPT | STALE)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .syntax("script")
        .doc(
            "2.6.0",
            "Caches a script without running it; returns its SHA1.",
        ),
    C::new("exists", -3, Scripting, scripting::script_exists)
        .flags(NOSCRIPT)
        .acl(SCRIPTING)
        .tips(&[
            "request_policy:all_shards",
            "response_policy:agg_logical_and",
        ])
        .syntax("sha1...")
        .doc("2.6.0", "Tells which of the given SHA1s are cached."),
    C::new("flush", -2, Scripting, scripting::script_flush)
        .flags(NOSCRIPT)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .syntax("[ASYNC | SYNC]")
        .doc("2.6.0", "Empties the script cache."),
    C::new("kill", 2, Scripting, scripting::script_kill)
        .flags(NOSCRIPT | ALLOW_BUSY)
        .acl(SCRIPTING)
        .tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
        .doc(
            "2.6.0",
            "Stops a script running past the busy threshold, if it has not written.",
        ),
    C::new("help", 2, Scripting, scripting::script_help)
        .flags(LOADING | STALE)
        .acl(SCRIPTING)
        .doc("5.0.0", "Lists the SCRIPT subcommands."),
];

/// What a subcommand that moves slots or nodes is flagged as in Redis.
const TOPOLOGY: u32 = ADMIN | STALE | NO_ASYNC_LOADING;

/// CLUSTER's subcommands: those a one-node cluster answers, and those that
/// would change or ask about its topology, which it refuses (it is fixed).
static CLUSTER_SUBS: &[C] = &[
    C::new("addslots", -3, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .syntax("slot [slot ...]")
        .doc("3.0.0", "Assigns hash slots to this node."),
    C::new("addslotsrange", -4, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .syntax("start-slot end-slot [start-slot end-slot ...]")
        .doc("7.0.0", "Assigns ranges of hash slots to this node."),
    C::new("bumpepoch", 2, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .tips(NONDET)
        .doc("3.0.0", "Advances this node's config epoch."),
    C::new(
        "count-failure-reports",
        3,
        Cluster,
        cluster::cluster_topology,
    )
    .flags(ADMIN | STALE)
    .tips(NONDET)
    .syntax("node-id")
    .doc("3.0.0", "Counts the failure reports about a node."),
    C::new(
        "countkeysinslot",
        3,
        Cluster,
        cluster::cluster_countkeysinslot,
    )
    .flags(STALE | SLOT_ARG)
    .syntax("slot")
    .doc("3.0.0", "Counts the keys in a hash slot."),
    C::new("delslots", -3, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .syntax("slot [slot ...]")
        .doc("3.0.0", "Takes hash slots away from this node."),
    C::new("delslotsrange", -4, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .syntax("start-slot end-slot [start-slot end-slot ...]")
        .doc("7.0.0", "Takes ranges of hash slots away from this node."),
    C::new("failover", -2, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .syntax("[FORCE | TAKEOVER]")
        .doc("3.0.0", "Makes a replica take over from its master."),
    C::new("flushslots", 2, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .doc("3.0.0", "Takes every hash slot away from this node."),
    C::new("forget", 3, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .syntax("node-id")
        .doc(
            "3.0.0",
            "Drops a node from this node's view of the cluster.",
        ),
    C::new("getkeysinslot", 4, Cluster, cluster::cluster_getkeysinslot)
        .flags(STALE | SLOT_ARG)
        .tips(NONDET)
        .syntax("slot count")
        .doc("3.0.0", "Returns up to count key names in a hash slot."),
    C::new("help", 2, Cluster, cluster::cluster_help)
        .flags(LOADING | STALE)
        .doc("5.0.0", "Lists the CLUSTER subcommands."),
    C::new("info", 2, Cluster, cluster::cluster_info)
        .flags(STALE)
        .tips(NONDET)
        .doc("3.0.0", "Describes the state of the cluster."),
    C::new("keyslot", 3, Cluster, cluster::cluster_keyslot)
        .flags(STALE)
        .syntax("key")
        .doc("3.0.0", "Returns the hash slot of a key."),
    C::new("links", 2, Cluster, cluster::cluster_links)
        .flags(STALE)
        .tips(NONDET)
        .doc("7.0.0", "Lists the links to peer nodes."),
    C::new("meet", -4, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .syntax("ip port [cluster-bus-port]")
        .doc("3.0.0", "Joins another node to the cluster."),
    C::new("myid", 2, Cluster, cluster::cluster_myid)
        .flags(STALE)
        .doc("3.0.0", "Returns this node's id."),
    C::new("nodes", 2, Cluster, cluster::cluster_nodes)
        .flags(STALE)
        .tips(NONDET)
        .doc(
            "3.0.0",
            "Describes every node of the cluster, one line each.",
        ),
    C::new("replicas", 3, Cluster, cluster::cluster_topology)
        .flags(ADMIN | STALE)
        .tips(NONDET)
        .syntax("node-id")
        .doc("5.0.0", "Lists the replicas of a master."),
    C::new("replicate", 3, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .syntax("node-id")
        .doc("3.0.0", "Makes this node a replica of a master."),
    C::new("reset", -2, Cluster, cluster::cluster_topology)
        .flags(ADMIN | NOSCRIPT | STALE)
        .syntax("[HARD | SOFT]")
        .doc("3.0.0", "Makes this node forget the cluster."),
    C::new("saveconfig", 2, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .doc("3.0.0", "Writes the cluster configuration to disk."),
    C::new("set-config-epoch", 3, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .syntax("config-epoch")
        .doc("3.0.0", "Sets this new node's config epoch."),
    C::new("setslot", -4, Cluster, cluster::cluster_topology)
        .flags(TOPOLOGY)
        .syntax("slot IMPORTING node-id | MIGRATING node-id | NODE node-id | STABLE")
        .doc("3.0.0", "Moves a hash slot between nodes."),
    C::new("shards", 2, Cluster, cluster::cluster_shards)
        .flags(STALE)
        .tips(NONDET)
        .doc("7.0.0", "Describes each shard: its slot ranges and nodes."),
    C::new("slaves", 3, Cluster, cluster::cluster_topology)
        .flags(ADMIN | STALE)
        .tips(NONDET)
        .syntax("node-id")
        .doc(
            "3.0.0",
            "Lists the replicas of a master (the old name of REPLICAS).",
        ),
    C::new("slots", 2, Cluster, cluster::cluster_slots)
        .flags(STALE)
        .tips(NONDET)
        .doc("3.0.0", "Maps each slot range to the node serving it."),
];

static PUBSUB_SUBS: &[C] = &[
    C::new("channels", -2, Pubsub, pubsub::pubsub_channels)
        .flags(PUBSUB | LOADING | STALE)
        .syntax("[pattern]")
        .doc(
            "2.8.0",
            "Lists the channels that have subscribers, optionally matching a pattern.",
        ),
    C::new("numsub", -2, Pubsub, pubsub::pubsub_numsub)
        .flags(PUBSUB | LOADING | STALE)
        .syntax("[channel...]")
        .doc("2.8.0", "Counts the subscribers of each channel."),
    C::new("numpat", 2, Pubsub, pubsub::pubsub_numpat)
        .flags(PUBSUB | LOADING | STALE)
        .doc("2.8.0", "Counts the distinct patterns subscribed to."),
    C::new("shardchannels", -2, Pubsub, pubsub::pubsub_shardchannels)
        .flags(PUBSUB | LOADING | STALE)
        .syntax("[pattern]")
        .doc(
            "7.0.0",
            "Lists the shard channels that have subscribers, optionally matching a pattern.",
        ),
    C::new("shardnumsub", -2, Pubsub, pubsub::pubsub_shardnumsub)
        .flags(PUBSUB | LOADING | STALE)
        .syntax("[shardchannel...]")
        .doc("7.0.0", "Counts the subscribers of each shard channel."),
    C::new("help", 2, Pubsub, pubsub::pubsub_help)
        .flags(LOADING | STALE)
        .doc("6.2.0", "Lists the PUBSUB subcommands."),
];

/// Shard channels sit where keys would, but are not keys.
const SHARD_CHANNEL: &[KeySpec] = &[KeySpec::range(1, 0, 1, &["not_key"])];
const SHARD_CHANNELS: &[KeySpec] = &[KeySpec::range(1, -1, 1, &["not_key"])];
const SUB: u32 = PUBSUB | NOSCRIPT | LOADING | STALE;

/// Moving the clock reclaims keys in every shard, so it cannot run where
/// shards are already held (MULTI, scripts).
const CLOCK: u32 = CLOCK_CONTROL | ADMIN | NOSCRIPT | NO_MULTI | LOADING | STALE;

static CLOCK_SUBS: &[C] = &[
    C::new("advance", 3, Server, fixture::clock_advance)
        .flags(CLOCK)
        .syntax("milliseconds")
        .doc(
            "0.1.0",
            "Moves the manual clock forward; keys it passes expire at once (rlockd only).",
        ),
    C::new("set", 3, Server, fixture::clock_set)
        .flags(CLOCK)
        .syntax("unix-time-milliseconds")
        .doc(
            "0.1.0",
            "Moves the manual clock to a Unix time in milliseconds (rlockd only).",
        ),
    C::new("get", 2, Server, fixture::clock_get)
        .flags(CLOCK | FAST)
        .doc(
            "0.1.0",
            "Returns the manual clock's time in Unix milliseconds (rlockd only).",
        ),
    C::new("help", 2, Server, fixture::clock_help)
        .flags(CLOCK)
        .doc("0.1.0", "Lists the RLOCKD.CLOCK subcommands."),
];

pub static COMMANDS: &[C] = &[
    // connection
    C::new("ping", -1, Connection, conn::ping).flags(FAST).acl(CONNECTION).tips(ALL_SHARDS_OK)
        .syntax("[message]")
        .doc("1.0.0", "Answers PONG, or echoes its argument: a liveness check."),
    C::new("echo", 2, Connection, conn::echo).flags(LOADING | STALE | FAST).acl(CONNECTION)
        .syntax("message")
        .doc("1.0.0", "Returns its argument."),
    C::new("hello", -1, Connection, conn::hello).flags(ANY_STATE).acl(CONNECTION)
        .syntax("[protover [AUTH (username password)] [SETNAME clientname]]")
        .doc("6.0.0", "Chooses the protocol version, optionally authenticates and names the connection, and describes the server."),
    C::new("auth", -2, Connection, conn::auth).flags(ANY_STATE).acl(CONNECTION)
        .syntax("[username] password")
        .doc("1.0.0", "Authenticates this connection."),
    C::new("select", 2, Connection, conn::select).flags(LOADING | STALE | FAST).acl(CONNECTION)
        .syntax("index")
        .doc("1.0.0", "Switches this connection to another database."),
    C::new("quit", -1, Connection, conn::quit).flags(ANY_STATE).acl(CONNECTION)
        .doc("1.0.0", "Closes the connection after the reply."),
    C::new("reset", 1, Connection, conn::reset).flags(ANY_STATE).acl(CONNECTION)
        .doc("6.2.0", "Returns the connection to its initial state."),
    C::container("client", Connection, CLIENT_SUBS).doc("2.4.0", "Commands about client connections."),
    // cluster
    C::container("cluster", Cluster, CLUSTER_SUBS).doc("3.0.0", "Commands about Redis Cluster."),
    C::new("asking", 1, Cluster, cluster::asking).flags(FAST).acl(CONNECTION)
        .doc("3.0.0", "Marks the next command as following an ASK redirect (accepted; this node owns every slot)."),
    C::new("readonly", 1, Cluster, cluster::readonly).flags(LOADING | STALE | FAST).acl(CONNECTION)
        .doc("3.0.0", "Lets this connection read from a replica in cluster mode (accepted; the node is a master)."),
    C::new("readwrite", 1, Cluster, cluster::readwrite).flags(LOADING | STALE | FAST).acl(CONNECTION)
        .doc("3.0.0", "Ends READONLY for this connection."),
    // server
    C::container("command", Server, COMMAND_SUBS).runs_bare(server::command_all).flags(LOADING | STALE).acl(CONNECTION).tips(NONDET_ORDER)
        .doc("2.8.13", "Describes every command the server knows."),
    C::new("info", -1, Server, server::info).flags(LOADING | STALE | WHOLE_KEYSPACE).acl(DANGEROUS)
        .tips(ALL_SHARDS_SPECIAL)
        .syntax("[section...]")
        .doc("1.0.0", "Reports the server's state and statistics, by section."),
    C::container("config", Server, CONFIG_SUBS).doc("2.0.0", "Reads and changes settings."),
    C::new("dbsize", 1, Server, server::dbsize).flags(READ_FAST | WHOLE_KEYSPACE).acl(KEYSPACE)
        .tips(&["request_policy:all_shards", "response_policy:agg_sum"])
        .doc("1.0.0", "Returns the number of keys in the selected database."),
    C::new("flushdb", -1, Server, server::flushdb).flags(WRITE | WHOLE_KEYSPACE).acl(KEYSPACE | DANGEROUS).tips(ALL_SHARDS_OK)
        .syntax("[ASYNC | SYNC]")
        .doc("1.0.0", "Deletes every key of the selected database."),
    C::new("flushall", -1, Server, server::flushall).flags(WRITE | WHOLE_KEYSPACE).acl(KEYSPACE | DANGEROUS).tips(ALL_SHARDS_OK)
        .syntax("[ASYNC | SYNC]")
        .doc("1.0.0", "Deletes every key of every database."),
    C::new("time", 1, Server, server::time).flags(LOADING | STALE | FAST).tips(NONDET)
        .doc("2.6.0", "Returns the server time: seconds and microseconds."),
    C::new("bgrewriteaof", 1, Server, server::bgrewriteaof).flags(ADMIN | NOSCRIPT | NO_ASYNC_LOADING).acl(acl::ADMIN | DANGEROUS)
        .doc("1.0.0", "Asynchronously rewrites the append-only file to disk."),
    C::new("lastsave", 1, Server, server::lastsave).flags(LOADING | STALE | FAST).acl(acl::ADMIN | DANGEROUS).tips(NONDET)
        .doc("1.0.0", "Returns when the last save happened; rlockd never saves, so its start time."),
    C::new("shutdown", -1, Server, server::shutdown).flags(ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY)
        .syntax("[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]")
        .doc("1.0.0", "Stops the server gracefully: connections are closed, the process exits."),
    C::new("monitor", 1, Server, operator::monitor).flags(ADMIN | NOSCRIPT | LOADING | STALE)
        .doc("1.0.0", "Streams every command the server runs, as it runs it."),
    // Holds the whole keyspace so that DEBUG SLEEP stops what Redis's would.
    C::new("debug", -2, Server, debug::debug).flags(ADMIN | NOSCRIPT | LOADING | STALE | WHOLE_KEYSPACE)
        .syntax("subcommand [argument [argument ...]]")
        .doc("1.0.0", "Subcommands for test suites: SLEEP, OBJECT, DIGEST, PROTOCOL, POPULATE…"),
    C::new("lolwut", -1, Server, operator::lolwut).flags(READ_FAST)
        .syntax("[VERSION version]")
        .doc("5.0.0", "Draws a picture, then the server's version."),
    C::container("acl", Server, ACL_SUBS).doc("6.0.0", "Commands about ACL users and permissions."),
    C::container("slowlog", Server, SLOWLOG_SUBS).doc("2.2.12", "Reads and clears the log of slow commands."),
    C::container("latency", Server, LATENCY_SUBS).doc("2.8.13", "Latency monitoring."),
    C::container("memory", Server, MEMORY_SUBS).doc("4.0.0", "Memory diagnostics."),
    C::new("wait", 3, Connection, blocking::wait).flags(NOSCRIPT).acl(CONNECTION).tips(&["request_policy:all_shards", "response_policy:agg_min"])
        .syntax("numreplicas timeout")
        .doc("3.0.0", "Waits for replicas to acknowledge earlier writes; rlockd has none, so 0."),
    C::new("waitaof", 4, Connection, blocking::waitaof).flags(NOSCRIPT).acl(CONNECTION).tips(&["request_policy:all_shards", "response_policy:agg_min"])
        .syntax("numlocal numreplicas timeout")
        .doc("7.2.0", "Waits for writes to reach the append-only file; rlockd keeps none, so [0, 0]."),
    // keys
    C::new("exists", -2, Generic, keys::exists).flags(READ_FAST).acl(KEYSPACE).tips(MULTI_SHARD_SUM).keys(&keys_all(RO))
        .syntax("key...")
        .doc("1.0.0", "Counts how many of the given keys exist."),
    C::new("del", -2, Generic, keys::del).flags(WRITE).acl(KEYSPACE).tips(MULTI_SHARD_SUM).keys(&keys_all(RM_DELETE))
        .syntax("key...")
        .doc("1.0.0", "Deletes keys; returns how many existed."),
    C::new("unlink", -2, Generic, keys::del).flags(WRITE | FAST).acl(KEYSPACE).tips(MULTI_SHARD_SUM).keys(&keys_all(RM_DELETE))
        .syntax("key...")
        .doc("4.0.0", "Deletes keys like DEL."),
    C::container("object", Generic, OBJECT_SUBS).doc("2.2.3", "Inspects how a key's value is held."),
    C::new("type", 2, Generic, keys::type_).flags(READ_FAST).acl(KEYSPACE).keys(&key1(RO))
        .syntax("key")
        .doc("1.0.0", "Returns the type of the value at a key."),
    C::new("keys", 2, Generic, keys::keys).flags(READONLY | WHOLE_KEYSPACE).acl(KEYSPACE | DANGEROUS)
        .tips(&["request_policy:all_shards", "nondeterministic_output_order"])
        .syntax("pattern")
        .doc("1.0.0", "Returns every key matching a glob pattern."),
    C::new("scan", -2, Generic, keys::scan).flags(READONLY | WHOLE_KEYSPACE).acl(KEYSPACE)
        .tips(&["nondeterministic_output", "request_policy:special"])
        .syntax("cursor [MATCH pattern] [COUNT count] [TYPE type]")
        .doc("2.8.0", "Iterates over the keys with a cursor."),
    C::new("rename", 3, Generic, keys::rename).flags(WRITE).acl(KEYSPACE)
        .keys(&[KeySpec::range(1, 0, 1, &["RW", "access", "delete"]), KeySpec::range(2, 0, 1, OW_UPDATE)])
        .syntax("key newkey")
        .doc("1.0.0", "Renames a key, replacing any key of the new name."),
    C::new("renamenx", 3, Generic, keys::renamenx).flags(WRITE | FAST).acl(KEYSPACE)
        .keys(&[KeySpec::range(1, 0, 1, RW_ACCESS_DELETE), KeySpec::range(2, 0, 1, &["OW", "insert"])])
        .syntax("key newkey")
        .doc("1.0.0", "Renames a key only if no key has the new name."),
    C::new("copy", -3, Generic, keys::copy).flags(WRITE | DENYOOM).acl(KEYSPACE)
        .keys(&[KeySpec::range(1, 0, 1, RO_ACCESS), KeySpec::range(2, 0, 1, OW_UPDATE)])
        .syntax("source destination [DB destination-db] [REPLACE]")
        .doc("6.2.0", "Copies a key's value and time to live to another key, possibly in another database."),
    C::new("move", 3, Generic, keys::move_).flags(WRITE | FAST).acl(KEYSPACE).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key db")
        .doc("1.0.0", "Moves a key to another database, unless a key of that name is there."),
    C::new("touch", -2, Generic, keys::touch).flags(READ_FAST).acl(KEYSPACE).tips(MULTI_SHARD_SUM).keys(&keys_all(RO))
        .syntax("key...")
        .doc("3.2.1", "Counts how many of the given keys exist, as an access to each."),
    C::new("swapdb", 3, Server, keys::swapdb).flags(WRITE | FAST | WHOLE_KEYSPACE).acl(KEYSPACE | DANGEROUS)
        .syntax("index1 index2")
        .doc("4.0.0", "Swaps the contents of two databases."),
    C::new("sort", -2, Generic, sort::sort).flags(WRITE | DENYOOM | WHOLE_KEYSPACE).acl(SET | SORTEDSET | LIST | DANGEROUS).find_more_keys(sort::store_key)
        .keys(&[KeySpec::range(1, 0, 1, RO_ACCESS), SORT_PATTERN_KEYS, SORT_STORE_KEY])
        .syntax("key [BY pattern] [LIMIT offset count] [GET pattern]... [ASC | DESC] [ALPHA] [STORE destination]")
        .doc("1.0.0", "Sorts the elements of a list, set or sorted set, optionally by or with other keys' values, and returns or stores them."),
    C::new("sort_ro", -2, Generic, sort::sort_ro).flags(READONLY | WHOLE_KEYSPACE).acl(SET | SORTEDSET | LIST | DANGEROUS)
        .keys(&[KeySpec::range(1, 0, 1, RO_ACCESS), SORT_PATTERN_KEYS])
        .syntax("key [BY pattern] [LIMIT offset count] [GET pattern]... [ASC | DESC] [ALPHA]")
        .doc("7.0.0", "Sorts like SORT, without STORE."),
    C::new("dump", 2, Generic, keys::dump).flags(READONLY).acl(KEYSPACE).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("2.6.0", "Serialises a key's value in rlockd's own format, for RESTORE."),
    C::new("restore", -4, Generic, keys::restore).flags(WRITE | DENYOOM).acl(KEYSPACE | DANGEROUS).keys(&key1(OW_UPDATE))
        .syntax(RESTORE_SYNTAX)
        .doc("2.6.0", "Creates a key from a DUMP payload, refusing damaged or foreign payloads."),
    C::new("restore-asking", -4, Server, keys::restore).flags(WRITE | DENYOOM | ASKING).acl(KEYSPACE | DANGEROUS).keys(&key1(OW_UPDATE))
        .syntax(RESTORE_SYNTAX)
        .doc("3.0.0", "RESTORE as a cluster migration sends it."),
    C::new("migrate", -6, Generic, migrate::migrate).flags(WRITE).acl(KEYSPACE | DANGEROUS).tips(NONDET)
        .keys(&[KeySpec::range(3, 0, 1, RW_ACCESS_DELETE), KeySpec::all_after_keyword("KEYS", -2, RW_ACCESS_DELETE_INCOMPLETE)])
        .syntax("host port key destination-db timeout [COPY] [REPLACE] [AUTH password | AUTH2 username password] [KEYS key...]")
        .doc("2.6.0", "Moves keys to another rlockd with RESTORE, deleting them here unless COPY."),
    C::new("randomkey", 1, Generic, keys::randomkey).flags(READONLY | WHOLE_KEYSPACE).acl(KEYSPACE)
        .tips(&["request_policy:all_shards", "nondeterministic_output"])
        .doc("1.0.0", "Returns a random key."),
    // expiry
    C::new("expire", -3, Generic, expire::expire).flags(WRITE | FAST).acl(KEYSPACE).keys(&key1(RW_UPDATE))
        .syntax("key seconds [NX | XX | GT | LT]")
        .doc("1.0.0", "Sets a key's time to live in seconds."),
    C::new("pexpire", -3, Generic, expire::pexpire).flags(WRITE | FAST).acl(KEYSPACE).keys(&key1(RW_UPDATE))
        .syntax("key milliseconds [NX | XX | GT | LT]")
        .doc("2.6.0", "Sets a key's time to live in milliseconds."),
    C::new("expireat", -3, Generic, expire::expireat).flags(WRITE | FAST).acl(KEYSPACE).keys(&key1(RW_UPDATE))
        .syntax("key unix-time-seconds [NX | XX | GT | LT]")
        .doc("1.2.0", "Sets a key's deadline as a Unix time in seconds."),
    C::new("pexpireat", -3, Generic, expire::pexpireat).flags(WRITE | FAST).acl(KEYSPACE).keys(&key1(RW_UPDATE))
        .syntax("key unix-time-milliseconds [NX | XX | GT | LT]")
        .doc("2.6.0", "Sets a key's deadline as a Unix time in milliseconds."),
    C::new("ttl", 2, Generic, expire::ttl).flags(READ_FAST).acl(KEYSPACE).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("1.0.0", "Returns a key's remaining time to live in seconds."),
    C::new("pttl", 2, Generic, expire::pttl).flags(READ_FAST).acl(KEYSPACE).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("2.6.0", "Returns a key's remaining time to live in milliseconds."),
    C::new("expiretime", 2, Generic, expire::expiretime).flags(READ_FAST).acl(KEYSPACE).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("7.0.0", "Returns a key's deadline as a Unix time in seconds."),
    C::new("pexpiretime", 2, Generic, expire::pexpiretime).flags(READ_FAST).acl(KEYSPACE).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("7.0.0", "Returns a key's deadline as a Unix time in milliseconds."),
    C::new("persist", 2, Generic, expire::persist).flags(WRITE | FAST).acl(KEYSPACE).keys(&key1(RW_UPDATE))
        .syntax("key")
        .doc("2.2.0", "Removes a key's time to live."),
    // strings
    C::new("get", 2, String, strings::get).flags(READ_FAST).acl(STRING).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("1.0.0", "Returns the string value of a key."),
    C::new("set", -3, String, strings::set).flags(WRITE | DENYOOM).acl(STRING)
        .keys(&key1(&["RW", "access", "update", "variable_flags"])).vary_key_flags(strings::set_key_flags)
        .syntax("key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]")
        .doc("1.0.0", "Sets a string value, optionally only if absent or present, with a time to live."),
    C::new("setnx", 3, String, strings::setnx).flags(WRITE_FAST).acl(STRING).keys(&key1(&["OW", "insert"]))
        .syntax("key value")
        .doc("1.0.0", "Sets a string value only if the key does not exist."),
    C::new("setex", 4, String, strings::setex).flags(WRITE | DENYOOM).acl(STRING).keys(&key1(OW_UPDATE))
        .syntax("key seconds value")
        .doc("2.0.0", "Sets a string value with a time to live in seconds."),
    C::new("psetex", 4, String, strings::psetex).flags(WRITE | DENYOOM).acl(STRING).keys(&key1(OW_UPDATE))
        .syntax("key milliseconds value")
        .doc("2.6.0", "Sets a string value with a time to live in milliseconds."),
    C::new("getset", 3, String, strings::getset).flags(WRITE_FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key value")
        .doc("1.0.0", "Sets a string value and returns the old one."),
    C::new("getdel", 2, String, strings::getdel).flags(WRITE | FAST).acl(STRING).keys(&key1(&["RW", "access", "delete"]))
        .syntax("key")
        .doc("6.2.0", "Returns a string value and deletes the key."),
    C::new("mget", -2, String, strings::mget).flags(READ_FAST).acl(STRING).tips(&["request_policy:multi_shard"])
        .keys(&keys_all(RO_ACCESS))
        .syntax("key...")
        .doc("1.0.0", "Returns the values of several keys."),
    C::new("mset", -3, String, strings::mset).flags(WRITE | DENYOOM).acl(STRING)
        .tips(&["request_policy:multi_shard", "response_policy:all_succeeded"])
        .keys(&[KeySpec::range(1, -1, 2, OW_UPDATE)])
        .syntax("(key value)...")
        .doc("1.0.1", "Sets several string values atomically."),
    C::new("msetnx", -3, String, strings::msetnx).flags(WRITE | DENYOOM).acl(STRING)
        .tips(&["request_policy:multi_shard", "response_policy:agg_min"])
        .keys(&[KeySpec::range(1, -1, 2, &["OW", "insert"])])
        .syntax("(key value)...")
        .doc("1.0.1", "Sets several string values only if none of the keys exists."),
    C::new("getrange", 4, String, strings::getrange).flags(READONLY).acl(STRING).keys(&key1(RO_ACCESS))
        .syntax("key start end")
        .doc("2.4.0", "Returns a substring of a string value."),
    C::new("incr", 2, String, strings::incr).flags(WRITE_FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key")
        .doc("1.0.0", "Adds one to an integer value."),
    C::new("incrby", 3, String, strings::incrby).flags(WRITE_FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key increment")
        .doc("1.0.0", "Adds an amount to an integer value."),
    C::new("decr", 2, String, strings::decr).flags(WRITE_FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key")
        .doc("1.0.0", "Subtracts one from an integer value."),
    C::new("decrby", 3, String, strings::decrby).flags(WRITE_FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key decrement")
        .doc("1.0.0", "Subtracts an amount from an integer value."),
    C::new("append", 3, String, strings::append).flags(WRITE_FAST).acl(STRING).keys(&key1(&["RW", "insert"]))
        .syntax("key value")
        .doc("2.0.0", "Appends to a string value; returns the new length."),
    C::new("substr", 4, String, strings::substr).flags(READONLY).acl(STRING).keys(&key1(RO_ACCESS))
        .syntax("key start end")
        .doc("1.0.0", "Returns a substring of a string value (GETRANGE's old name)."),
    C::new("setrange", 4, String, strings::setrange).flags(WRITE | DENYOOM).acl(STRING).keys(&key1(RW_UPDATE))
        .syntax("key offset value")
        .doc("2.2.0", "Overwrites part of a string value from an offset; returns the new length."),
    C::new("getex", -2, String, strings::getex).flags(WRITE | FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]")
        .doc("6.2.0", "Returns a string value and sets or clears its time to live."),
    C::new("incrbyfloat", 3, String, strings::incrbyfloat).flags(WRITE_FAST).acl(STRING).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key increment")
        .doc("2.6.0", "Adds a floating point number to a string value."),
    C::new("lcs", -3, String, strings::lcs).flags(READONLY).acl(STRING).keys(&[KeySpec::range(1, 1, 1, RO_ACCESS)])
        .syntax("key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]")
        .doc("7.0.0", "Returns the longest common subsequence of two strings, its length or its matches."),
    C::new("strlen", 2, String, strings::strlen).flags(READ_FAST).acl(STRING).keys(&key1(RO))
        .syntax("key")
        .doc("2.2.0", "Returns the length of a string value."),
    // bitmaps
    C::new("setbit", 4, Bitmap, bitmaps::setbit).flags(WRITE | DENYOOM).acl(BITMAP).keys(&key1(RW_ACCESS_UPDATE))
        .syntax("key offset value")
        .doc("2.2.0", "Sets or clears the bit at an offset of a string; returns the bit's old value."),
    C::new("getbit", 3, Bitmap, bitmaps::getbit).flags(READ_FAST).acl(BITMAP).keys(&key1(RO_ACCESS))
        .syntax("key offset")
        .doc("2.2.0", "Returns the bit at an offset of a string."),
    C::new("bitcount", -2, Bitmap, bitmaps::bitcount).flags(READONLY).acl(BITMAP).keys(&key1(RO_ACCESS))
        .syntax("key [start end [BYTE | BIT]]")
        .doc("2.6.0", "Counts the set bits of a string, or of a range of it."),
    C::new("bitpos", -3, Bitmap, bitmaps::bitpos).flags(READONLY).acl(BITMAP).keys(&key1(RO_ACCESS))
        .syntax("key bit [start [end [BYTE | BIT]]]")
        .doc("2.8.7", "Returns the position of the first set or clear bit of a string, or of a range of it."),
    C::new("bitop", -4, Bitmap, bitmaps::bitop).flags(WRITE | DENYOOM).acl(BITMAP)
        .keys(&[KeySpec::range(2, 0, 1, OW_UPDATE), KeySpec::range(3, -1, 1, RO_ACCESS)])
        .syntax("operation destkey key...")
        .doc("2.6.0", "Stores the AND, OR, XOR or NOT of strings at a key; returns its length."),
    C::new("bitfield", -2, Bitmap, bitmaps::bitfield).flags(WRITE | DENYOOM).acl(BITMAP)
        .keys(&key1(&["RW", "access", "update", "variable_flags"])).vary_key_flags(bitmaps::bitfield_key_flags)
        .syntax("key [GET (encoding offset) | ([OVERFLOW (WRAP | SAT | FAIL)] (SET (encoding offset value) | INCRBY (encoding offset increment)))]...")
        .doc("3.2.0", "Reads, writes and adds to integer fields of any width at any bit offset of a string."),
    C::new("bitfield_ro", -2, Bitmap, bitmaps::bitfield_ro).flags(READ_FAST).acl(BITMAP).keys(&key1(RO_ACCESS))
        .syntax("key [GET (encoding offset)]...")
        .doc("6.0.0", "Reads integer fields of a string (BITFIELD's GET only)."),
    // hyperloglog
    C::new("pfadd", -2, Hyperloglog, hyperloglog::pfadd).flags(WRITE_FAST).acl(HYPERLOGLOG).keys(&key1(&["RW", "insert"]))
        .syntax("key [element...]")
        .doc("2.8.9", "Adds elements to a HyperLogLog; returns 1 if its estimate may have changed."),
    C::new("pfcount", -2, Hyperloglog, hyperloglog::pfcount).flags(READONLY | MAY_REPLICATE).acl(HYPERLOGLOG).keys(&keys_all(&["RW", "access"]))
        .syntax("key...")
        .doc("2.8.9", "Returns the estimated number of distinct elements of HyperLogLogs (of their union)."),
    C::new("pfmerge", -2, Hyperloglog, hyperloglog::pfmerge).flags(WRITE | DENYOOM).acl(HYPERLOGLOG)
        .keys(&[KeySpec::range(1, 0, 1, &["RW", "access", "insert"]), KeySpec::range(2, -1, 1, RO_ACCESS)])
        .syntax("destkey sourcekey...")
        .doc("2.8.9", "Stores the union of HyperLogLogs at a key."),
    C::new("pfdebug", 3, Hyperloglog, hyperloglog::pfdebug).flags(WRITE | DENYOOM | ADMIN).acl(HYPERLOGLOG)
        .keys(&[KeySpec::range(2, 0, 1, &["RW", "access"])])
        .syntax("subcommand key")
        .doc("2.8.9", "Shows or changes a HyperLogLog's internals (GETREG, DECODE, ENCODING, TODENSE)."),
    C::new("pfselftest", 1, Hyperloglog, hyperloglog::pfselftest).flags(ADMIN).acl(HYPERLOGLOG)
        .doc("2.8.9", "Checks the HyperLogLog implementation."),
    // hashes
    C::new("hset", -4, Hash, hashes::hset).flags(WRITE_FAST).acl(HASH).keys(&key1(RW_UPDATE)).touches(hashes::touches_pairs)
        .syntax("key (field value)...")
        .doc("2.0.0", "Sets fields of a hash; returns how many were new."),
    C::new("hsetnx", 4, Hash, hashes::hsetnx).flags(WRITE_FAST).acl(HASH).keys(&key1(&["RW", "insert"])).touches(touches_first)
        .syntax("key field value")
        .doc("2.0.0", "Sets a hash field only if it does not exist."),
    C::new("hget", 3, Hash, hashes::hget).flags(READ_FAST).acl(HASH).keys(&key1(RO_ACCESS))
        .syntax("key field")
        .doc("2.0.0", "Returns the value of a hash field."),
    C::new("hmget", -3, Hash, hashes::hmget).flags(READ_FAST).acl(HASH).keys(&key1(RO_ACCESS))
        .syntax("key field...")
        .doc("2.0.0", "Returns the values of several hash fields."),
    C::new("hgetall", 2, Hash, hashes::hgetall).flags(READONLY).acl(HASH).tips(NONDET_ORDER).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("2.0.0", "Returns every field and value of a hash."),
    C::new("hdel", -3, Hash, hashes::hdel).flags(WRITE | FAST).acl(HASH).keys(&key1(&["RW", "delete"])).touches(touches_listed)
        .syntax("key field...")
        .doc("2.0.0", "Deletes hash fields; returns how many existed."),
    C::new("hexists", 3, Hash, hashes::hexists).flags(READ_FAST).acl(HASH).keys(&key1(RO))
        .syntax("key field")
        .doc("2.0.0", "Tells whether a hash field exists."),
    C::new("hlen", 2, Hash, hashes::hlen).flags(READ_FAST).acl(HASH).keys(&key1(RO))
        .syntax("key")
        .doc("2.0.0", "Returns the number of fields in a hash."),
    C::new("hkeys", 2, Hash, hashes::hkeys).flags(READONLY).acl(HASH).tips(NONDET_ORDER).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("2.0.0", "Returns every field name of a hash."),
    C::new("hvals", 2, Hash, hashes::hvals).flags(READONLY).acl(HASH).tips(NONDET_ORDER).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("2.0.0", "Returns every value of a hash."),
    C::new("hincrby", 4, Hash, hashes::hincrby).flags(WRITE_FAST).acl(HASH).keys(&key1(RW_ACCESS_UPDATE)).touches(touches_first)
        .syntax("key field increment")
        .doc("2.0.0", "Adds an integer to a hash field."),
    C::new("hincrbyfloat", 4, Hash, hashes::hincrbyfloat).flags(WRITE_FAST).acl(HASH).keys(&key1(RW_ACCESS_UPDATE)).touches(touches_first)
        .syntax("key field increment")
        .doc("2.6.0", "Adds a floating point number to a hash field."),
    C::new("hmset", -4, Hash, hashes::hmset).flags(WRITE_FAST).acl(HASH).keys(&key1(RW_UPDATE)).touches(hashes::touches_pairs)
        .syntax("key (field value)...")
        .doc("2.0.0", "Sets fields of a hash (HSET's old form, answering OK)."),
    C::new("hstrlen", 3, Hash, hashes::hstrlen).flags(READ_FAST).acl(HASH).keys(&key1(RO))
        .syntax("key field")
        .doc("3.2.0", "Returns the length of a hash field's value."),
    C::new("hrandfield", -2, Hash, hashes::hrandfield).flags(READONLY).acl(HASH).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key [count [WITHVALUES]]")
        .doc("6.2.0", "Returns random fields of a hash, with their values if asked; a negative count may repeat them."),
    C::new("hscan", -3, Hash, hashes::hscan).flags(READONLY).acl(HASH).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key cursor [MATCH pattern] [COUNT count]")
        .doc("2.8.0", "Iterates over the fields of a hash with a cursor."),
    // lists
    C::new("rpush", -3, List, lists::rpush).flags(WRITE_FAST).acl(LIST).keys(&key1(&["RW", "insert"])).touches(lists::touches_back_push)
        .syntax("key element...")
        .doc("1.0.0", "Appends elements to a list, creating it if needed; returns the new length."),
    C::new("lpush", -3, List, lists::lpush).flags(WRITE_FAST).acl(LIST).keys(&key1(&["RW", "insert"])).touches(lists::touches_front_push)
        .syntax("key element...")
        .doc("1.0.0", "Prepends elements to a list, creating it if needed; returns the new length."),
    C::new("lpop", -2, List, lists::lpop).flags(WRITE | FAST).acl(LIST).keys(&key1(RW_ACCESS_DELETE)).touches(lists::touches_front_pop)
        .syntax("key [count]")
        .doc("1.0.0", "Removes and returns the first elements of a list."),
    C::new("rpop", -2, List, lists::rpop).flags(WRITE | FAST).acl(LIST).keys(&key1(RW_ACCESS_DELETE)).touches(lists::touches_back_pop)
        .syntax("key [count]")
        .doc("1.0.0", "Removes and returns the last elements of a list."),
    C::new("lindex", 3, List, lists::lindex).flags(READONLY).acl(LIST).keys(&key1(RO_ACCESS))
        .syntax("key index")
        .doc("1.0.0", "Returns the element at an index of a list."),
    C::new("lrange", 4, List, lists::lrange).flags(READONLY).acl(LIST).keys(&key1(RO_ACCESS))
        .syntax("key start stop")
        .doc("1.0.0", "Returns a range of elements of a list."),
    C::new("llen", 2, List, lists::llen).flags(READ_FAST).acl(LIST).keys(&key1(RO))
        .syntax("key")
        .doc("1.0.0", "Returns the length of a list."),
    C::new("lrem", 4, List, lists::lrem).flags(WRITE).acl(LIST).keys(&key1(RW_DELETE))
        .syntax("key count element")
        .doc("1.0.0", "Removes elements equal to a value from a list; returns how many."),
    C::new("lset", 4, List, lists::lset).flags(WRITE | DENYOOM).acl(LIST).keys(&key1(RW_UPDATE)).touches(lists::touches_index)
        .syntax("key index element")
        .doc("1.0.0", "Sets the element at an index of a list."),
    C::new("lpos", -3, List, lists::lpos).flags(READONLY).acl(LIST).keys(&key1(RO_ACCESS))
        .syntax("key element [RANK rank] [COUNT num-matches] [MAXLEN len]")
        .doc("6.0.6", "Returns the positions of elements equal to a value in a list."),
    C::new("rpushx", -3, List, lists::rpushx).flags(WRITE_FAST).acl(LIST).keys(&key1(&["RW", "insert"])).touches(lists::touches_back_push)
        .syntax("key element...")
        .doc("2.2.0", "Appends elements to a list only if it exists; returns the new length."),
    C::new("lpushx", -3, List, lists::lpushx).flags(WRITE_FAST).acl(LIST).keys(&key1(&["RW", "insert"])).touches(lists::touches_front_push)
        .syntax("key element...")
        .doc("2.2.0", "Prepends elements to a list only if it exists; returns the new length."),
    C::new("linsert", 5, List, lists::linsert).flags(WRITE | DENYOOM).acl(LIST).keys(&key1(&["RW", "insert"]))
        .syntax("key (BEFORE | AFTER) pivot element")
        .doc("2.2.0", "Inserts an element before or after the first one equal to a pivot."),
    C::new("ltrim", 4, List, lists::ltrim).flags(WRITE).acl(LIST).keys(&key1(RW_DELETE))
        .syntax("key start stop")
        .doc("1.0.0", "Keeps only a range of a list's elements."),
    C::new("lmpop", -4, List, blocking::lmpop).flags(WRITE).acl(LIST).keys(&[KeySpec::keynum(1, RW_ACCESS_DELETE)])
        .syntax("numkeys key... (LEFT | RIGHT) [COUNT count]")
        .doc("7.0.0", "Pops elements from the first non-empty list of several."),
    C::new("blmpop", -5, List, blocking::blmpop).flags(WRITE | BLOCKING).acl(LIST).keys(&[KeySpec::keynum(2, RW_ACCESS_DELETE)])
        .syntax("timeout numkeys key... (LEFT | RIGHT) [COUNT count]")
        .doc("7.0.0", "Pops elements like LMPOP, waiting for a list up to a timeout."),
    C::new("lmove", 5, List, blocking::lmove).flags(WRITE | DENYOOM).acl(LIST).keys(&MOVE_KEYS)
        .syntax("source destination (LEFT | RIGHT) (LEFT | RIGHT)")
        .doc("6.2.0", "Moves an element from one end of a list to an end of another, and returns it."),
    C::new("rpoplpush", 3, List, blocking::rpoplpush).flags(WRITE | DENYOOM).acl(LIST).keys(&MOVE_KEYS)
        .syntax("source destination")
        .doc("1.2.0", "Moves the last element of a list to the front of another, and returns it."),
    C::new("blpop", -3, List, blocking::blpop).flags(WRITE | NOSCRIPT | BLOCKING).acl(LIST).keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
        .syntax("key... timeout")
        .doc("2.0.0", "Removes and returns the first element of the first non-empty list, waiting for one up to a timeout."),
    C::new("brpop", -3, List, blocking::brpop).flags(WRITE | NOSCRIPT | BLOCKING).acl(LIST).keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
        .syntax("key... timeout")
        .doc("2.0.0", "Removes and returns the last element of the first non-empty list, waiting for one up to a timeout."),
    C::new("blmove", 6, List, blocking::blmove).flags(WRITE | DENYOOM | NOSCRIPT | BLOCKING).acl(LIST).keys(&MOVE_KEYS)
        .syntax("source destination (LEFT | RIGHT) (LEFT | RIGHT) timeout")
        .doc("6.2.0", "Moves an element between lists like LMOVE, waiting for one up to a timeout."),
    C::new("brpoplpush", 4, List, blocking::brpoplpush).flags(WRITE | DENYOOM | NOSCRIPT | BLOCKING).acl(LIST).keys(&MOVE_KEYS)
        .syntax("source destination timeout")
        .doc("2.2.0", "Moves an element between lists like RPOPLPUSH, waiting for one up to a timeout."),
    // scripting
    C::new("eval", -3, Scripting, scripting::eval).flags(EVAL_FLAGS | MAY_REPLICATE).acl(SCRIPTING).keys(SCRIPT_KEYS_RW)
        .syntax("script numkeys [key [key ...]] [arg [arg ...]]")
        .doc("2.6.0", "Runs a Lua script atomically on its keys."),
    C::new("evalsha", -3, Scripting, scripting::evalsha).flags(EVAL_FLAGS | MAY_REPLICATE).acl(SCRIPTING).keys(SCRIPT_KEYS_RW)
        .syntax("sha1 numkeys [key [key ...]] [arg [arg ...]]")
        .doc("2.6.0", "Runs a cached Lua script by its SHA1."),
    C::new("eval_ro", -3, Scripting, scripting::eval_ro).flags(READONLY | EVAL_FLAGS).acl(SCRIPTING).keys(SCRIPT_KEYS_RO)
        .syntax("script numkeys [key [key ...]] [arg [arg ...]]")
        .doc("7.0.0", "Runs a Lua script that may only read."),
    C::new("evalsha_ro", -3, Scripting, scripting::evalsha_ro).flags(READONLY | EVAL_FLAGS).acl(SCRIPTING).keys(SCRIPT_KEYS_RO)
        .syntax("sha1 numkeys [key [key ...]] [arg [arg ...]]")
        .doc("7.0.0", "Runs a cached Lua script that may only read."),
    C::new("fcall", -3, Scripting, scripting::fcall).flags(NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | SCRIPT).acl(SCRIPTING).keys(SCRIPT_KEYS_RW)
        .syntax("function numkeys [key...] [arg...]")
        .doc("7.0.0", "Runs a function of a loaded library."),
    C::new("fcall_ro", -3, Scripting, scripting::fcall_ro).flags(READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | SCRIPT).acl(SCRIPTING).keys(SCRIPT_KEYS_RO)
        .syntax("function numkeys [key...] [arg...]")
        .doc("7.0.0", "Runs a function declared no-writes."),
    C::container("function", Scripting, FUNCTION_SUBS).doc("7.0.0", "Manages function libraries."),
    C::container("script", Scripting, SCRIPT_SUBS).doc("2.6.0", "Manages the script cache."),
    // sorted sets
    C::new("zadd", -4, SortedSet, zsets::zadd).flags(WRITE_FAST).acl(SORTEDSET).keys(&key1(RW_UPDATE)).touches(zsets::touches_zadd)
        .syntax("key [NX | XX] [GT | LT] [CH] [INCR] (score member)...")
        .doc("1.2.0", "Adds members to a sorted set or updates their scores."),
    C::new("zincrby", 4, SortedSet, zsets::zincrby).flags(WRITE_FAST).acl(SORTEDSET).keys(&key1(RW_ACCESS_UPDATE)).touches(zsets::touches_zincrby)
        .syntax("key increment member")
        .doc("1.2.0", "Adds to the score of a sorted set member; returns the new score."),
    C::new("zscore", 3, SortedSet, zsets::zscore).flags(READ_FAST).acl(SORTEDSET).keys(&key1(RO_ACCESS))
        .syntax("key member")
        .doc("1.2.0", "Returns the score of a sorted set member."),
    C::new("zmscore", -3, SortedSet, zsets::zmscore).flags(READ_FAST).acl(SORTEDSET).keys(&key1(RO_ACCESS))
        .syntax("key member...")
        .doc("6.2.0", "Returns the scores of several sorted set members."),
    C::new("zrem", -3, SortedSet, zsets::zrem).flags(WRITE | FAST).acl(SORTEDSET).keys(&key1(RW_DELETE)).touches(touches_listed)
        .syntax("key member...")
        .doc("1.2.0", "Removes members from a sorted set; returns how many existed."),
    C::new("zcard", 2, SortedSet, zsets::zcard).flags(READ_FAST).acl(SORTEDSET).keys(&key1(RO))
        .syntax("key")
        .doc("1.2.0", "Returns the number of members of a sorted set."),
    C::new("zcount", 4, SortedSet, zsets::zcount).flags(READ_FAST).acl(SORTEDSET).keys(&key1(RO_ACCESS))
        .syntax("key min max")
        .doc("2.0.0", "Counts the members of a sorted set with scores in a range."),
    C::new("zrange", -4, SortedSet, zsets::zrange).flags(READONLY).acl(SORTEDSET).keys(&key1(RO_ACCESS))
        .syntax("key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]")
        .doc("1.2.0", "Returns a range of sorted set members by rank, score or member."),
    C::new("zrangebyscore", -4, SortedSet, zsets::zrangebyscore).flags(READONLY).acl(SORTEDSET).keys(&key1(RO_ACCESS))
        .syntax("key min max [WITHSCORES] [LIMIT offset count]")
        .doc("1.0.5", "Returns the members of a sorted set with scores in a range."),
    C::new("zremrangebyscore", 4, SortedSet, zsets::zremrangebyscore).flags(WRITE).acl(SORTEDSET).keys(&key1(RW_DELETE))
        .syntax("key min max")
        .doc("1.2.0", "Removes the members of a sorted set with scores in a range."),
    C::new("zrank", 3, SortedSet, zsets::zrank).flags(READ_FAST).acl(SORTEDSET).keys(&key1(RO_ACCESS))
        .syntax("key member")
        .doc("2.0.0", "Returns the rank of a sorted set member, lowest score first."),
    C::new("zrevrange", -4, SortedSet, zsets::zrevrange).flags(READONLY).acl(SORTEDSET).keys(&key1(RO_ACCESS))
        .syntax("key start stop [WITHSCORES]")
        .doc("1.2.0", "Returns a range of sorted set members by rank, highest score first."),
    C::new("zrevrangebyscore", -4, SortedSet, zsets::zrevrangebyscore).flags(READONLY).acl(SORTEDSET).keys(&key1(RO_ACCESS))
        .syntax("key max min [WITHSCORES] [LIMIT offset count]")
        .doc("2.2.0", "Returns the members of a sorted set with scores in a range, highest first."),
    C::new("zrangebylex", -4, SortedSet, zsets::zrangebylex).flags(READONLY).acl(SORTEDSET).keys(&key1(RO_ACCESS))
        .syntax("key min max [LIMIT offset count]")
        .doc("2.8.9", "Returns the members of a sorted set in a lexicographical range."),
    C::new("zrevrangebylex", -4, SortedSet, zsets::zrevrangebylex).flags(READONLY).acl(SORTEDSET).keys(&key1(RO_ACCESS))
        .syntax("key max min [LIMIT offset count]")
        .doc("2.8.9", "Returns the members of a sorted set in a lexicographical range, in reverse."),
    C::new("zrangestore", -5, SortedSet, zsets::zrangestore).flags(WRITE | DENYOOM).acl(SORTEDSET)
        .keys(&[KeySpec::range(1, 0, 1, OW_UPDATE), KeySpec::range(2, 0, 1, RO_ACCESS)])
        .syntax("destination source min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]")
        .doc("6.2.0", "Stores a range of a sorted set in another key."),
    C::new("zlexcount", 4, SortedSet, zsets::zlexcount).flags(READ_FAST).acl(SORTEDSET).keys(&key1(RO_ACCESS))
        .syntax("key min max")
        .doc("2.8.9", "Counts the members of a sorted set in a lexicographical range."),
    C::new("zrevrank", 3, SortedSet, zsets::zrevrank).flags(READ_FAST).acl(SORTEDSET).keys(&key1(RO_ACCESS))
        .syntax("key member")
        .doc("2.0.0", "Returns the rank of a sorted set member, highest score first."),
    C::new("zremrangebyrank", 4, SortedSet, zsets::zremrangebyrank).flags(WRITE).acl(SORTEDSET).keys(&key1(RW_DELETE))
        .syntax("key start stop")
        .doc("2.0.0", "Removes the members of a sorted set in a range of ranks."),
    C::new("zremrangebylex", 4, SortedSet, zsets::zremrangebylex).flags(WRITE).acl(SORTEDSET).keys(&key1(RW_DELETE))
        .syntax("key min max")
        .doc("2.8.9", "Removes the members of a sorted set in a lexicographical range."),
    C::new("zpopmin", -2, SortedSet, zsets::zpopmin).flags(WRITE | FAST).acl(SORTEDSET).keys(&key1(RW_ACCESS_DELETE))
        .syntax("key [count]")
        .doc("5.0.0", "Removes and returns the lowest-scored members of a sorted set."),
    C::new("zpopmax", -2, SortedSet, zsets::zpopmax).flags(WRITE | FAST).acl(SORTEDSET).keys(&key1(RW_ACCESS_DELETE))
        .syntax("key [count]")
        .doc("5.0.0", "Removes and returns the highest-scored members of a sorted set."),
    C::new("zunion", -3, SortedSet, zsets::zunion).flags(READONLY).acl(SORTEDSET).keys(&[KeySpec::keynum(1, RO_ACCESS)])
        .syntax("numkeys key... [WEIGHTS weight...] [AGGREGATE (SUM | MIN | MAX)] [WITHSCORES]")
        .doc("6.2.0", "Returns the union of sorted sets (and sets)."),
    C::new("zinter", -3, SortedSet, zsets::zinter).flags(READONLY).acl(SORTEDSET).keys(&[KeySpec::keynum(1, RO_ACCESS)])
        .syntax("numkeys key... [WEIGHTS weight...] [AGGREGATE (SUM | MIN | MAX)] [WITHSCORES]")
        .doc("6.2.0", "Returns the intersection of sorted sets (and sets)."),
    C::new("zdiff", -3, SortedSet, zsets::zdiff).flags(READONLY).acl(SORTEDSET).keys(&[KeySpec::keynum(1, RO_ACCESS)])
        .syntax("numkeys key... [WITHSCORES]")
        .doc("6.2.0", "Returns the members of the first sorted set that are in none of the others."),
    C::new("zunionstore", -4, SortedSet, zsets::zunionstore).flags(WRITE | DENYOOM).acl(SORTEDSET).keys(&ZSTORE_KEYS)
        .syntax("destination numkeys key... [WEIGHTS weight...] [AGGREGATE (SUM | MIN | MAX)]")
        .doc("2.0.0", "Stores the union of sorted sets (and sets) in a key."),
    C::new("zinterstore", -4, SortedSet, zsets::zinterstore).flags(WRITE | DENYOOM).acl(SORTEDSET).keys(&ZSTORE_KEYS)
        .syntax("destination numkeys key... [WEIGHTS weight...] [AGGREGATE (SUM | MIN | MAX)]")
        .doc("2.0.0", "Stores the intersection of sorted sets (and sets) in a key."),
    C::new("zdiffstore", -4, SortedSet, zsets::zdiffstore).flags(WRITE | DENYOOM).acl(SORTEDSET).keys(&ZSTORE_KEYS)
        .syntax("destination numkeys key...")
        .doc("6.2.0", "Stores the difference of sorted sets in a key."),
    C::new("zintercard", -3, SortedSet, zsets::zintercard).flags(READONLY).acl(SORTEDSET).keys(&[KeySpec::keynum(1, RO_ACCESS)])
        .syntax("numkeys key... [LIMIT limit]")
        .doc("7.0.0", "Counts the members common to sorted sets, up to a limit."),
    C::new("zrandmember", -2, SortedSet, zsets::zrandmember).flags(READONLY).acl(SORTEDSET).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key [count [WITHSCORES]]")
        .doc("6.2.0", "Returns random members of a sorted set."),
    C::new("zscan", -3, SortedSet, zsets::zscan).flags(READONLY).acl(SORTEDSET).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key cursor [MATCH pattern] [COUNT count]")
        .doc("2.8.0", "Iterates over the members and scores of a sorted set."),
    C::new("zmpop", -4, SortedSet, blocking::zmpop).flags(WRITE).acl(SORTEDSET).keys(&[KeySpec::keynum(1, RW_ACCESS_DELETE)])
        .syntax("numkeys key... (MIN | MAX) [COUNT count]")
        .doc("7.0.0", "Pops the lowest or highest members of the first non-empty sorted set of several."),
    C::new("bzpopmin", -3, SortedSet, blocking::bzpopmin).flags(WRITE | NOSCRIPT | FAST | BLOCKING).acl(SORTEDSET).keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
        .syntax("key... timeout")
        .doc("5.0.0", "Pops the lowest-scored member of the first non-empty sorted set, waiting for one up to a timeout."),
    C::new("bzpopmax", -3, SortedSet, blocking::bzpopmax).flags(WRITE | NOSCRIPT | FAST | BLOCKING).acl(SORTEDSET).keys(&[KeySpec::range(1, -2, 1, RW_ACCESS_DELETE)])
        .syntax("key... timeout")
        .doc("5.0.0", "Pops the highest-scored member of the first non-empty sorted set, waiting for one up to a timeout."),
    C::new("bzmpop", -5, SortedSet, blocking::bzmpop).flags(WRITE | BLOCKING).acl(SORTEDSET).keys(&[KeySpec::keynum(2, RW_ACCESS_DELETE)])
        .syntax("timeout numkeys key... (MIN | MAX) [COUNT count]")
        .doc("7.0.0", "Pops members like ZMPOP, waiting for a sorted set up to a timeout."),
    // geo
    C::new("geoadd", -5, Geo, geo::geoadd).flags(WRITE | DENYOOM).acl(GEO).keys(&key1(RW_UPDATE))
        .syntax("key [NX | XX] [CH] (longitude latitude member)...")
        .doc("3.2.0", "Adds points (longitude, latitude, member) to a geo set, a sorted set scored by geohash."),
    C::new("geodist", -4, Geo, geo::geodist).flags(READONLY).acl(GEO).keys(&key1(RO_ACCESS))
        .syntax("key member1 member2 [M | KM | FT | MI]")
        .doc("3.2.0", "Returns the distance between two members of a geo set."),
    C::new("geohash", -2, Geo, geo::geohash).flags(READONLY).acl(GEO).keys(&key1(RO_ACCESS))
        .syntax("key [member...]")
        .doc("3.2.0", "Returns members' positions as standard 11-character geohash strings."),
    C::new("geopos", -2, Geo, geo::geopos).flags(READONLY).acl(GEO).keys(&key1(RO_ACCESS))
        .syntax("key [member...]")
        .doc("3.2.0", "Returns members' longitudes and latitudes."),
    C::new("georadius", -6, Geo, geo::georadius).flags(WRITE | DENYOOM).acl(GEO)
        .keys(&[KeySpec::range(1, 0, 1, RO_ACCESS), KeySpec::keyword("STORE", 6, OW_UPDATE), KeySpec::keyword("STOREDIST", 6, OW_UPDATE)])
        .syntax("key longitude latitude radius (M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]")
        .doc("3.2.0", "Finds the members within a radius of a point, optionally storing them."),
    C::new("georadius_ro", -6, Geo, geo::georadius_ro).flags(READONLY).acl(GEO).keys(&key1(RO_ACCESS))
        .syntax("key longitude latitude radius (M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]")
        .doc("3.2.10", "Finds the members within a radius of a point."),
    C::new("georadiusbymember", -5, Geo, geo::georadiusbymember).flags(WRITE | DENYOOM).acl(GEO)
        .keys(&[KeySpec::range(1, 0, 1, RO_ACCESS), KeySpec::keyword("STORE", 5, OW_UPDATE), KeySpec::keyword("STOREDIST", 5, OW_UPDATE)])
        .syntax("key member radius (M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]")
        .doc("3.2.0", "Finds the members within a radius of a member, optionally storing them."),
    C::new("georadiusbymember_ro", -5, Geo, geo::georadiusbymember_ro).flags(READONLY).acl(GEO).keys(&key1(RO_ACCESS))
        .syntax("key member radius (M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]")
        .doc("3.2.10", "Finds the members within a radius of a member."),
    C::new("geosearch", -7, Geo, geo::geosearch).flags(READONLY).acl(GEO).keys(&key1(RO_ACCESS))
        .syntax("key (FROMMEMBER member | FROMLONLAT longitude latitude) (BYRADIUS radius (M | KM | FT | MI) | BYBOX width height (M | KM | FT | MI)) [ASC | DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]")
        .doc("6.2.0", "Finds the members within a radius or box around a member or a point."),
    C::new("geosearchstore", -8, Geo, geo::geosearchstore).flags(WRITE | DENYOOM).acl(GEO)
        .keys(&[KeySpec::range(1, 0, 1, OW_UPDATE), KeySpec::range(2, 0, 1, RO_ACCESS)])
        .syntax("destination source (FROMMEMBER member | FROMLONLAT longitude latitude) (BYRADIUS radius (M | KM | FT | MI) | BYBOX width height (M | KM | FT | MI)) [ASC | DESC] [COUNT count [ANY]] [STOREDIST]")
        .doc("6.2.0", "Stores the members GEOSEARCH would find as a sorted set."),
    // sets
    C::new("sadd", -3, Set, sets::sadd).flags(WRITE_FAST).acl(SET).keys(&key1(&["RW", "insert"])).touches(touches_listed)
        .syntax("key member...")
        .doc("1.0.0", "Adds members to a set; returns how many were new."),
    C::new("srem", -3, Set, sets::srem).flags(WRITE | FAST).acl(SET).keys(&key1(&["RW", "delete"])).touches(touches_listed)
        .syntax("key member...")
        .doc("1.0.0", "Removes members from a set; returns how many were there."),
    C::new("smembers", 2, Set, sets::smembers).flags(READONLY).acl(SET).tips(NONDET_ORDER).keys(&key1(RO_ACCESS))
        .syntax("key")
        .doc("1.0.0", "Returns every member of a set."),
    C::new("sismember", 3, Set, sets::sismember).flags(READ_FAST).acl(SET).keys(&key1(RO))
        .syntax("key member")
        .doc("1.0.0", "Tells whether a value is a member of a set."),
    C::new("smismember", -3, Set, sets::smismember).flags(READ_FAST).acl(SET).keys(&key1(RO_ACCESS))
        .syntax("key member...")
        .doc("6.2.0", "Tells, for each of several values, whether it is a member of a set."),
    C::new("scard", 2, Set, sets::scard).flags(READ_FAST).acl(SET).keys(&key1(RO))
        .syntax("key")
        .doc("1.0.0", "Returns the number of members of a set."),
    C::new("spop", -2, Set, sets::spop).flags(WRITE | FAST).acl(SET).tips(NONDET).keys(&key1(RW_ACCESS_DELETE))
        .syntax("key [count]")
        .doc("1.0.0", "Removes and returns random members of a set."),
    C::new("srandmember", -2, Set, sets::srandmember).flags(READONLY).acl(SET).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key [count]")
        .doc("1.0.0", "Returns random members of a set; a negative count may repeat them."),
    C::new("smove", 4, Set, sets::smove).flags(WRITE | FAST).acl(SET).keys(&[KeySpec::range(1, 0, 1, RW_ACCESS_DELETE), KeySpec::range(2, 0, 1, &["RW", "insert"])])
        .syntax("source destination member")
        .doc("1.0.0", "Moves a member from one set to another."),
    C::new("sinter", -2, Set, sets::sinter).flags(READONLY).acl(SET).tips(NONDET_ORDER).keys(&keys_all(RO_ACCESS))
        .syntax("key...")
        .doc("1.0.0", "Returns the members every given set has."),
    C::new("sinterstore", -3, Set, sets::sinterstore).flags(WRITE | DENYOOM).acl(SET).keys(&store_keys(RW_UPDATE))
        .syntax("destination key...")
        .doc("1.0.0", "Stores the intersection of sets at a key; returns its size."),
    C::new("sintercard", -3, Set, sets::sintercard).flags(READONLY).acl(SET).keys(&[KeySpec::keynum(1, RO_ACCESS)])
        .syntax("numkeys key... [LIMIT limit]")
        .doc("7.0.0", "Counts the members every given set has, stopping at a limit."),
    C::new("sunion", -2, Set, sets::sunion).flags(READONLY).acl(SET).tips(NONDET_ORDER).keys(&keys_all(RO_ACCESS))
        .syntax("key...")
        .doc("1.0.0", "Returns the members of any of the given sets."),
    C::new("sunionstore", -3, Set, sets::sunionstore).flags(WRITE | DENYOOM).acl(SET).keys(&store_keys(OW_UPDATE))
        .syntax("destination key...")
        .doc("1.0.0", "Stores the union of sets at a key; returns its size."),
    C::new("sdiff", -2, Set, sets::sdiff).flags(READONLY).acl(SET).tips(NONDET_ORDER).keys(&keys_all(RO_ACCESS))
        .syntax("key...")
        .doc("1.0.0", "Returns the members of the first set that no other given set has."),
    C::new("sdiffstore", -3, Set, sets::sdiffstore).flags(WRITE | DENYOOM).acl(SET).keys(&store_keys(OW_UPDATE))
        .syntax("destination key...")
        .doc("1.0.0", "Stores the difference of sets at a key; returns its size."),
    C::new("sscan", -3, Set, sets::sscan).flags(READONLY).acl(SET).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key cursor [MATCH pattern] [COUNT count]")
        .doc("2.8.0", "Iterates over the members of a set with a cursor."),
    // streams
    C::new("xadd", -5, Stream, streams::xadd).flags(WRITE_FAST).acl(STREAM).tips(NONDET)
        .keys(&[KeySpec::range(1, 0, 1, RW_UPDATE).with_notes("UPDATE instead of INSERT because of the optional trimming feature")])
        .syntax("key [NOMKSTREAM] [(MAXLEN | MINID) [= | ~] threshold [LIMIT count]] (* | id) (field value)...")
        .doc("5.0.0", "Appends an entry to a stream, making the stream if needed; returns its id."),
    C::new("xlen", 2, Stream, streams::xlen).flags(READ_FAST).acl(STREAM).keys(&key1(RO))
        .syntax("key")
        .doc("5.0.0", "Returns the number of entries in a stream."),
    C::new("xrange", -4, Stream, streams::xrange).flags(READONLY).acl(STREAM).keys(&key1(RO_ACCESS))
        .syntax("key start end [COUNT count]")
        .doc("5.0.0", "Returns the entries of a stream between two ids, oldest first."),
    C::new("xrevrange", -4, Stream, streams::xrevrange).flags(READONLY).acl(STREAM).keys(&key1(RO_ACCESS))
        .syntax("key end start [COUNT count]")
        .doc("5.0.0", "Returns the entries of a stream between two ids, newest first."),
    C::new("xdel", -3, Stream, streams::xdel).flags(WRITE | FAST).acl(STREAM).keys(&key1(RW_DELETE))
        .syntax("key id...")
        .doc("5.0.0", "Deletes entries of a stream by id; returns how many existed."),
    C::new("xtrim", -4, Stream, streams::xtrim).flags(WRITE).acl(STREAM).tips(NONDET).keys(&key1(RW_DELETE))
        .syntax("key (MAXLEN | MINID) [= | ~] threshold [LIMIT count]")
        .doc("5.0.0", "Removes a stream's oldest entries down to a length or up to an id."),
    C::new("xsetid", -3, Stream, streams::xsetid).flags(WRITE_FAST).acl(STREAM).keys(&key1(RW_UPDATE))
        .syntax("key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]")
        .doc("5.0.0", "Sets a stream's last generated id and counters."),
    C::new("xread", -4, Stream, streams::xread).flags(READONLY | BLOCKING).acl(STREAM)
        .keys(&[KeySpec::after_keyword("STREAMS", 1, RO_ACCESS)])
        .syntax("[COUNT count] [BLOCK milliseconds] STREAMS (key... id...)")
        .doc("5.0.0", "Returns entries past given ids from several streams, waiting for some up to a timeout."),
    C::new("xreadgroup", -7, Stream, streams::xreadgroup).flags(WRITE | BLOCKING).acl(STREAM)
        .keys(&[KeySpec::after_keyword("STREAMS", 4, RO_ACCESS)])
        .syntax("GROUP (group consumer) [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS (key... id...)")
        .doc("5.0.0", "Reads entries for a consumer of a group, new ones or its own pending ones, waiting up to a timeout."),
    C::new("xack", -4, Stream, streams::xack).flags(WRITE | FAST).acl(STREAM).keys(&key1(RW_UPDATE))
        .syntax("key group id...")
        .doc("5.0.0", "Acknowledges entries pending in a consumer group; returns how many were pending."),
    C::new("xpending", -3, Stream, streams::xpending).flags(READONLY).acl(STREAM).tips(NONDET).keys(&key1(RO_ACCESS))
        .syntax("key group [[IDLE min-idle-time] start end count [consumer]]")
        .doc("5.0.0", "Describes the entries pending in a consumer group."),
    C::new("xclaim", -6, Stream, streams::xclaim).flags(WRITE | FAST).acl(STREAM).tips(NONDET).keys(&key1(RW_UPDATE))
        .syntax("key group consumer min-idle-time id... [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]")
        .doc("5.0.0", "Gives pending entries idle long enough to another consumer."),
    C::new("xautoclaim", -6, Stream, streams::xautoclaim).flags(WRITE | FAST).acl(STREAM).tips(NONDET).keys(&key1(RW_DELETE))
        .syntax("key group consumer min-idle-time start [COUNT count] [JUSTID]")
        .doc("6.2.0", "Gives pending entries idle long enough to another consumer, scanning from an id."),
    C::container("xgroup", Stream, XGROUP_SUBS).doc("5.0.0", "Manages consumer groups."),
    C::container("xinfo", Stream, XINFO_SUBS).doc("5.0.0", "Describes streams, consumer groups and consumers."),
    // transactions
    C::new("multi", 1, Transactions, multi::multi).flags(TX).acl(TRANSACTION)
        .doc("1.2.0", "Starts a transaction."),
    C::new("exec", 1, Transactions, multi::exec).flags(NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG).acl(TRANSACTION)
        .doc("1.2.0", "Runs the queued commands atomically."),
    C::new("discard", 1, Transactions, multi::discard).flags(TX).acl(TRANSACTION)
        .doc("2.0.0", "Drops the queued commands."),
    C::new("watch", -2, Transactions, multi::watch).flags(TX).acl(TRANSACTION).keys(&keys_all(RO))
        .syntax("key...")
        .doc("2.2.0", "Makes the next EXEC fail if any of these keys changes first."),
    C::new("unwatch", 1, Transactions, multi::unwatch).flags(TX).acl(TRANSACTION)
        .doc("2.2.0", "Forgets every WATCHed key."),
    // pub/sub
    C::new("subscribe", -2, Pubsub, pubsub::subscribe).flags(SUB)
        .syntax("channel...")
        .doc("2.0.0", "Listens for messages published to the given channels."),
    C::new("unsubscribe", -1, Pubsub, pubsub::unsubscribe).flags(SUB)
        .syntax("[channel...]")
        .doc("2.0.0", "Stops listening to the given channels, or to all of them."),
    C::new("psubscribe", -2, Pubsub, pubsub::psubscribe).flags(SUB)
        .syntax("pattern...")
        .doc("2.0.0", "Listens for messages published to channels matching the given patterns."),
    C::new("punsubscribe", -1, Pubsub, pubsub::punsubscribe).flags(SUB)
        .syntax("[pattern...]")
        .doc("2.0.0", "Stops listening to the given patterns, or to all of them."),
    C::new("ssubscribe", -2, Pubsub, pubsub::ssubscribe).flags(SUB).keys(SHARD_CHANNELS)
        .syntax("shardchannel...")
        .doc("7.0.0", "Listens for messages published to the given shard channels."),
    C::new("sunsubscribe", -1, Pubsub, pubsub::sunsubscribe).flags(SUB).keys(SHARD_CHANNELS)
        .syntax("[shardchannel...]")
        .doc("7.0.0", "Stops listening to the given shard channels, or to all of them."),
    C::new("publish", 3, Pubsub, pubsub::publish).flags(PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE)
        .syntax("channel message")
        .doc("2.0.0", "Posts a message to a channel; returns how many subscribers received it."),
    C::new("spublish", 3, Pubsub, pubsub::spublish).flags(PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE).keys(SHARD_CHANNEL)
        .syntax("shardchannel message")
        .doc("7.0.0", "Posts a message to a shard channel; returns how many subscribers received it."),
    C::container("pubsub", Pubsub, PUBSUB_SUBS).doc("2.8.0", "Inspects the state of pub/sub."),
    // rlockd's own
    C::container("rlockd.clock", Server, CLOCK_SUBS).flags(CLOCK)
        .doc("0.1.0", "Moves the manual clock of a server started with --enable-clock-control (rlockd only)."),
    C::new("rlockd.locks", -1, Server, fixture::locks).flags(ADMIN | READONLY | LOADING | STALE | WHOLE_KEYSPACE)
        .tips(NONDET)
        .syntax("[pattern]")
        .doc("0.1.0", "Describes the locks held: hashes of owner to hold count, and strings with a deadline (rlockd only)."),
    C::new("rlockd.waiters", -1, Server, fixture::waiting).flags(ADMIN | LOADING | STALE)
        .tips(NONDET)
        .syntax("[pattern]")
        .doc("0.1.0", "Describes who is subscribed to which channel, pattern and shard channel (rlockd only)."),
];
