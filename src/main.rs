use clap::Parser;

/// Scripts and replies allocate many small objects; mimalloc serves them
/// faster than the system allocator, and with less contention across cores.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use tracing_subscriber::EnvFilter;

/// rlockd: a Redis-compatible server for distributed locks.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// TCP port to listen on (0 picks a free port).
    #[arg(long, default_value_t = 6379)]
    port: u16,
    /// Addresses to listen on.
    #[arg(long, num_args = 1.., default_value = "127.0.0.1")]
    bind: Vec<String>,
    /// Password clients must AUTH with.
    #[arg(long)]
    requirepass: Option<String>,
    /// Number of databases.
    #[arg(long, default_value_t = 16)]
    databases: usize,
    /// Most clients connected at once.
    #[arg(long, default_value_t = 10000)]
    maxclients: usize,
    /// Log level: debug, verbose, notice, warning, nothing.
    #[arg(long, default_value = "notice")]
    loglevel: String,
    /// Instead of serving, PING the server at --bind/--port and exit 0 if
    /// it answers (container health checks).
    #[arg(long)]
    health_check: bool,
}

/// One PING over a fresh connection; the process exit code is the verdict.
fn health_check(args: &Args) -> std::process::ExitCode {
    use std::io::{Read, Write};
    use std::time::Duration;
    let host = match args.bind.first().map(String::as_str) {
        None | Some("0.0.0.0") | Some("::") | Some("*") => "127.0.0.1",
        Some(h) => h,
    };
    let answered = (|| -> std::io::Result<bool> {
        let mut s = std::net::TcpStream::connect((host, args.port))?;
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
    match serve(args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rlockd: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[tokio::main]
async fn serve(args: Args) -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(tracing_level(&args.loglevel)))
        .with_target(false)
        .init();
    let config = rlockd::Config {
        port: args.port,
        bind: args.bind,
        requirepass: args.requirepass,
        databases: args.databases,
        maxclients: args.maxclients,
        loglevel: args.loglevel,
        ..rlockd::Config::default()
    };
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
    tokio::select! {
        _ = server.wait() => {}
        _ = tokio::signal::ctrl_c() => {
            tracing::info!("received SIGINT, shutting down");
            server.shutdown().await;
        }
    }
    Ok(())
}
