use std::path::PathBuf;

use clap::{Arg, CommandFactory, FromArgMatches, Parser};
use rlockd::config::{PARAMS, find_param};
use tracing_subscriber::EnvFilter;

/// Scripts and replies allocate many small objects; mimalloc serves them
/// faster than the system allocator, and with less contention across cores.
/// Live bytes are counted for INFO's `used_memory`.
#[global_allocator]
static ALLOCATOR: rlockd::util::alloc::Counting<rlockd::util::alloc::Mimalloc> =
    rlockd::util::alloc::Counting(rlockd::util::alloc::Mimalloc);

/// rlockd: a Redis-compatible server for distributed locks.
///
/// Each other flag is the config directive of the same name, applied after
/// the config file, as redis-server takes them: `--save ""`, `--bind a b`.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// A redis.conf-style file; flags given here override it.
    config_file: Option<PathBuf>,
    /// Instead of serving, PING the server at --bind/--port (with --port
    /// 0, its --unixsocket, or its --tls-port trusting its --tls-cert-file)
    /// and exit 0 if it answers (container health checks).
    #[arg(long)]
    health_check: bool,
}

/// `Args` with a flag for every directive, so that `--help` lists them.
fn command() -> clap::Command {
    let defaults = rlockd::Config::default();
    Args::command().args(PARAMS.iter().map(|p| {
        let default = (p.get)(&defaults);
        let help = match default.as_str() {
            "" => p.help.trim().to_string(),
            _ => format!("{} [default: {default}]", p.help.trim()),
        };
        Arg::new(p.name)
            .long(p.name)
            .visible_aliases(p.alias)
            .value_name(p.shape)
            .help(help)
    }))
}

/// The command line: clap's own flags, and the `--name values...`
/// directives, in their order.
#[derive(Debug)]
struct CommandLine {
    args: Args,
    directives: Vec<(String, Vec<String>)>,
}

impl CommandLine {
    /// Splits the directives off, as redis-server reads its command line:
    /// `--name` starts a directive, and the words up to the next `--name`
    /// are its values (none: the directive says what it means alone), or
    /// only the first of them for a one-word directive, so that a config
    /// file may follow (`docker run` appends it to the image's flags).
    fn parse_from<I: IntoIterator<Item = String>>(words: I) -> CommandLine {
        let known = Args::command();
        let is_known = |name: &str| {
            matches!(name, "help" | "version")
                || known.get_arguments().any(|a| a.get_long() == Some(name))
        };
        let mut clap_words = Vec::new();
        let mut directives: Vec<(String, Vec<String>)> = Vec::new();
        // The next word is a value of the last directive.
        let mut in_directive = false;
        // The last word was a directive's name or value.
        let mut after_directive = false;
        for word in words {
            match word.strip_prefix("--").filter(|n| !n.is_empty()) {
                Some(name) if !is_known(name) => {
                    directives.push((name.to_string(), Vec::new()));
                    in_directive = true;
                    after_directive = true;
                }
                Some(_) => {
                    clap_words.push(word);
                    in_directive = false;
                    after_directive = false;
                }
                // A word with a dash is no config file: as redis-server
                // reads it, it is one more value (`--bind a -::1`, an
                // optional address; `--port 0 -1`, a wrong one).
                None if in_directive || (after_directive && word.starts_with('-')) => {
                    if let Some((name, values)) = directives.last_mut() {
                        values.push(word);
                        in_directive = find_param(name).is_none_or(|p| p.multiword);
                    }
                }
                None => {
                    clap_words.push(word);
                    after_directive = false;
                }
            }
        }
        let args = command()
            .try_get_matches_from(clap_words)
            .and_then(|matches| Args::from_arg_matches(&matches))
            .unwrap_or_else(|e| usage_error(e));
        CommandLine { args, directives }
    }
}

/// `--help` and `--version` exit 0, as clap has them; a command line
/// that is wrong exits 1, as redis-server's does (clap's own is 2).
fn usage_error(e: clap::Error) -> ! {
    if !e.use_stderr() {
        e.exit();
    }
    let _ = e.print();
    std::process::exit(1)
}

/// One PING over a fresh connection; the process exit code is the verdict.
fn health_check(config: &rlockd::Config) -> std::process::ExitCode {
    use std::io::{Read, Write};
    use std::time::Duration;
    // `-addr`: an optional address is an address.
    let host = match config.bind.first().map(|h| h.trim_start_matches('-')) {
        None | Some("0.0.0.0") | Some("::") | Some("*") => "127.0.0.1",
        Some(h) => h,
    };
    fn ping(mut s: impl Read + Write) -> std::io::Result<bool> {
        s.write_all(b"PING\r\n")?;
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf)?;
        Ok(buf[..n].starts_with(b"+PONG"))
    }
    let timeout = Some(Duration::from_secs(2));
    // Port 0 beside a socket or a TLS port: the server listens there alone.
    let answered = if config.port == 0 && !config.unixsocket.is_empty() {
        std::os::unix::net::UnixStream::connect(&config.unixsocket)
            .and_then(|s| s.set_read_timeout(timeout).and_then(|()| ping(s)))
    } else if let (0, Some(tls_port)) = (config.port, config.tls_port) {
        rlockd::tls::health_check_session(config)
            .map_err(std::io::Error::other)
            .and_then(|session| {
                let tcp = std::net::TcpStream::connect((host, tls_port))?;
                tcp.set_read_timeout(timeout)?;
                tcp.set_write_timeout(timeout)?;
                ping(rustls::StreamOwned::new(session, tcp))
            })
    } else {
        std::net::TcpStream::connect((host, config.port))
            .and_then(|s| s.set_read_timeout(timeout).and_then(|()| ping(s)))
    };
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
    // SAFETY: mimalloc range-checks the option number, and no other
    // thread exists yet to read the option while it is written.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    let line = CommandLine::parse_from(std::env::args());
    let health = line.args.health_check;
    let config = match load_config(line) {
        Ok(config) => config,
        Err(e) => {
            match e {
                // A block of its own, as Redis prints it.
                ConfigError::BadLine(..) => eprintln!("{e}"),
                _ => eprintln!("rlockd: {e}"),
            }
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

/// Why the settings could not be read; each names the file and line or
/// the flag it is about, in Redis's words where Redis has them.
#[derive(Debug)]
enum ConfigError {
    Unreadable(PathBuf, std::io::Error),
    BadLine(PathBuf, rlockd::config::ConfigFileError),
    BadFlag {
        name: String,
        values: Vec<String>,
        reason: String,
    },
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Unreadable(path, e) => write!(
                f,
                "Fatal error, can't open config file '{}': {}",
                path.display(),
                rlockd::util::os_reason(e)
            ),
            // Redis's block, with the file's name it leaves out.
            ConfigError::BadLine(path, e) => write!(
                f,
                "\n*** FATAL CONFIG FILE ERROR (rlockd {}) ***\n\
                 Reading the configuration file {}, at line {}\n>>> '{}'\n{}",
                env!("CARGO_PKG_VERSION"),
                path.display(),
                e.line,
                e.text,
                e.reason
            ),
            ConfigError::BadFlag {
                name,
                values,
                reason,
            } => write!(f, "--{name} {}: {reason}", values.join(" ")),
        }
    }
}

/// Defaults, then the config file, then the flags.
fn load_config(line: CommandLine) -> Result<rlockd::Config, ConfigError> {
    let mut config = rlockd::Config::default();
    if let Some(path) = &line.args.config_file {
        let text =
            std::fs::read_to_string(path).map_err(|e| ConfigError::Unreadable(path.clone(), e))?;
        config
            .apply_file(&text)
            .map_err(|e| ConfigError::BadLine(path.clone(), e))?;
    }
    for (name, values) in line.directives {
        if let Err(reason) = config.apply_directive(&name, &values) {
            return Err(ConfigError::BadFlag {
                name,
                values,
                reason,
            });
        }
    }
    Ok(config)
}

/// What `top -H` and /proc name the threads serving clients.
const WORKER_NAME: &str = "rlockd-worker";

/// Serves on `io-threads` worker threads: tokio's default (one per core)
/// unless the config names another number.
fn serve(config: rlockd::Config) -> std::io::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.io_threads)
        .thread_name(WORKER_NAME)
        .enable_all()
        .build()?
        .block_on(run(config))
}

async fn run(config: rlockd::Config) -> std::io::Result<()> {
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
    let config_now = server.config_reader();
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            let now = config_now().loglevel;
            if now != level {
                let _ = filter_handle.reload(EnvFilter::new(tracing_level(&now)));
                level = now;
            }
        }
    });
    // Whatever the log level: a supervisor or test waits for this line
    // (or the file) to learn the server is up, and where (port 0).
    let ready = ready_line(&server);
    println!("{ready}");
    let ready_file = server.config().ready_file;
    if !ready_file.is_empty()
        && let Err(e) = write_ready_file(&ready_file, &ready)
    {
        server.shutdown().await;
        return Err(e);
    }
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
    if !ready_file.is_empty() {
        let _ = std::fs::remove_file(&ready_file);
    }
    Ok(())
}

/// `rlockd VERSION ready to accept connections on ADDR, …`: every TCP
/// address (the real port when 0 was asked for), then the unix socket.
fn ready_line(server: &rlockd::ServerHandle) -> String {
    let on: Vec<String> = server
        .addrs()
        .iter()
        .map(|a| a.to_string())
        .chain(server.tls_addrs().iter().map(|a| format!("{a} (TLS)")))
        .chain(server.unix_socket().map(|p| p.display().to_string()))
        .collect();
    format!(
        "rlockd {} ready to accept connections on {}",
        env!("CARGO_PKG_VERSION"),
        on.join(", ")
    )
}

/// Writes the ready line to `path` whole: a reader that sees the file sees
/// all of it (written beside it, then renamed into place).
fn write_ready_file(path: &str, line: &str) -> std::io::Result<()> {
    let partial = format!("{path}.partial");
    std::fs::write(&partial, format!("{line}\n"))
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "Can't write the ready file {path}: {}",
                    rlockd::util::os_reason(&e)
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purge_delay_option_is_the_one_we_mean() {
        // 1000 ms is mimalloc 3's default purge_delay (options.c).
        // SAFETY: mimalloc range-checks the option number; nothing in the
        // tests writes the option.
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

    fn line(words: &[&str]) -> CommandLine {
        CommandLine::parse_from(words.iter().map(|w| w.to_string()))
    }

    #[test]
    fn flags_are_directives() {
        let args = line(&[
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
        let bad = load_config(line(&["rlockd", "--databases", "0"])).unwrap_err();
        assert_eq!(
            bad.to_string(),
            "--databases 0: the number of databases must be at least 1"
        );
    }

    #[test]
    fn other_directives_split_as_redis_server_splits_them() {
        let parsed = line(&[
            "rlockd",
            "--hash-max-listpack-entries",
            "5",
            "--port",
            "7002",
            "--save",
            "--notify-keyspace-events",
            "KEA",
        ]);
        let words = |w: &[&str]| w.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parsed.directives,
            [
                ("hash-max-listpack-entries".to_string(), words(&["5"])),
                ("port".to_string(), words(&["7002"])),
                ("save".to_string(), vec![]),
                (
                    "notify-keyspace-events".to_string(),
                    vec!["KEA".to_string()]
                ),
            ]
        );
        let parsed = line(&[
            "rlockd",
            "--bind",
            "::1",
            "127.0.0.1",
            "--port",
            "7003",
            "rlockd.conf",
        ]);
        assert_eq!(parsed.directives[0].1, words(&["::1", "127.0.0.1"]));
        assert_eq!(parsed.directives[1].1, words(&["7003"]));
        assert_eq!(parsed.args.config_file, Some(PathBuf::from("rlockd.conf")));
        // An optional address keeps its dash and its place in the list.
        let parsed = line(&["rlockd", "--bind", "127.0.0.1", "-::1", "--port", "0"]);
        assert_eq!(parsed.directives[0].1, words(&["127.0.0.1", "-::1"]));
        let bad = load_config(line(&["rlockd", "--no-such-thing", "1"])).unwrap_err();
        assert_eq!(bad.to_string(), "--no-such-thing 1: unknown directive");
    }
}
