//! The DUMP and FUNCTION DUMP payload readers on arbitrary bytes: a
//! damaged payload must be refused, never a panic, and a payload that is
//! taken must be the value it says, so dumping that value again and
//! reading it back gives the same bytes, and a stream read so holds
//! together: deleting its entries one by one empties its nodes.

use crate::keyspace::{EncodingLimits, StreamId, Value, dump};
use crate::persist::rdb;
use crate::scripting::functions::undump;

/// Limits small enough that every conversion on load is taken.
pub(super) const TIGHT: EncodingLimits = EncodingLimits {
    hash_max_listpack_entries: 2,
    hash_max_listpack_value: 4,
    set_max_intset_entries: 2,
    zset_max_listpack_entries: 2,
    zset_max_listpack_value: 4,
    stream_node_max_entries: 2,
    stream_node_max_bytes: 64,
};

/// Reads `data` as a payload, and as a payload's body under a version and
/// checksum that hold (so that the fuzzer reaches the value readers
/// without forging CRCs), under Redis's default limits and tight ones.
pub fn restore(data: &[u8]) {
    for payload in [data.to_vec(), rdb::seal_payload(data.to_vec())] {
        for limits in [EncodingLimits::DEFAULT, TIGHT] {
            if let Ok(value) = dump::restore(&payload, &limits) {
                let again = dump::dump(&value);
                let reread = dump::restore(&again, &limits).map(|v| dump::dump(&v));
                assert_eq!(reread.as_ref(), Ok(&again), "{payload:?} read as {value:?}");
                if let Value::Stream(mut stream) = value {
                    let ids: Vec<StreamId> = stream
                        .range(StreamId::ZERO, StreamId::MAX, false)
                        .map(|(id, _)| id)
                        .collect();
                    for id in ids {
                        assert!(stream.delete(id), "{payload:?}");
                    }
                    assert_eq!(stream.node_count(), 0, "{payload:?}");
                }
            }
        }
        let _ = undump(&payload);
    }
}
