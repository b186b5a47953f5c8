//! What several families do with a stored value: name its encoding,
//! edit a string in place.

use bytes::Bytes;

use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Db, StrForm, Ttl, Value};

/// Redis's name for how it would hold a value: a string's follows from its
/// bytes and how it was written; hashes, sets and sorted sets keep the
/// compact-or-not state Redis's conversions would have left.
pub fn encoding_name(value: &Value) -> &'static str {
    match value {
        Value::Str(s, form) => form.encoding(s).name(),
        Value::Hash(h) if h.is_listpack() => "listpack",
        Value::Hash(_) => "hashtable",
        // Redis 7.0 holds every list in a quicklist.
        Value::List(_) => "quicklist",
        Value::ZSet(z) if z.is_compact() => "listpack",
        Value::ZSet(_) => "skiplist",
        Value::Set(s) if s.is_intset() => "intset",
        Value::Set(_) => "hashtable",
        Value::Stream(_) => "stream",
    }
}

/// Changes the string at `key` in place, zero-padded to at least `min_len`
/// bytes first, and creates it if absent. Returns what `edit` returns.
/// The buffer is reused when nothing else holds it (a pending reply or a
/// transaction's journal does, and then it is copied); growth that cannot
/// be allocated is an error, never an abort.
pub fn edit_string<T>(
    db: &mut Db,
    key: &[u8],
    min_len: usize,
    edit: impl FnOnce(&mut Vec<u8>) -> T,
) -> CmdResult<T> {
    let current = db.typed_for_write::<Bytes>(key)?.map(std::mem::take);
    let existed = current.is_some();
    let mut buf = Vec::from(current.unwrap_or_default());
    let grown = buf
        .try_reserve_exact(min_len.saturating_sub(buf.len()))
        .map(|()| buf.resize(buf.len().max(min_len), 0));
    let out = grown.is_ok().then(|| edit(&mut buf));
    // Redis edits its own raw copy (or a new raw string) in place.
    if existed {
        if let Some(Value::Str(s, form)) = db.get_mut(key)? {
            *s = Bytes::from(buf);
            *form = StrForm::Raw;
        }
    } else if out.is_some() {
        db.insert(key, Value::Str(Bytes::from(buf), StrForm::Raw), Ttl::Clear)?;
    }
    out.ok_or_else(|| CmdError::other("OOM command not allowed when used memory > 'maxmemory'."))
}
