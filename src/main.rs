use std::path::PathBuf;

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// Scripts and replies allocate many small objects; mimalloc serves them
/// faster than the system allocator, and with less contention across cores.
/// Live bytes are counted for INFO's `used_memory`.
#[global_allocator]
static ALLOCATOR: rlockd::util::alloc::Counting<mimalloc::MiMalloc> =
    rlockd::util::alloc::Counting(mimalloc::MiMalloc);

/// rlockd: a Redis-compatible server for distributed locks.
///
/// Each flag is the config directive of the same name, applied after the
/// config file.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// A redis.conf-style file; flags given here override it.
    config_file: Option<PathBuf>,
    /// TCP port to listen on (0 picks a free port) [default: 6379].
    #[arg(long)]
    port: Option<String>,
    /// Addresses to listen on [default: 127.0.0.1].
    #[arg(long, num_args = 1..)]
    bind: Option<Vec<String>>,
    /// Password clients must AUTH with.
    #[arg(long)]
    requirepass: Option<String>,
    /// Number of databases [default: 16].
    #[arg(long)]
    databases: Option<String>,
    /// Most clients connected at once [default: 10000].
    #[arg(long)]
    maxclients: Option<String>,
    /// Log level: debug, verbose, notice, warning, nothing [default: notice].
    #[arg(long)]
    loglevel: Option<String>,
    /// yes: without a password, refuse clients not on the loopback
    /// interface (Redis's DENIED error) [default: yes].
    #[arg(long, value_name = "yes|no")]
    protected_mode: Option<String>,
    /// yes: answer as a one-node Redis Cluster owning every hash slot
    /// (CLUSTER SLOTS/NODES, CROSSSLOT errors) [default: no].
    #[arg(long, value_parser = ["yes", "no"])]
    cluster_enabled: Option<String>,
    /// Serve Prometheus metrics over HTTP on this port (0 picks one).
    #[arg(long)]
    metrics_port: Option<String>,
    /// Who may run DEBUG: no, yes, or local (loopback clients) [default: no].
    #[arg(long, value_parser = ["no", "yes", "local"])]
    enable_debug_command: Option<String>,
    /// Run on a manual clock that clients move with RLOCKD.CLOCK (tests only).
    #[arg(long)]
    enable_clock_control: bool,
    /// Instead of serving, PING the server at --bind/--port and exit 0 if
    /// it answers (container health checks).
    #[arg(long)]
    health_check: bool,
}

impl Args {
    /// The flags given, as (directive, values).
    fn directives(&self) -> Vec<(&'static str, Vec<String>)> {
        let one = |name, v: &Option<String>| v.clone().map(|v| (name, vec![v]));
        [
            one("port", &self.port),
            self.bind.clone().map(|b| ("bind", b)),
            one("requirepass", &self.requirepass),
            one("databases", &self.databases),
            one("maxclients", &self.maxclients),
            one("loglevel", &self.loglevel),
            one("protected-mode", &self.protected_mode),
            one("cluster-enabled", &self.cluster_enabled),
            one("metrics-port", &self.metrics_port),
            one("enable-debug-command", &self.enable_debug_command),
            self.enable_clock_control
                .then(|| ("enable-clock-control", vec!["yes".to_string()])),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// One PING over a fresh connection; the process exit code is the verdict.
fn health_check(config: &rlockd::Config) -> std::process::ExitCode {
    use std::io::{Read, Write};
    use std::time::Duration;
    let host = match config.bind.first().map(String::as_str) {
        None | Some("0.0.0.0") | Some("::") | Some("*") => "127.0.0.1",
        Some(h) => h,
    };
    let answered = (|| -> std::io::Result<bool> {
        let mut s = std::net::TcpStream::connect((host, config.port))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        s.write_all(b"PING\r\n")?;
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf)?;
        Ok(buf[..n].starts_with(b"+PONG"))
    })();
    match answered {
        Ok(true) => std::process::ExitCode::SUCCESS,
        _ => std::process::ExitCode::FAILURE,
    }
}

/// Redis's four levels onto tracing's, most verbose first: `debug` shows
/// everything, `verbose` rarely useful detail, `notice` what production
/// wants, `warning` only what needs attention.
fn tracing_level(loglevel: &str) -> &'static str {
    match loglevel {
        "debug" => "trace",
        "verbose" => "debug",
        "warning" => "warn",
        "nothing" => "off",
        _ => "info",
    }
}

/// mimalloc's `mi_option_purge_delay`, by its place in the header's option
/// enum (the -sys crate names only older options); a test checks it reads
/// the documented default.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> std::process::ExitCode {
    // Pages freed by released locks go back to the system at once instead
    // of a second later, which mimalloc often never gets round to: a
    // server that held a million locks keeps a few MB, not a hundred.
    // SAFETY: setting an option is allowed at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    let args = Args::parse();
    let health = args.health_check;
    let config = match load_config(args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("rlockd: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if health {
        return health_check(&config);
    }
    match serve(config) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rlockd: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Defaults, then the config file, then the flags.
fn load_config(args: Args) -> Result<rlockd::Config, Box<dyn std::error::Error>> {
    let mut config = rlockd::Config::default();
    if let Some(path) = &args.config_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        config.apply_file(&text)?;
    }
    for (name, values) in args.directives() {
        config
            .apply_directive(name, &values)
            .map_err(|e| format!("--{name} {}: {e}", values.join(" ")))?;
    }
    Ok(config)
}

#[tokio::main]
async fn serve(config: rlockd::Config) -> std::io::Result<()> {
    use tracing_subscriber::prelude::*;
    let (filter, filter_handle) =
        tracing_subscriber::reload::Layer::new(EnvFilter::new(tracing_level(&config.loglevel)));
    tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_target(false)
                // Colour codes only for a person at a terminal, not in log files.
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout())),
        )
        .init();
    let mut server = rlockd::Server::builder().config(config).start().await?;
    // Listening for signals before saying ready: a supervisor may stop the
    // server the moment it reads that line.
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    // CONFIG SET loglevel takes effect at once, as in Redis.
    let mut changes = server.config_changes();
    let mut level = server.config().loglevel;
    let config_source = server.shared().clone();
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            let now = config_source.config.read().loglevel.clone();
            if now != level {
                let _ = filter_handle.reload(EnvFilter::new(tracing_level(&now)));
                level = now;
            }
        }
    });
    tracing::info!(
        "rlockd {} ready to accept connections on {}",
        env!("CARGO_PKG_VERSION"),
        server
            .addrs()
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(addr) = server.metrics_addr() {
        tracing::info!("metrics at http://{addr}/metrics");
    }
    tokio::select! {
        _ = server.wait() => {}
        _ = interrupt.recv() => {
            tracing::info!("received SIGINT, shutting down");
            server.shutdown().await;
        }
        _ = terminate.recv() => {
            tracing::info!("received SIGTERM, shutting down");
            server.shutdown().await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purge_delay_option_is_the_one_we_mean() {
        // 1000 ms is mimalloc 3's default purge_delay (options.c).
        let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, 1000);
    }

    #[test]
    fn redis_levels_map_onto_tracing_in_order() {
        let levels: Vec<&str> = ["debug", "verbose", "notice", "warning", "nothing"]
            .into_iter()
            .map(tracing_level)
            .collect();
        assert_eq!(levels, ["trace", "debug", "info", "warn", "off"]);
    }

    #[test]
    fn flags_are_directives() {
        let args = Args::parse_from([
            "rlockd",
            "--protected-mode",
            "no",
            "--port",
            "7001",
            "--enable-clock-control",
        ]);
        let config = load_config(args).unwrap();
        assert!(!config.protected_mode && config.enable_clock_control);
        assert_eq!(config.port, 7001);
        let bad = load_config(Args::parse_from(["rlockd", "--databases", "0"])).unwrap_err();
        assert_eq!(
            bad.to_string(),
            "--databases 0: the number of databases must be at least 1"
        );
    }
}
