//! The process around a server, managed as redis-server manages its own:
//! detaching from the terminal (`daemonize`), the pid file, and telling a
//! supervisor that the server is ready (`supervised`).

use std::io;
use std::path::{Path, PathBuf};

/// Where a daemonized server writes its pid when no `pidfile` is named,
/// as Redis does.
pub const DEFAULT_PID_FILE: &str = "/var/run/redis.pid";

/// Which side of the fork `detach` returns on.
pub enum Side {
    /// The process started by the user: it exits at once, successfully.
    Parent,
    /// The detached server, in a session of its own, its standard streams
    /// on /dev/null.
    Daemon,
}

/// Forks into the background. Call before any thread is started: only the
/// calling thread survives a fork.
pub fn detach() -> io::Result<Side> {
    // Redis keeps its working directory and umask; the crate would move to
    // / and set its own.
    let outcome = daemonize::Daemonize::new()
        .working_directory(std::env::current_dir()?)
        .umask(current_umask())
        .execute();
    match outcome {
        daemonize::Outcome::Parent(Ok(_)) => Ok(Side::Parent),
        daemonize::Outcome::Child(Ok(_)) => Ok(Side::Daemon),
        daemonize::Outcome::Parent(Err(e)) | daemonize::Outcome::Child(Err(e)) => {
            Err(io::Error::other(format!("cannot daemonize: {e}")))
        }
    }
}

/// The umask, as Linux reports it (setting it is the only other way to
/// read it); the usual 022 where it cannot be read.
fn current_umask() -> u32 {
    const USUAL: u32 = 0o022;
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return USUAL;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("Umask:"))
        .and_then(|mask| u32::from_str_radix(mask.trim(), 8).ok())
        .unwrap_or(USUAL)
}

/// A file holding this process's id, removed when dropped (at shutdown).
pub struct PidFile(PathBuf);

impl PidFile {
    /// Writes the pid to `path`. As with Redis, a file that cannot be
    /// written is no reason not to start: the caller logs the error.
    pub fn create(path: &Path) -> io::Result<PidFile> {
        std::fs::write(path, format!("{}\n", std::process::id()))?;
        Ok(PidFile(path.to_path_buf()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// How the server's supervisor learns that it is ready, from `supervised`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Supervisor {
    None,
    /// sd_notify's `READY=1` to `NOTIFY_SOCKET`.
    Systemd,
    /// Upstart's `expect stop`: the server stops itself (SIGSTOP) once
    /// ready, and upstart continues it.
    Upstart,
}

impl Supervisor {
    /// `supervised`'s value, `auto` read from the environment as Redis
    /// reads it.
    pub fn from_config(mode: &str) -> Supervisor {
        let present = |var: &str| std::env::var_os(var).is_some();
        match mode {
            "systemd" => Supervisor::Systemd,
            "upstart" => Supervisor::Upstart,
            "auto" if present("UPSTART_JOB") => Supervisor::Upstart,
            "auto" if present("NOTIFY_SOCKET") => Supervisor::Systemd,
            _ => Supervisor::None,
        }
    }

    /// Says the server is ready, with `status` for `systemctl status`.
    pub fn ready(self, status: &str) -> io::Result<()> {
        match self {
            Supervisor::None => Ok(()),
            Supervisor::Systemd => sd_notify::notify(&[
                sd_notify::NotifyState::Status(status),
                sd_notify::NotifyState::Ready,
            ]),
            // Without the job's variable nobody would continue a stopped
            // server: Redis then warns and serves on, and so do we.
            Supervisor::Upstart if std::env::var_os("UPSTART_JOB").is_none() => Err(
                io::Error::other("upstart supervision requested, but UPSTART_JOB not found!"),
            ),
            Supervisor::Upstart => {
                tracing::info!("supervised by upstart, will stop to signal readiness.");
                // SAFETY: raise only sends a signal to this process; no
                // memory is involved.
                let raised = unsafe { libc::raise(libc::SIGSTOP) };
                match raised {
                    0 => Ok(()),
                    _ => Err(io::Error::last_os_error()),
                }
            }
        }
    }

    /// Says the server is stopping.
    pub fn stopping(self) -> io::Result<()> {
        match self {
            Supervisor::Systemd => sd_notify::notify(&[sd_notify::NotifyState::Stopping]),
            Supervisor::None | Supervisor::Upstart => Ok(()),
        }
    }
}
