//! The log sent to syslog (`syslog-enabled`): each line one datagram to
//! /dev/log in the traditional format, `<PRI>ident[pid]: text`, as Redis's
//! syslog(3) calls send it. Written here rather than taken from a crate:
//! the format is one line, and the crates bring logging facades of their
//! own beside tracing.

use std::io::{self, Write};
use std::os::unix::net::UnixDatagram;
use std::path::Path;

use tracing_subscriber::fmt::MakeWriter;

/// Where syslog listens on Linux.
const SOCKET: &str = "/dev/log";

/// The facilities `syslog-facility` names, by their codes.
const FACILITIES: &[(&str, u8)] = &[
    ("user", 1),
    ("local0", 16),
    ("local1", 17),
    ("local2", 18),
    ("local3", 19),
    ("local4", 20),
    ("local5", 21),
    ("local6", 22),
    ("local7", 23),
];

/// syslog's severities for Redis's levels: warning, notice, verbose
/// (info), debug; an error is syslog's err.
fn severity(level: &tracing::Level) -> u8 {
    match *level {
        tracing::Level::ERROR => 3,
        tracing::Level::WARN => 4,
        tracing::Level::INFO => 5,
        tracing::Level::DEBUG => 6,
        tracing::Level::TRACE => 7,
    }
}

/// A connection to syslog, making a writer per log line.
pub struct Syslog {
    socket: UnixDatagram,
    facility: u8,
    ident: String,
}

impl Syslog {
    pub fn connect(ident: &str, facility: &str) -> io::Result<Syslog> {
        Syslog::connect_to(Path::new(SOCKET), ident, facility)
    }

    fn connect_to(socket_path: &Path, ident: &str, facility: &str) -> io::Result<Syslog> {
        let facility = FACILITIES
            .iter()
            .find(|(name, _)| *name == facility)
            .map_or(16, |(_, code)| *code);
        let socket = UnixDatagram::unbound()?;
        socket.connect(socket_path)?;
        Ok(Syslog {
            socket,
            facility,
            ident: ident.to_string(),
        })
    }
}

impl<'a> MakeWriter<'a> for Syslog {
    type Writer = Line<'a>;

    /// A line of no known level is a notice.
    fn make_writer(&'a self) -> Line<'a> {
        self.line(severity(&tracing::Level::INFO))
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Line<'a> {
        self.line(severity(meta.level()))
    }
}

impl Syslog {
    fn line(&self, severity: u8) -> Line<'_> {
        Line {
            syslog: self,
            priority: self.facility * 8 + severity,
            text: Vec::new(),
        }
    }
}

/// One log line, sent when dropped.
pub struct Line<'a> {
    syslog: &'a Syslog,
    priority: u8,
    text: Vec<u8>,
}

impl Write for Line<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Line<'_> {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.text);
        let message = format!(
            "<{}>{}[{}]: {}",
            self.priority,
            self.syslog.ident,
            std::process::id(),
            text.trim_end()
        );
        // A log line that syslog cannot take is lost, as with syslog(3).
        let _ = self.syslog.socket.send(message.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_reach_syslog_with_facility_severity_and_ident() {
        let dir = std::env::temp_dir().join(format!("rlockd-syslog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log");
        let listener = UnixDatagram::bind(&path).unwrap();
        listener
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let syslog = Syslog::connect_to(&path, "redis", "local3").unwrap();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(syslog)
            .with_ansi(false)
            .without_time()
            .with_level(false)
            .with_target(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!("disk is slow");
            tracing::info!("ready");
        });
        let mut buf = [0u8; 256];
        let mut next = || {
            let n = listener.recv(&mut buf).unwrap();
            String::from_utf8_lossy(&buf[..n]).into_owned()
        };
        let pid = std::process::id();
        // local3 is 19: 19 * 8 + 4 (warning), + 5 (notice).
        assert_eq!(next(), format!("<156>redis[{pid}]: disk is slow"));
        assert_eq!(next(), format!("<157>redis[{pid}]: ready"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
