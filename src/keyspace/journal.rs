//! What a script's run keeps so that it can be undone: a script that must
//! start over (it reached a shard it could only wait for out of order) or
//! that is stopped after it wrote leaves no half-done change behind.
//!
//! Undoing must cost in proportion to what a script changes, not to the
//! size of what it touches: a script that reads a 100,000-member sorted
//! set records nothing, and one that changes one member of it records
//! that member's prior score, not a copy of the set. A command that
//! changes named members of one key declares them before it runs (a
//! `Touch`); any other write keeps a copy of each key it looks up, as does
//! a change to a compact value, whose copy is small.

use std::collections::VecDeque;
use std::hash::BuildHasher;

use bytes::Bytes;

use super::{EncodingLimits, Entry, HashValue, SetValue, SortedSet, Value};

/// The part of its key (the command's first argument) a command may
/// change, named from its arguments before it runs.
pub enum Touch<'a> {
    /// Hash fields, set members or sorted set members: every `step`th of
    /// `args`, from the first (the command's line, borrowed: naming them
    /// allocates nothing).
    Members { args: &'a [Bytes], step: usize },
    /// `count` elements pushed onto one end of a list.
    Pushed { front: bool, count: usize },
    /// Up to `count` elements popped from one end of a list.
    Popped { front: bool, count: usize },
    /// The list element at this index (negative from the end).
    Index(i64),
    /// Nothing: the arguments are refused before anything changes.
    Nothing,
}

impl<'a> Touch<'a> {
    /// Each of `args` (HDEL, SADD, ZREM…).
    pub fn each(args: &'a [Bytes]) -> Touch<'a> {
        Touch::Members { args, step: 1 }
    }

    /// The first of each pair in `args` (HSET's fields).
    pub fn pairs(args: &'a [Bytes]) -> Touch<'a> {
        Touch::Members { args, step: 2 }
    }
}

/// A key's state before a change.
pub(super) enum Prior {
    /// All of it: the entry, or `None` where there was no key.
    Whole(Option<Entry>),
    /// One member or end of a collection, with what it takes to make the
    /// key again if the command emptied (and so deleted) it.
    Part { expire_at: Option<u64>, undo: Undo },
}

/// Where one key, member or value the journal keeps lies in its `Arena`.
#[derive(Clone, Copy)]
pub(super) struct Span {
    start: usize,
    end: usize,
}

/// The keys, members and values a journal keeps, end to end in one buffer:
/// a `Bytes` each would cost an allocation each, or, as a slice of the
/// command's line, keep that line alive, so that `redis.call` could not
/// reuse its buffer for the next one.
#[derive(Default)]
pub(super) struct Arena(Vec<u8>);

/// The arena's first allocation, in bytes.
const ARENA_START: usize = 512;
/// The first allocation of a journal's prior states.
const SAVED_START: usize = 16;

impl Arena {
    fn put(&mut self, bytes: &[u8]) -> Span {
        if self.0.capacity() == 0 {
            // Room for a script's usual few changes from the start, where
            // doubling from nothing would copy the bytes over and over.
            self.0.reserve(bytes.len().max(ARENA_START));
        }
        let start = self.0.len();
        self.0.extend_from_slice(bytes);
        Span {
            start,
            end: self.0.len(),
        }
    }

    pub(super) fn get(&self, span: Span) -> &[u8] {
        &self.0[span.start..span.end]
    }
}

/// How to put back one thing a command changed in a collection: one record
/// per member, so that the common change of one member allocates nothing.
pub(super) enum Undo {
    /// A field's prior value (`None`: it was absent).
    Field(Span, Option<Span>),
    /// Whether a member was in the set.
    Member(Span, bool),
    /// A member's prior score.
    Score(Span, Option<f64>),
    /// Take `count` elements off one end again.
    Unpush { front: bool, count: usize },
    /// Put these elements back on one end, in list order.
    Repush { front: bool, items: Vec<Bytes> },
    /// Put this element back at this index.
    Reset { index: usize, item: Bytes },
}

/// What the journal must do before a touching command runs.
pub(super) enum Before {
    /// The undo records were kept: none where the command cannot change
    /// the key (it holds another kind of value, or the index is out of
    /// range).
    Kept,
    /// Keep a copy: the value is compact, so the copy is small, and its
    /// encoding comes back with it.
    Copy,
}

impl Undo {
    /// Hands `keep` what undoes `touch` on `value`, read before the command
    /// runs, oldest first; the members and values it names are copied
    /// into `arena`.
    fn before(
        value: &Value,
        touch: &Touch,
        arena: &mut Arena,
        mut keep: impl FnMut(Undo),
    ) -> Before {
        match (value, touch) {
            (Value::Hash(hash), Touch::Members { args, step }) if !hash.is_listpack() => {
                for field in args.iter().step_by((*step).max(1)) {
                    let prior = hash.get_noted(field).map(|v| arena.put(v));
                    keep(Undo::Field(arena.put(field), prior));
                }
            }
            (Value::Set(set), Touch::Members { args, step }) if !set.is_intset() => {
                for member in args.iter().step_by((*step).max(1)) {
                    keep(Undo::Member(arena.put(member), set.contains(member)));
                }
            }
            (Value::ZSet(zset), Touch::Members { args, step }) if !zset.is_compact() => {
                for member in args.iter().step_by((*step).max(1)) {
                    keep(Undo::Score(arena.put(member), zset.score(member)));
                }
            }
            (Value::Hash(_) | Value::Set(_) | Value::ZSet(_), Touch::Members { .. }) => {
                return Before::Copy;
            }
            (Value::List(_), Touch::Pushed { front, count }) => keep(Undo::Unpush {
                front: *front,
                count: *count,
            }),
            (Value::List(list), Touch::Popped { front, count }) => {
                let taken = (*count).min(list.len());
                let range = if *front {
                    0..taken
                } else {
                    list.len() - taken..list.len()
                };
                keep(Undo::Repush {
                    front: *front,
                    items: list.range(range).cloned().collect(),
                });
            }
            (Value::List(list), Touch::Index(index)) => {
                let at = if *index < 0 {
                    list.len() as i64 + index
                } else {
                    *index
                };
                if let Some((index, item)) = usize::try_from(at)
                    .ok()
                    .and_then(|at| Some((at, list.get(at)?)))
                {
                    keep(Undo::Reset {
                        index,
                        item: item.clone(),
                    });
                }
            }
            _ => {}
        }
        Before::Kept
    }

    /// An empty value of the kind this undoes changes to, for a key the
    /// change emptied: large encodings only, as the value had.
    pub(super) fn empty_value(&self) -> Value {
        match self {
            Undo::Field(..) => Value::Hash(HashValue::empty_hashtable()),
            Undo::Member(..) => Value::Set(Box::new(SetValue::Table(Default::default()))),
            Undo::Score(..) => Value::ZSet(Box::new(SortedSet::empty_skiplist())),
            Undo::Unpush { .. } | Undo::Repush { .. } | Undo::Reset { .. } => {
                Value::List(VecDeque::new())
            }
        }
    }

    /// Puts back what was changed. A value of another kind is left alone:
    /// a later undo (applied first) gave the key back its kind.
    pub(super) fn apply(self, value: &mut Value, limits: &EncodingLimits, arena: &Arena) {
        match (self, value) {
            (Undo::Field(field, Some(prior)), Value::Hash(hash)) => {
                hash.insert(arena.get(field), arena.get(prior), limits);
            }
            (Undo::Field(field, None), Value::Hash(hash)) => {
                hash.remove(arena.get(field));
            }
            (Undo::Member(member, true), Value::Set(set)) => {
                set.insert(arena.get(member), limits);
            }
            (Undo::Member(member, false), Value::Set(set)) => {
                set.remove(arena.get(member));
            }
            (Undo::Score(member, Some(score)), Value::ZSet(zset)) => {
                zset.insert(Bytes::copy_from_slice(arena.get(member)), score, limits);
            }
            (Undo::Score(member, None), Value::ZSet(zset)) => {
                zset.remove(arena.get(member));
            }
            (Undo::Unpush { front, count }, Value::List(list)) => {
                let keep = list.len().saturating_sub(count);
                if front {
                    list.drain(..list.len() - keep);
                } else {
                    list.truncate(keep);
                }
            }
            (Undo::Repush { front, items }, Value::List(list)) => {
                if front {
                    items.into_iter().rev().for_each(|i| list.push_front(i));
                } else {
                    list.extend(items);
                }
            }
            (Undo::Reset { index, item }, Value::List(list)) => {
                if let Some(slot) = list.get_mut(index) {
                    *slot = item;
                }
            }
            _ => {}
        }
    }
}

/// The prior states one run recorded, oldest first.
#[derive(Default)]
pub(super) struct Journal {
    /// Whether the command running may change keys: a read-only one's
    /// lookups record nothing, and neither do those of a command that
    /// declared what it touches.
    pub(super) recording: bool,
    /// Each prior state with its database and key.
    saved: Vec<(usize, Span, Prior)>,
    arena: Arena,
    /// Positions in `saved` of whole copies, by database and key: a script
    /// may change many keys, and every lookup of a writing command asks
    /// whether its key was copied already.
    wholes: hashbrown::HashTable<usize>,
    hasher: foldhash::fast::RandomState,
    /// Kept only during the promotion grace.
    counters: Option<Counters>,
}

/// The integer counters (strings holding an integer) a run's writing
/// commands found, each with the value the last of them found: taking
/// permits from a counter lowers it, and the promotion grace refuses
/// that as a new grant. Watched command by command, not over the run as
/// a whole, so that a script that gives lapsed permits back and takes one
/// in the same run, leaving the counter where it was, is seen taking it.
#[derive(Default)]
pub(super) struct Counters {
    seen: Vec<(usize, Span, i64)>,
    /// A command found a counter lower than the one before it had.
    lowered: bool,
}

impl Journal {
    fn hash(&self, db: usize, key: &[u8]) -> u64 {
        self.hasher.hash_one((db, key))
    }

    /// Whether the key's whole prior state is kept: then nothing after it
    /// needs keeping, since undoing puts that state back last.
    pub(super) fn has_whole(&self, db: usize, key: &[u8]) -> bool {
        if self.wholes.is_empty() {
            return false;
        }
        let (saved, arena) = (&self.saved, &self.arena);
        self.wholes
            .find(self.hash(db, key), |&i| {
                saved[i].0 == db && arena.get(saved[i].1) == key
            })
            .is_some()
    }

    pub(super) fn push(&mut self, db: usize, key: &[u8], prior: Prior) {
        let key = self.key(key);
        self.push_at(db, key, prior);
    }

    /// Keeps a key that prior states are about to be saved for.
    fn key(&mut self, key: &[u8]) -> Span {
        if self.saved.capacity() == 0 {
            // As the arena does: room for a script's usual few changes.
            self.saved.reserve(SAVED_START);
        }
        self.arena.put(key)
    }

    fn push_at(&mut self, db: usize, key: Span, prior: Prior) {
        let whole = matches!(prior, Prior::Whole(_));
        self.saved.push((db, key, prior));
        if whole {
            let (saved, arena, hasher) = (&self.saved, &self.arena, &self.hasher);
            let rehash = |&i: &usize| hasher.hash_one((saved[i].0, arena.get(saved[i].1)));
            self.wholes
                .insert_unique(rehash(&(saved.len() - 1)), saved.len() - 1, rehash);
        }
    }

    /// Keeps what undoes `touch` on `value`, the value of `key` in database
    /// `db`, read before the command runs.
    pub(super) fn keep_before(
        &mut self,
        db: usize,
        key: &[u8],
        expire_at: Option<u64>,
        value: &Value,
        touch: &Touch,
    ) -> Before {
        let key = self.key(key);
        // A part is no whole copy: `wholes` has nothing to learn.
        let saved = &mut self.saved;
        Undo::before(value, touch, &mut self.arena, |undo| {
            saved.push((db, key, Prior::Part { expire_at, undo }));
        })
    }

    /// The keys it saw absent before a change (in no particular order).
    pub(super) fn absent_keys(&self) -> Vec<(usize, Vec<u8>)> {
        self.saved
            .iter()
            .filter(|(_, _, prior)| matches!(prior, Prior::Whole(None)))
            .map(|(db, key, _)| (*db, self.arena.get(*key).to_vec()))
            .collect()
    }

    /// Starts watching counters (`Counters`).
    pub(super) fn watch_counters(&mut self) {
        self.counters = Some(Counters::default());
    }

    pub(super) fn watches_counters(&self) -> bool {
        self.counters.is_some()
    }

    /// Notes the integer a writing command found at `key` before it ran.
    pub(super) fn saw_counter(&mut self, db: usize, key: &[u8], value: i64) {
        let Some(counters) = &mut self.counters else {
            return;
        };
        let arena = &self.arena;
        match counters
            .seen
            .iter_mut()
            .find(|(d, k, _)| *d == db && arena.get(*k) == key)
        {
            Some((_, _, last)) => {
                counters.lowered |= value < *last;
                *last = value;
            }
            None => {
                let key = self.arena.put(key);
                counters.seen.push((db, key, value));
            }
        }
    }

    /// Whether a command lowered a counter another one found, and each
    /// counter's value before the last writing command that found it:
    /// the caller compares it with what is there now.
    pub(super) fn counters(&self) -> (bool, Vec<(usize, Vec<u8>, i64)>) {
        let Some(counters) = &self.counters else {
            return (false, Vec::new());
        };
        let seen = counters
            .seen
            .iter()
            .map(|(db, key, last)| (*db, self.arena.get(*key).to_vec(), *last))
            .collect();
        (counters.lowered, seen)
    }

    /// The prior states, newest first (the order to put them back in),
    /// with the arena their keys and members lie in.
    pub(super) fn undo_order(self) -> (Arena, impl Iterator<Item = (usize, Span, Prior)>) {
        (self.arena, self.saved.into_iter().rev())
    }
}
