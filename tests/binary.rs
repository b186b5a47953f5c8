//! The `rlockd` binary: config file and flags, port 0, SIGTERM.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the binary and reads the port it logs once ready.
fn start(args: &[&str]) -> (Running, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rlockd"))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("rlockd starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let port = loop {
        let line = lines.next().expect("a ready line").expect("utf-8 log");
        if let Some(addr) = line.split("connections on ").nth(1) {
            break addr
                .rsplit(':')
                .next()
                .unwrap()
                .trim()
                .parse()
                .expect("a port");
        }
    };
    (Running(child), port)
}

fn ask(port: u16, request: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(request).unwrap();
    let mut buf = [0u8; 256];
    let n = s.read(&mut buf).unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn config_file_then_flags() {
    let dir = std::env::temp_dir().join(format!("rlockd-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rlockd.conf");
    std::fs::write(
        &path,
        "# test\nport 1\nmaxclients 7\nnotify-keyspace-events Ex\n",
    )
    .unwrap();
    let (server, port) = start(&[path.to_str().unwrap(), "--port", "0"]);
    assert_ne!(port, 1, "the flag overrides the file");
    assert_eq!(
        ask(port, b"CONFIG GET maxclients\r\n"),
        "*2\r\n$10\r\nmaxclients\r\n$1\r\n7\r\n"
    );
    drop(server);
    std::fs::write(&path, "port 0\nfrobnicate yes\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rlockd"))
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2: 'frobnicate yes': unknown directive"),
        "{err}"
    );
}

#[test]
fn cluster_enabled_by_flag_or_file() {
    let (server, port) = start(&["--port", "0", "--cluster-enabled", "yes"]);
    assert_eq!(
        ask(port, b"CONFIG GET cluster-enabled\r\n"),
        "*2\r\n$15\r\ncluster-enabled\r\n$3\r\nyes\r\n"
    );
    assert_eq!(
        ask(port, b"MGET a b\r\n"),
        "-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    );
    drop(server);

    let dir = std::env::temp_dir().join(format!("rlockd-cluster-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rlockd.conf");
    std::fs::write(&path, "port 0\ncluster-enabled yes\n").unwrap();
    let (server, port) = start(&[path.to_str().unwrap()]);
    assert_eq!(
        ask(port, b"INFO cluster\r\n"),
        "$30\r\n# Cluster\r\ncluster_enabled:1\r\n\r\n"
    );
    drop(server);
    // The flag overrides the file; the default is off.
    let (server, port) = start(&[path.to_str().unwrap(), "--cluster-enabled", "no"]);
    assert_eq!(ask(port, b"MGET a b\r\n"), "*2\r\n$-1\r\n$-1\r\n");
    drop(server);

    std::fs::write(&path, "port 0\ncluster-enabled maybe\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rlockd"))
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2: 'cluster-enabled maybe'"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_stops_gracefully() {
    let (mut server, port) = start(&["--port", "0"]);
    assert_eq!(ask(port, b"PING\r\n"), "+PONG\r\n");
    let pid = server.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = server.0.wait().unwrap();
    assert!(status.success(), "exit status {status}");
}
