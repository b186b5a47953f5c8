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
//!
//! # Where things live
//!
//! A request flows down these modules, top to bottom; a module imports only
//! from those below it (`tests/layers.rs` checks), and what must call back
//! up goes through a trait the lower module defines.
//!
//! - `server`: starting and stopping an instance, its listeners (TCP, unix
//!   socket, TLS: `server/listener.rs`; those in force, which CONFIG SET of
//!   `port`, `tls-port` and `bind` moves through `context/listening.rs`'s
//!   trait: `server/listening.rs`), the expiry driver, metrics, and the
//!   process around it that the binary manages (`server/process.rs`:
//!   daemonize, the pid file, systemd's readiness; `server/syslog.rs`).
//!   `fuzzing`: entry points for the fuzz targets.
//! - `replication`: the link to the primary when this server is a
//!   replica (handshake, full sync, the command stream it applies), and
//!   the connections of its own replicas (`replication/primary.rs`: PSYNC,
//!   the snapshot, the stream, their ACKs), which `connection` hands over.
//! - `connection`: one client's loop of reading requests and writing replies.
//! - `command`: one file or folder per command family (`strings.rs`,
//!   `hashes.rs`, `streams/`…), each declaring its commands' specs beside
//!   their handlers; `command/mod.rs` lists the families and dispatches,
//!   `registry.rs` holds the table built from them and runs a command,
//!   `permissions.rs` checks ACLs, and the base files below the families
//!   (`spec.rs`, `ctx.rs`, `args.rs`, `reply.rs`…) are what they share.
//! - `context`: state every connection shares (`Shared`) and one client's
//!   own (`Client`): ACL, stats, slowlog, persistence as the server runs it,
//!   the names `rename-command` gave commands (`context/renames.rs`).
//! - `scripting`: the Lua engine behind EVAL and FUNCTION. `pubsub`:
//!   channels, MONITOR and client-side caching's invalidations. `tls`: the
//!   `tls-*` settings made into the TLS port's acceptor, its reloads, and
//!   the health check's client side (public, for the binary).
//! - `cluster`: answering as a one-node Redis Cluster. `config`: each
//!   directive, declared once: rlockd's settings in `config/table.rs`,
//!   Redis's that it checks and reports without acting on them in
//!   `config/kept/` (one file per theme), Redis's value checks in
//!   `config/parse.rs`, the config file (`include`, `rename-command`) in
//!   `config/file.rs`.
//! - `client_handle`: what the server shares about one connected client.
//! - `keyspace`: the data: shards and their locks, databases, values,
//!   deadlines, blocked clients, keyspace events (its own doc maps it).
//! - `expiry`: the timing wheels deadlines are filed in, and their alarm.
//!   `persist`: the replication backlog (`persist/backlog.rs`: the stream
//!   replicas read, the same records the AOF takes), the append-only
//!   file's writer and reader, its multi-part
//!   layout (`persist/manifest`: the directory's manifest, base and
//!   incremental files), and Redis's RDB format (`persist/rdb`: bytes and
//!   a file's framing).
//! - `protocol`: RESP framing and replies. `clock`: all time, so tests can
//!   drive it.
//! - `error`: command errors, worded as Redis words them.
//! - `util`: Redis's number rules, glob matching, bits, HyperLogLog.
//!
//! Public are only what embedders, the binary, the tests, the benches and
//! the fuzz targets use: `Server`, its builder and handle (in `server`,
//! with the types its methods take and give), `Config`, `clock`, and a
//! few pieces of `keyspace`, `protocol`, `pubsub`, `scripting`, `tls` (the
//! health check's session), `util` and `fuzzing`; the rest is
//! `pub(crate)`, so the compiler finds dead code.
//!
//! Persistence is the append-only file, in four places from the top down:
//! `server/aof.rs` loads it at start, `context/persistence.rs` switches it
//! and runs rewrites, `keyspace/aof.rs` decides what each write records,
//! and `persist/` writes and reads the files. Snapshots (`dump.rdb`) take
//! three: `context/snapshot.rs` runs SAVE, BGSAVE, the schedule and the
//! load at start, `keyspace/snapshot.rs` takes the point-in-time copy and
//! loads keys, and `persist/rdb` frames the file. Replication as a replica
//! takes two: `replication` runs the link, `context/replica.rs` holds
//! whom it follows and how far (REPLICAOF, ROLE and INFO read it there).
//! As a primary, four: `keyspace/aof.rs` hands each write's records to
//! the backlog too (`persist/backlog.rs`), `replication/primary.rs`
//! serves each replica, `context/replicas.rs` lists them for INFO, ROLE,
//! WAIT and `min-replicas-to-write`, and `context/full_sync.rs` takes
//! one full sync's snapshot (through `context/snapshot.rs`) for every
//! replica that asked in time and hands it to them as it is encoded;
//! `context/failover.rs` runs FAILOVER's switch to a replica. The safe
//! mode: `context/safe_mode.rs` holds a write's reply until its replicas
//! acknowledged it (the connection waits on it; `persist/backlog.rs`
//! notes where the command's records end), and `context/grace.rs` is the
//! grace period a promotion starts (as a restart does), during which the
//! command layer undoes, with the keyspace's journal, a write that
//! created a key or lowered an integer counter.

pub(crate) mod client_handle;
pub mod clock;
pub(crate) mod cluster;
pub(crate) mod command;
pub mod config;
pub(crate) mod connection;
pub(crate) mod context;
pub(crate) mod error;
pub(crate) mod expiry;
#[doc(hidden)]
pub mod fuzzing;
pub mod keyspace;
pub(crate) mod persist;
pub mod protocol;
pub mod pubsub;
pub(crate) mod replication;
pub mod scripting;
pub mod server;
pub mod tls;
pub mod util;

pub use config::{Config, DebugCommand, FileMode};
pub use server::{BlockingServer, Server, ServerBuilder, ServerHandle};
