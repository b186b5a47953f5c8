//! Redis's zipmap (zipmap.c), the small-hash blob of RDB files from Redis
//! 2.x, which 7.0 still loads. Only read here. Layout: a count byte (254:
//! unknown), then each pair as key length, key, value length, a byte of
//! free space, value and that free space; then 0xFF. A length is one byte
//! below 254, else 254 and four bytes little-endian.

use super::RdbError;

const END: u8 = 0xff;
const BIG_LEN: u8 = 254;

/// A field and its value.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// The pairs of `blob`, checked: every length inside it, the end byte
/// last, the count where it is known.
pub fn read(blob: &[u8], at: usize) -> Result<Vec<Pair<'_>>, RdbError> {
    let corrupt = |what| RdbError::Corrupt { at, what };
    let damaged = || corrupt("a damaged zipmap");
    let (&count, mut rest) = blob.split_first().ok_or_else(damaged)?;
    let mut pairs = Vec::new();
    while let Some(key_len) = length(&mut rest).ok_or_else(damaged)? {
        let key = take(&mut rest, key_len).ok_or_else(damaged)?;
        let value_len = length(&mut rest).ok_or_else(damaged)?.ok_or_else(damaged)?;
        let free = usize::from(
            *take(&mut rest, 1)
                .ok_or_else(damaged)?
                .first()
                .expect("one"),
        );
        let value = take(&mut rest, value_len).ok_or_else(damaged)?;
        take(&mut rest, free).ok_or_else(damaged)?;
        pairs.push((key, value));
    }
    if !rest.is_empty() {
        return Err(corrupt("bytes after a zipmap's end"));
    }
    if count < BIG_LEN && usize::from(count) != pairs.len() {
        return Err(corrupt("a zipmap count that disagrees"));
    }
    Ok(pairs)
}

/// A length, or `None` inside for the end byte.
fn length(rest: &mut &[u8]) -> Option<Option<usize>> {
    match *take(rest, 1)?.first()? {
        END => Some(None),
        BIG_LEN => {
            let bytes = take(rest, 4)?;
            Some(Some(u32::from_le_bytes(bytes.try_into().ok()?) as usize))
        }
        n => Some(Some(usize::from(n))),
    }
}

fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, tail) = rest.split_at_checked(n)?;
    *rest = tail;
    Some(head)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A zipmap of `pairs`, from the format, with a byte of free space
    /// after each value as Redis leaves after an update.
    pub fn build(pairs: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut out = vec![pairs.len().min(253) as u8];
        let len = |out: &mut Vec<u8>, n: usize| {
            if n < usize::from(BIG_LEN) {
                out.push(n as u8);
            } else {
                out.push(BIG_LEN);
                out.extend_from_slice(&(n as u32).to_le_bytes());
            }
        };
        for (k, v) in pairs {
            len(&mut out, k.len());
            out.extend_from_slice(k);
            len(&mut out, v.len());
            out.push(1);
            out.extend_from_slice(v);
            out.push(0);
        }
        out.push(END);
        out
    }

    #[test]
    fn reads_pairs() {
        let long = vec![b'v'; 300];
        let pairs: Vec<(&[u8], &[u8])> = vec![(b"a", b"1"), (b"", b""), (b"big", &long)];
        let blob = build(&pairs);
        assert_eq!(read(&blob, 0).unwrap(), pairs);
        for cut in 0..blob.len() {
            assert!(read(&blob[..cut], 0).is_err());
        }
        let mut trailing = blob.clone();
        trailing.push(0);
        assert!(read(&trailing, 0).is_err());
    }
}
