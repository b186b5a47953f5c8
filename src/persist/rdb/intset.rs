//! Redis's intset (intset.c): a small set of integers as one blob, a
//! 4-byte width (2, 4 or 8), a 4-byte count, then the members ascending,
//! each `width` bytes, all little-endian.

use super::RdbError;

const HEADER: usize = 8;

/// The blob for `members` (ascending, distinct) at `width` bytes each.
pub fn build_into(out: &mut Vec<u8>, members: &[i64], width: u8) {
    let width = usize::from(width);
    out.clear();
    out.reserve(HEADER + members.len() * width);
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(members.len() as u32).to_le_bytes());
    for m in members {
        out.extend_from_slice(&m.to_le_bytes()[..width]);
    }
}

/// The members of an intset and its width, checked as Redis's deep check
/// does: a known width, a size that is the count's, members ascending.
pub fn read(blob: &[u8], at: usize) -> Result<(Vec<i64>, u8), RdbError> {
    let corrupt = |what| RdbError::Corrupt { at, what };
    let header = blob
        .get(..HEADER)
        .ok_or(corrupt("an intset shorter than its header"))?;
    let width = u32::from_le_bytes(header[..4].try_into().expect("four"));
    let count = u32::from_le_bytes(header[4..].try_into().expect("four")) as usize;
    if ![2, 4, 8].contains(&width) {
        return Err(corrupt("an intset of an unknown width"));
    }
    let width = width as usize;
    if count.checked_mul(width) != Some(blob.len() - HEADER) {
        return Err(corrupt("an intset whose size is not its count's"));
    }
    let members: Vec<i64> = blob[HEADER..]
        .chunks_exact(width)
        .map(|chunk| {
            let mut buf = [0u8; 8];
            buf[..width].copy_from_slice(chunk);
            let shift = 64 - 8 * width as u32;
            (i64::from_le_bytes(buf) << shift) >> shift
        })
        .collect();
    if members.windows(2).any(|w| w[0] >= w[1]) {
        return Err(corrupt("an intset out of order"));
    }
    Ok((members, width as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(members: &[i64], width: u8) -> Vec<u8> {
        let mut out = Vec::new();
        build_into(&mut out, members, width);
        out
    }

    #[test]
    fn round_trips_at_each_width() {
        for (members, width) in [
            (vec![-3, 0, 7], 2),
            (vec![-70000, 1, 70000], 4),
            (vec![i64::MIN, 0, i64::MAX], 8),
        ] {
            let blob = build(&members, width);
            assert_eq!(read(&blob, 0).unwrap(), (members, width));
        }
    }

    #[test]
    fn damage_is_refused() {
        let blob = build(&[1, 2, 3], 2);
        assert!(read(&blob[..blob.len() - 1], 0).is_err());
        let mut unordered = blob.clone();
        unordered[8] = 9;
        assert!(read(&unordered, 0).is_err());
        let mut width = blob.clone();
        width[0] = 3;
        assert!(read(&width, 0).is_err());
    }
}
