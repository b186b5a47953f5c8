//! Arguments several families parse alike: SCAN's options, expiry times,
//! and the limit on a random reply's repeats.

use bytes::Bytes;

use crate::error::{CmdError, CmdResult};
use crate::util::{parse_cursor, parse_i64};

/// The most members SRANDMEMBER, HRANDFIELD or ZRANDMEMBER with a negative
/// count returns. Redis tries to send any number and runs out of memory;
/// rlockd refuses.
pub const RANDOM_REPEATS_MAX: u64 = 10_000_000;

/// The options SCAN and HSCAN share.
pub struct ScanOptions {
    pub cursor: u64,
    pub pattern: Option<Bytes>,
    pub count: usize,
    pub type_name: Option<String>,
}

pub fn parse_scan(args: &[Bytes], allow_type: bool) -> CmdResult<ScanOptions> {
    let cursor = parse_cursor(&args[0]).ok_or(CmdError::InvalidCursor)?;
    let mut opts = ScanOptions {
        cursor,
        pattern: None,
        count: 10,
        type_name: None,
    };
    let mut i = 1;
    while i < args.len() {
        let opt = args[i].to_ascii_lowercase();
        let value = args.get(i + 1).ok_or(CmdError::Syntax)?;
        match &opt[..] {
            b"count" => {
                let n = parse_i64(value).ok_or(CmdError::NotInteger)?;
                if n < 1 {
                    return Err(CmdError::Syntax);
                }
                opts.count = n as usize;
            }
            // A lone `*` matches everything, the empty key included.
            b"match" => opts.pattern = (&value[..] != b"*").then(|| value.clone()),
            b"type" if allow_type => {
                opts.type_name = Some(String::from_utf8_lossy(value).to_ascii_lowercase())
            }
            _ => return Err(CmdError::Syntax),
        }
        i += 2;
    }
    Ok(opts)
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Millis,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// The time is a duration from now.
    Relative,
    /// The time is a Unix timestamp.
    Absolute,
}

/// Turns a time argument into an absolute deadline in milliseconds,
/// refusing values that would overflow as Redis does.
pub fn deadline_ms(
    raw: &[u8],
    unit: Unit,
    base: Base,
    now: u64,
    cmd: &'static str,
) -> CmdResult<i64> {
    let n = parse_i64(raw).ok_or(CmdError::NotInteger)?;
    let invalid = CmdError::InvalidExpireTime(cmd);
    let ms = match unit {
        Unit::Seconds => n.checked_mul(1000).ok_or(invalid.clone())?,
        Unit::Millis => n,
    };
    match base {
        Base::Absolute => Ok(ms),
        Base::Relative => ms.checked_add(now as i64).ok_or(invalid),
    }
}
