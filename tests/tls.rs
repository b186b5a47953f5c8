//! TLS (`tls-port` and the other `tls-*` directives): a throw-away CA and
//! certificates made at run time (rcgen; none are committed), then
//! - the binary and a real `redis-server` 7.0 side by side on their TLS
//!   ports, driven by the same `redis-cli --tls` runs (replies, CONFIG,
//!   INFO, CLIENT INFO and the log lines of a failed reload compared);
//! - client certificates as `tls-auth-clients` asks, a server certificate
//!   the client does not trust, reloads by CONFIG SET, through a Rust
//!   client (tokio-rustls) against the embedding API;
//! - hostile clients of the TLS port (plain text, a stalled or torn
//!   handshake, an untrusted certificate): each logged and closed while
//!   other clients are served;
//! - CONFIG SET of `port`, `bind` and `tls-port` moving the listeners at
//!   run time, the binary beside redis-server (replies, who connects, the
//!   log lines of addresses that do not bind), and in an embedded server.
//!
//! Skips the comparisons without redis-server/redis-cli (and the
//! encrypted-key case without the `openssl` tool) unless
//! `RLOCKD_REQUIRE_REDIS=1`.

mod common;
mod refserver;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::WAIT;
use common::resp::{Conn, F};
use rcgen::ExtendedKeyUsagePurpose;
use refserver::free_port;
use refserver::pki::{Ca, Pki};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::TlsConnector;

const LOCK_SCRIPT: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");

/// How a Rust client connects: the CA it trusts, and the certificate it
/// presents, if any.
struct ClientSide<'a> {
    trusts: &'a str,
    cert: Option<(&'a str, &'a str)>,
}

impl ClientSide<'_> {
    fn connector(&self, pki: &Pki) -> TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(pki.path(self.trusts)).unwrap() {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let config = match self.cert {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => builder
                .with_client_auth_cert(
                    CertificateDer::pem_file_iter(pki.path(cert))
                        .unwrap()
                        .map(Result::unwrap)
                        .collect(),
                    PrivateKeyDer::from_pem_file(pki.path(key)).unwrap(),
                )
                .unwrap(),
        };
        TlsConnector::from(Arc::new(config))
    }

    /// A connection that has finished its handshake (from the client's
    /// side), or the client's reason for giving up.
    async fn connect(
        &self,
        pki: &Pki,
        addr: SocketAddr,
    ) -> std::io::Result<Conn<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>> {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        let name = ServerName::try_from("localhost").unwrap();
        let tls = self.connector(pki).connect(name, tcp).await?;
        Ok(Conn::over(tls))
    }

    /// Whether the server answers PING: a refused certificate ends the
    /// session with an alert, which the client sees at its first read.
    async fn served(&self, pki: &Pki, addr: SocketAddr) -> bool {
        let Ok(mut conn) = self.connect(pki, addr).await else {
            return false;
        };
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        if conn.s.write_all(b"PING\r\n").await.is_err() {
            return false;
        }
        let mut reply = [0u8; 7];
        matches!(
            tokio::time::timeout(WAIT, conn.s.read_exact(&mut reply)).await,
            Ok(Ok(_)) if &reply == b"+PONG\r\n"
        )
    }
}

const TRUSTED: ClientSide = ClientSide {
    trusts: "ca.pem",
    cert: Some(("client.pem", "client.key")),
};
const NO_CERT: ClientSide = ClientSide {
    trusts: "ca.pem",
    cert: None,
};
const ROGUE_CERT: ClientSide = ClientSide {
    trusts: "ca.pem",
    cert: Some(("rogue.pem", "rogue.key")),
};

/// A server on a free TLS port alone, set up as `config` says.
async fn start_tls(config: rlockd::Config) -> std::io::Result<rlockd::ServerHandle> {
    rlockd::Server::builder()
        .config(config)
        .port(0)
        .tls_port(0)
        .start()
        .await
}

async fn start(pki: &Pki) -> rlockd::ServerHandle {
    start_tls(pki.config()).await.unwrap()
}

fn tls_addr(server: &rlockd::ServerHandle) -> SocketAddr {
    server.tls_addrs()[0]
}

async fn config_set(pki: &Pki, addr: SocketAddr, name: &str, value: &str) -> F {
    let mut admin = TRUSTED.connect(pki, addr).await.unwrap();
    admin.cmd(&["CONFIG", "SET", name, value]).await
}

#[tokio::test]
async fn client_certificates_as_tls_auth_clients_asks() {
    let pki = Pki::new();
    let server = start(&pki).await;
    let addr = tls_addr(&server);
    assert!(server.addrs().is_empty(), "port 0 beside TLS: TLS alone");
    assert_eq!(server.url(), format!("rediss://{addr}"));
    // yes, the default: a certificate from the CA, and nothing else.
    assert!(TRUSTED.served(&pki, addr).await);
    assert!(!NO_CERT.served(&pki, addr).await);
    assert!(!ROGUE_CERT.served(&pki, addr).await);
    // optional: none is fine, a bad one is not.
    let ok = F::Simple("OK".into());
    assert_eq!(
        config_set(&pki, addr, "tls-auth-clients", "optional").await,
        ok
    );
    assert!(NO_CERT.served(&pki, addr).await);
    assert!(!ROGUE_CERT.served(&pki, addr).await);
    assert!(TRUSTED.served(&pki, addr).await);
    // no: none is asked for.
    assert_eq!(config_set(&pki, addr, "tls-auth-clients", "no").await, ok);
    assert!(NO_CERT.served(&pki, addr).await);
    assert!(ROGUE_CERT.served(&pki, addr).await);
    server.shutdown().await;
}

#[tokio::test]
async fn a_server_the_client_does_not_trust_is_refused() {
    let pki = Pki::new();
    let server = start(&pki).await;
    let wary = ClientSide {
        trusts: "rogue-ca.pem",
        cert: Some(("client.pem", "client.key")),
    };
    let refused = wary.connect(&pki, tls_addr(&server)).await.err();
    let why = refused.expect("the handshake fails").to_string();
    assert!(why.contains("UnknownIssuer"), "{why}");
    // The server goes on serving those who trust it.
    assert!(TRUSTED.served(&pki, tls_addr(&server)).await);
    server.shutdown().await;
}

/// A plain-text port and a TLS port share one keyspace, and CLIENT LIST
/// shows each client's own end.
#[tokio::test]
async fn plain_and_tls_ports_side_by_side() {
    let pki = Pki::new();
    let server = rlockd::Server::builder()
        .config(pki.config())
        .port(0)
        .tls_port(0)
        .bind("127.0.0.1")
        .unix_socket(pki.path("rlockd.sock"))
        .start()
        .await;
    // Port 0 beside a TLS port and a socket means neither plain TCP...
    let server = server.unwrap();
    assert!(server.addrs().is_empty());
    server.shutdown().await;
    // ...so name a plain port to have both.
    let plain = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = plain.local_addr().unwrap().port();
    drop(plain);
    let server = rlockd::Server::builder()
        .config(pki.config())
        .port(port)
        .tls_port(0)
        .start()
        .await
        .unwrap();
    let mut tls = TRUSTED.connect(&pki, tls_addr(&server)).await.unwrap();
    let mut tcp = Conn::open(server.addr()).await;
    assert_eq!(
        tls.cmd(&["SET", "lock", "owner"]).await,
        F::Simple("OK".into())
    );
    assert_eq!(tcp.cmd(&["GET", "lock"]).await, common::resp::b("owner"));
    let F::Bulk(list) = tcp.cmd(&["CLIENT", "LIST"]).await else {
        panic!("CLIENT LIST")
    };
    let list = String::from_utf8(list).unwrap();
    let laddrs: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("laddr=")))
        .collect();
    assert_eq!(
        laddrs,
        [tls_addr(&server).to_string(), server.addr().to_string()],
        "{list}"
    );
    let F::Bulk(info) = tcp.cmd(&["INFO", "server"]).await else {
        panic!("INFO")
    };
    let info = String::from_utf8(info).unwrap();
    assert_eq!(common::info_value(&info, "tcp_port"), port.to_string());
    let F::Arr(got) = tls.cmd(&["CONFIG", "GET", "tls-port"]).await else {
        panic!("CONFIG GET")
    };
    assert_eq!(
        got[1],
        common::resp::b(&tls_addr(&server).port().to_string())
    );
    server.shutdown().await;
}

/// Renewed files are taken up by CONFIG SET of the same path, without a
/// restart; files that do not load are refused with Redis's error and
/// the certificate in force stays.
#[tokio::test]
async fn certificates_reload_with_config_set() {
    let pki = Pki::new();
    let server = start(&pki).await;
    let addr = tls_addr(&server);
    let mut open = TRUSTED.connect(&pki, addr).await.unwrap();
    assert_eq!(open.cmd(&["PING"]).await, F::Simple("PONG".into()));
    // A new CA issues the server a new certificate, written over the old.
    let renewed = Ca::new("renewed CA");
    let (cert, key) = renewed.issue(&["localhost"], &[ExtendedKeyUsagePurpose::ServerAuth]);
    std::fs::write(pki.path("renewed-ca.pem"), &renewed.pem).unwrap();
    std::fs::write(pki.path("server.pem"), cert).unwrap();
    std::fs::write(pki.path("server.key"), key).unwrap();
    let trusts_renewed = ClientSide {
        trusts: "renewed-ca.pem",
        cert: Some(("client.pem", "client.key")),
    };
    // Nothing changes until CONFIG SET says so.
    assert!(TRUSTED.served(&pki, addr).await);
    assert!(!trusts_renewed.served(&pki, addr).await);
    let path = pki.path("server.pem");
    assert_eq!(
        open.cmd(&[
            "CONFIG",
            "SET",
            "tls-cert-file",
            &path,
            "tls-key-file",
            &pki.path("server.key")
        ])
        .await,
        F::Simple("OK".into())
    );
    assert!(trusts_renewed.served(&pki, addr).await);
    assert!(!TRUSTED.served(&pki, addr).await);
    // The session made before goes on.
    assert_eq!(open.cmd(&["PING"]).await, F::Simple("PONG".into()));
    // A torn file is refused whole: tls-cert-file keeps its value, the
    // renewed certificate stays in force.
    std::fs::write(pki.path("torn.pem"), "-----BEGIN CERTIFICATE-----\nAAAA\n").unwrap();
    assert_eq!(
        open.cmd(&["CONFIG", "SET", "tls-cert-file", &pki.path("torn.pem")])
            .await,
        F::Err("ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs.".into())
    );
    assert_eq!(
        open.cmd(&["CONFIG", "GET", "tls-cert-file"]).await,
        F::Arr(vec![
            common::resp::b("tls-cert-file"),
            common::resp::b(&path)
        ])
    );
    assert!(trusts_renewed.served(&pki, addr).await);
    server.shutdown().await;
}

/// The TLS port's settings that rustls cannot honour stop startup, naming
/// what is wrong.
#[tokio::test]
async fn what_rustls_does_not_offer_is_refused_clearly() {
    let pki = Pki::new();
    for (name, value, says) in [
        (
            "tls-protocols",
            "TLSv1.1 TLSv1.2",
            "Failed to configure TLS: TLSv1.1 is specified in tls-protocols but not supported by rustls (TLSv1.2 and TLSv1.3 only).",
        ),
        (
            "tls-ciphers",
            "DHE-RSA-AES256-SHA",
            "Failed to configure TLS: Failed to configure ciphers: DHE-RSA-AES256-SHA: rustls offers no 'DHE-RSA-AES256-SHA' (it offers ECDHE-ECDSA-AES256-GCM-SHA384:",
        ),
        (
            "tls-ciphersuites",
            "TLS_AES_128_CCM_SHA256",
            "Failed to configure TLS: Failed to configure ciphersuites: TLS_AES_128_CCM_SHA256: rustls offers no 'TLS_AES_128_CCM_SHA256' (it offers TLS_AES_256_GCM_SHA384:",
        ),
    ] {
        let mut config = pki.config();
        config.apply_directive(name, &[value.to_string()]).unwrap();
        let err = start_tls(config).await.err().expect("startup fails");
        assert!(err.to_string().starts_with(says), "{err}");
    }
    // What it does offer works, the server's order first.
    let mut config = pki.config();
    for (name, value) in [
        ("tls-protocols", "TLSv1.2"),
        ("tls-ciphers", "ECDHE-ECDSA-CHACHA20-POLY1305"),
        ("tls-prefer-server-ciphers", "yes"),
    ] {
        config.apply_directive(name, &[value.to_string()]).unwrap();
    }
    let server = start_tls(config).await.unwrap();
    let conn = TRUSTED.connect(&pki, tls_addr(&server)).await.unwrap();
    let (_, session) = conn.s.get_ref();
    assert_eq!(
        session.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    assert_eq!(
        session.negotiated_cipher_suite().map(|s| s.suite()),
        Some(rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256)
    );
    server.shutdown().await;
}

fn rlockd_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rlockd"))
}

/// A server process whose log lines are kept; killed if still running
/// when dropped.
struct Process {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
}

impl Process {
    /// Starts `bin` with `args` and waits until its TLS port accepts.
    fn start(bin: &Path, args: &[String], tls_port: u16) -> Process {
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        let mut process = Process { child, log };
        let deadline = Instant::now() + WAIT;
        // Waits for the ready line rather than connecting: a probe would
        // be a failed handshake of its own in the log.
        while !process.logged("eady to accept connections") {
            assert!(
                process.child.try_wait().unwrap().is_none(),
                "{} exited: {:?}",
                bin.display(),
                process.log.lock().unwrap()
            );
            assert!(
                Instant::now() < deadline,
                "{} never got ready",
                bin.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(TcpStream::connect(("127.0.0.1", tls_port)).is_ok());
        process
    }

    fn logged(&self, text: &str) -> bool {
        self.log.lock().unwrap().iter().any(|l| l.contains(text))
    }

    /// Waits for a log line containing `text`.
    fn wait_for_log(&self, text: &str) {
        let deadline = Instant::now() + WAIT;
        while !self.logged(text) {
            assert!(
                Instant::now() < deadline,
                "no log line with {text:?} in {:?}",
                self.log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One redis-cli run over TLS as a client the CA vouches for.
fn cli(cli: &Path, pki: &Pki, port: u16, args: &[&str]) -> String {
    let out = Command::new(cli)
        .args(["--tls", "--cacert", &pki.path("ca.pem")])
        .args([
            "--cert",
            &pki.path("client.pem"),
            "--key",
            &pki.path("client.key"),
        ])
        .args(["-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// What one server says to `redis-cli --tls`, its port written as PORT
/// and the client's own as CPORT so that two servers' answers compare.
fn observe(bin: &Path, redis_cli: &Path, pki: &Pki) -> Observed {
    let port = free_port();
    let mut args = pki.flags(port);
    args.extend(["--save", ""].map(String::from));
    let process = Process::start(bin, &args, port);
    let run = |args: &[&str]| cli(redis_cli, pki, port, args).replace(&port.to_string(), "PORT");
    let mut seen = vec![
        run(&["PING"]),
        run(&["SET", "lock:a", "owner"]),
        run(&["GET", "lock:a"]),
        run(&["EVAL", LOCK_SCRIPT, "1", "lock:b", "30000", "c1:7"]),
        run(&["HGETALL", "lock:b"]),
    ];
    for name in [
        "port",
        "tls-port",
        "tls-auth-clients",
        "tls-protocols",
        "tls-ciphers",
        "tls-ciphersuites",
        "tls-prefer-server-ciphers",
        "tls-session-caching",
        "tls-session-cache-size",
        "tls-session-cache-timeout",
        "tls-replication",
        "tls-cluster",
        "tls-key-file-pass",
        "tls-ca-cert-dir",
        "tls-dh-params-file",
    ] {
        seen.push(run(&["CONFIG", "GET", name]));
    }
    let info = run(&["INFO", "server"]);
    seen.push(format!(
        "tcp_port:{}",
        common::info_value(&info, "tcp_port")
    ));
    let me = run(&["CLIENT", "INFO"]);
    for name in ["laddr", "flags", "db", "cmd"] {
        let value = me
            .split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .unwrap_or("(none)");
        seen.push(format!("{name}={value}"));
    }
    // Reloads: the same file again, then files that do not load.
    seen.push(run(&[
        "CONFIG",
        "SET",
        "tls-cert-file",
        &pki.path("server.pem"),
    ]));
    seen.push(run(&[
        "CONFIG",
        "SET",
        "tls-cert-file",
        "/nonexistent/cert.pem",
    ]));
    seen.push(run(&["CONFIG", "SET", "tls-protocols", "TLSv9"]));
    seen.push(run(&["CONFIG", "SET", "tls-auth-clients", "maybe"]));
    seen.push(run(&["CONFIG", "SET", "tls-session-cache-size", "-1"]));
    seen.push(run(&["CONFIG", "GET", "tls-protocols"]));
    seen.push(run(&["PING"]));
    let log: Vec<String> = [
        "Failed to load certificate: /nonexistent/cert.pem: ",
        "Failed applying new configuration. Possibly related to new tls-cert-file setting. Restoring previous settings.",
        "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.",
    ]
    .iter()
    .filter(|line| process.logged(line))
    .map(|line| line.to_string())
    .collect();
    (seen, log)
}

/// What one server answers (in order) and logs, driven by redis-cli.
type Observed = (Vec<String>, Vec<String>);

/// Runs `observe` against redis-server and the binary: the same answers
/// and log lines, `logged` of them, and each of `expected` among the
/// answers.
fn same_as_redis(observe: fn(&Path, &Path, &Pki) -> Observed, logged: usize, expected: &[&str]) {
    let (Some(redis), Some(redis_cli)) = (
        refserver::redis_server_path("tls"),
        refserver::redis_cli_path("tls"),
    ) else {
        return;
    };
    let pki = Pki::new();
    let (redis_saw, redis_logged) = observe(&redis, &redis_cli, &pki);
    let (rlockd_saw, rlockd_logged) = observe(&rlockd_bin(), &redis_cli, &pki);
    assert_eq!(rlockd_saw, redis_saw);
    assert_eq!(rlockd_logged, redis_logged);
    assert_eq!(redis_logged.len(), logged, "{redis_logged:?}");
    for expected in expected {
        assert!(
            redis_saw.iter().any(|l| l == expected),
            "{expected}: {redis_saw:?}"
        );
    }
}

#[test]
fn redis_cli_sees_what_it_sees_of_redis() {
    same_as_redis(
        observe,
        3,
        &[
            "PONG\n",
            "c1:7\n1\n",
            "tcp_port:PORT",
            "laddr=127.0.0.1:PORT",
        ],
    );
}

/// redis-cli refuses a server whose certificate its CA did not sign, and
/// the server refuses redis-cli without a client certificate.
#[test]
fn redis_cli_and_the_server_refuse_whom_they_do_not_trust() {
    let Some(redis_cli) = refserver::redis_cli_path("tls") else {
        return;
    };
    let pki = Pki::new();
    let port = free_port();
    let process = Process::start(&rlockd_bin(), &pki.flags(port), port);
    let port_text = port.to_string();
    let run = |args: &[&str]| {
        let out = Command::new(&redis_cli)
            .args(["--tls", "-p", &port_text])
            .args(args)
            .args(["PING"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let wary = run(&[
        "--cacert",
        &pki.path("rogue-ca.pem"),
        "--cert",
        &pki.path("client.pem"),
        "--key",
        &pki.path("client.key"),
    ]);
    assert!(wary.contains("certificate verify failed"), "{wary}");
    let no_cert = run(&["--cacert", &pki.path("ca.pem")]);
    assert!(!no_cert.contains("PONG"), "{no_cert}");
    process.wait_for_log("Error accepting a client connection: ");
    assert_eq!(cli(&redis_cli, &pki, port, &["PING"]), "PONG\n");
}

/// An encrypted key (PKCS#8 under a password, as `openssl` writes it)
/// loads with `tls-key-file-pass`, and not without it.
#[tokio::test]
async fn an_encrypted_key_loads_with_its_password() {
    let Some(openssl) = refserver::require_tool("tls", "openssl", "OPENSSL") else {
        return;
    };
    let pki = Pki::new();
    let encrypted = pki.path("server-encrypted.key");
    let status = Command::new(openssl)
        .args(["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in"])
        .arg(pki.path("server.key"))
        .args(["-out", &encrypted, "-passout", "pass:s3cret"])
        .status()
        .unwrap();
    assert!(status.success());
    let mut config = pki.config();
    config.tls_key_file = encrypted.clone();
    let err = start_tls(config.clone()).await.err().unwrap().to_string();
    assert!(
        err.starts_with(&format!(
            "Failed to configure TLS: Failed to load private key: {encrypted}: bad decrypt"
        )),
        "{err}"
    );
    config.tls_key_file_pass = "s3cret".into();
    let server = start_tls(config).await.unwrap();
    assert!(TRUSTED.served(&pki, tls_addr(&server)).await);
    server.shutdown().await;
}

/// Reads until the server closes the connection (or `WAIT` passes);
/// returns what it sent and whether it closed.
fn read_to_close(stream: &mut TcpStream) -> (Vec<u8>, bool) {
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            // A reset is a close too.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (got, true),
            Err(_) => return (got, false),
        }
    }
}

/// The first bytes of a TLS ClientHello record: a client that stops
/// halfway through.
const TORN_HELLO: &[u8] = &[
    0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
];

#[test]
fn hostile_clients_of_the_tls_port_are_logged_and_closed() {
    let pki = Pki::new();
    let port = free_port();
    let mut args = pki.flags(port);
    args.extend(["--tls-handshake-timeout-ms", "300"].map(String::from));
    let process = Process::start(&rlockd_bin(), &args, port);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    // A client the server trusts, connected throughout.
    let mut steady = runtime.block_on(TRUSTED.connect(&pki, addr)).unwrap();
    let mut still_served = || {
        let pong = runtime.block_on(steady.cmd(&["PING"]));
        assert_eq!(pong, F::Simple("PONG".into()));
    };
    // Plain text to the TLS port: no reply in RESP, the connection closed.
    let mut plain = TcpStream::connect(addr).unwrap();
    plain.write_all(b"PING\r\n").unwrap();
    let (got, closed) = read_to_close(&mut plain);
    assert!(
        closed && !got.starts_with(b"+") && !got.starts_with(b"-"),
        "{got:?}"
    );
    process.wait_for_log("Error accepting a client connection: received corrupt message");
    still_served();
    // A handshake that never starts, and one that stops halfway, are
    // closed once tls-handshake-timeout-ms passes.
    for first in [&b""[..], TORN_HELLO] {
        let mut stalled = TcpStream::connect(addr).unwrap();
        stalled.write_all(first).unwrap();
        let started = Instant::now();
        let (got, closed) = read_to_close(&mut stalled);
        assert!(closed && got.is_empty(), "{got:?}");
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(250), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        still_served();
    }
    process.wait_for_log(
        "Error accepting a client connection: TLS handshake timed out (addr=127.0.0.1:",
    );
    // An untrusted certificate.
    assert!(!runtime.block_on(ROGUE_CERT.served(&pki, addr)));
    process.wait_for_log("invalid peer certificate: UnknownIssuer");
    still_served();
    // Nothing of it reached the clients' count.
    let info = match runtime.block_on(steady.cmd(&["INFO", "clients"])) {
        F::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(common::info_value(&info, "connected_clients"), "1");
}

/// `--health-check` on a TLS-only server: it trusts the server's own
/// certificate (the files it is given), presents it as its client
/// certificate, and fails against a server holding another.
#[test]
fn the_health_check_speaks_tls() {
    let pki = Pki::new();
    let port = free_port();
    let flags = pki.flags(port);
    let check = |flags: &[String]| {
        Command::new(rlockd_bin())
            .arg("--health-check")
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    assert!(!check(&flags), "nothing listens yet");
    let process = Process::start(&rlockd_bin(), &flags, port);
    assert!(check(&flags));
    let mut other = flags.clone();
    let at = other.iter().position(|f| f == "--tls-cert-file").unwrap();
    other[at + 1] = pki.path("rogue.pem");
    other[at + 3] = pki.path("rogue.key");
    assert!(!check(&other), "a server with another certificate");
    process.wait_for_log("Error accepting a client connection: ");
    drop(process);
}

/// Plain text sent to the TLS port, to redis-server and to the binary:
/// neither answers in RESP, both close the connection and log why.
#[test]
fn plain_text_to_the_tls_port_is_refused_as_redis_refuses_it() {
    let Some(redis) = refserver::redis_server_path("tls") else {
        return;
    };
    let pki = Pki::new();
    for bin in [redis, rlockd_bin()] {
        let port = free_port();
        let process = Process::start(&bin, &pki.flags(port), port);
        for request in [
            &b"PING\r\n"[..],
            b"*1\r\n$4\r\nPING\r\n",
            b"GET / HTTP/1.1\r\n\r\n",
        ] {
            let mut plain = TcpStream::connect(("127.0.0.1", port)).unwrap();
            plain.write_all(request).unwrap();
            let (got, closed) = read_to_close(&mut plain);
            let resp = got.first().is_some_and(|b| b"+-:$*".contains(b));
            assert!(closed && !resp, "{}: {got:?}", bin.display());
        }
        process.wait_for_log("Error accepting a client connection: ");
        assert_eq!(
            refserver::redis_cli_path("tls").map(|redis_cli| cli(
                &redis_cli,
                &pki,
                port,
                &["PING"]
            )),
            Some("PONG\n".to_string()),
            "{} serves on",
            bin.display()
        );
    }
}

/// `tls-ca-cert-dir` alone: the CAs of the certificate files in it (other
/// files there are passed over).
#[tokio::test]
async fn client_cas_from_a_directory() {
    let pki = Pki::new();
    let cas = pki.dir().join("cas");
    std::fs::create_dir(&cas).unwrap();
    std::fs::copy(pki.path("ca.pem"), cas.join("ca.pem")).unwrap();
    std::fs::write(cas.join("README"), "not a certificate").unwrap();
    let config = rlockd::Config {
        tls_ca_cert_file: String::new(),
        tls_ca_cert_dir: cas.to_str().unwrap().to_string(),
        ..pki.config()
    };
    let server = start_tls(config).await.unwrap();
    assert!(TRUSTED.served(&pki, tls_addr(&server)).await);
    assert!(!ROGUE_CERT.served(&pki, tls_addr(&server)).await);
    server.shutdown().await;
}

/// What `redis-cli -h HOST -p PORT PING` gets, over TLS or plain.
fn ping(redis_cli: &Path, pki: Option<&Pki>, host: &str, port: u16) -> String {
    let mut command = Command::new(redis_cli);
    if let Some(pki) = pki {
        command.args(["--tls", "--cacert", &pki.path("ca.pem")]);
        command.args(["--cert", &pki.path("client.pem")]);
        command.args(["--key", &pki.path("client.key")]);
    }
    let out = command
        .args(["-h", host, "-p", &port.to_string(), "PING"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// What one server answers and logs as CONFIG SET moves its listeners
/// (`port`, `bind`, `tls-port`), asked over its unix socket, with every
/// port written by its name so that two servers' answers compare.
fn observe_moves(bin: &Path, redis_cli: &Path, pki: &Pki) -> Observed {
    let dir = refserver::TempDir::new("listeners");
    let socket = dir.path("s.sock");
    let [p1, p2, p3, tls] = [(); 4].map(|()| free_port());
    // A port someone else holds.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = held.local_addr().unwrap().port();
    let mut args: Vec<String> = ["--port", &p1.to_string(), "--bind", "127.0.0.1"]
        .map(String::from)
        .to_vec();
    args.extend(["--unixsocket", socket.to_str().unwrap(), "--save", ""].map(String::from));
    // The TLS files without a TLS port: CONFIG SET opens one later.
    args.extend(pki.flags(tls).into_iter().skip(4));
    let process = Process::start(bin, &args, p1);
    let names = [
        (p1, "P1"),
        (p2, "P2"),
        (p3, "P3"),
        (tls, "TLS"),
        (taken, "TAKEN"),
    ];
    let named = |text: String| {
        names.iter().fold(text, |text, (port, name)| {
            text.replace(&port.to_string(), name)
        })
    };
    let mut control = redis::Client::open(format!("unix://{}", socket.display()))
        .unwrap()
        .get_connection()
        .unwrap();
    let mut ask = |args: &[&str]| -> String {
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        named(match cmd.query::<redis::Value>(&mut control) {
            Ok(redis::Value::BulkString(text)) => {
                format!("{args:?}: {}", String::from_utf8_lossy(&text))
            }
            Ok(value) => format!("{args:?}: {value:?}"),
            Err(e) => format!("{args:?}: {}", e.detail().unwrap_or_default()),
        })
    };
    let plain = |host: &str, port: u16| named(ping(redis_cli, None, host, port));
    let mut seen = vec![ask(&["CONFIG", "SET", "port", &p2.to_string()])];
    seen.extend([plain("127.0.0.1", p1), plain("127.0.0.1", p2)]);
    // A client of the old port (served once, so surely accepted) stays
    // when the port moves.
    let mut early = TcpStream::connect(("127.0.0.1", p2)).unwrap();
    let mut early_ping = || {
        early.write_all(b"PING\r\n").unwrap();
        let mut pong = [0u8; 7];
        early.read_exact(&mut pong).unwrap();
        String::from_utf8_lossy(&pong).into_owned()
    };
    early_ping();
    seen.push(ask(&["CONFIG", "SET", "port", &p3.to_string()]));
    seen.push(early_ping());
    seen.extend([plain("127.0.0.1", p2), plain("127.0.0.1", p3)]);
    seen.push(ask(&["CONFIG", "GET", "port"]));
    let info = ask(&["INFO", "server"]);
    seen.push(format!(
        "tcp_port:{}",
        common::info_value(&info, "tcp_port")
    ));
    // Ports and addresses that do not bind: refused, the old ones kept.
    seen.push(ask(&["CONFIG", "SET", "port", &taken.to_string()]));
    seen.push(plain("127.0.0.1", p3));
    seen.push(ask(&["CONFIG", "SET", "bind", "192.0.2.1"]));
    seen.push(plain("127.0.0.1", p3));
    seen.push(ask(&["CONFIG", "SET", "bind", "127.0.0.2"]));
    seen.extend([plain("127.0.0.2", p3), plain("127.0.0.1", p3)]);
    seen.push(ask(&["CONFIG", "GET", "bind"]));
    let seventeen = vec!["127.0.0.1"; 17].join(" ");
    seen.push(ask(&["CONFIG", "SET", "bind", &seventeen]));
    // No address at all: no TCP listener.
    seen.push(ask(&["CONFIG", "SET", "bind", ""]));
    seen.push(ask(&["CONFIG", "GET", "bind"]));
    seen.push(plain("127.0.0.2", p3));
    seen.push(ask(&["CONFIG", "SET", "bind", "127.0.0.1"]));
    // A TLS port opened at run time, first with files that do not load.
    let tls_port = tls.to_string();
    let bad_cert = ["CONFIG", "SET", "tls-cert-file", "/nonexistent/cert.pem"];
    seen.push(ask(&[&bad_cert[..], &["tls-port", &tls_port]].concat()));
    seen.push(ask(&["CONFIG", "SET", "tls-port", &tls_port]));
    seen.push(named(ping(redis_cli, Some(pki), "127.0.0.1", tls)));
    seen.push(ask(&["CONFIG", "GET", "tls-port"]));
    seen.push(ask(&["CONFIG", "SET", "tls-port", "0"]));
    seen.push(named(ping(redis_cli, Some(pki), "127.0.0.1", tls)));
    seen.push(ask(&["CONFIG", "SET", "port", "0"]));
    seen.push(plain("127.0.0.1", p3));
    seen.push(ask(&["PING"]));
    let log: Vec<String> = [
        format!("Could not create server TCP listening socket 127.0.0.1:{taken}: bind: Address already in use"),
        "Failed applying new configuration. Possibly related to new port setting. Restoring previous settings.".into(),
        format!("Could not create server TCP listening socket 192.0.2.1:{p3}: bind: Cannot assign requested address"),
        "Failed to bind".into(),
        "Failed applying new configuration. Possibly related to new bind setting. Restoring previous settings.".into(),
        "Failed applying new configuration. Possibly related to new tls-cert-file setting. Restoring previous settings.".into(),
    ]
    .into_iter()
    .filter(|line| process.logged(line))
    .map(named)
    .collect();
    drop(held);
    (seen, log)
}

/// CONFIG SET of `port`, `bind` and `tls-port` moves the listeners as
/// Redis 7.0 moves them: the same replies, the same clients served or
/// refused, the same log lines when an address does not bind.
#[test]
fn listeners_move_with_config_set_as_redis_moves_them() {
    same_as_redis(observe_moves, 6, &["+PONG\r\n", "PONG\n", "tcp_port:P3"]);
}

/// The embedding API on a single-threaded runtime (as `#[tokio::test]`
/// gives): CONFIG SET moves the port from inside a command, a client of
/// the old port is still served, and the server still shuts down with
/// that client connected and no TCP listener left.
#[tokio::test]
async fn an_embedded_server_moves_its_port_and_keeps_its_clients() {
    let server = common::start().await;
    let mut early = Conn::open(server.addr()).await;
    let moved = free_port();
    let port = moved.to_string();
    assert_eq!(
        early.cmd(&["CONFIG", "SET", "port", &port]).await,
        F::Simple("OK".into())
    );
    let mut late = Conn::open(([127, 0, 0, 1], moved).into()).await;
    assert_eq!(late.cmd(&["PING"]).await, F::Simple("PONG".into()));
    assert_eq!(early.cmd(&["PING"]).await, F::Simple("PONG".into()));
    assert!(tokio::net::TcpStream::connect(server.addr()).await.is_err());
    assert_eq!(
        late.cmd(&["CONFIG", "SET", "port", "0"]).await,
        F::Simple("OK".into())
    );
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", moved))
            .await
            .is_err()
    );
    assert_eq!(early.cmd(&["PING"]).await, F::Simple("PONG".into()));
    tokio::time::timeout(WAIT, server.shutdown())
        .await
        .expect("a shutdown with clients of closed listeners");
    assert_eq!(early.read_within(WAIT).await, None);
}
