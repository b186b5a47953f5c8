use std::path::PathBuf;

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// Scripts and replies allocate many small objects; mimalloc serves them
/// faster than the system allocator, and with less contention across cores.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// rlockd: a Redis-compatible server for distributed locks.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// A redis.conf-style file; flags given here override it.
    config_file: Option<PathBuf>,
    /// TCP port to listen on (0 picks a free port) [default: 6379].
    #[arg(long)]
    port: Option<u16>,
    /// Addresses to listen on [default: 127.0.0.1].
    #[arg(long, num_args = 1..)]
    bind: Option<Vec<String>>,
    /// Password clients must AUTH with.
    #[arg(long)]
    requirepass: Option<String>,
    /// Number of databases [default: 16].
    #[arg(long)]
    databases: Option<usize>,
    /// Most clients connected at once [default: 10000].
    #[arg(long)]
    maxclients: Option<usize>,
    /// Log level: debug, verbose, notice, warning, nothing [default: notice].
    #[arg(long)]
    loglevel: Option<String>,
    /// Instead of serving, PING the server at --bind/--port and exit 0 if
    /// it answers (container health checks).
    #[arg(long)]
    health_check: bool,
}

/// One PING over a fresh connection; the process exit code is the verdict.
fn health_check(args: &Args) -> std::process::ExitCode {
    use std::io::{Read, Write};
    use std::time::Duration;
    let host = match args
        .bind
        .as_ref()
        .and_then(|b| b.first())
        .map(String::as_str)
    {
        None | Some("0.0.0.0") | Some("::") | Some("*") => "127.0.0.1",
        Some(h) => h,
    };
    let answered = (|| -> std::io::Result<bool> {
        let mut s = std::net::TcpStream::connect((host, args.port.unwrap_or(6379)))?;
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

fn tracing_level(loglevel: &str) -> &'static str {
    match loglevel {
        "debug" => "debug",
        "verbose" => "info",
        "warning" => "warn",
        "nothing" => "off",
        _ => "info",
    }
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if args.health_check {
        return health_check(&args);
    }
    let config = match load_config(args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("rlockd: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
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
    if let Some(port) = args.port {
        config.port = port;
    }
    if let Some(bind) = args.bind {
        config.bind = bind;
    }
    if let Some(pass) = args.requirepass {
        config.requirepass = Some(pass);
    }
    if let Some(n) = args.databases {
        config.databases = n.max(1);
    }
    if let Some(n) = args.maxclients {
        config.maxclients = n;
    }
    if let Some(level) = args.loglevel {
        config.loglevel = level;
    }
    Ok(config)
}

#[tokio::main]
async fn serve(config: rlockd::Config) -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(tracing_level(&config.loglevel)))
        .with_target(false)
        // Colour codes only for a person at a terminal, not in log files.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
    let mut server = rlockd::Server::builder().config(config).start().await?;
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
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = server.wait() => {}
        _ = tokio::signal::ctrl_c() => {
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
