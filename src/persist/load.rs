//! Reading an append-only file back, with Redis's verdicts: a file that
//! ends inside a record (a write torn by a crash) was cut short, which
//! `aof-load-truncated yes` repairs by truncating it at the last whole
//! record (a MULTI without its EXEC counts as torn too); anything else
//! that is not RESP commands is a bad format, and the server must not start.

use bytes::Bytes;

/// How a file's contents read.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Every byte was whole commands.
    Complete,
    /// It ends inside a record: only the commands before `valid_up_to`
    /// were returned.
    Truncated { valid_up_to: u64 },
    /// Not an AOF.
    BadFormat,
}

/// The commands of a file, in order (MULTI and EXEC included), and its verdict.
pub struct Loaded {
    pub commands: Vec<Vec<Bytes>>,
    pub verdict: Verdict,
}

enum Step {
    Command(Vec<Bytes>),
    Eof,
    Torn,
    Bad,
}

/// Reads a line ending in CRLF at `pos`: `None` if the file ends first.
fn line(data: &[u8], pos: &mut usize) -> Option<Vec<u8>> {
    let rest = &data[*pos..];
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    *pos += end + 2;
    Some(rest[..end].to_vec())
}

fn number(text: &[u8]) -> Option<usize> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

fn step(data: &Bytes, pos: &mut usize) -> Step {
    if *pos == data.len() {
        return Step::Eof;
    }
    let Some(head) = line(data, pos) else {
        return if data[*pos] == b'*' {
            Step::Torn
        } else {
            Step::Bad
        };
    };
    let Some(argc) = head.strip_prefix(b"*").and_then(number).filter(|&n| n >= 1) else {
        return Step::Bad;
    };
    let mut args = Vec::with_capacity(argc.min(1024));
    for _ in 0..argc {
        if *pos == data.len() {
            return Step::Torn;
        }
        let Some(len_line) = line(data, pos) else {
            return if data[*pos] == b'$' {
                Step::Torn
            } else {
                Step::Bad
            };
        };
        let Some(len) = len_line.strip_prefix(b"$").and_then(number) else {
            return Step::Bad;
        };
        if data.len() - *pos < len + 2 {
            return Step::Torn;
        }
        args.push(data.slice(*pos..*pos + len));
        *pos += len + 2;
    }
    Step::Command(args)
}

fn is(arg: &[u8], name: &str) -> bool {
    arg.eq_ignore_ascii_case(name.as_bytes())
}

/// Splits a file into commands.
pub fn parse(data: Bytes) -> Loaded {
    let mut commands = Vec::new();
    let mut pos = 0;
    let mut valid = 0;
    // Where the open MULTI began, and how many commands came before it.
    let mut multi: Option<(usize, usize)> = None;
    let verdict = loop {
        match step(&data, &mut pos) {
            Step::Command(args) => {
                if is(&args[0], "multi") {
                    multi = Some((valid, commands.len()));
                } else if is(&args[0], "exec") {
                    multi = None;
                }
                commands.push(args);
                valid = pos;
            }
            Step::Eof => break Verdict::Complete,
            Step::Torn => break Verdict::Truncated { valid_up_to: 0 },
            Step::Bad => break Verdict::BadFormat,
        }
    };
    let verdict = match (verdict, multi) {
        (Verdict::BadFormat, _) => Verdict::BadFormat,
        (_, Some((at, count))) => {
            commands.truncate(count);
            Verdict::Truncated {
                valid_up_to: at as u64,
            }
        }
        (Verdict::Truncated { .. }, None) => Verdict::Truncated {
            valid_up_to: valid as u64,
        },
        (Verdict::Complete, None) => Verdict::Complete,
    };
    Loaded { commands, verdict }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(text: &[u8]) -> (usize, Verdict) {
        let loaded = parse(Bytes::copy_from_slice(text));
        (loaded.commands.len(), loaded.verdict)
    }

    #[test]
    fn whole_torn_and_bad_files() {
        let set = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
        assert_eq!(verdict(set), (1, Verdict::Complete));
        assert_eq!(verdict(b""), (0, Verdict::Complete));
        for cut in 1..set.len() {
            let mut text = set.to_vec();
            text.extend_from_slice(&set[..cut]);
            assert_eq!(
                verdict(&text),
                (
                    1,
                    Verdict::Truncated {
                        valid_up_to: set.len() as u64
                    }
                ),
                "cut at {cut}"
            );
        }
        assert_eq!(verdict(b"garbage\r\n").1, Verdict::BadFormat);
        let mut text = set.to_vec();
        text.extend_from_slice(b"*1\r\n+OK\r\n");
        assert_eq!(verdict(&text).1, Verdict::BadFormat);
    }

    #[test]
    fn a_multi_without_exec_is_torn() {
        let mut text = b"*1\r\n$5\r\nMULTI\r\n*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n".to_vec();
        assert_eq!(verdict(&text), (0, Verdict::Truncated { valid_up_to: 0 }));
        text.extend_from_slice(b"*1\r\n$4\r\nEXEC\r\n");
        assert_eq!(verdict(&text), (3, Verdict::Complete));
    }
}
