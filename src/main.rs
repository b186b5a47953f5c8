use std::path::PathBuf;

use clap::{Arg, CommandFactory, FromArgMatches, Parser};
use rlockd::config::{find_param, params};
use rlockd::server::process;
use rlockd::server::syslog::Syslog;
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
/// RLOCKD_PASSWORD, when set, is `requirepass`, between the file and the
/// flags.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// A redis.conf-style file; flags given here override it.
    config_file: Option<PathBuf>,
    /// Instead of serving, PING the server at --bind/--port (with --port
    /// 0, its --unixsocket, or its --tls-port trusting its --tls-cert-file),
    /// after AUTH with its --requirepass, and exit 0 if it answers
    /// (container health checks).
    #[arg(long)]
    health_check: bool,
    /// Identify as redis-server 7.0.15 (`--version` in Redis's form), as
    /// when started by the name redis-server (a symlink or a copy).
    #[arg(long)]
    as_redis_server: bool,
}

/// What Redis says once it serves; tools that start redis-server wait for
/// it, and systemd shows it as the status.
const REDIS_READY: &str = "Ready to accept connections";

/// The name that makes rlockd identify as Redis, as tools that start
/// `redis-server` expect.
const REDIS_SERVER: &str = "redis-server";

/// Whether this process stands in for redis-server: started by its name
/// or with `--as-redis-server`.
fn stands_in_for_redis(words: &[String]) -> bool {
    let started_as = words
        .first()
        .and_then(|argv0| std::path::Path::new(argv0).file_name())
        .is_some_and(|name| name == REDIS_SERVER);
    started_as || words.iter().any(|w| w == "--as-redis-server")
}

/// `redis-server --version`'s line, with rlockd's own version at its end
/// (tools read the first version number in it).
fn redis_version_line() -> String {
    format!(
        "Redis server v={} sha=00000000:0 malloc=mimalloc bits=64 build=0 rlockd={}",
        rlockd::protocol::REDIS_VERSION,
        env!("CARGO_PKG_VERSION")
    )
}

/// `Args` with a flag for every directive, so that `--help` lists them.
fn command() -> clap::Command {
    let defaults = rlockd::Config::default();
    Args::command().args(params().map(|p| {
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
                // One word may hold a directive and its values, as
                // redis-server reads `"--save 900 1"`.
                Some(name) if !is_known(name) => {
                    let mut parts = name.split_whitespace().map(String::from);
                    let name = parts.next().unwrap_or_default();
                    directives.push((name, parts.collect()));
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

/// The environment variable that sets `requirepass`: a container image
/// without a shell cannot turn it into a flag, so rlockd reads it itself.
const PASSWORD_ENV: &str = "RLOCKD_PASSWORD";

/// PING, after AUTH when a password is set, over `s`: whether the server
/// answered PONG.
fn ping(s: impl std::io::Read + std::io::Write, password: Option<&str>) -> std::io::Result<bool> {
    use std::io::BufRead;
    let mut s = std::io::BufReader::new(s);
    if let Some(password) = password {
        // As a RESP array: a password may hold spaces or quotes.
        let auth = format!("*2\r\n$4\r\nAUTH\r\n${}\r\n{password}\r\n", password.len());
        s.get_mut().write_all(auth.as_bytes())?;
        let mut reply = String::new();
        s.read_line(&mut reply)?;
        if reply != "+OK\r\n" {
            return Ok(false);
        }
    }
    s.get_mut().write_all(b"PING\r\n")?;
    let mut reply = String::new();
    s.read_line(&mut reply)?;
    Ok(reply == "+PONG\r\n")
}

/// One PING over a fresh connection; the process exit code is the verdict.
fn health_check(config: &rlockd::Config) -> std::process::ExitCode {
    use std::time::Duration;
    // `-addr`: an optional address is an address; `*` is every one.
    let host = match config
        .bind
        .first()
        .map(|spec| rlockd::server::bind_address(spec).0)
    {
        None | Some("0.0.0.0") | Some("::") => "127.0.0.1",
        Some(h) => h,
    };
    let password = config.requirepass.as_deref();
    let timeout = Some(Duration::from_secs(2));
    // Port 0 beside a socket or a TLS port: the server listens there alone.
    let answered = if config.port == 0 && !config.unixsocket.is_empty() {
        std::os::unix::net::UnixStream::connect(&config.unixsocket)
            .and_then(|s| s.set_read_timeout(timeout).and_then(|()| ping(s, password)))
    } else if let (0, Some(tls_port)) = (config.port, config.tls_port) {
        rlockd::tls::health_check_session(config)
            .map_err(std::io::Error::other)
            .and_then(|session| {
                let tcp = std::net::TcpStream::connect((host, tls_port))?;
                tcp.set_read_timeout(timeout)?;
                tcp.set_write_timeout(timeout)?;
                ping(rustls::StreamOwned::new(session, tcp), password)
            })
    } else {
        std::net::TcpStream::connect((host, config.port))
            .and_then(|s| s.set_read_timeout(timeout).and_then(|()| ping(s, password)))
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
    let words: Vec<String> = std::env::args().collect();
    let as_redis = stands_in_for_redis(&words);
    if as_redis && words.iter().skip(1).any(|w| w == "--version" || w == "-v") {
        println!("{}", redis_version_line());
        return std::process::ExitCode::SUCCESS;
    }
    let line = CommandLine::parse_from(words);
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
    // Before any thread starts: only the forking thread lives on.
    if config.daemonize {
        match process::detach() {
            Ok(process::Side::Parent) => return std::process::ExitCode::SUCCESS,
            Ok(process::Side::Daemon) => {}
            Err(e) => {
                eprintln!("rlockd: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    let daemon = config.daemonize;
    match serve(config, as_redis) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // A daemon's standard error goes nowhere: its log says why.
        Err(e) if daemon => {
            tracing::error!("{e}");
            std::process::ExitCode::FAILURE
        }
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

/// Defaults, then the config file, then RLOCKD_PASSWORD, then the flags.
fn load_config(line: CommandLine) -> Result<rlockd::Config, ConfigError> {
    let mut config = rlockd::Config::default();
    if let Some(path) = &line.args.config_file {
        // `-` is standard input, as for redis-server.
        let text = match path.to_str() {
            Some("-") => std::io::read_to_string(std::io::stdin()),
            _ => std::fs::read_to_string(path),
        }
        .map_err(|e| ConfigError::Unreadable(path.clone(), e))?;
        config
            .apply_file(&text)
            .map_err(|e| ConfigError::BadLine(path.clone(), e))?;
        // CONFIG REWRITE writes it back wherever the server's directory
        // later is; standard input has no file to write.
        if path.to_str() != Some("-") {
            config.config_file = std::path::absolute(path).ok();
        }
    }
    let from_env = std::env::var(PASSWORD_ENV)
        .ok()
        .map(|password| ("requirepass".to_string(), vec![password]));
    for (name, values) in from_env.into_iter().chain(line.directives) {
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
fn serve(config: rlockd::Config, as_redis: bool) -> std::io::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.io_threads)
        .thread_name(WORKER_NAME)
        .enable_all()
        .build()?
        .block_on(run(config, as_redis))
}

/// The log's destinations, from `logfile` and `syslog-*`: standard output
/// or the file, and syslog beside either.
fn init_logging(
    config: &rlockd::Config,
) -> std::io::Result<tracing_subscriber::reload::Handle<EnvFilter, tracing_subscriber::Registry>> {
    use tracing_subscriber::prelude::*;
    let (filter, filter_handle) =
        tracing_subscriber::reload::Layer::new(EnvFilter::new(tracing_level(&config.loglevel)));
    let file = match config.logfile.as_str() {
        "" => None,
        path => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| std::io::Error::other(format!("Can't open the log file: {e}")))?,
        ),
    };
    let to_terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let stdout = file.is_none().then(|| {
        tracing_subscriber::fmt::layer()
            .with_target(false)
            // Colour codes only for a person at a terminal, not in log files.
            .with_ansi(to_terminal)
    });
    let file = file.map(|f| {
        tracing_subscriber::fmt::layer()
            .with_target(false)
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(f))
    });
    // As with syslog(3), no syslog to talk to is no reason not to start.
    let syslog = config
        .syslog_enabled
        .then(|| Syslog::connect(&config.syslog_ident, &config.syslog_facility))
        .and_then(|connected| {
            connected
                .inspect_err(|e| eprintln!("rlockd: cannot log to syslog: {e}"))
                .ok()
        })
        .map(|syslog| {
            tracing_subscriber::fmt::layer()
                .with_target(false)
                .with_ansi(false)
                .without_time()
                .with_level(false)
                .with_writer(syslog)
        });
    tracing_subscriber::registry()
        .with(filter)
        .with(stdout)
        .with(file)
        .with(syslog)
        .init();
    Ok(filter_handle)
}

/// The pid file: `pidfile`'s, or Redis's default one when daemonized. One
/// that cannot be written is logged, and the server starts all the same.
fn write_pid_file(config: &rlockd::Config) -> Option<process::PidFile> {
    let path = match config.pidfile.as_str() {
        "" if config.daemonize => process::DEFAULT_PID_FILE,
        "" => return None,
        path => path,
    };
    process::PidFile::create(std::path::Path::new(path))
        .inspect_err(|e| tracing::warn!("Failed to write PID file {path}: {e}"))
        .ok()
}

/// Serves until stopped; `as_redis` when standing in for redis-server.
async fn run(config: rlockd::Config, as_redis: bool) -> std::io::Result<()> {
    let filter_handle = init_logging(&config)?;
    let _pid_file = write_pid_file(&config);
    let supervisor = process::Supervisor::from_config(&config.supervised);
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
    if as_redis {
        // Redis's own words, which tools that start redis-server wait for.
        println!("{REDIS_READY}");
    }
    // A log file has it too, as Redis logs it there.
    if !server.config().logfile.is_empty() {
        tracing::info!("{ready}");
    }
    let ready_file = server.config().ready_file;
    if !ready_file.is_empty()
        && let Err(e) = write_ready_file(&ready_file, &ready)
    {
        server.shutdown().await;
        return Err(e);
    }
    if let Err(e) = supervisor.ready(REDIS_READY) {
        tracing::warn!("{e}");
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
    if let Err(e) = supervisor.stopping() {
        tracing::warn!("{e}");
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
        // pytest-redis passes `--save 900 1` as one word, as redis-server takes it.
        let parsed = line(&["rlockd", "--maxmemory-policy allkeys-lru", "--port", "7004"]);
        assert_eq!(
            parsed.directives[0],
            ("maxmemory-policy".to_string(), words(&["allkeys-lru"]))
        );
        assert_eq!(load_config(parsed).unwrap().maxmemory_policy, "allkeys-lru");
        assert!(stands_in_for_redis(&words(&["/usr/bin/redis-server"])));
        assert!(stands_in_for_redis(&words(&[
            "rlockd",
            "--as-redis-server"
        ])));
        assert!(!stands_in_for_redis(&words(&[
            "/usr/bin/rlockd",
            "--port",
            "1"
        ])));
        // An optional address keeps its dash and its place in the list.
        let parsed = line(&["rlockd", "--bind", "127.0.0.1", "-::1", "--port", "0"]);
        assert_eq!(parsed.directives[0].1, words(&["127.0.0.1", "-::1"]));
        let bad = load_config(line(&["rlockd", "--no-such-thing", "1"])).unwrap_err();
        assert_eq!(bad.to_string(), "--no-such-thing 1: unknown directive");
    }
}
