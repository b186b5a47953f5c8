//! Differential conformance: every case file in `conformance/cases/` is
//! run line by line against a real `redis-server` and against rlockd,
//! and each pair of replies must be the same RESP bytes (after the
//! line's normaliser). See `conformance/README.md` for the case format.
//!
//! Env:
//! - `REDIS_SERVER`: the redis-server binary (default: from PATH).
//! - `RLOCKD_REQUIRE_REDIS=1`: fail, rather than skip, without redis-server.
//! - `CONFORMANCE_SELF_TEST=1`: run against a second redis-server instead
//!   of rlockd, to check that the cases themselves are deterministic.
//! - `CONFORMANCE_FILTER=substr`: run only the case files whose name
//!   contains `substr`.

mod refserver;

use std::collections::{BTreeSet, HashMap};
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use refserver::{RedisServer, Setup, Subject, loud, show};

const READ_TIMEOUT: Duration = Duration::from_secs(3);
const SCAN_MAX_CALLS: usize = 10_000;

// ---------------------------------------------------------------------------
// Case files

/// Per-line options, written as `@name [arg]` prefixes before the command.
#[derive(Debug, Clone, Default, PartialEq)]
struct Directives {
    /// `@conn N`: run on connection N (1-based; default 1).
    conn: usize,
    /// `@sort`: sort the top-level elements of an aggregate reply.
    sort: bool,
    /// `@sortpairs`: sort a flat key/value array (or a map) by pairs.
    sortpairs: bool,
    /// `@type`: compare only the shape (types, aggregate sizes).
    shape: bool,
    /// `@scanall`: follow the cursor to 0; compare the sorted union.
    scanall: bool,
    /// `@mask f1,f2`: replace the value after each of these field names
    /// (in maps and flat key/value arrays, at any depth).
    mask: Vec<Vec<u8>>,
    /// `@round N`: round positive integer replies to a multiple of N.
    round: Option<i64>,
    /// `@ignore`: send it and read the reply, but do not compare.
    ignore: bool,
    /// `@send`: send it and move on; a later `@recv` line reads the reply
    /// (for a command that blocks until another connection acts).
    send: bool,
    /// `@recv`: no command; read and compare the connection's next reply.
    recv: bool,
    /// `@node`: this server's node id, port and cluster bus port, wherever
    /// they appear, read as `<myid>`, `<port>` and `<cport>`.
    node: bool,
    /// `@monitor`: a MONITOR line's timestamp and client port read as
    /// `<time>` and `<port>`.
    monitor: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Command {
        line: usize,
        text: String,
        opts: Directives,
        argv: Vec<Vec<u8>>,
    },
    Sleep {
        ms: u64,
    },
}

/// Splits one command line into arguments, like redis-cli does (the
/// server's inline-command splitter follows the same rules).
fn split_args(line: &str) -> Result<Vec<Vec<u8>>, String> {
    rlockd::protocol::parse::split_args(line.as_bytes())
        .ok_or_else(|| "unbalanced quotes, or a closing quote not followed by a space".into())
}

fn parse_case_file(text: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for (idx, raw) in text.lines().enumerate() {
        let line = idx + 1;
        let err = |m: String| format!("line {line}: {m}");
        let mut rest = raw.trim();
        if rest.is_empty() || rest.starts_with('#') {
            continue;
        }
        let mut opts = Directives {
            conn: 1,
            ..Directives::default()
        };
        let mut sleep = None;
        while let Some(after_at) = rest.strip_prefix('@') {
            let (name, tail) = next_word(after_at);
            rest = tail;
            let mut arg = || -> Result<&str, String> {
                let (a, t) = next_word(rest);
                rest = t;
                if a.is_empty() {
                    Err(err(format!("@{name} needs an argument")))
                } else {
                    Ok(a)
                }
            };
            match name {
                "conn" => {
                    let n = arg()?;
                    opts.conn = n
                        .parse()
                        .ok()
                        .filter(|&n| (1..=16).contains(&n))
                        .ok_or_else(|| err(format!("bad @conn {n} (1..=16)")))?;
                }
                "sleep" => {
                    let n = arg()?;
                    sleep = Some(
                        n.parse::<u64>()
                            .map_err(|_| err(format!("bad @sleep {n}")))?,
                    );
                }
                "round" => {
                    let n = arg()?;
                    opts.round = Some(
                        n.parse::<i64>()
                            .ok()
                            .filter(|&n| n > 0)
                            .ok_or_else(|| err(format!("bad @round {n}")))?,
                    );
                }
                "mask" => {
                    let fields = arg()?;
                    opts.mask = fields
                        .split(',')
                        .filter(|f| !f.is_empty())
                        .map(|f| f.as_bytes().to_vec())
                        .collect();
                }
                "sort" => opts.sort = true,
                "sortpairs" => opts.sortpairs = true,
                "type" => opts.shape = true,
                "scanall" => opts.scanall = true,
                "ignore" => opts.ignore = true,
                "send" => opts.send = true,
                "recv" => opts.recv = true,
                "node" => opts.node = true,
                "monitor" => opts.monitor = true,
                other => return Err(err(format!("unknown directive @{other}"))),
            }
        }
        if let Some(ms) = sleep {
            if !rest.is_empty() {
                return Err(err("@sleep stands alone on its line".into()));
            }
            steps.push(Step::Sleep { ms });
            continue;
        }
        if opts.recv {
            if !rest.is_empty() {
                return Err(err("@recv takes no command".into()));
            }
            steps.push(Step::Command {
                line,
                text: "<the reply of an earlier @send>".into(),
                opts,
                argv: Vec::new(),
            });
            continue;
        }
        let argv: Vec<Vec<u8>> = split_args(rest)
            .and_then(|args| args.into_iter().map(script_placeholder).collect())
            .map_err(err)?;
        if argv.is_empty() {
            return Err(err("directive without a command".into()));
        }
        if opts.scanall && scan_cursor_index(&argv).is_none() {
            return Err(err("@scanall needs SCAN, HSCAN, SSCAN or ZSCAN".into()));
        }
        steps.push(Step::Command {
            line,
            text: rest.to_string(),
            opts,
            argv,
        });
    }
    Ok(steps)
}

/// Where `@lua:` names are found: the corpus's own scripts, then the lock
/// scripts the server runs natively, kept once beside their native runs.
const SCRIPT_DIRS: [&str; 2] = ["conformance/scripts", "src/command/scripting/lock_scripts"];

/// `@lua:NAME` stands for the text of the script NAME in `SCRIPT_DIRS`,
/// and `@sha:NAME` for its SHA1, so that scripts are kept verbatim.
fn script_placeholder(arg: Vec<u8>) -> Result<Vec<u8>, String> {
    let text = String::from_utf8_lossy(&arg);
    let (kind, name) = match (text.strip_prefix("@lua:"), text.strip_prefix("@sha:")) {
        (Some(name), _) => ("lua", name),
        (_, Some(name)) => ("sha", name),
        _ => return Ok(arg),
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let body = SCRIPT_DIRS
        .iter()
        .find_map(|dir| std::fs::read(root.join(dir).join(name)).ok())
        .ok_or_else(|| format!("no script {name} in {SCRIPT_DIRS:?}"))?;
    Ok(match kind {
        "lua" => body,
        _ => rlockd::scripting::sha1_hex(&body).into_bytes(),
    })
}

fn next_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    (&s[..end], s[end..].trim_start())
}

/// Where the cursor argument of a SCAN-family command is.
fn scan_cursor_index(argv: &[Vec<u8>]) -> Option<usize> {
    let name = argv.first()?.to_ascii_uppercase();
    match name.as_slice() {
        b"SCAN" => Some(1),
        b"HSCAN" | b"SSCAN" | b"ZSCAN" => Some(2),
        _ => None,
    }
    .filter(|&i| i < argv.len())
}

// ---------------------------------------------------------------------------
// RESP

/// Reads the raw bytes of one complete RESP2/RESP3 reply.
fn read_reply<R: BufRead>(r: &mut R) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    read_value(r, &mut out)?;
    Ok(out)
}

fn read_line_into<R: BufRead>(r: &mut R, out: &mut Vec<u8>) -> io::Result<Vec<u8>> {
    let start = out.len();
    let n = r.read_until(b'\n', out)?;
    if n == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    if !out.ends_with(b"\r\n") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("reply line without CRLF: {}", show(&out[start..], 200)),
        ));
    }
    Ok(out[start + 1..out.len() - 2].to_vec())
}

fn parse_len(head: &[u8]) -> io::Result<i64> {
    std::str::from_utf8(head)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad length {}", show(head, 50)),
            )
        })
}

fn read_value<R: BufRead>(r: &mut R, out: &mut Vec<u8>) -> io::Result<()> {
    let start = out.len();
    let head = read_line_into(r, out)?;
    match out[start] {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Ok(()),
        b'$' | b'!' | b'=' => {
            let len = parse_len(&head)?;
            if len < 0 {
                return Ok(());
            }
            let at = out.len();
            out.resize(at + len as usize + 2, 0);
            r.read_exact(&mut out[at..])?;
            if !out.ends_with(b"\r\n") {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bulk without CRLF",
                ));
            }
            Ok(())
        }
        t @ (b'*' | b'~' | b'>' | b'%' | b'|') => {
            let len = parse_len(&head)?;
            let items = if matches!(t, b'%' | b'|') {
                len * 2
            } else {
                len
            };
            for _ in 0..items.max(0) {
                read_value(r, out)?;
            }
            if t == b'|' {
                // An attribute precedes the value it describes.
                read_value(r, out)?;
            }
            Ok(())
        }
        other => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unknown RESP type byte {}", show(&[other], 10)),
        )),
    }
}

/// One parsed reply, for the normalisers.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    /// `+ - : _ , # (` and the text after the type byte.
    Line(u8, Vec<u8>),
    /// `$ ! =` with their payload (`None`: the RESP2 null `$-1`).
    Bulk(u8, Option<Vec<u8>>),
    /// `* ~ > %` (a map's keys and values flat); `None`: `*-1`.
    Agg(u8, Option<Vec<Node>>),
    /// `|` attribute pairs, then the value they describe.
    Attr(Vec<Node>, Box<Node>),
    /// Not RESP: a marker such as `<closed>` or `<timeout>`.
    Marker(String),
}

fn parse_node(b: &[u8], pos: &mut usize) -> Node {
    let t = b[*pos];
    let nl = *pos + b[*pos..].windows(2).position(|w| w == b"\r\n").unwrap();
    let head = b[*pos + 1..nl].to_vec();
    *pos = nl + 2;
    let len = || std::str::from_utf8(&head).unwrap().parse::<i64>().unwrap();
    match t {
        b'$' | b'!' | b'=' => {
            let n = len();
            if n < 0 {
                return Node::Bulk(t, None);
            }
            let data = b[*pos..*pos + n as usize].to_vec();
            *pos += n as usize + 2;
            Node::Bulk(t, Some(data))
        }
        b'*' | b'~' | b'>' | b'%' => {
            let n = len();
            if n < 0 {
                return Node::Agg(t, None);
            }
            let items = if t == b'%' { n * 2 } else { n };
            let kids = (0..items).map(|_| parse_node(b, pos)).collect();
            Node::Agg(t, Some(kids))
        }
        b'|' => {
            let kids = (0..len() * 2).map(|_| parse_node(b, pos)).collect();
            let value = parse_node(b, pos);
            Node::Attr(kids, Box::new(value))
        }
        _ => Node::Line(t, head),
    }
}

fn parse_reply(raw: &[u8]) -> Node {
    if raw.starts_with(b"<") {
        return Node::Marker(String::from_utf8_lossy(raw).into_owned());
    }
    let mut pos = 0;
    parse_node(raw, &mut pos)
}

fn encode(node: &Node, out: &mut Vec<u8>) {
    match node {
        Node::Line(t, head) => {
            out.push(*t);
            out.extend_from_slice(head);
            out.extend_from_slice(b"\r\n");
        }
        Node::Bulk(t, None) => {
            out.push(*t);
            out.extend_from_slice(b"-1\r\n");
        }
        Node::Bulk(t, Some(d)) => {
            out.push(*t);
            out.extend_from_slice(format!("{}\r\n", d.len()).as_bytes());
            out.extend_from_slice(d);
            out.extend_from_slice(b"\r\n");
        }
        Node::Agg(t, None) => {
            out.push(*t);
            out.extend_from_slice(b"-1\r\n");
        }
        Node::Agg(t, Some(kids)) => {
            let n = if *t == b'%' {
                kids.len() / 2
            } else {
                kids.len()
            };
            out.push(*t);
            out.extend_from_slice(format!("{n}\r\n").as_bytes());
            kids.iter().for_each(|k| encode(k, out));
        }
        Node::Attr(kids, value) => {
            out.extend_from_slice(format!("|{}\r\n", kids.len() / 2).as_bytes());
            kids.iter().for_each(|k| encode(k, out));
            encode(value, out);
        }
        Node::Marker(m) => out.extend_from_slice(m.as_bytes()),
    }
}

fn encoded(node: &Node) -> Vec<u8> {
    let mut out = Vec::new();
    encode(node, &mut out);
    out
}

fn encode_command(argv: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", argv.len()).into_bytes();
    for a in argv {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

// ---------------------------------------------------------------------------
// Normalisers

fn sort_pairs(kids: &mut Vec<Node>) {
    if !kids.len().is_multiple_of(2) {
        return;
    }
    let mut pairs: Vec<(Vec<u8>, Node, Node)> = kids
        .chunks(2)
        .map(|p| {
            let mut key = encoded(&p[0]);
            key.extend(encoded(&p[1]));
            (key, p[0].clone(), p[1].clone())
        })
        .collect();
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    *kids = pairs.into_iter().flat_map(|(_, k, v)| [k, v]).collect();
}

fn shape(node: &Node) -> Node {
    match node {
        Node::Line(t, _) => Node::Line(*t, Vec::new()),
        Node::Bulk(t, d) => Node::Bulk(*t, d.as_ref().map(|_| Vec::new())),
        Node::Agg(t, kids) => Node::Agg(*t, kids.as_ref().map(|k| k.iter().map(shape).collect())),
        Node::Attr(kids, v) => Node::Attr(kids.iter().map(shape).collect(), Box::new(shape(v))),
        Node::Marker(m) => Node::Marker(m.clone()),
    }
}

fn text_of(node: &Node) -> Option<&[u8]> {
    match node {
        Node::Line(b'+', s) => Some(s),
        Node::Bulk(_, Some(s)) => Some(s),
        _ => None,
    }
}

fn mask(node: &mut Node, fields: &[Vec<u8>]) {
    if let Node::Agg(t, Some(kids)) = node {
        if (*t == b'%' || *t == b'*') && kids.len().is_multiple_of(2) {
            for i in (0..kids.len()).step_by(2) {
                let hit = text_of(&kids[i])
                    .is_some_and(|k| fields.iter().any(|f| f.eq_ignore_ascii_case(k)));
                if hit {
                    kids[i + 1] = Node::Line(b'+', b"<masked>".to_vec());
                }
            }
        }
        kids.iter_mut().for_each(|k| mask(k, fields));
    }
}

fn round(node: &mut Node, n: i64) {
    match node {
        Node::Line(b':', digits) => {
            if let Some(v) = std::str::from_utf8(digits)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .filter(|&v| v > 0)
            {
                *digits = (((v + n / 2) / n) * n).to_string().into_bytes();
            }
        }
        Node::Agg(_, Some(kids)) => kids.iter_mut().for_each(|k| round(k, n)),
        _ => {}
    }
}

/// `+<secs>.<micros> [<db> <addr>] …` with the clock and the client's
/// port hidden (a script's `[<db> lua]` keeps its bracket).
fn hide_monitor_clock(node: &mut Node) {
    let Node::Line(b'+', text) = node else {
        return;
    };
    let (Some(open), Some(close)) = (
        text.iter().position(|&b| b == b'['),
        text.iter().position(|&b| b == b']'),
    ) else {
        return;
    };
    if close < open {
        return;
    }
    let bracket = &text[open..close];
    let shown = match bracket.iter().rposition(|&b| b == b':') {
        Some(colon) => [&bracket[..=colon], b"<port>"].concat(),
        None => bracket.to_vec(),
    };
    *text = [b"<time> ", &shown[..], &text[close..]].concat();
}

/// What `@node` hides: the server's own identity as a cluster node.
#[derive(Debug, Clone, Default)]
struct NodeFacts {
    id: Option<Vec<u8>>,
    port: String,
    cport: String,
}

impl NodeFacts {
    fn new(port: u16, id: Option<Vec<u8>>) -> NodeFacts {
        NodeFacts {
            id,
            port: port.to_string(),
            cport: (u32::from(port) + 10_000).to_string(),
        }
    }

    /// The text with the node id and every number equal to the port or
    /// bus port replaced.
    fn hide_in(&self, text: &[u8]) -> Vec<u8> {
        let mut text = text.to_vec();
        if let Some(id) = self.id.as_ref().filter(|id| !id.is_empty()) {
            let mut out = Vec::new();
            let mut rest = &text[..];
            while let Some(at) = rest.windows(id.len()).position(|w| w == &id[..]) {
                out.extend_from_slice(&rest[..at]);
                out.extend_from_slice(b"<myid>");
                rest = &rest[at + id.len()..];
            }
            out.extend_from_slice(rest);
            text = out;
        }
        let mut out = Vec::new();
        for run in text.chunk_by(|a, b| a.is_ascii_digit() == b.is_ascii_digit()) {
            if run == self.port.as_bytes() {
                out.extend_from_slice(b"<port>");
            } else if run == self.cport.as_bytes() {
                out.extend_from_slice(b"<cport>");
            } else {
                out.extend_from_slice(run);
            }
        }
        out
    }

    fn hide(&self, node: &mut Node) {
        match node {
            Node::Line(t, text) => {
                let hidden = self.hide_in(text);
                if *t == b':' && hidden != *text {
                    *t = b'+';
                }
                *text = hidden;
            }
            Node::Bulk(_, Some(text)) => *text = self.hide_in(text),
            Node::Agg(_, Some(kids)) => kids.iter_mut().for_each(|k| self.hide(k)),
            Node::Attr(kids, value) => {
                kids.iter_mut().for_each(|k| self.hide(k));
                self.hide(value);
            }
            _ => {}
        }
    }
}

fn normalise(raw: &[u8], opts: &Directives, me: &NodeFacts) -> Vec<u8> {
    let plain = !opts.sort
        && !opts.sortpairs
        && !opts.shape
        && !opts.node
        && !opts.monitor
        && opts.mask.is_empty()
        && opts.round.is_none();
    if plain {
        return raw.to_vec();
    }
    let mut node = parse_reply(raw);
    if opts.node {
        me.hide(&mut node);
    }
    if opts.monitor {
        hide_monitor_clock(&mut node);
    }
    if !opts.mask.is_empty() {
        mask(&mut node, &opts.mask);
    }
    if let Some(n) = opts.round {
        round(&mut node, n);
    }
    if let Node::Agg(t, Some(kids)) = &mut node {
        if opts.sortpairs || (opts.sort && *t == b'%') {
            sort_pairs(kids);
        } else if opts.sort {
            kids.sort_by_key(encoded);
        }
    }
    if opts.shape {
        node = shape(&node);
    }
    encoded(&node)
}

// ---------------------------------------------------------------------------
// Connections

struct Conn {
    reader: Option<BufReader<TcpStream>>,
    dead: Option<&'static str>,
}

impl Conn {
    /// A connection; one that cannot be made answers `<connect failed>`.
    fn open(addr: SocketAddr) -> Conn {
        let opened = TcpStream::connect(addr).and_then(|s| {
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(READ_TIMEOUT))?;
            Ok(s)
        });
        match opened {
            Ok(s) => Conn {
                reader: Some(BufReader::new(s)),
                dead: None,
            },
            Err(_) => Conn {
                reader: None,
                dead: Some("<connect failed>"),
            },
        }
    }

    fn send(&mut self, argv: &[Vec<u8>]) {
        if self.dead.is_some() {
            return;
        }
        let Some(r) = self.reader.as_mut() else {
            return;
        };
        if r.get_mut().write_all(&encode_command(argv)).is_err() {
            self.dead = Some("<closed>");
        }
    }

    /// The raw reply, or a `<closed>` / `<timeout>` / `<bad reply …>` marker.
    fn recv(&mut self) -> Vec<u8> {
        let (None, Some(reader)) = (self.dead, self.reader.as_mut()) else {
            return self.dead.unwrap_or("<closed>").as_bytes().to_vec();
        };
        match read_reply(reader) {
            Ok(r) => r,
            Err(e) => {
                let marker = match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => "<timeout>",
                    io::ErrorKind::InvalidData => "<bad reply>",
                    _ => "<closed>",
                };
                // Later replies on this connection would be out of step.
                self.dead = Some(marker);
                if marker == "<bad reply>" {
                    return format!("<bad reply: {e}>").into_bytes();
                }
                marker.as_bytes().to_vec()
            }
        }
    }

    fn call(&mut self, argv: &[Vec<u8>]) -> Vec<u8> {
        self.send(argv);
        self.recv()
    }
}

struct Side {
    name: &'static str,
    addr: SocketAddr,
    conns: HashMap<usize, Conn>,
    me: NodeFacts,
}

impl Side {
    /// A server, and in cluster mode its node id (from `CLUSTER MYID`).
    fn new(name: &'static str, addr: SocketAddr, cluster: bool) -> Side {
        let id = cluster.then(|| {
            let raw = Conn::open(addr).call(&[b"CLUSTER".to_vec(), b"MYID".to_vec()]);
            match parse_reply(&raw) {
                Node::Bulk(b'$', Some(id)) => id,
                _ => panic!("{name}: CLUSTER MYID answered {}", show(&raw, 200)),
            }
        });
        Side {
            name,
            addr,
            conns: HashMap::new(),
            me: NodeFacts::new(addr.port(), id),
        }
    }

    /// Forgets the previous file's connections and empties every database.
    fn reset(&mut self) -> Result<(), String> {
        self.conns.clear();
        let mut admin = Conn::open(self.addr);
        let r = admin.call(&[b"FLUSHALL".to_vec()]);
        if r != b"+OK\r\n" {
            return Err(format!(
                "{}: FLUSHALL answered {}",
                self.name,
                show(&r, 200)
            ));
        }
        Ok(())
    }

    fn conn(&mut self, n: usize) -> &mut Conn {
        let addr = self.addr;
        self.conns.entry(n).or_insert_with(|| Conn::open(addr))
    }

    /// Runs a SCAN-family command until its cursor comes back as 0 and
    /// returns one array of the distinct elements (pairs for HSCAN and
    /// ZSCAN), sorted; an unexpected reply is returned as is.
    fn scan_all(&mut self, conn: usize, argv: &[Vec<u8>]) -> Vec<u8> {
        let at = scan_cursor_index(argv).unwrap();
        let paired =
            !argv[0].eq_ignore_ascii_case(b"SCAN") && !argv[0].eq_ignore_ascii_case(b"SSCAN");
        let mut argv = argv.to_vec();
        let mut seen: BTreeSet<Vec<u8>> = BTreeSet::new();
        let mut items = Vec::new();
        for _ in 0..SCAN_MAX_CALLS {
            let raw = self.conn(conn).call(&argv);
            if raw.starts_with(b"<") {
                return raw;
            }
            let Node::Agg(b'*', Some(kids)) = parse_reply(&raw) else {
                return raw;
            };
            let (Some(cursor), Some(Node::Agg(b'*', Some(elems)))) =
                (kids.first().and_then(text_of), kids.get(1))
            else {
                return raw;
            };
            let cursor = cursor.to_vec();
            let groups: Vec<Node> = if paired {
                elems
                    .chunks(2)
                    .map(|p| Node::Agg(b'*', Some(p.to_vec())))
                    .collect()
            } else {
                elems.clone()
            };
            for g in groups {
                if seen.insert(encoded(&g)) {
                    items.push(g);
                }
            }
            if cursor == b"0" {
                items.sort_by_key(encoded);
                return encoded(&Node::Agg(b'*', Some(items)));
            }
            argv[at] = cursor;
        }
        b"<scan did not finish>".to_vec()
    }
}

// ---------------------------------------------------------------------------
// Running

struct Diff {
    place: String,
    conn: usize,
    text: String,
    reference: Vec<u8>,
    subject: Vec<u8>,
}

fn run_file(
    path: &Path,
    steps: &[Step],
    reference: &mut Side,
    subject: &mut Side,
    diffs: &mut Vec<Diff>,
) -> Result<usize, String> {
    reference.reset()?;
    subject.reset()?;
    let file = path
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(path)
        .display()
        .to_string();
    let mut cases = 0;
    for step in steps {
        match step {
            Step::Sleep { ms } => std::thread::sleep(Duration::from_millis(*ms)),
            Step::Command {
                line,
                text,
                opts,
                argv,
            } => {
                cases += 1;
                if opts.send {
                    reference.conn(opts.conn).send(argv);
                    subject.conn(opts.conn).send(argv);
                    continue;
                }
                let (a, b) = if opts.scanall {
                    (
                        reference.scan_all(opts.conn, argv),
                        subject.scan_all(opts.conn, argv),
                    )
                } else {
                    // Both servers get the command before either answer is
                    // awaited, so time-sensitive lines see the same clock.
                    if !argv.is_empty() {
                        reference.conn(opts.conn).send(argv);
                        subject.conn(opts.conn).send(argv);
                    }
                    (
                        reference.conn(opts.conn).recv(),
                        subject.conn(opts.conn).recv(),
                    )
                };
                if opts.ignore {
                    continue;
                }
                let (na, nb) = (
                    normalise(&a, opts, &reference.me),
                    normalise(&b, opts, &subject.me),
                );
                if na != nb {
                    diffs.push(Diff {
                        place: format!("{file}:{line}"),
                        conn: opts.conn,
                        text: text.clone(),
                        reference: na,
                        subject: nb,
                    });
                }
            }
        }
    }
    Ok(cases)
}

/// `cluster*.rcmd` runs against servers in cluster mode.
fn is_cluster_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("cluster"))
}

fn case_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/cases");
    let filter = std::env::var("CONFORMANCE_FILTER").unwrap_or_default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rcmd"))
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(&filter))
        .collect();
    files.sort();
    files
}

#[test]
fn conformance() {
    let Some(redis_bin) = refserver::redis_server_path("conformance") else {
        return;
    };
    let files = case_files();
    assert!(!files.is_empty(), "no case files in conformance/cases");
    let parsed: Vec<(PathBuf, Vec<Step>)> = files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let steps = parse_case_file(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, steps)
        })
        .collect();

    let started = Instant::now();
    // Cluster files run against their own pair of cluster-mode servers.
    let (cluster, plain): (Vec<_>, Vec<_>) = parsed.iter().partition(|(p, _)| is_cluster_file(p));
    let mut diffs = Vec::new();
    let mut cases = 0;
    let mut subject_name = "rlockd";
    for (files, cluster) in [(plain, false), (cluster, true)] {
        if files.is_empty() {
            continue;
        }
        let setup = Setup {
            cluster,
            ..Setup::default()
        };
        let redis = RedisServer::start_setup(&redis_bin, setup);
        let subject = Subject::start_setup(&redis_bin, setup);
        subject_name = subject.name();
        let mut reference = Side::new("redis-server", redis.addr, cluster);
        let mut tested = Side::new(subject.name(), subject.addr(), cluster);
        for (path, steps) in files {
            cases += run_file(path, steps, &mut reference, &mut tested, &mut diffs)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }

    let mut report = String::new();
    for d in &diffs {
        report.push_str(&format!(
            "\n{} [conn {}] {}\n  {:<14} {}\n  {:<14} {}\n",
            d.place,
            d.conn,
            d.text,
            "redis-server:",
            show(&d.reference, 1500),
            format!("{subject_name}:"),
            show(&d.subject, 1500),
        ));
    }
    let summary = format!(
        "conformance: {cases} cases in {} files, {} differences (redis-server vs {}, {:.1}s)",
        parsed.len(),
        diffs.len(),
        subject_name,
        started.elapsed().as_secs_f64()
    );
    if !diffs.is_empty() {
        loud(&report);
    }
    loud(&summary);
    assert!(diffs.is_empty(), "{summary}{report}");
}

// ---------------------------------------------------------------------------
// The harness's own unit tests (no server needed)

#[cfg(test)]
mod harness {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        split_args(line)
            .unwrap()
            .into_iter()
            .map(|a| String::from_utf8(a).unwrap())
            .collect()
    }

    #[test]
    fn splits_like_redis_cli() {
        assert_eq!(args("SET  a   b"), ["SET", "a", "b"]);
        assert_eq!(args(r#"SET "a b" 'c d'"#), ["SET", "a b", "c d"]);
        assert_eq!(args(r#"ECHO "x\ny\t\"\\""#), ["ECHO", "x\ny\t\"\\"]);
        assert_eq!(args(r#"ECHO 'it\'s' '\n'"#), ["ECHO", "it's", "\\n"]);
        assert_eq!(args(r#"ECHO """#), ["ECHO", ""]);
        assert_eq!(split_args(r#"ECHO "\x00\xff""#).unwrap()[1], vec![0, 0xff]);
        assert!(split_args(r#"ECHO "abc"#).is_err());
        assert!(split_args(r#"ECHO "a"b"#).is_err());
        assert!(split_args("ECHO 'abc").is_err());
    }

    #[test]
    fn parses_directives() {
        let steps = parse_case_file(
            "# comment\n\n@conn 2 @sort KEYS *\n@sleep 20\nGET k\n@mask id,version HELLO 3\n",
        )
        .unwrap();
        assert_eq!(steps.len(), 4);
        let Step::Command {
            line, opts, argv, ..
        } = &steps[0]
        else {
            panic!()
        };
        assert_eq!((*line, opts.conn, opts.sort), (3, 2, true));
        assert_eq!(argv, &[b"KEYS".to_vec(), b"*".to_vec()]);
        assert_eq!(steps[1], Step::Sleep { ms: 20 });
        let Step::Command { opts, .. } = &steps[3] else {
            panic!()
        };
        assert_eq!(opts.mask, [b"id".to_vec(), b"version".to_vec()]);
        assert!(parse_case_file("@bogus GET k").is_err());
        assert!(parse_case_file("@sleep 5 GET k").is_err());
        assert!(parse_case_file("@scanall GET k").is_err());
        assert!(parse_case_file("@conn 0 GET k").is_err());
        assert!(parse_case_file("@recv GET k").is_err());
        let steps = parse_case_file("@conn 2 @send BLPOP q 0\n@conn 2 @recv\n").unwrap();
        let Step::Command { opts, argv, .. } = &steps[1] else {
            panic!()
        };
        assert!(opts.recv && argv.is_empty() && opts.conn == 2);
    }

    #[test]
    fn reads_whole_replies() {
        let wire: &[u8] = b"+OK\r\n$-1\r\n*2\r\n$1\r\na\r\n*1\r\n:1\r\n%1\r\n+k\r\n~1\r\n,1.5\r\n\
|1\r\n+a\r\n#t\r\n_\r\n=7\r\ntxt:abc\r\n!3\r\nERR\r\n(12\r\n>1\r\n$0\r\n\r\n";
        let mut r = BufReader::new(wire);
        let mut got = Vec::new();
        while let Ok(one) = read_reply(&mut r) {
            assert_eq!(encoded(&parse_reply(&one)), one, "round trip");
            got.push(String::from_utf8(one).unwrap());
        }
        assert_eq!(
            got,
            [
                "+OK\r\n",
                "$-1\r\n",
                "*2\r\n$1\r\na\r\n*1\r\n:1\r\n",
                "%1\r\n+k\r\n~1\r\n,1.5\r\n",
                "|1\r\n+a\r\n#t\r\n_\r\n",
                "=7\r\ntxt:abc\r\n",
                "!3\r\nERR\r\n",
                "(12\r\n",
                ">1\r\n$0\r\n\r\n",
            ]
        );
    }

    #[test]
    fn normalisers() {
        let opts = |f: fn(&mut Directives)| {
            let mut d = Directives::default();
            f(&mut d);
            d
        };
        let arr = b"*3\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n";
        assert_eq!(
            normalise(arr, &opts(|d| d.sort = true), &NodeFacts::default()),
            b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
        );
        let pairs = b"*4\r\n$1\r\ny\r\n$1\r\n1\r\n$1\r\nx\r\n$1\r\n2\r\n";
        assert_eq!(
            normalise(pairs, &opts(|d| d.sortpairs = true), &NodeFacts::default()),
            b"*4\r\n$1\r\nx\r\n$1\r\n2\r\n$1\r\ny\r\n$1\r\n1\r\n"
        );
        assert_eq!(
            normalise(
                b"*2\r\n$3\r\nabc\r\n:5\r\n",
                &opts(|d| d.shape = true),
                &NodeFacts::default()
            ),
            b"*2\r\n$0\r\n\r\n:\r\n"
        );
        let hello = b"%2\r\n$2\r\nid\r\n:7\r\n$5\r\nproto\r\n:3\r\n";
        assert_eq!(
            normalise(
                hello,
                &opts(|d| d.mask = vec![b"id".to_vec()]),
                &NodeFacts::default()
            ),
            b"%2\r\n$2\r\nid\r\n+<masked>\r\n$5\r\nproto\r\n:3\r\n"
        );
        assert_eq!(
            normalise(
                b":99999\r\n",
                &opts(|d| d.round = Some(1000)),
                &NodeFacts::default()
            ),
            b":100000\r\n"
        );
        assert_eq!(
            normalise(
                b":-2\r\n",
                &opts(|d| d.round = Some(1000)),
                &NodeFacts::default()
            ),
            b":-2\r\n"
        );
        assert_eq!(
            normalise(
                b"+1795573454.150192 [0 127.0.0.1:54914] \"set\" \"a]:\"\r\n",
                &opts(|d| d.monitor = true),
                &NodeFacts::default()
            ),
            b"+<time> [0 127.0.0.1:<port>] \"set\" \"a]:\"\r\n"
        );
        assert_eq!(
            normalise(
                b"+1.000001 [5 lua] \"get\"\r\n",
                &opts(|d| d.monitor = true),
                &NodeFacts::default()
            ),
            b"+<time> [5 lua] \"get\"\r\n"
        );
        let me = NodeFacts::new(7101, Some(b"ab12".to_vec()));
        let slots = b"*3\r\n:7101\r\n:71010\r\n$26\r\nab12 :7101@17101 x 0-16383\r\n";
        assert_eq!(
            normalise(slots, &opts(|d| d.node = true), &me),
            b"*3\r\n+<port>\r\n:71010\r\n$32\r\n<myid> :<port>@<cport> x 0-16383\r\n"
        );
    }
}
