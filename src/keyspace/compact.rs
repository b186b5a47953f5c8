//! The resting form of a packed hash's items: what a key's node keeps while
//! no command holds it (see `dbmap`). A packed hash is a run of items,
//! `[length][bytes]`, fields and values alike, none longer than
//! `PACKED_ITEM_MAX`, so a length byte above that is free to say that the
//! item is written another way. Two such ways cover what every Redisson
//! lock holds: its field, `<client UUID>:<thread id>`, keeps the UUID in 16
//! bytes rather than 36 characters, and its value, the reentrant count, is
//! the head byte alone. A lock's hash rests in 20 bytes rather than 41.
//!
//! Heads: up to `PACKED_ITEM_MAX`, a plain item of that length;
//! `UUID_HEAD + n`, a UUID as `UUID.toString()` writes it (lowercase) in
//! 16 bytes, then `n` plain bytes; `INT_HEAD + n`, the decimal digits of
//! `n` (0 to 127, as written without sign or leading zero).

use super::hash::PACKED_ITEM_MAX;

const PLAIN_MAX: u8 = PACKED_ITEM_MAX as u8;
const UUID_HEAD: u8 = PLAIN_MAX + 1;
const UUID_TEXT: usize = 36;
const UUID_BYTES: usize = 16;
/// A UUID's groups of hex digits, between its dashes.
const UUID_GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
const INT_HEAD: u8 = 128;
const _: () = assert!(UUID_HEAD as usize + PACKED_ITEM_MAX - UUID_TEXT < INT_HEAD as usize);

/// How long the resting form of `items` is; `None` if they are not a
/// packed hash's (an item longer than `PACKED_ITEM_MAX`, or cut short).
pub fn compact_len(items: &[u8]) -> Option<usize> {
    plain_items(items).try_fold(0, |len, item| {
        Some(
            len + 1
                + match Kind::of(item?) {
                    Kind::Plain(bytes) => bytes.len(),
                    Kind::Uuid(_, tail) => UUID_BYTES + tail.len(),
                    Kind::Int(_) => 0,
                },
        )
    })
}

/// Writes the resting form of `items` into `out`, which is
/// `compact_len(items)` long.
pub fn compact(items: &[u8], out: &mut [u8]) {
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        out[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    for item in plain_items(items).flatten() {
        match Kind::of(item) {
            Kind::Plain(bytes) => {
                put(&[bytes.len() as u8]);
                put(bytes);
            }
            Kind::Uuid(uuid, tail) => {
                put(&[UUID_HEAD + tail.len() as u8]);
                put(&uuid);
                put(tail);
            }
            Kind::Int(n) => put(&[INT_HEAD + n]),
        }
    }
}

/// The packed hash's items again, from their resting form.
pub fn expand(compact: &[u8]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(expanded_len(compact));
    let mut at = 0;
    while let Some(&head) = compact.get(at) {
        at += 1;
        match head {
            0..=PLAIN_MAX => {
                out.push(head);
                out.extend_from_slice(&compact[at..at + head as usize]);
                at += head as usize;
            }
            INT_HEAD.. => push_int(head - INT_HEAD, &mut out),
            _ => {
                let tail = (head - UUID_HEAD) as usize;
                out.push((UUID_TEXT + tail) as u8);
                push_uuid(&compact[at..at + UUID_BYTES], &mut out);
                at += UUID_BYTES;
                out.extend_from_slice(&compact[at..at + tail]);
                at += tail;
            }
        }
    }
    out.into_boxed_slice()
}

/// How long `expand` makes the items.
fn expanded_len(compact: &[u8]) -> usize {
    let (mut at, mut len) = (0, 0);
    while let Some(&head) = compact.get(at) {
        let (stored, plain) = match head {
            0..=PLAIN_MAX => (head as usize, head as usize),
            INT_HEAD.. => (0, int_digits(head - INT_HEAD)),
            _ => {
                let tail = (head - UUID_HEAD) as usize;
                (UUID_BYTES + tail, UUID_TEXT + tail)
            }
        };
        at += 1 + stored;
        len += 1 + plain;
    }
    len
}

/// A packed hash's items one by one; `None` for one longer than a packed
/// hash allows or running past the end, and nothing after it.
fn plain_items(items: &[u8]) -> impl Iterator<Item = Option<&[u8]>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let &len = items.get(at)?;
        let item = items
            .get(at + 1..at + 1 + len as usize)
            .filter(|_| len <= PLAIN_MAX);
        at = item.map_or(items.len(), |item| at + 1 + item.len());
        Some(item)
    })
}

/// How an item is written at rest.
enum Kind<'a> {
    Plain(&'a [u8]),
    Uuid([u8; UUID_BYTES], &'a [u8]),
    Int(u8),
}

impl<'a> Kind<'a> {
    fn of(item: &'a [u8]) -> Kind<'a> {
        if let Some(n) = small_int(item) {
            return Kind::Int(n);
        }
        item.split_at_checked(UUID_TEXT)
            .and_then(|(text, tail)| Some(Kind::Uuid(parse_uuid(text)?, tail)))
            .unwrap_or(Kind::Plain(item))
    }
}

/// 0 to 127 as written in decimal, which `push_int` writes back the same.
fn small_int(item: &[u8]) -> Option<u8> {
    match item {
        [b'0'] => Some(0),
        [b'1'..=b'9', ..] if item.len() <= 3 => item
            .iter()
            .try_fold(0u8, |n, &d| {
                d.is_ascii_digit().then_some(())?;
                n.checked_mul(10)?.checked_add(d - b'0')
            })
            .filter(|&n| n < INT_HEAD),
        _ => None,
    }
}

fn int_digits(n: u8) -> usize {
    match n {
        0..=9 => 1,
        10..=99 => 2,
        _ => 3,
    }
}

/// `n` as a plain item.
fn push_int(n: u8, out: &mut Vec<u8>) {
    let len = int_digits(n);
    let digits = [b'0' + n / 100, b'0' + n / 10 % 10, b'0' + n % 10];
    out.push(len as u8);
    out.extend_from_slice(&digits[3 - len..]);
}

/// A UUID's 16 bytes, if `text` is one as Java's `UUID.toString()` writes
/// it: lowercase hex digits in groups of 8-4-4-4-12 (uppercase would not
/// be written back the same).
fn parse_uuid(text: &[u8]) -> Option<[u8; UUID_BYTES]> {
    let mut uuid = [0; UUID_BYTES];
    let mut bytes = uuid.iter_mut();
    let mut groups = text.split(|&c| c == b'-');
    for len in UUID_GROUPS {
        let group = groups.next().filter(|g| g.len() == len)?;
        for pair in group.chunks_exact(2) {
            *bytes.next()? = (hex_value(pair[0])? << 4) | hex_value(pair[1])?;
        }
    }
    // The groups and their dashes are all 36 characters of `text`.
    Some(uuid)
}

fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

fn push_uuid(uuid: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = uuid.iter();
    for (i, len) in UUID_GROUPS.into_iter().enumerate() {
        if i > 0 {
            out.push(b'-');
        }
        for &byte in bytes.by_ref().take(len / 2) {
            out.extend_from_slice(&[HEX[(byte >> 4) as usize], HEX[(byte & 15) as usize]]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn items(items: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for item in items {
            out.push(item.len() as u8);
            out.extend_from_slice(item);
        }
        out
    }

    fn rest(items: &[u8]) -> Vec<u8> {
        let mut out = vec![0; compact_len(items).expect("a packed hash's items")];
        compact(items, &mut out);
        out
    }

    const OWNER: &[u8] = b"8743c9c0-0795-4907-87fd-6c719a6b4586:1";

    #[test]
    fn a_redisson_lock_rests_in_20_bytes() {
        let lock = items(&[OWNER, b"1"]);
        assert_eq!(lock.len(), 41);
        let at_rest = rest(&lock);
        assert_eq!(at_rest.len(), 1 + 16 + 2 + 1);
        assert_eq!(at_rest[0], UUID_HEAD + 2);
        assert_eq!(at_rest[17..], [b':', b'1', INT_HEAD + 1]);
        assert_eq!(&expand(&at_rest)[..], &lock[..]);
    }

    #[test]
    fn only_what_is_written_back_the_same_is_tagged() {
        let upper = b"8743C9C0-0795-4907-87FD-6C719A6B4586";
        let plain: [&[u8]; 12] = [
            b"",
            b"00",
            b"01",
            b"-1",
            b"+1",
            b"128",
            b"999",
            b"1000",
            b"1a",
            upper,
            b"8743c9c0-0795-4907-87fd-6c719a6b458", // one digit short
            b"8743c9c0-07954-907-87fd-6c719a6b4586", // a dash moved
        ];
        for item in plain {
            let one = items(&[item]);
            assert_eq!(rest(&one), one, "{:?}", String::from_utf8_lossy(item));
        }
        for (item, head) in [(&b"0"[..], INT_HEAD), (b"127", INT_HEAD + 127)] {
            assert_eq!(rest(&items(&[item])), [head]);
        }
        let bare_uuid = items(&[&OWNER[..36]]);
        assert_eq!(rest(&bare_uuid).len(), 17);
    }

    #[test]
    fn refuses_what_is_not_a_packed_hash() {
        assert_eq!(compact_len(&[]), Some(0));
        assert_eq!(compact_len(&[3, b'a']), None, "cut short");
        let mut long = vec![65];
        long.extend_from_slice(&[b'x'; 65]);
        assert_eq!(compact_len(&long), None, "longer than packing allows");
    }

    fn item() -> impl Strategy<Value = Vec<u8>> {
        let uuid = "[0-9a-fA-F]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..=64),
            "[0-9]{1,4}".prop_map(String::into_bytes),
            (uuid, "(:[0-9]{1,19})?[a-z]{0,8}")
                .prop_map(|(uuid, tail)| format!("{uuid}{tail}").into_bytes()),
        ]
    }

    proptest! {
        #[test]
        fn expands_to_what_was_compacted(
            pairs in proptest::collection::vec(item(), 0..8)
        ) {
            let refs: Vec<&[u8]> = pairs.iter().map(Vec::as_slice).collect();
            let plain = items(&refs);
            let at_rest = rest(&plain);
            prop_assert!(at_rest.len() <= plain.len());
            prop_assert_eq!(&expand(&at_rest)[..], &plain[..]);
        }
    }
}
