//! Redis 7's multi-part AOF: a directory (`appenddirname`) holding a base
//! file (an RDB, or commands), incremental files of commands appended
//! since, and the manifest that lists them in order
//! (`<appendfilename>.manifest`, one `file <name> seq <n> type <b|h|i>`
//! line per file). The manifest is the only truth: a file it does not
//! list is not loaded, so every change of layout is one atomic rename of
//! a new manifest over the old.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

/// What a listed file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The dataset as of the last rewrite.
    Base,
    /// Replaced by a rewrite, waiting to be deleted.
    History,
    /// Commands after the base, in order of `seq`.
    Incr,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::Base => 'b',
            Kind::History => 'h',
            Kind::Incr => 'i',
        }
    }
}

/// One listed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub name: String,
    pub seq: u64,
    pub kind: Kind,
}

/// Why a manifest does not read, in Redis's words.
#[derive(Debug, PartialEq, Eq)]
pub enum ManifestError {
    Empty,
    LineTooLong,
    Format,
    NotBaseName,
    DuplicateBase,
    NonMonotonic,
    UnknownType,
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ManifestError::Empty => "Found an empty AOF manifest",
            ManifestError::LineTooLong => "The AOF manifest file contains too long line",
            ManifestError::Format => "Invalid AOF manifest file format",
            ManifestError::NotBaseName => "File can't be a path, just a filename",
            ManifestError::DuplicateBase => "Found duplicate base file information",
            ManifestError::NonMonotonic => "Found a non-monotonic sequence number",
            ManifestError::UnknownType => "Unknown AOF file type",
        })
    }
}

/// A manifest error with the line it was found at (0: none).
#[derive(Debug)]
pub struct ManifestFault {
    pub line_number: usize,
    pub line: String,
    pub error: ManifestError,
}

/// Redis's longest manifest line.
const MAX_LINE: usize = 1024;

/// Where the files live and what they are called.
#[derive(Debug, Clone)]
pub struct Layout {
    /// `dir/appenddirname`.
    pub dir: PathBuf,
    /// `appendfilename`, the stem of every file's name.
    pub stem: String,
}

impl Layout {
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn manifest_path(&self) -> PathBuf {
        self.file(&format!("{}.manifest", self.stem))
    }

    /// Where records go while an AOF switched on at run time waits for
    /// its first base: listed only once that base is written.
    pub fn temp_incr_path(&self) -> PathBuf {
        self.file(&format!("temp-{}.incr", self.stem))
    }

    /// The manifest, if the directory has one.
    pub fn read_manifest(&self) -> std::io::Result<Option<Result<Manifest, ManifestFault>>> {
        match std::fs::read(self.manifest_path()) {
            Ok(text) => Ok(Some(Manifest::parse(&text))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes `manifest` whole or not at all: a temporary file, fsynced,
    /// renamed over the old one, and the directory fsynced.
    pub fn persist(&self, manifest: &Manifest) -> std::io::Result<()> {
        let path = self.manifest_path();
        let tmp = self.file(&format!("temp-{}.manifest", self.stem));
        let written = File::create(&tmp).and_then(|mut file| {
            file.write_all(manifest.render().as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&tmp, &path)
        });
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written?;
        super::sync_dir(&path);
        Ok(())
    }

    /// Deletes the history files and lists them no more.
    pub fn delete_history(&self, manifest: &mut Manifest) -> std::io::Result<()> {
        if manifest.history.is_empty() {
            return Ok(());
        }
        for part in manifest.history.drain(..) {
            tracing::info!("Removing the history file {} in the background", part.name);
            let _ = std::fs::remove_file(self.dir.join(&part.name));
        }
        self.persist(manifest)
    }

    /// The total size of the base and incremental files, and the base's.
    pub fn sizes(&self, manifest: &Manifest) -> (u64, u64) {
        let size = |p: &Part| std::fs::metadata(self.file(&p.name)).map_or(0, |m| m.len());
        let base = manifest.base.as_ref().map_or(0, size);
        (base + manifest.incrs.iter().map(size).sum::<u64>(), base)
    }
}

/// The files of a multi-part AOF, in the order they load.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<Part>,
    pub history: Vec<Part>,
    pub incrs: Vec<Part>,
    base_seq: u64,
    incr_seq: u64,
}

impl Manifest {
    /// Reads a manifest as Redis 7.0 does: `#` lines are comments, every
    /// other line names a file, its sequence number and its kind (keys
    /// it does not know are skipped, for files of later versions).
    pub fn parse(text: &[u8]) -> Result<Manifest, ManifestFault> {
        let mut manifest = Manifest::default();
        let mut max_seq = 0;
        let mut rest = text;
        let mut line_number = 0;
        if text.is_empty() {
            return Err(ManifestFault {
                line_number: 0,
                line: String::new(),
                error: ManifestError::Empty,
            });
        }
        while !rest.is_empty() {
            let (raw, newline) = match rest.iter().position(|&b| b == b'\n') {
                Some(end) => (&rest[..end], true),
                None => (rest, false),
            };
            rest = &rest[(raw.len() + 1).min(rest.len())..];
            line_number += 1;
            if raw.first() == Some(&b'#') {
                continue;
            }
            let line = String::from_utf8_lossy(raw).trim().to_string();
            let fault = |error| ManifestFault {
                line_number,
                line: line.clone(),
                error,
            };
            if !newline || raw.len() >= MAX_LINE {
                return Err(fault(ManifestError::LineTooLong));
            }
            let part = parse_line(&line).map_err(fault)?;
            match part.kind {
                Kind::Base => {
                    if manifest.base.is_some() {
                        return Err(fault(ManifestError::DuplicateBase));
                    }
                    manifest.base_seq = part.seq;
                    manifest.base = Some(part);
                }
                Kind::History => manifest.history.push(part),
                Kind::Incr => {
                    if part.seq <= max_seq {
                        return Err(fault(ManifestError::NonMonotonic));
                    }
                    max_seq = part.seq;
                    manifest.incr_seq = part.seq;
                    manifest.incrs.push(part);
                }
            }
        }
        Ok(manifest)
    }

    /// The text Redis writes: base, then history, then incremental files.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for part in self.base.iter().chain(&self.history).chain(&self.incrs) {
            out.push_str(&format!(
                "file {} seq {} type {}\n",
                quote_if_needed(&part.name),
                part.seq,
                part.kind.letter()
            ));
        }
        out
    }

    /// A manifest whose base is the single-file AOF of Redis before 7.0,
    /// named as it was.
    pub fn upgraded(name: &str) -> Manifest {
        Manifest {
            base: Some(Part {
                name: name.to_string(),
                seq: 1,
                kind: Kind::Base,
            }),
            base_seq: 1,
            ..Manifest::default()
        }
    }

    /// Lists a new base (`<stem>.<seq>.base.rdb|aof`), the old one
    /// becoming history; its name.
    pub fn new_base(&mut self, stem: &str, rdb: bool) -> String {
        if let Some(mut old) = self.base.take() {
            old.kind = Kind::History;
            self.history.insert(0, old);
        }
        self.base_seq += 1;
        let name = format!(
            "{stem}.{}.base.{}",
            self.base_seq,
            if rdb { "rdb" } else { "aof" }
        );
        self.base = Some(Part {
            name: name.clone(),
            seq: self.base_seq,
            kind: Kind::Base,
        });
        name
    }

    /// Lists a new incremental file (`<stem>.<seq>.incr.aof`); its name.
    pub fn new_incr(&mut self, stem: &str) -> String {
        self.incr_seq += 1;
        let name = format!("{stem}.{}.incr.aof", self.incr_seq);
        self.incrs.push(Part {
            name: name.clone(),
            seq: self.incr_seq,
            kind: Kind::Incr,
        });
        name
    }

    /// After a rewrite: the incremental files it covers become history,
    /// all of them, or all but the last when that one is still written to.
    pub fn retire_incrs(&mut self, keep_last: bool) {
        let keep = if keep_last { self.incrs.pop() } else { None };
        for mut part in self.incrs.drain(..).rev() {
            part.kind = Kind::History;
            self.history.insert(0, part);
        }
        self.incrs.extend(keep);
    }
}

fn parse_line(line: &str) -> Result<Part, ManifestError> {
    if line.is_empty() {
        return Err(ManifestError::Format);
    }
    let args = split_args(line).ok_or(ManifestError::Format)?;
    if args.len() < 6 || args.len() % 2 != 0 {
        return Err(ManifestError::Format);
    }
    let (mut name, mut seq, mut kind) = (None, 0u64, None);
    for pair in args.chunks(2) {
        let value = &pair[1];
        match pair[0].to_ascii_lowercase().as_str() {
            "file" => {
                if value.contains('/') {
                    return Err(ManifestError::NotBaseName);
                }
                name = Some(value.clone());
            }
            // Redis reads it with atoll: leading digits, else 0.
            "seq" => {
                let digits: String = value.chars().take_while(char::is_ascii_digit).collect();
                seq = digits.parse().unwrap_or(0);
            }
            "type" => kind = value.chars().next(),
            _ => {}
        }
    }
    let (Some(name), Some(kind)) = (name, kind) else {
        return Err(ManifestError::Format);
    };
    if seq == 0 {
        return Err(ManifestError::Format);
    }
    let kind = match kind {
        'b' => Kind::Base,
        'h' => Kind::History,
        'i' => Kind::Incr,
        _ => return Err(ManifestError::UnknownType),
    };
    Ok(Part { name, seq, kind })
}

/// Splits a line into words; a word in double quotes may hold spaces
/// and `\"`, `\\`, `\n`, `\r`, `\t` and `\xHH` escapes (what Redis writes
/// for a file name that needs them).
fn split_args(line: &str) -> Option<Vec<String>> {
    let mut args = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return Some(args);
        };
        let mut word = String::new();
        if first == '"' {
            chars.next();
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => word.push(match chars.next()? {
                        'n' => '\n',
                        'r' => '\r',
                        't' => '\t',
                        'x' => {
                            let hex: String = [chars.next()?, chars.next()?].iter().collect();
                            char::from(u8::from_str_radix(&hex, 16).ok()?)
                        }
                        c => c,
                    }),
                    c => word.push(c),
                }
            }
            if chars.peek().is_some_and(|c| !c.is_whitespace()) {
                return None;
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                word.push(c);
            }
        }
        args.push(word);
    }
}

/// A name as Redis writes it: bare, or quoted with escapes when it holds
/// spaces, quotes, backslashes or unprintable bytes.
fn quote_if_needed(name: &str) -> String {
    let plain = |c: char| c.is_ascii_graphic() && c != '"' && c != '\\' && c != '\'';
    if name.chars().all(plain) {
        return name.to_string();
    }
    let mut out = String::from("\"");
    for c in name.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_graphic() || c == ' ' => out.push(c),
            c => {
                let mut buf = [0; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_back_as_written_and_rotates_as_redis_rotates() {
        let mut manifest = Manifest::default();
        assert_eq!(
            manifest.new_base("appendonly.aof", true),
            "appendonly.aof.1.base.rdb"
        );
        assert_eq!(
            manifest.new_incr("appendonly.aof"),
            "appendonly.aof.1.incr.aof"
        );
        manifest.new_incr("appendonly.aof");
        assert_eq!(
            manifest.new_base("appendonly.aof", false),
            "appendonly.aof.2.base.aof"
        );
        manifest.retire_incrs(true);
        // Redis puts the retired files at the history's head, after the
        // old base went there.
        let text = manifest.render();
        assert_eq!(
            text,
            "file appendonly.aof.2.base.aof seq 2 type b\n\
             file appendonly.aof.1.incr.aof seq 1 type h\n\
             file appendonly.aof.1.base.rdb seq 1 type h\n\
             file appendonly.aof.2.incr.aof seq 2 type i\n"
        );
        assert_eq!(Manifest::parse(text.as_bytes()).unwrap(), manifest);
        let quoted = Manifest::upgraded("my \"aof\"");
        assert_eq!(quoted.render(), "file \"my \\\"aof\\\"\" seq 1 type b\n");
        assert_eq!(Manifest::parse(quoted.render().as_bytes()).unwrap(), quoted);
    }

    #[test]
    fn bad_manifests_fail_with_redis_reasons() {
        let error = |text: &str| Manifest::parse(text.as_bytes()).unwrap_err().error;
        assert_eq!(error(""), ManifestError::Empty);
        assert_eq!(error("file a seq 1 type b"), ManifestError::LineTooLong);
        assert_eq!(error("file a seq 1\n"), ManifestError::Format);
        assert_eq!(error("\n"), ManifestError::Format);
        assert_eq!(error("file a/b seq 1 type b\n"), ManifestError::NotBaseName);
        assert_eq!(error("file a seq x type b\n"), ManifestError::Format);
        assert_eq!(error("file a seq 1 type x\n"), ManifestError::UnknownType);
        assert_eq!(
            error("file a seq 1 type b\nfile b seq 2 type b\n"),
            ManifestError::DuplicateBase
        );
        assert_eq!(
            error("file a seq 2 type i\nfile b seq 2 type i\n"),
            ManifestError::NonMonotonic
        );
        let read = Manifest::parse(b"# comment\nfile a seq 1 type i extra 1\n").unwrap();
        assert_eq!(read.incrs.len(), 1);
    }
}
