//! The `long double` arithmetic INCRBYFLOAT and HINCRBYFLOAT do in Redis.
//!
//! Redis reads both operands with `strtold`, adds them in x86-64's 80-bit
//! extended precision (64-bit significand) and stores `%.17Lf` with the
//! trailing zeros cut. Doing the same in `f64` loses integers past 2^53
//! (`INCRBYFLOAT k 9223372036854775807` must answer that number, not
//! `...6000`) and shows binary noise Redis's extra precision rounds away
//! (`0.1 + 0.2` is `0.3`). The arithmetic is `rustc_apfloat`'s software
//! x87 format; the decimal expansion is exact, so the text is glibc's
//! byte for byte.

use num_bigint::BigUint;
use rustc_apfloat::ieee::X87DoubleExtended;
use rustc_apfloat::{Float, Status};

/// Redis refuses numbers this long or longer (`MAX_LONG_DOUBLE_CHARS`).
const MAX_CHARS: usize = 5 * 1024;

/// Digits after the point in `%.17Lf`.
const FRACTION_DIGITS: usize = 17;
const FRACTION_SCALE: u128 = 10u128.pow(FRACTION_DIGITS as u32);

/// An x87 extended-precision number.
#[derive(Clone, Copy, Debug)]
pub struct LongDouble(X87DoubleExtended);

/// The sum, rounded to nearest (ties to even) as the x87 unit does.
impl std::ops::Add for LongDouble {
    type Output = LongDouble;

    fn add(self, other: LongDouble) -> LongDouble {
        LongDouble((self.0 + other.0).value)
    }
}

impl LongDouble {
    pub const ZERO: LongDouble = LongDouble(X87DoubleExtended::ZERO);

    /// Reads `text` as Redis's `string2ld` does: all of it must be one
    /// `strtold` number (decimal, hexadecimal or infinity), with no
    /// leading space; NaN, and finite spellings that overflow to infinity
    /// or underflow to zero, are refused.
    pub fn parse(text: &[u8]) -> Option<LongDouble> {
        if text.is_empty() || text.len() >= MAX_CHARS {
            return None;
        }
        let text = std::str::from_utf8(text).ok()?;
        let (negative, body) = match text.as_bytes()[0] {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let magnitude = if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity")
        {
            X87DoubleExtended::INFINITY
        } else {
            let spelled = strtold_spelling(body)?;
            let parsed = spelled.parse_with_apfloat()?;
            let out_of_range = (parsed.status.contains(Status::OVERFLOW)
                && parsed.value.is_infinite())
                || (parsed.status.contains(Status::UNDERFLOW) && parsed.value.is_zero());
            if out_of_range {
                return None;
            }
            parsed.value
        };
        Some(LongDouble(if negative { -magnitude } else { magnitude }))
    }

    pub fn is_finite(self) -> bool {
        self.0.is_finite()
    }

    /// Redis's human form of a finite number (`ld2string`'s
    /// `LD_STR_HUMAN`): `%.17Lf`, trailing zeros and a bare point cut, and
    /// a negative number that rounds to zero written `0`.
    pub fn to_human(self) -> String {
        let bits = self.0.to_bits();
        let negative = bits >> 79 & 1 == 1;
        let biased = (bits >> 64) as i32 & 0x7fff;
        let significand = bits as u64;
        // A denormal has the smallest normal exponent; the integer bit is
        // explicit in this format, so neither case adds a hidden one.
        let exponent = biased.max(1) - 16383 - 63;
        let (integer, fraction) = if exponent >= 0 {
            // An integer: its fraction is all zeros.
            (
                (BigUint::from(significand) << exponent as u32).to_string(),
                0,
            )
        } else {
            let scaled = scale_down_rounded(u128::from(significand) * FRACTION_SCALE, -exponent);
            (
                (scaled / FRACTION_SCALE).to_string(),
                scaled % FRACTION_SCALE,
            )
        };
        let mut text = String::with_capacity(integer.len() + FRACTION_DIGITS + 2);
        if negative {
            text.push('-');
        }
        text.push_str(&integer);
        if fraction != 0 {
            let digits = format!("{fraction:0width$}", width = FRACTION_DIGITS);
            text.push('.');
            text.push_str(digits.trim_end_matches('0'));
        }
        if text == "-0" {
            text.remove(0);
        }
        text
    }
}

/// `n / 2^shift`, rounded to nearest with ties to even, as glibc's
/// `printf` rounds the exact binary value to the digits it prints.
fn scale_down_rounded(n: u128, shift: i32) -> u128 {
    // `n` is below 2^121, so from 2^128 on it is under half a unit.
    if shift >= 128 {
        return 0;
    }
    let shift = shift as u32;
    let quotient = n >> shift;
    let remainder = n & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    if remainder > half || (remainder == half && quotient & 1 == 1) {
        quotient + 1
    } else {
        quotient
    }
}

/// A number's text checked against `strtold`'s grammar, which every
/// byte must match: `rustc_apfloat` reads a slightly different one.
enum Spelling<'a> {
    Decimal(&'a str),
    /// Hex digits with a point and maybe a `p` exponent, `0x` cut.
    Hex(&'a str, bool),
}

fn strtold_spelling(body: &str) -> Option<Spelling<'_>> {
    let (hex, digits) = match body.get(..2) {
        Some(prefix) if prefix.eq_ignore_ascii_case("0x") => (true, &body[2..]),
        _ => (false, body),
    };
    let is_digit = |c: u8| {
        if hex {
            c.is_ascii_hexdigit()
        } else {
            c.is_ascii_digit()
        }
    };
    let bytes = digits.as_bytes();
    let mut at = 0;
    let mut mantissa_digits = 0;
    while at < bytes.len() && is_digit(bytes[at]) {
        at += 1;
        mantissa_digits += 1;
    }
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        while at < bytes.len() && is_digit(bytes[at]) {
            at += 1;
            mantissa_digits += 1;
        }
    }
    if mantissa_digits == 0 {
        return None;
    }
    let marker = if hex { b'p' } else { b'e' };
    let has_exponent = bytes
        .get(at)
        .is_some_and(|c| c.eq_ignore_ascii_case(&marker));
    if has_exponent {
        at += 1;
        if matches!(bytes.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        if at == start {
            return None;
        }
    }
    if at != bytes.len() {
        return None;
    }
    Some(if hex {
        Spelling::Hex(digits, has_exponent)
    } else {
        Spelling::Decimal(digits)
    })
}

impl Spelling<'_> {
    fn parse_with_apfloat(&self) -> Option<rustc_apfloat::StatusAnd<X87DoubleExtended>> {
        let text = match self {
            Spelling::Decimal(digits) => digits.to_string(),
            // Its reader wants an exponent; `strtold`'s default is `p0`.
            Spelling::Hex(digits, true) => format!("0x{digits}"),
            Spelling::Hex(digits, false) => format!("0x{digits}p0"),
        };
        X87DoubleExtended::from_str_r(&text, rustc_apfloat::Round::NearestTiesToEven).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(a: &str, b: &str) -> String {
        let a = LongDouble::parse(a.as_bytes()).unwrap();
        let b = LongDouble::parse(b.as_bytes()).unwrap();
        (a + b).to_human()
    }

    #[test]
    fn adds_in_extended_precision() {
        assert_eq!(sum("0", "9223372036854775807"), "9223372036854775807");
        assert_eq!(sum("0.1", "0.2"), "0.3");
        assert_eq!(sum("10.5", "0.1"), "10.6");
        assert_eq!(sum("5.0e3", "2.0e2"), "5200");
        assert_eq!(sum("-1", "0.5"), "-0.5");
        assert_eq!(sum("1e-5", "0"), "0.00001");
        assert_eq!(sum("-0", "0"), "0");
        assert_eq!(sum("1e-30", "-2e-30"), "0");
        assert_eq!(sum("0x10", "1"), "17");
        assert_eq!(sum("0x1p-1", "0"), "0.5");
    }

    #[test]
    fn prints_big_integers_exactly() {
        assert_eq!(sum("1e30", "0"), "1000000000000000000024696061952");
        assert_eq!(sum("-9223372036854775808", "0"), "-9223372036854775808");
    }

    #[test]
    fn rounds_the_seventeenth_digit_half_to_even() {
        // 2^-18 = 0.000003814697265625: exactly halfway at the 17th digit.
        assert_eq!(sum("0x1p-18", "0"), "0.00000381469726562");
        // 3 * 2^-18 = 0.000011444091796875, halfway, rounds up to even.
        assert_eq!(sum("0x3p-18", "0"), "0.00001144409179688");
    }

    #[test]
    fn refuses_what_string2ld_refuses() {
        for bad in [
            "",
            " 1",
            "1 ",
            "abc",
            "nan",
            "-nan",
            "1e",
            "1e+",
            ".",
            "0x",
            "0x.p1",
            "1..2",
            "1e400000",
            "1e-400000",
            "++1",
        ] {
            assert!(LongDouble::parse(bad.as_bytes()).is_none(), "{bad:?}");
        }
        for good in [
            "inf",
            "-Infinity",
            "+1",
            "1.",
            ".5",
            "1E5",
            "0X1P3",
            "1e4000",
        ] {
            assert!(LongDouble::parse(good.as_bytes()).is_some(), "{good:?}");
        }
        assert!(!LongDouble::parse(b"inf").unwrap().is_finite());
    }
}
