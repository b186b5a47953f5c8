//! HyperLogLog in Redis 7.0's own layout, so that a value written here
//! reads back byte for byte as Redis writes it (GET, SET and DUMP of an
//! HLL move between the two servers) and PFCOUNT gives Redis's numbers.
//!
//! A value is a 16-byte header (`HYLL`, the encoding, three unused bytes,
//! the cached cardinality in little endian with bit 63 set when stale)
//! followed by 16384 six-bit registers, either dense (packed, least
//! significant bits first) or sparse (run-length opcodes: ZERO `00llllll`,
//! XZERO `01llllll llllllll`, VAL `1vvvvvll`).

const P: u32 = 14;
const Q: u32 = 64 - P;
pub const REGISTERS: usize = 1 << P;
const REGISTER_MAX: u8 = 63;
pub const HEADER: usize = 16;
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
pub const DENSE_SIZE: usize = HEADER + (REGISTERS * 6).div_ceil(8);
/// Redis's `hll-sparse-max-bytes` default: a longer sparse value turns dense.
const SPARSE_MAX_BYTES: usize = 3000;
const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
const SPARSE_XZERO_MAX_LEN: usize = 16384;
const STALE_BIT: u8 = 0x80;

/// The value breaks the layout (a run past the last register, a sparse
/// form that does not cover them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// Whether `data` is an HLL at all: the header, a known encoding and, when
/// dense, the exact size. Runs are checked only when they are read.
pub fn is_hll(data: &[u8]) -> bool {
    data.len() >= HEADER
        && &data[..4] == b"HYLL"
        && data[4] <= SPARSE
        && (data[4] != DENSE || data.len() == DENSE_SIZE)
}

/// A new, empty HLL: sparse, all registers zero, a valid cached count of 0.
pub fn new_sparse() -> Vec<u8> {
    let mut out = header(SPARSE);
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(SPARSE_XZERO_MAX_LEN);
        push_xzero(&mut out, run);
        left -= run;
    }
    out
}

fn header(encoding: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + 2);
    out.extend_from_slice(b"HYLL");
    out.extend_from_slice(&[encoding, 0, 0, 0]);
    out.extend_from_slice(&[0; 8]);
    out
}

pub fn is_sparse(data: &[u8]) -> bool {
    data[4] == SPARSE
}

/// The cached cardinality, if it is still valid.
pub fn cached_count(data: &[u8]) -> Option<u64> {
    let card: [u8; 8] = data[8..16].try_into().ok()?;
    (card[7] & STALE_BIT == 0).then(|| u64::from_le_bytes(card))
}

pub fn set_cached_count(data: &mut [u8], count: u64) {
    data[8..16].copy_from_slice(&count.to_le_bytes());
}

pub fn invalidate_cache(data: &mut [u8]) {
    data[15] |= STALE_BIT;
}

/// Redis's MurmurHash64A with its seed: the hash that picks the register.
fn murmur64a(key: &[u8]) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = 0xadc8_3b19u64 ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for chunk in &mut chunks {
        let mut k = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element falls in and the run length it offers there
/// (1 + the trailing zero bits of the rest of the hash, at most Q + 1).
fn register_and_rank(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

fn dense_get(regs: &[u8], i: usize) -> u8 {
    let (byte, shift) = (i * 6 / 8, i * 6 % 8);
    let lo = regs[byte] as u16 >> shift;
    let hi = regs.get(byte + 1).map_or(0, |&b| (b as u16) << (8 - shift));
    ((lo | hi) as u8) & REGISTER_MAX
}

fn dense_set(regs: &mut [u8], i: usize, value: u8) {
    let (byte, shift) = (i * 6 / 8, i * 6 % 8);
    let wide = (value as u16) << shift;
    let mask = (REGISTER_MAX as u16) << shift;
    regs[byte] = (regs[byte] & !(mask as u8)) | wide as u8;
    if let Some(next) = regs.get_mut(byte + 1) {
        *next = (*next & !((mask >> 8) as u8)) | (wide >> 8) as u8;
    }
}

/// One sparse opcode: a run of `len` registers holding `value`.
#[derive(Clone, Copy)]
struct Op {
    value: u8,
    len: usize,
    /// Its size in bytes (XZERO takes two).
    size: usize,
}

fn op_at(sparse: &[u8], at: usize) -> Op {
    let b = sparse[at];
    if b & 0x80 != 0 {
        Op {
            value: ((b >> 2) & 0x1f) + 1,
            len: (b & 0x3) as usize + 1,
            size: 1,
        }
    } else if b & 0x40 != 0 {
        let low = sparse.get(at + 1).copied().unwrap_or(0) as usize;
        Op {
            value: 0,
            len: ((((b & 0x3f) as usize) << 8) | low) + 1,
            size: 2,
        }
    } else {
        Op {
            value: 0,
            len: (b & 0x3f) as usize + 1,
            size: 1,
        }
    }
}

fn sparse_ops(sparse: &[u8]) -> impl Iterator<Item = Op> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        (at < sparse.len()).then(|| {
            let op = op_at(sparse, at);
            at += op.size;
            op
        })
    })
}

fn val_byte(value: u8, len: usize) -> u8 {
    0x80 | ((value - 1) << 2) | (len as u8 - 1)
}

fn push_xzero(out: &mut Vec<u8>, len: usize) {
    let l = len - 1;
    out.extend_from_slice(&[0x40 | (l >> 8) as u8, (l & 0xff) as u8]);
}

/// A run of zero registers as ZERO or, past 64, XZERO.
fn push_zeros(out: &mut Vec<u8>, len: usize) {
    if len > SPARSE_ZERO_MAX_LEN {
        push_xzero(out, len);
    } else {
        out.push(len as u8 - 1);
    }
}

/// Calls `visit(register, value)` for every non-zero register.
fn for_each_register(data: &[u8], mut visit: impl FnMut(usize, u8)) -> Result<(), Corrupt> {
    let body = &data[HEADER..];
    if !is_sparse(data) {
        for i in 0..REGISTERS {
            visit(i, dense_get(body, i));
        }
        return Ok(());
    }
    let mut i = 0;
    for op in sparse_ops(body) {
        if op.value > 0 {
            if i + op.len > REGISTERS {
                return Err(Corrupt);
            }
            (i..i + op.len).for_each(|r| visit(r, op.value));
        }
        i += op.len;
    }
    if i == REGISTERS { Ok(()) } else { Err(Corrupt) }
}

/// Rewrites a sparse HLL as dense, keeping the header (and its cached
/// count); false if it was dense already.
pub fn to_dense(data: &mut Vec<u8>) -> Result<bool, Corrupt> {
    if !is_sparse(data) {
        return Ok(false);
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HEADER].copy_from_slice(&data[..HEADER]);
    dense[4] = DENSE;
    for_each_register(data, |i, v| dense_set(&mut dense[HEADER..], i, v))?;
    *data = dense;
    Ok(true)
}

/// Raises register `index` to `rank`: true if it changed.
pub fn set_register(data: &mut Vec<u8>, index: usize, rank: u8) -> Result<bool, Corrupt> {
    if !is_sparse(data) {
        let regs = &mut data[HEADER..];
        if dense_get(regs, index) >= rank {
            return Ok(false);
        }
        dense_set(regs, index, rank);
        return Ok(true);
    }
    if rank > SPARSE_VAL_MAX_VALUE {
        return promote(data, index, rank);
    }
    sparse_set(data, index, rank)
}

fn promote(data: &mut Vec<u8>, index: usize, rank: u8) -> Result<bool, Corrupt> {
    to_dense(data)?;
    dense_set(&mut data[HEADER..], index, rank);
    Ok(true)
}

/// Redis's in-place sparse update: split the opcode that covers `index`,
/// then merge equal neighbouring VALs, scanning at most five opcodes from
/// the one before.
fn sparse_set(data: &mut Vec<u8>, index: usize, rank: u8) -> Result<bool, Corrupt> {
    let (mut at, mut first, mut prev) = (HEADER, 0usize, None);
    let op = loop {
        if at >= data.len() {
            return Err(Corrupt);
        }
        let op = op_at(data, at);
        if index < first + op.len {
            break op;
        }
        prev = Some(at);
        at += op.size;
        first += op.len;
    };
    let mut seq = Vec::with_capacity(5);
    if op.value > 0 {
        if op.value >= rank {
            return Ok(false);
        }
        if index != first {
            seq.push(val_byte(op.value, index - first));
        }
        seq.push(val_byte(rank, 1));
        if index != first + op.len - 1 {
            seq.push(val_byte(op.value, first + op.len - 1 - index));
        }
    } else {
        if index != first {
            push_zeros(&mut seq, index - first);
        }
        seq.push(val_byte(rank, 1));
        if index != first + op.len - 1 {
            push_zeros(&mut seq, first + op.len - 1 - index);
        }
    }
    let grows = seq.len() > op.size;
    if grows && data.len() + seq.len() - op.size > SPARSE_MAX_BYTES {
        return promote(data, index, rank);
    }
    data.splice(at..at + op.size, seq);
    merge_vals(data, prev.unwrap_or(HEADER));
    Ok(true)
}

fn merge_vals(data: &mut Vec<u8>, from: usize) {
    let mut p = from;
    for _ in 0..5 {
        if p >= data.len() {
            break;
        }
        let op = op_at(data, p);
        if op.value == 0 {
            p += op.size;
            continue;
        }
        if p + 1 < data.len() && data[p + 1] & 0x80 != 0 {
            let next = op_at(data, p + 1);
            let len = op.len + next.len;
            if next.value == op.value && len <= SPARSE_VAL_MAX_LEN {
                data[p + 1] = val_byte(op.value, len);
                data.remove(p);
                continue;
            }
        }
        p += 1;
    }
}

/// PFADD of one element: true if a register changed.
pub fn add(data: &mut Vec<u8>, element: &[u8]) -> Result<bool, Corrupt> {
    let (index, rank) = register_and_rank(element);
    set_register(data, index, rank)
}

/// Raises each register of `max` to this HLL's (the union of PFCOUNT
/// and PFMERGE).
pub fn merge_into(max: &mut [u8; REGISTERS], data: &[u8]) -> Result<(), Corrupt> {
    for_each_register(data, |i, v| max[i] = max[i].max(v))
}

/// The registers one by one (PFDEBUG GETREG).
pub fn registers(data: &[u8]) -> Result<Vec<u8>, Corrupt> {
    let mut regs = vec![0u8; REGISTERS];
    for_each_register(data, |i, v| regs[i] = v)?;
    Ok(regs)
}

/// The estimate for an HLL value (its cache not consulted).
pub fn count(data: &[u8]) -> Result<u64, Corrupt> {
    let mut histogram = [0u32; 64];
    if is_sparse(data) {
        let mut seen = 0;
        for op in sparse_ops(&data[HEADER..]) {
            seen += op.len;
            if seen > REGISTERS {
                return Err(Corrupt);
            }
            histogram[op.value as usize] += op.len as u32;
        }
        if seen != REGISTERS {
            return Err(Corrupt);
        }
    } else {
        let regs = &data[HEADER..];
        (0..REGISTERS).for_each(|i| histogram[dense_get(regs, i) as usize] += 1);
    }
    Ok(estimate(&histogram))
}

/// The estimate for plain registers, one byte each.
pub fn count_registers(regs: &[u8; REGISTERS]) -> u64 {
    let mut histogram = [0u32; 64];
    regs.iter()
        .for_each(|&r| histogram[(r & REGISTER_MAX) as usize] += 1);
    estimate(&histogram)
}

/// Ertl's improved estimator ("New cardinality estimation algorithms for
/// HyperLogLog sketches"), as Redis computes it, in the same order.
fn estimate(histogram: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - histogram[Q as usize + 1] as f64) / m);
    for j in (1..=Q as usize).rev() {
        z += histogram[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histogram[0] as f64 / m);
    let alpha_inf = 0.721_347_520_444_481_7_f64;
    (alpha_inf * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if before == z {
            return z / 3.0;
        }
    }
}

/// PFDEBUG DECODE's listing of a sparse HLL's opcodes.
pub fn decode_sparse(data: &[u8]) -> String {
    let words: Vec<String> = sparse_ops(&data[HEADER..])
        .map(|op| match (op.value, op.size) {
            (0, 1) => format!("z:{}", op.len),
            (0, _) => format!("Z:{}", op.len),
            (v, _) => format!("v:{v},{}", op.len),
        })
        .collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_one_xzero_and_counts_zero() {
        let h = new_sparse();
        assert_eq!(h.len(), HEADER + 2);
        assert_eq!(&h[HEADER..], &[0x7f, 0xff]);
        assert_eq!(count(&h), Ok(0));
        assert_eq!(cached_count(&h), Some(0));
    }

    #[test]
    fn dense_registers_round_trip_at_every_bit_offset() {
        let mut regs = vec![0u8; DENSE_SIZE - HEADER];
        for i in 0..REGISTERS {
            dense_set(&mut regs, i, (i % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&regs, i), (i % 64) as u8);
        }
    }

    #[test]
    fn sparse_and_dense_agree() {
        let mut sparse = new_sparse();
        for i in 0..2000u32 {
            add(&mut sparse, &i.to_le_bytes()).unwrap();
        }
        let mut dense = sparse.clone();
        to_dense(&mut dense).unwrap();
        assert_eq!(registers(&sparse), registers(&dense));
        assert_eq!(count(&sparse), count(&dense));
        let n = count(&dense).unwrap() as f64;
        assert!((n - 2000.0).abs() < 2000.0 * 0.05, "{n}");
    }
}
