//! Redis's checks of a directive's value, with its error texts.

use crate::util::parse_i64;

pub(super) fn parse_yes_no(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("argument must be 'yes' or 'no'".into()),
    }
}

pub(super) fn parse_num(v: &str) -> Result<u64, String> {
    v.parse::<u64>()
        .map_err(|_| "argument couldn't be parsed into an integer".into())
}

pub(super) fn out_of_range(min: impl std::fmt::Display, max: impl std::fmt::Display) -> String {
    format!("argument must be between {min} and {max} inclusive")
}

/// A signed integer (Redis's strict form: no `+`, no leading zeros)
/// within the parameter's bounds.
pub(super) fn parse_int_in(v: &str, min: i64, max: i64) -> Result<i64, String> {
    let n = parse_i64(v.as_bytes())
        .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
    if n < min || n > max {
        return Err(out_of_range(min, max));
    }
    Ok(n)
}

pub(super) fn parse_bounded(v: &str, min: i64) -> Result<i64, String> {
    parse_int_in(v, min, i64::MAX)
}

/// An `int` setting of Redis's: within `min` and `i32::MAX`.
pub(super) fn parse_int(v: &str, min: i64) -> Result<i64, String> {
    parse_int_in(v, min, i32::MAX.into())
}

/// A count Redis keeps in a `size_t` limited to `LONG_MAX`.
pub(super) fn parse_count(v: &str) -> Result<u64, String> {
    parse_bounded(v, 0).map(|n| n as u64)
}

/// Memory sizes with Redis's units (`1mb`, `2gb`, `100k`), read as
/// Redis's `memtoull` reads them: digits alone (none is 0), a number too
/// large saturates, and a unit that overflows wraps.
pub(crate) fn parse_memory(v: &str) -> Result<u64, String> {
    let bad = || "argument must be a memory value".to_string();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, unit) = v.split_at(split);
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return Err(bad()),
    };
    if digits.len() >= 128 {
        return Err(bad());
    }
    let n = digits.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    });
    Ok(n.wrapping_mul(mult))
}

/// A memory size Redis keeps in a `size_t` limited to `LONG_MAX`.
pub(super) fn parse_memory_size(v: &str) -> Result<u64, String> {
    parse_memory_in(v, 0)
}

/// A memory size of at least `min`, at most `LONG_MAX`.
pub(super) fn parse_memory_in(v: &str, min: u64) -> Result<u64, String> {
    let n = parse_memory(v)?;
    if n < min || n > i64::MAX as u64 {
        return Err(out_of_range(min, i64::MAX));
    }
    Ok(n)
}

/// An integer within bounds, kept as its text.
pub(super) fn int_text(v: &str, min: i64, max: i64) -> Result<String, String> {
    parse_int_in(v, min, max).map(|n| n.to_string())
}

/// `maxmemory-clients`: bytes (with units), or a share of `maxmemory`
/// written `N%`.
pub(super) fn parse_memory_or_percent(v: &str) -> Result<String, String> {
    let bad = || "argument must be a memory or percent value".to_string();
    if let Some(digits) = v.strip_suffix('%') {
        let n = parse_i64(digits.as_bytes())
            .filter(|n| *n >= 0)
            .ok_or_else(bad)?;
        if n > 100 {
            return Err("percentage argument must be less or equal to 100".into());
        }
        return Ok(format!("{n}%"));
    }
    parse_memory_size(v)
        .map(|n| n.to_string())
        .map_err(|_| bad())
}

pub(super) fn parse_enum(v: &str, allowed: &[&str]) -> Result<String, String> {
    let lower = v.to_ascii_lowercase();
    if allowed.contains(&lower.as_str()) {
        Ok(lower)
    } else {
        Err(not_one_of(allowed))
    }
}

/// Redis's error for a value not among an enum's names.
pub(super) fn not_one_of(allowed: &[&str]) -> String {
    "argument(s) must be one of the following: ".to_string() + &allowed.join(", ")
}

pub(super) fn text(v: &str) -> Result<String, String> {
    Ok(v.to_string())
}

/// Most `bind` addresses Redis takes (its `CONFIG_BINDADDR_MAX`).
const MAX_BIND_ADDRS: usize = 16;

/// `bind`'s addresses, space-separated as a file line or the flag's words
/// arrive joined; "" is none (no TCP listener), as in Redis.
pub(super) fn bind_list(v: &str) -> Result<Vec<String>, String> {
    if v.is_empty() {
        return Ok(Vec::new());
    }
    let addrs: Vec<String> = v.split(' ').map(String::from).collect();
    if addrs.len() > MAX_BIND_ADDRS {
        return Err("Too many bind addresses specified.".into());
    }
    Ok(addrs)
}

/// A file or folder name in `dir`, never a path, as Redis takes one.
pub(super) fn bare_name(v: &str, refusal: &str) -> Result<String, String> {
    if v.is_empty() || v.contains('/') {
        return Err(refusal.to_string());
    }
    text(v)
}

/// CONFIG SET client-output-buffer-limit: `<class> <hard> <soft>
/// <soft-seconds>` groups (sizes may carry units) replace those classes'
/// limits in `current`; the result is in Redis's form, in bytes.
pub(super) fn merge_buffer_limits(current: &str, value: &str) -> Result<String, String> {
    const CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];
    let mut limits: Vec<[u64; 3]> = CLASSES
        .iter()
        .map(|class| {
            let words: Vec<&str> = current.split_whitespace().collect();
            words
                .chunks(4)
                .find(|c| c.len() == 4 && c[0] == *class)
                .and_then(|c| Some([c[1].parse().ok()?, c[2].parse().ok()?, c[3].parse().ok()?]))
                .unwrap_or([0, 0, 0])
        })
        .collect();
    let words: Vec<&str> = value.split_whitespace().collect();
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    for group in words.chunks(4) {
        let class = match group[0].to_ascii_lowercase().as_str() {
            "normal" => 0,
            "slave" | "replica" => 1,
            "pubsub" => 2,
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into());
            }
        };
        let invalid =
            || "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
        let hard = parse_memory(group[1]).map_err(|_| invalid())?;
        let soft = parse_memory(group[2]).map_err(|_| invalid())?;
        let secs = group[3].parse::<u64>().map_err(|_| invalid())?;
        limits[class] = [hard, soft, secs];
    }
    Ok(CLASSES
        .iter()
        .zip(&limits)
        .map(|(class, [hard, soft, secs])| format!("{class} {hard} {soft} {secs}"))
        .collect::<Vec<_>>()
        .join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("100"), Ok(100));
        assert_eq!(parse_memory("1mb"), Ok(1 << 20));
        assert_eq!(parse_memory("2GB"), Ok(2 << 30));
        assert_eq!(parse_memory(""), Ok(0));
        assert!(parse_memory("x").is_err());
        assert!(parse_memory("-1").is_err());
        assert!(parse_memory(" 5").is_err());
        assert!(parse_memory_size("9223372036854775808").is_err());
        assert_eq!(
            parse_memory_size("9223372036854775807"),
            Ok(i64::MAX as u64)
        );
    }

    #[test]
    fn integers_are_read_strictly() {
        assert_eq!(
            parse_count("05"),
            Err("argument couldn't be parsed into an integer".into())
        );
        assert!(parse_count("+5").is_err());
        assert_eq!(
            parse_count("-1"),
            Err("argument must be between 0 and 9223372036854775807 inclusive".into())
        );
        assert_eq!(
            parse_int_in("-70000", i32::MIN.into(), i32::MAX.into()),
            Ok(-70000)
        );
    }

    #[test]
    fn buffer_limits_merge_by_class() {
        let default = Config::default().client_output_buffer_limit;
        assert_eq!(
            merge_buffer_limits(&default, "pubsub 1mb 512kb 10").unwrap(),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 10"
        );
        assert_eq!(
            merge_buffer_limits(&default, "replica 1 2 3 normal 4 5 6").unwrap(),
            "normal 4 5 6 slave 1 2 3 pubsub 33554432 8388608 60"
        );
        assert_eq!(merge_buffer_limits(&default, "").unwrap(), default);
        assert!(merge_buffer_limits(&default, "pubsub 1mb 512kb").is_err());
        assert!(merge_buffer_limits(&default, "foo 1 1 1").is_err());
        assert!(merge_buffer_limits(&default, "pubsub -1 1 1").is_err());
        assert!(merge_buffer_limits(&default, "pubsub 1 1 -1").is_err());
    }
}
