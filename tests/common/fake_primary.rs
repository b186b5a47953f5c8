//! A fake primary for replica tests: it takes a replica's handshake and
//! answers its PSYNC with a full resync, then sends what the test wants.

use std::time::Duration;

/// One RESP command off the front of `buf`, if it is all there.
pub fn take_command(buf: &mut Vec<u8>) -> Option<Vec<String>> {
    fn line(buf: &[u8], at: usize) -> Option<(String, usize)> {
        let end = buf[at..].windows(2).position(|w| w == b"\r\n")? + at;
        Some((String::from_utf8_lossy(&buf[at..end]).into_owned(), end + 2))
    }
    let (count, mut at) = line(buf, 0)?;
    let count: usize = count.strip_prefix('*')?.parse().ok()?;
    let mut args = Vec::new();
    for _ in 0..count {
        let (len, next) = line(buf, at)?;
        let len: usize = len.strip_prefix('$')?.parse().ok()?;
        if buf.len() < next + len + 2 {
            return None;
        }
        args.push(String::from_utf8_lossy(&buf[next..next + len]).into_owned());
        at = next + len + 2;
    }
    buf.drain(..at);
    Some(args)
}

/// What a replica sends a primary that says yes to everything, up to its
/// PSYNC (answered with a full resync that never comes), and the
/// connection, kept open.
pub fn handshake_seen(listener: &std::net::TcpListener) -> (std::net::TcpStream, Vec<Vec<String>>) {
    use std::io::{Read, Write};
    let (mut s, _) = listener.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (mut buf, mut seen) = (Vec::new(), Vec::new());
    loop {
        while let Some(cmd) = take_command(&mut buf) {
            let reply: &[u8] = match cmd[0].as_str() {
                "PING" => b"+PONG\r\n",
                "PSYNC" => b"+FULLRESYNC 0123456789012345678901234567890123456789 0\r\n",
                _ => b"+OK\r\n",
            };
            s.write_all(reply).unwrap();
            let done = cmd[0] == "PSYNC";
            seen.push(cmd);
            if done {
                return (s, seen);
            }
        }
        let mut chunk = [0u8; 1024];
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "the replica hung up: {seen:?}");
        buf.extend_from_slice(&chunk[..n]);
    }
}
