//! Bit-level reads and writes on byte strings, numbered as Redis numbers
//! them: bit 0 is the most significant bit of the first byte. Shared by
//! the bitmap commands; every read treats bytes past the end as zero.

/// The bit at `offset`, zero past the end.
pub fn get_bit(data: &[u8], offset: u64) -> bool {
    data.get((offset / 8) as usize)
        .is_some_and(|b| b & (0x80 >> (offset % 8)) != 0)
}

/// Sets the bit at `offset`, which must lie inside `data`.
pub fn set_bit(data: &mut [u8], offset: u64, on: bool) {
    let mask = 0x80 >> (offset % 8);
    let byte = &mut data[(offset / 8) as usize];
    if on {
        *byte |= mask;
    } else {
        *byte &= !mask;
    }
}

/// The bits of byte `index` that fall inside `first..=last`, as a mask.
fn mask_in(index: u64, first: u64, last: u64) -> u8 {
    let lo = first.saturating_sub(index * 8).min(8);
    let hi = (last + 1).saturating_sub(index * 8).min(8);
    if lo >= hi {
        return 0;
    }
    let keep_from = 0xFFu16 >> lo;
    let drop_after = 0xFFu16 >> hi;
    (keep_from & !drop_after) as u8
}

/// How many bits are set in `first..=last` (bit numbers inside `data`).
pub fn count_ones(data: &[u8], first: u64, last: u64) -> u64 {
    let (lo, hi) = ((first / 8) as usize, (last / 8) as usize);
    let edges = |i: usize| (data[i] & mask_in(i as u64, first, last)).count_ones() as u64;
    if lo == hi {
        return edges(lo);
    }
    let middle: u64 = data[lo + 1..hi]
        .chunks(8)
        .map(|c| {
            let mut word = [0u8; 8];
            word[..c.len()].copy_from_slice(c);
            u64::from_ne_bytes(word).count_ones() as u64
        })
        .sum();
    edges(lo) + middle + edges(hi)
}

/// The first bit equal to `want` in `first..=last` (inside `data`).
pub fn first_bit(data: &[u8], first: u64, last: u64, want: bool) -> Option<u64> {
    let skip = if want { 0x00 } else { 0xFF };
    for i in (first / 8)..=(last / 8) {
        let mask = mask_in(i, first, last);
        // Bits outside the range read as the value not wanted.
        let byte = if want {
            data[i as usize] & mask
        } else {
            data[i as usize] | !mask
        };
        if byte != skip {
            let lead = if want {
                byte.leading_zeros()
            } else {
                byte.leading_ones()
            };
            return Some(i * 8 + lead as u64);
        }
    }
    None
}

/// The `bits`-wide (1 to 64) unsigned field at `offset`.
pub fn get_unsigned(data: &[u8], offset: u64, bits: u32) -> u64 {
    (0..bits as u64).fold(0, |v, j| (v << 1) | get_bit(data, offset + j) as u64)
}

/// The `bits`-wide two's complement field at `offset`.
pub fn get_signed(data: &[u8], offset: u64, bits: u32) -> i64 {
    let raw = get_unsigned(data, offset, bits);
    let shift = 64 - bits;
    ((raw << shift) as i64) >> shift
}

/// Writes the low `bits` bits of `value` at `offset` (inside `data`).
pub fn set_field(data: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..bits {
        set_bit(data, offset + j as u64, (value >> (bits - 1 - j)) & 1 == 1);
    }
}

/// What BITFIELD does when a value does not fit its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// `value + incr` in an unsigned field of `bits` (1 to 63): the result, or
/// `None` when it overflows under FAIL. `value` may be out of range (a SET
/// of a negative or too large number, with `incr` 0).
pub fn add_unsigned(value: u64, incr: i64, bits: u32, mode: Overflow) -> Option<u64> {
    let max = (1u64 << bits) - 1;
    let wrapped = value.wrapping_add(incr as u64) & max;
    let room_up = max.wrapping_sub(value) as i64;
    let room_down = (value as i64).wrapping_neg();
    let limit = if value > max || (incr > 0 && incr > room_up) {
        max
    } else if incr < 0 && incr < room_down {
        0
    } else {
        return Some(value.wrapping_add(incr as u64));
    };
    match mode {
        Overflow::Wrap => Some(wrapped),
        Overflow::Sat => Some(limit),
        Overflow::Fail => None,
    }
}

/// `value + incr` in a signed field of `bits` (1 to 64), as `add_unsigned`.
/// The room left is computed with wrapping arithmetic, as Redis computes it,
/// so a SET far below a narrow field's range saturates as Redis does.
pub fn add_signed(value: i64, incr: i64, bits: u32, mode: Overflow) -> Option<i64> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let room_up = max.wrapping_sub(value);
    let room_down = min.wrapping_sub(value);
    let narrow = bits != 64;
    let limit = if value > max
        || (narrow && incr > room_up)
        || (value >= 0 && incr > 0 && incr > room_up)
    {
        max
    } else if value < min
        || (narrow && incr < room_down)
        || (value < 0 && incr < 0 && incr < room_down)
    {
        min
    } else {
        return Some(value.wrapping_add(incr));
    };
    let sum = value.wrapping_add(incr);
    let shift = 64 - bits;
    match mode {
        Overflow::Wrap => Some((sum << shift) >> shift),
        Overflow::Sat => Some(limit),
        Overflow::Fail => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_count_and_search_by_bit() {
        let data = [0b1111_0000, 0b0000_0001, 0xFF];
        assert_eq!(count_ones(&data, 0, 23), 13);
        assert_eq!(count_ones(&data, 2, 5), 2);
        assert_eq!(count_ones(&data, 4, 15), 1);
        assert_eq!(count_ones(&data, 15, 16), 2);
        assert_eq!(first_bit(&data, 0, 23, false), Some(4));
        assert_eq!(first_bit(&data, 8, 14, true), None);
        assert_eq!(first_bit(&data, 8, 23, true), Some(15));
        assert_eq!(first_bit(&data, 16, 23, false), None);
    }

    #[test]
    fn fields_read_and_write_msb_first() {
        let mut data = [0u8; 3];
        set_field(&mut data, 4, 8, 0xAB);
        assert_eq!(data, [0x0A, 0xB0, 0]);
        assert_eq!(get_unsigned(&data, 4, 8), 0xAB);
        assert_eq!(get_signed(&data, 4, 8), 0xABu8 as i8 as i64);
        assert_eq!(get_unsigned(&data, 20, 8), 0);
    }

    #[test]
    fn overflow_modes() {
        assert_eq!(add_unsigned(250, 10, 8, Overflow::Wrap), Some(4));
        assert_eq!(add_unsigned(250, 10, 8, Overflow::Sat), Some(255));
        assert_eq!(add_unsigned(5, -10, 8, Overflow::Sat), Some(0));
        assert_eq!(add_unsigned(250, 10, 8, Overflow::Fail), None);
        assert_eq!(add_signed(120, 10, 8, Overflow::Wrap), Some(-126));
        assert_eq!(add_signed(-120, -10, 8, Overflow::Sat), Some(-128));
        assert_eq!(add_signed(i64::MAX, 1, 64, Overflow::Wrap), Some(i64::MIN));
        assert_eq!(add_signed(i64::MIN, 0, 8, Overflow::Sat), Some(127));
    }
}
