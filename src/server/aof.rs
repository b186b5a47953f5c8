//! Loading the append-only files at start, as Redis 7.0 does: an old
//! single file (`dir/appendfilename`) is first moved into the directory as
//! its base; then the base (an RDB, possibly followed by commands, or
//! commands alone) and the incremental files are read in the manifest's
//! order, their commands run through the ordinary command path by a
//! client of their own, before any client connects; the last incremental
//! file is then appended to.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use crate::client_handle::ClientHandle;
use crate::context::persistence::{aof_layout, single_file_path, write_base};
use crate::context::{Client, Shared};
use crate::persist::load::{Verdict, parse};
use crate::persist::manifest::{Kind, Part};
use crate::persist::{Aof, Fsync, Layout, Manifest};

/// Loads the files (if any) and starts logging. An error means the
/// server must not start; its text is Redis's log line.
pub fn load_and_open(shared: &Shared) -> io::Result<()> {
    let (layout, single, fsync, truncate_ok) = {
        let config = shared.config.read();
        let fsync = Fsync::parse(&config.appendfsync).unwrap_or(Fsync::EverySec);
        (
            aof_layout(&config),
            single_file_path(&config),
            fsync,
            config.aof_load_truncated,
        )
    };
    let mut manifest = read_manifest(&layout)?;
    if single.is_file() && needs_upgrade(&layout, &manifest) {
        manifest = upgrade(&layout, &single)?;
    }
    let parts: Vec<&Part> = manifest.base.iter().chain(&manifest.incrs).collect();
    // Every listed file must be there before any is loaded.
    let mut total = 0;
    for part in &parts {
        match std::fs::metadata(layout.file(&part.name)) {
            Ok(meta) => total += meta.len(),
            Err(e) => {
                let reason = if e.kind() == io::ErrorKind::NotFound {
                    "No such file or directory".to_string()
                } else {
                    e.to_string()
                };
                return Err(refuse(format!(
                    "Unable to obtain the AOF file {} length. stat: {reason}",
                    part.name
                )));
            }
        }
    }
    if total > 0 {
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            load_part(shared, &layout, part, last && truncate_ok, last)?;
        }
        // What loading ran is not what clients asked for.
        shared.stats.reset();
    }
    if manifest.base.is_none() && manifest.incrs.is_empty() {
        // As Redis: a fresh AOF starts with a base, of the empty dataset.
        create_dir(&layout)?;
        let (tmp, format) = write_base(shared, &layout.dir)?;
        manifest = crate::persist::install_offline(&layout, Some(manifest), &tmp, format)?;
        if let Some(base) = &manifest.base {
            tracing::info!("Creating AOF base file {} on server start", base.name);
        }
    }
    shared
        .keyspace
        .set_log(Some(Aof::open(layout, manifest, fsync)?));
    Ok(())
}

fn read_manifest(layout: &Layout) -> io::Result<Manifest> {
    match layout.read_manifest() {
        Ok(None) => Ok(Manifest::default()),
        Ok(Some(Ok(manifest))) => Ok(manifest),
        Ok(Some(Err(fault))) => {
            tracing::warn!("*** FATAL AOF MANIFEST FILE ERROR ***");
            if fault.line_number > 0 {
                tracing::warn!("Reading the manifest file, at line {}", fault.line_number);
                tracing::warn!(">>> '{}'", fault.line);
            }
            Err(refuse(fault.error.to_string()))
        }
        Err(e) => Err(refuse(format!(
            "Fatal error: can't open the AOF manifest file {} for reading: {e}",
            layout.manifest_path().display()
        ))),
    }
}

/// Redis's three cases for taking a single file as the base: no
/// directory, a directory listing nothing, or one listing that file alone
/// as its base without holding it (an upgrade cut short).
fn needs_upgrade(layout: &Layout, manifest: &Manifest) -> bool {
    let lists_nothing = manifest.base.is_none() && manifest.incrs.is_empty();
    let upgrade_cut_short = manifest.incrs.is_empty()
        && manifest
            .base
            .as_ref()
            .is_some_and(|base| base.name == layout.stem && !layout.file(&layout.stem).exists());
    !layout.dir.is_dir() || lists_nothing || upgrade_cut_short
}

/// Makes the AOF's directory, or says why not in Redis's words (which
/// name the directory as `appenddirname` gives it).
fn create_dir(layout: &Layout) -> io::Result<()> {
    std::fs::create_dir_all(&layout.dir).map_err(|e| {
        let name = layout.dir.file_name().unwrap_or_default().to_string_lossy();
        refuse(format!(
            "Can't open or create append-only dir {name}: {}",
            crate::util::os_reason(&e)
        ))
    })
}

/// Moves the single file into the directory as the base of a new
/// manifest, persisted first, as Redis does.
fn upgrade(layout: &Layout, single: &Path) -> io::Result<Manifest> {
    create_dir(layout)?;
    let manifest = Manifest::upgraded(&layout.stem);
    layout.persist(&manifest)?;
    std::fs::rename(single, layout.file(&layout.stem)).map_err(|e| {
        refuse(format!(
            "Error trying to move the old AOF file {} into dir {}: {e}",
            layout.stem,
            layout.dir.display()
        ))
    })?;
    tracing::info!(
        "Successfully migrated an old-style AOF file ({}) into the AOF directory ({}).",
        layout.stem,
        layout.dir.display()
    );
    Ok(manifest)
}

/// Loads one listed file. Only the last may end inside a record
/// (`truncate_ok`: and then it is cut there).
fn load_part(
    shared: &Shared,
    layout: &Layout,
    part: &Part,
    truncate_ok: bool,
    last: bool,
) -> io::Result<()> {
    let path = layout.file(&part.name);
    let name = &part.name;
    let data = match std::fs::read(&path) {
        Ok(data) => data,
        Err(e) => {
            return Err(refuse(format!(
                "Fatal error: can't open the append log file {name} for reading: {}",
                crate::util::os_reason(&e)
            )));
        }
    };
    let started = Instant::now();
    let data = Bytes::from(data);
    let preamble = if data.starts_with(b"REDIS") {
        tracing::info!("Reading RDB base file on AOF loading...");
        shared.keyspace.set_loading(true);
        let loaded = crate::context::snapshot::load_aof_preamble(shared, &data);
        shared.keyspace.set_loading(false);
        loaded.map_err(|e| {
            tracing::warn!("{e}");
            refuse(format!(
                "Error reading the RDB base file {name}, AOF loading aborted"
            ))
        })?
    } else {
        0
    };
    let loaded = parse(data.slice(preamble..));
    match loaded.verdict {
        Verdict::Complete => {}
        Verdict::BadFormat => {
            return Err(refuse(format!(
                "Bad file format reading the append only file {name}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"
            )));
        }
        Verdict::Truncated { .. } if !last => {
            return Err(refuse(
                "Fatal error: the truncated file is not the last file".to_string(),
            ));
        }
        Verdict::Truncated { valid_up_to } if truncate_ok => {
            let valid_up_to = valid_up_to + preamble as u64;
            tracing::warn!("!!! Warning: short read while loading the AOF file {name}!!!");
            tracing::warn!("!!! Truncating the AOF {name} at offset {valid_up_to} !!!");
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)?
                .set_len(valid_up_to)?;
            tracing::warn!("AOF {name} loaded anyway because aof-load-truncated is enabled");
        }
        Verdict::Truncated { .. } => {
            return Err(refuse(format!(
                "Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
            )));
        }
    }
    replay(shared, name, loaded.commands)?;
    let kind = if part.kind == Kind::Base {
        "base"
    } else {
        "incr"
    };
    tracing::info!(
        "DB loaded from {kind} file {name}: {:.3} seconds",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn refuse(message: String) -> io::Error {
    tracing::warn!("{message}");
    io::Error::other(message)
}

/// Runs a file's commands with a client of its own, as Redis gives each
/// file (so each starts in database 0).
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
