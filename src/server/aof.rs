//! Loading the append-only file at start: its commands are run through the
//! ordinary command path by a client of its own, before any client
//! connects, and the file is then appended to.

use std::io;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use crate::client_handle::ClientHandle;
use crate::context::persistence::aof_path;
use crate::context::{Client, Shared};
use crate::persist::load::{Verdict, parse};
use crate::persist::{Aof, Fsync};

/// Loads the file (if there is one) and starts logging to it. An error
/// means the server must not start; its text is Redis's log line.
pub fn load_and_open(shared: &Shared) -> io::Result<()> {
    let (path, fsync, truncate_ok) = {
        let config = shared.config.read();
        let fsync = Fsync::parse(&config.appendfsync).unwrap_or(Fsync::EverySec);
        (aof_path(&config), fsync, config.aof_load_truncated)
    };
    let name = path.display().to_string();
    match std::fs::read(&path) {
        Ok(data) => {
            let started = Instant::now();
            let loaded = parse(Bytes::from(data));
            match loaded.verdict {
                Verdict::Complete => {}
                Verdict::BadFormat => {
                    return Err(refuse(format!(
                        "Bad file format reading the append only file {name}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename>"
                    )));
                }
                Verdict::Truncated { valid_up_to } if truncate_ok => {
                    tracing::warn!("!!! Warning: short read while loading the AOF file {name}!!!");
                    tracing::warn!("!!! Truncating the AOF {name} at offset {valid_up_to} !!!");
                    std::fs::OpenOptions::new()
                        .write(true)
                        .open(&path)?
                        .set_len(valid_up_to)?;
                    tracing::warn!(
                        "AOF {name} loaded anyway because aof-load-truncated is enabled"
                    );
                }
                Verdict::Truncated { .. } => {
                    return Err(refuse(format!(
                        "Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
                    )));
                }
            }
            replay(shared, &name, loaded.commands)?;
            // What loading ran is not what clients asked for.
            shared.stats.reset();
            tracing::info!(
                "DB loaded from append only file: {:.3} seconds",
                started.elapsed().as_secs_f64()
            );
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(refuse(format!(
                "Fatal error: can't open the append log file {name} for reading: {}",
                crate::util::os_reason(&e)
            )));
        }
    }
    let aof = Aof::open(&path, fsync).map_err(|e| {
        refuse(format!(
            "Can't open the append-only file {name}: {}",
            crate::util::os_reason(&e)
        ))
    })?;
    shared.keyspace.set_log(Some(aof));
    Ok(())
}

fn refuse(message: String) -> io::Error {
    tracing::warn!("{message}");
    io::Error::other(message)
}

fn replay(shared: &Shared, name: &str, commands: Vec<Vec<Bytes>>) -> io::Result<()> {
    let addr = std::net::SocketAddr::from(([0, 0, 0, 0], 0));
    let handle = Arc::new(ClientHandle::new(0, addr, addr, shared.now_ms()));
    let mut client = Client::new(handle, shared.acl.default_user());
    client.authenticated = true;
    shared.keyspace.set_loading(true);
    let replayed = commands.iter().try_for_each(|args| {
        if crate::command::REGISTRY.lookup(&args[0]).is_none() {
            return Err(refuse(format!(
                "Unknown command '{}' reading the append only file {name}",
                String::from_utf8_lossy(&args[0])
            )));
        }
        crate::command::dispatch(shared, &mut client, args);
        Ok(())
    });
    shared.keyspace.set_loading(false);
    replayed
}
