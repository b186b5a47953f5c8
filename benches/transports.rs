//! Uncontended Redisson lock+unlock pairs over each way in, `redis-server`
//! versus `rlockd` side by side: plain TCP, the unix socket and TLS (both
//! servers on the same throw-away certificates, made here with rcgen, and
//! `tls-auth-clients no`). Each client takes and releases a lock of its
//! own (EVALSHA of `redisson_lock.lua` then `redisson_unlock.lua`) as fast
//! as it can. Reported per transport and client count: pairs/s and lock
//! latency p99, then rlockd / redis; rounds alternate between the servers.
//!
//! Run with `cargo bench --bench transports`. Knobs:
//! `RLOCKD_BENCH_CLIENT_COUNTS` (`1,16`), `RLOCKD_BENCH_ROUNDS` (3),
//! `RLOCKD_BENCH_SECONDS` (3).

mod support;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use support::{
    Conn, Reply, Rounds, Server, encode, free_port, join_clients, launch, median, percentile,
    rounds_knobs,
};

const LOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_lock.lua");
const UNLOCK_LUA: &str = include_str!("../src/command/scripting/lock_scripts/redisson_unlock.lua");

/// The replies of an uncontended pair: the lock taken (nil), then
/// released (1).
const LOCKED: &[u8] = b"$-1\r\n";
const UNLOCKED: &[u8] = b":1\r\n";

#[derive(Clone, Copy, Debug)]
enum Transport {
    Tcp,
    Unix,
    Tls,
}

/// One server and where it listens.
struct Endpoints {
    server: Server,
    socket: PathBuf,
    tls: SocketAddr,
}

trait Wire: Read + Write + Send {}
impl<T: Read + Write + Send> Wire for T {}

fn connect(
    at: &Endpoints,
    transport: Transport,
    tls: &Arc<rustls::ClientConfig>,
) -> io::Result<Box<dyn Wire>> {
    Ok(match transport {
        Transport::Tcp => {
            let s = TcpStream::connect(at.server.addr)?;
            s.set_nodelay(true)?;
            Box::new(s)
        }
        Transport::Unix => Box::new(UnixStream::connect(&at.socket)?),
        Transport::Tls => {
            let s = TcpStream::connect(at.tls)?;
            s.set_nodelay(true)?;
            let name = ServerName::try_from("localhost").expect("a name");
            let session =
                rustls::ClientConnection::new(tls.clone(), name).map_err(io::Error::other)?;
            Box::new(rustls::StreamOwned::new(session, s))
        }
    })
}

/// Sends `request` and checks the reply is exactly `expected`.
fn exchange(wire: &mut dyn Wire, request: &[u8], expected: &[u8]) -> io::Result<()> {
    wire.write_all(request)?;
    wire.flush()?;
    let mut got = vec![0; expected.len()];
    wire.read_exact(&mut got)?;
    if got != expected {
        return Err(io::Error::other(format!(
            "expected {:?}, got {:?}",
            String::from_utf8_lossy(expected),
            String::from_utf8_lossy(&got)
        )));
    }
    Ok(())
}

fn sha(at: &Endpoints, script: &str) -> String {
    match Conn::open(at.server.addr).and_then(|mut c| c.cmd(&["SCRIPT", "LOAD", script])) {
        Ok(Reply::Bulk(Some(sha))) => String::from_utf8(sha).expect("hex"),
        other => panic!("SCRIPT LOAD: {other:?}"),
    }
}

/// Pairs/s and lock round trips (µs) of `clients` clients for `length`.
fn round(
    at: &Endpoints,
    transport: Transport,
    clients: usize,
    length: Duration,
    tls: &Arc<rustls::ClientConfig>,
) -> io::Result<(f64, Vec<f64>)> {
    let (lock, unlock) = (sha(at, LOCK_LUA), sha(at, UNLOCK_LUA));
    let start = Arc::new(Barrier::new(clients + 1));
    let mut workers = Vec::new();
    for n in 0..clients {
        let mut wire = connect(at, transport, tls)?;
        let start = start.clone();
        let name = format!("pair:{n}");
        let channel = format!("redisson_lock__channel:{{{name}}}");
        let owner = format!("8743c9c0-0795-4907-87fd-6c719a6b4586:{n}");
        let (mut take, mut release) = (Vec::new(), Vec::new());
        encode(&["EVALSHA", &lock, "1", &name, "30000", &owner], &mut take);
        encode(
            &[
                "EVALSHA", &unlock, "2", &name, &channel, "0", "30000", &owner,
            ],
            &mut release,
        );
        workers.push(thread::spawn(move || -> io::Result<(u64, Vec<f64>)> {
            let (mut pairs, mut lock_us) = (0, Vec::new());
            start.wait();
            let until = Instant::now() + length;
            while Instant::now() < until {
                let asked = Instant::now();
                exchange(&mut *wire, &take, LOCKED)?;
                lock_us.push(asked.elapsed().as_secs_f64() * 1e6);
                exchange(&mut *wire, &release, UNLOCKED)?;
                pairs += 1;
            }
            Ok((pairs, lock_us))
        }));
    }
    start.wait();
    let started = Instant::now();
    let (pairs, lock_us) = join_clients(workers)?;
    Ok((pairs as f64 / started.elapsed().as_secs_f64(), lock_us))
}

/// A CA and a server certificate for localhost, as PEM files in `dir`.
fn make_certificates(dir: &Path) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().expect("a CA key");
    let ca_cert = ca.self_signed(&ca_key).expect("the CA");
    let params = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    let key = KeyPair::generate().expect("a key");
    let cert = params
        .signed_by(&key, &Issuer::from_params(&ca, &ca_key))
        .expect("the certificate");
    for (name, text) in [
        ("ca.pem", ca_cert.pem()),
        ("server.pem", cert.pem()),
        ("server.key", key.serialize_pem()),
    ] {
        std::fs::write(dir.join(name), text).expect("a certificate file");
    }
}

/// Starts `program` (either server) on all three transports.
fn start(name: &'static str, program: &str, dir: &Path, extra: &[String]) -> Option<Endpoints> {
    let socket = dir.join(format!("{name}.sock"));
    let tls = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let file = |f: &str| dir.join(f).display().to_string();
    let mut args: Vec<String> = [
        "--port",
        &free_port().to_string(),
        "--unixsocket",
        &socket.display().to_string(),
        "--tls-port",
        &tls.port().to_string(),
        "--tls-cert-file",
        &file("server.pem"),
        "--tls-key-file",
        &file("server.key"),
        "--tls-auth-clients",
        "no",
        "--save",
        "",
        "--appendonly",
        "no",
        // Where no dump file another run left is loaded.
        "--dir",
        &dir.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend_from_slice(extra);
    let server = launch(name, program, &args)?;
    Some(Endpoints {
        server,
        socket,
        tls,
    })
}

fn client_config(dir: &Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(dir.join("ca.pem")).expect("ca.pem") {
        roots.add(cert.expect("a certificate")).expect("a root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

fn main() {
    let Rounds {
        client_counts: counts,
        rounds,
        length,
    } = rounds_knobs("1,16");
    let dir = std::env::temp_dir().join(format!("rlockd-bench-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    make_certificates(&dir);
    let tls = client_config(&dir);
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let Some(redis) = start("redis", &redis, &dir, &[]) else {
        println!("redis-server (built with TLS) not available: nothing to compare");
        return;
    };
    let rlockd = start(
        "rlockd",
        &support::rlockd_binary(),
        &dir,
        &support::rlockd_args(),
    )
    .expect("rlockd starts");
    let servers = [redis, rlockd];
    for transport in [Transport::Tcp, Transport::Unix, Transport::Tls] {
        for &clients in &counts {
            let mut rates = [Vec::new(), Vec::new()];
            let mut p99s = [Vec::new(), Vec::new()];
            for r in 0..rounds {
                for (i, at) in servers.iter().enumerate() {
                    let (rate, lock_us) =
                        round(at, transport, clients, length, &tls).expect("a bench round");
                    let p99 = percentile(lock_us, 0.99);
                    eprintln!(
                        "{transport:?}, {clients} clients, round {}/{rounds} {:>6}: {rate:>8.0} pairs/s, lock p99 {p99:.0} µs",
                        r + 1,
                        at.server.name
                    );
                    rates[i].push(rate);
                    p99s[i].push(p99);
                }
            }
            let [redis_rate, rlockd_rate] = rates.map(median);
            let [redis_p99, rlockd_p99] = p99s.map(median);
            println!(
                "{transport:?}, {clients} clients (median of {rounds} rounds of {length:?}): redis {redis_rate:.0} pairs/s p99 {redis_p99:.0} µs; rlockd {rlockd_rate:.0} pairs/s p99 {rlockd_p99:.0} µs; rlockd / redis: pairs/s {:.2}, p99 {:.2}",
                rlockd_rate / redis_rate,
                rlockd_p99 / redis_p99
            );
            println!(
                "BENCH {{\"bench\":\"transports\",\"transport\":\"{transport:?}\",\"clients\":{clients},\"redis_pairs\":{redis_rate:.0},\"rlockd_pairs\":{rlockd_rate:.0},\"pairs_ratio\":{:.3},\"p99_ratio\":{:.3}}}",
                rlockd_rate / redis_rate,
                rlockd_p99 / redis_p99
            );
        }
    }
    drop(servers);
    let _ = std::fs::remove_dir_all(&dir);
}
