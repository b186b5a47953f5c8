//! Number parsing and formatting with Redis's exact rules, and glob matching.

pub mod alloc;
pub(crate) mod bits;
pub(crate) mod geohash;
mod glob;
pub(crate) mod hll;
pub(crate) mod long_double;
pub(crate) mod scan;
pub(crate) mod stripe;

pub(crate) use glob::glob_match;

/// An OS error as C's `strerror` words it, the way Redis reports one:
/// Rust's text without its ` (os error N)` tail.
pub fn os_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Redis's quoting of an argument: in double quotes, with `\` and `"`
/// escaped, the usual C escapes, and `\xhh` for what is not printable.
pub(crate) fn quote(out: &mut Vec<u8>, arg: &[u8]) {
    out.push(b'"');
    for &b in arg {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// Parses a signed 64-bit integer as Redis's `string2ll` does: no sign but
/// `-`, no leading zeros, no spaces.
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    if digits[0] == b'0' {
        return (digits.len() == 1 && !neg).then_some(0);
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i128).wrapping_neg() as i64)
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// A SCAN cursor, read as C's `strtoul` reads it: a sign is allowed and a
/// negative number wraps around.
pub(crate) fn parse_cursor(s: &[u8]) -> Option<u64> {
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// A hexadecimal float as `strtold` reads it (`0x1.8p3`), sign excluded.
fn parse_hex_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    let (mantissa, exp) = match body.find(['p', 'P']) {
        Some(i) => (&body[..i], body[i + 1..].parse::<i32>().ok()?),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + c.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += c.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    Some(v * 2f64.powi(exp))
}

pub(crate) fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || (s[0] == b'0' && s.len() > 1) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in s {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some(v)
}

/// Parses a float as Redis's `strtold`-based helpers do: no surrounding
/// spaces, no NaN; `inf` and exponents are accepted.
pub(crate) fn parse_f64(s: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(s).ok()?;
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let v: f64 = match text.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        lower if lower.contains("nan") || lower.contains("inf") => return None,
        lower if lower.trim_start_matches(['+', '-']).starts_with("0x") => {
            let v = parse_hex_float(lower.trim_start_matches(['+', '-']))?;
            if lower.starts_with('-') { -v } else { v }
        }
        _ => text.parse().ok()?,
    };
    Some(v)
}

/// Whether C's `strtod` would have failed with ERANGE where `parse_f64`
/// gave `value`: a finite spelling that overflowed to infinity, or digits
/// that underflowed to zero (or to a subnormal, which glibc also flags).
pub(crate) fn strtod_range_error(text: &[u8], value: f64) -> bool {
    let spelled_infinite = text.iter().any(|b| b.eq_ignore_ascii_case(&b'i'));
    let has_digit = text
        .iter()
        .take_while(|b| !matches!(b, b'e' | b'E' | b'p' | b'P'))
        .any(|b| (b'1'..=b'9').contains(b));
    (value.is_infinite() && !spelled_infinite)
        || (has_digit && (value == 0.0 || value.is_subnormal()))
}

/// C's `%.17g`, which Redis 7.0 uses for double replies (scores, RESP3 doubles).
pub(crate) fn format_double(d: f64) -> String {
    format_g(d, 17)
}

/// `format_double` appended to `out`: an integer (a Lua number passed to
/// `redis.call`, the common case) is written with no string made for it.
pub(crate) fn push_double(d: f64, out: &mut Vec<u8>) {
    match printed_integer(d, 17) {
        Some(n) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
        None => out.extend_from_slice(format_double(d).as_bytes()),
    }
}

/// An integer with no more digits than the precision, which `%.<precision>g`
/// prints as itself: kept off the float formatter. Zero is left to it
/// (`-0`).
pub(crate) fn printed_integer(d: f64, precision: i32) -> Option<i64> {
    (d != 0.0
        && d.fract() == 0.0
        && (1..=18).contains(&precision)
        && d.abs() < 10u64.pow(precision as u32) as f64)
        .then_some(d as i64)
}

/// C's `%.<precision>g`.
pub(crate) fn format_g(d: f64, precision: i32) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.into();
    }
    if let Some(n) = printed_integer(d, precision) {
        return itoa::Buffer::new().format(n).to_string();
    }
    if let Some(text) = exact_short(d, precision) {
        return text;
    }
    let sci = format!("{:.*e}", (precision - 1) as usize, d);
    let (digits, exp) = split_sci(&sci);
    g_from_digits(d < 0.0, &digits, exp, precision)
}

/// Exact powers of ten as doubles (10^22 is the last one a double holds).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `%.<precision>g` of `d` when its shortest decimal form (which the
/// fast shortest-digits formatter finds) is exactly its value, with no
/// more digits than the precision: then those are the digits C prints.
/// That is a score like 2.5 or 0.125, which the exact formatter (asked
/// for 17 digits) takes its slowest path for, thousands of instructions.
fn exact_short(d: f64, precision: i32) -> Option<String> {
    let shortest = format!("{d:e}");
    let (digits, exp) = split_sci(&shortest);
    let fraction_digits = usize::try_from(digits.len() as i32 - 1 - exp).ok()?;
    let scaled: u64 = digits.parse().ok()?;
    let fits = digits.len() as i32 <= precision
        && (1..POW10.len()).contains(&fraction_digits)
        && scaled < 1 << f64::MANTISSA_DIGITS;
    // |d| * 10^k - M with one rounding: zero only when |d| is M / 10^k.
    let exact = fits && d.abs().mul_add(POW10[fraction_digits], -(scaled as f64)) == 0.0;
    exact.then(|| g_from_digits(d < 0.0, &digits, exp, precision))
}

/// A `{:e}` rendering's significant digits (no sign, no point) and its
/// decimal exponent.
fn split_sci(sci: &str) -> (String, i32) {
    let (mantissa, exp) = sci.split_once('e').expect("exponent form");
    let digits = mantissa
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(char::from)
        .collect();
    (digits, exp.parse().expect("exponent digits"))
}

/// C's `%.<precision>g` of a finite, nonzero number from its significant
/// digits (at most `precision` of them) and decimal exponent: the
/// exponent form outside [-4, precision), else the fixed form, without
/// trailing zeros after the point.
fn g_from_digits(negative: bool, digits: &str, exp: i32, precision: i32) -> String {
    let digits = digits.trim_end_matches('0');
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if !(-4..precision).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(if exp < 0 { "e-" } else { "e+" });
        if exp.abs() < 10 {
            out.push('0');
        }
        out.push_str(itoa::Buffer::new().format(exp.abs()));
    } else if exp >= 0 {
        let int = exp as usize + 1;
        if digits.len() <= int {
            out.push_str(digits);
            out.extend(std::iter::repeat_n('0', int - digits.len()));
        } else {
            out.push_str(&digits[..int]);
            out.push('.');
            out.push_str(&digits[int..]);
        }
    } else {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
        out.push_str(digits);
    }
    out
}

/// C's `%.17Lf` with trailing zeros (and a bare point) cut: how Redis
/// prints coordinates.
pub(crate) fn format_fixed17(d: f64) -> String {
    let text = format!("{d:.17}");
    if !d.is_finite() {
        return text;
    }
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub(crate) fn i64_bytes(n: i64) -> bytes::Bytes {
    bytes::Bytes::copy_from_slice(itoa::Buffer::new().format(n).as_bytes())
}

/// Random lowercase hex digits: run ids, cluster node ids.
pub(crate) fn random_hex(len: usize) -> String {
    use rand::RngExt;
    let mut rng = rand::rng();
    (0..len)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"01",
            b"-0",
            b"+1",
            b" 1",
            b"1 ",
            b"1.5",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    /// C's own printf agrees, over doubles of every magnitude, whole
    /// numbers, short binary fractions and the precisions in use.
    #[test]
    fn format_g_is_printf() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for i in 0..30_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let d = match i % 4 {
                0 => f64::from_bits(state),
                1 => (state >> 11) as f64 / 1024.0,
                2 => (state % 200_000) as f64 / 8.0 - 10_000.0,
                _ => (state % 1_000_000) as f64 * 1e-9,
            };
            if !d.is_finite() {
                continue;
            }
            for precision in [17, 14, 3, 1] {
                let format = std::ffi::CString::new(format!("%.{precision}g")).unwrap();
                let mut buf = [0u8; 64];
                // SAFETY: `buf` is writable for its 64 bytes and snprintf
                // writes at most that many, its NUL included; the format
                // takes exactly the one double passed.
                let n = unsafe {
                    libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), format.as_ptr(), d)
                };
                let printf = std::str::from_utf8(&buf[..n as usize]).unwrap();
                assert_eq!(format_g(d, precision), printf, "{d:e} at {precision}");
            }
        }
    }

    #[test]
    fn percent_17g() {
        assert_eq!(format_double(1.0), "1");
        assert_eq!(format_double(1.5), "1.5");
        assert_eq!(format_double(0.1), "0.10000000000000001");
        assert_eq!(format_double(922337203685477.0), "922337203685477");
        assert_eq!(format_double(1e17), "1e+17");
        assert_eq!(format_double(-42.0), "-42");
        assert_eq!(format_double(99999999999999984.0), "99999999999999984");
        assert_eq!(format_g(12345.0, 3), "1.23e+04");
        assert_eq!(format_double(1e-5), "1.0000000000000001e-05");
        assert_eq!(format_double(-2.5), "-2.5");
        assert_eq!(format_double(f64::INFINITY), "inf");
    }

    #[test]
    fn floats() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"5.0e3"), Some(5000.0));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"abc"), None);
        assert_eq!(parse_f64(b"0x10"), Some(16.0));
        assert_eq!(parse_f64(b"-0x1.8p1"), Some(-3.0));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b" 1"), None);
    }
}
