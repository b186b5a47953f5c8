use clap::Parser;
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

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
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
