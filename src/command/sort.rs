//! SORT and SORT_RO: the elements of a list, set or sorted set in numeric
//! or byte order, ordered by themselves or by keys their names pick out
//! (`BY weight_*`, `BY hash_*->field`), each answered as itself or as other
//! keys' values (`GET #`, `GET data_*`), optionally stored as a list.

use std::cmp::Ordering;

use bytes::Bytes;

use super::Ctx;
use super::presets::{OW_UPDATE, RO_ACCESS};
use super::spec::acl::{DANGEROUS, LIST, SET, SORTEDSET};
use super::spec::flag::{DENYOOM, READONLY, WHOLE_KEYSPACE, WRITE};
use super::spec::{CommandSpec, Group, KeySpec};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Db, Ttl, Value};
use crate::protocol::Reply;
use crate::pubsub::Event;
use crate::util::{parse_f64, parse_i64, strtod_range_error};

#[derive(Default)]
struct SortOptions {
    desc: bool,
    alpha: bool,
    /// LIMIT's offset and count; a negative count means all.
    limit: (i64, i64),
    store: Option<Bytes>,
    by: Option<Bytes>,
    gets: Vec<Bytes>,
    /// BY a pattern without `*`: the elements keep their stored order.
    dont_sort: bool,
}

/// `cluster`: keys named by patterns may live on other nodes, so a cluster
/// refuses BY patterns and GET, as Redis 7.0 does.
fn parse_options(args: &[Bytes], readonly: bool, cluster: bool) -> CmdResult<SortOptions> {
    let mut opts = SortOptions {
        limit: (0, -1),
        ..SortOptions::default()
    };
    let mut i = 0;
    while i < args.len() {
        let left = args.len() - i - 1;
        match &args[i].to_ascii_lowercase()[..] {
            b"asc" => opts.desc = false,
            b"desc" => opts.desc = true,
            b"alpha" => opts.alpha = true,
            b"limit" if left >= 2 => {
                let offset = parse_i64(&args[i + 1]).ok_or(CmdError::NotInteger)?;
                let count = parse_i64(&args[i + 2]).ok_or(CmdError::NotInteger)?;
                opts.limit = (offset, count);
                i += 2;
            }
            b"store" if left >= 1 && !readonly => {
                opts.store = Some(args[i + 1].clone());
                i += 1;
            }
            b"by" if left >= 1 => {
                let pattern = args[i + 1].clone();
                opts.dont_sort = !pattern.contains(&b'*');
                if cluster && !opts.dont_sort {
                    return Err(CmdError::other(
                        "ERR BY option of SORT denied in Cluster mode.",
                    ));
                }
                opts.by = Some(pattern);
                i += 1;
            }
            b"get" if left >= 1 => {
                if cluster {
                    return Err(CmdError::other(
                        "ERR GET option of SORT denied in Cluster mode.",
                    ));
                }
                opts.gets.push(args[i + 1].clone());
                i += 1;
            }
            _ => return Err(CmdError::Syntax),
        }
        i += 1;
    }
    Ok(opts)
}

/// SORT's STORE destination (the last one given), read as Redis reads it
/// for COMMAND GETKEYS and cluster routing: LIMIT's, GET's and BY's
/// values are skipped, whatever they say.
pub fn store_key(args: &[Bytes]) -> Option<usize> {
    let mut found = None;
    let mut i = 2;
    while i < args.len() {
        match &args[i].to_ascii_lowercase()[..] {
            b"limit" => i += 2,
            b"get" | b"by" => i += 1,
            b"store" if i + 1 < args.len() => found = Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    found
}

/// The value a pattern names for one element: `#` is the element itself;
/// otherwise the first `*` is replaced by the element, and a non-empty
/// `->field` after it reads a hash field instead of a string. A pattern
/// without `*` names nothing.
fn lookup_pattern(
    db: &mut Db,
    pattern: &[u8],
    element: &Bytes,
    write: bool,
) -> CmdResult<Option<Bytes>> {
    if pattern == b"#" {
        return Ok(Some(element.clone()));
    }
    let Some(star) = pattern.iter().position(|&b| b == b'*') else {
        return Ok(None);
    };
    let rest = &pattern[star + 1..];
    let arrow = rest
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&at| at + 2 < rest.len());
    let (postfix, field) = match arrow {
        Some(at) => (&rest[..at], Some(&rest[at + 2..])),
        None => (rest, None),
    };
    let mut key = Vec::with_capacity(star + element.len() + postfix.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(postfix);
    let value = if write {
        db.get_mut(&key)?
    } else {
        db.get(&key)?
    };
    Ok(match (value, field) {
        (Some(Value::Str(s, _)), None) => Some(s.clone()),
        (Some(Value::Hash(h)), Some(field)) => h.get(field).map(Bytes::copy_from_slice),
        _ => None,
    })
}

/// A sort weight read as C's `strtod` reads it, whole: leading spaces are
/// skipped, the empty string is 0, and out-of-range values and NaN fail.
fn parse_weight(bytes: &[u8]) -> Option<f64> {
    // The value is read as a C string.
    let bytes = &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len())];
    if bytes.is_empty() {
        return Some(0.0);
    }
    let text = bytes.trim_ascii_start();
    let value = parse_f64(text)?;
    (!strtod_range_error(text, value)).then_some(value)
}

/// One element and what it is ordered by.
struct Item {
    element: Bytes,
    score: f64,
    /// ALPHA BY: the looked-up value, if there was one.
    by_value: Option<Bytes>,
}

fn compare(a: &Item, b: &Item, opts: &SortOptions) -> Ordering {
    let cmp = if !opts.alpha {
        a.score
            .partial_cmp(&b.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.element.cmp(&b.element))
    } else if opts.by.is_some() {
        // A missing value orders first; two equal values stay unordered.
        a.by_value.cmp(&b.by_value)
    } else {
        a.element.cmp(&b.element)
    };
    if opts.desc { cmp.reverse() } else { cmp }
}

pub fn sort(ctx: &mut Ctx) -> CmdResult<Reply> {
    sort_command(ctx, false)
}

pub fn sort_ro(ctx: &mut Ctx) -> CmdResult<Reply> {
    sort_command(ctx, true)
}

fn sort_command(ctx: &mut Ctx, readonly: bool) -> CmdResult<Reply> {
    let mut opts = parse_options(&ctx.args[2..], readonly, ctx.shared.cluster.is_some())?;
    let key = ctx.arg(1).clone();
    let write = opts.store.is_some();
    let for_script = ctx.client.for_script;
    let mut db = ctx.db();
    let (elements, is_set) = match db.get(&key)? {
        None => (Vec::new(), false),
        Some(Value::List(l)) => (l.iter().cloned().collect::<Vec<_>>(), false),
        Some(Value::Set(s)) => (s.members(), true),
        Some(Value::ZSet(z)) => (z.iter().map(|(m, _)| m.clone()).collect(), false),
        Some(_) => return Err(CmdError::WrongType),
    };
    // A set's own order is not reproducible: where a script or a stored
    // result must be, Redis sorts it by its bytes instead.
    if opts.dont_sort && is_set && (write || for_script) {
        opts.dont_sort = false;
        opts.alpha = true;
        opts.by = None;
    }
    let (start, end) = window(opts.limit, elements.len() as i64);
    let mut items: Vec<Item> = elements
        .into_iter()
        .map(|element| Item {
            element,
            score: 0.0,
            by_value: None,
        })
        .collect();
    let mut not_a_number = false;
    if opts.dont_sort {
        // Lists and sorted sets keep their order, reversed by DESC.
        if opts.desc && !is_set {
            items.reverse();
        }
    } else {
        for item in &mut items {
            let weight = match &opts.by {
                Some(pattern) => match lookup_pattern(&mut db, pattern, &item.element, write)? {
                    Some(v) => v,
                    None => continue,
                },
                None => item.element.clone(),
            };
            if opts.alpha {
                item.by_value = Some(weight);
            } else {
                match parse_weight(&weight) {
                    Some(score) => item.score = score,
                    None => not_a_number = true,
                }
            }
        }
        items.sort_by(|a, b| compare(a, b, &opts));
    }
    if not_a_number {
        return Err(CmdError::other(
            "ERR One or more scores can't be converted into double",
        ));
    }
    let chosen = usize::try_from(start)
        .ok()
        .filter(|_| end >= start)
        .map_or(&items[..0], |s| &items[s..=end as usize]);
    let mut out = Vec::new();
    for item in chosen {
        if opts.gets.is_empty() {
            out.push(Some(item.element.clone()));
        }
        for pattern in &opts.gets {
            out.push(lookup_pattern(&mut db, pattern, &item.element, write)?);
        }
    }
    let Some(dest) = opts.store else {
        return Ok(Reply::Array(out.into_iter().map(Reply::opt_bulk).collect()));
    };
    let stored = out.len() as i64;
    if out.is_empty() {
        if db.remove(&dest)?.is_some() {
            db.modified(&dest, Event::Del)?;
        }
    } else {
        // A missing GET value is stored as an empty string.
        let list = out.into_iter().map(Option::unwrap_or_default).collect();
        db.insert(&dest, Value::List(list), Ttl::Clear)?;
        db.modified(&dest, Event::Sortstore)?;
    }
    Ok(Reply::Int(stored))
}

/// LIMIT's offset and count as the inclusive index range Redis answers
/// from a vector of `len` elements; empty when `end < start`.
fn window((offset, count): (i64, i64), len: i64) -> (i64, i64) {
    let mut start = offset.max(0);
    let mut end = if count < 0 {
        len - 1
    } else {
        start.saturating_add(count) - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    (start, end.min(len - 1))
}

/// SORT's BY and GET patterns name keys built from the elements it sorts.
const SORT_PATTERN_KEYS: KeySpec = KeySpec::unknown(
    RO_ACCESS,
    "BY and GET patterns: the key names are made from the sorted elements, so no argument position holds them.",
);

/// STORE may come anywhere among SORT's options.
const SORT_STORE_KEY: KeySpec = KeySpec::unknown(
    OW_UPDATE,
    "STORE's destination: the option may appear anywhere in the arguments.",
);

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("sort", -2, Group::Generic, sort).records_itself().flags(WRITE | DENYOOM | WHOLE_KEYSPACE).acl(SET | SORTEDSET | LIST | DANGEROUS).find_more_keys(store_key)
        .keys(&[KeySpec::range(1, 0, 1, RO_ACCESS), SORT_PATTERN_KEYS, SORT_STORE_KEY])
        .syntax("key [BY pattern] [LIMIT offset count] [GET pattern]... [ASC | DESC] [ALPHA] [STORE destination]")
        .doc("1.0.0", "Sorts the elements of a list, set or sorted set, optionally by or with other keys' values, and returns or stores them."),
    CommandSpec::new("sort_ro", -2, Group::Generic, sort_ro).flags(READONLY | WHOLE_KEYSPACE).acl(SET | SORTEDSET | LIST | DANGEROUS)
        .keys(&[KeySpec::range(1, 0, 1, RO_ACCESS), SORT_PATTERN_KEYS])
        .syntax("key [BY pattern] [LIMIT offset count] [GET pattern]... [ASC | DESC] [ALPHA]")
        .doc("7.0.0", "Sorts like SORT, without STORE."),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_read_like_strtod() {
        assert_eq!(parse_weight(b""), Some(0.0));
        assert_eq!(parse_weight(b"  12"), Some(12.0));
        assert_eq!(parse_weight(b"1e3"), Some(1000.0));
        assert_eq!(parse_weight(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_weight(b"0.000"), Some(0.0));
        assert_eq!(parse_weight(b"1e400"), None);
        assert_eq!(parse_weight(b"1e-400"), None);
        assert_eq!(parse_weight(b"nan"), None);
        assert_eq!(parse_weight(b"12 "), None);
        assert_eq!(parse_weight(b" "), None);
        assert_eq!(parse_weight(b"abc"), None);
    }

    #[test]
    fn limit_windows() {
        assert_eq!(window((0, -1), 5), (0, 4));
        assert_eq!(window((1, 2), 5), (1, 2));
        assert_eq!(window((-3, 2), 5), (0, 1));
        assert_eq!(window((9, 2), 5), (4, 3));
        assert_eq!(window((0, 0), 5), (0, -1));
        assert_eq!(window((0, 9), 0), (-1, -2));
        assert_eq!(window((2, i64::MAX), 5), (2, 4));
    }
}
