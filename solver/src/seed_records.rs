//! The seed-record format: the positions of one chunk of 2^20 (offsets in the chunk, in
//! increasing order, each with a win flag) as one record of a file of records in chunk order.
//! The two-bit builder's seed files (`level-NN.seeds`, the seeds of a step) and the depth
//! pass's wave files (`level-NN.dwave-KKKK`, the positions at depth K) are both made of them.

/// One chunk's seeds as a seed-file record: chunk (u32 LE), byte length (u32 LE), then per
/// seed, in increasing order, a LEB128 varint of (gap from the previous offset + 1) × 2 + won.
pub(crate) fn encode_seeds(chunk: u32, seeds: &[(u32, bool)]) -> Vec<u8> {
    let mut out = vec![0u8; 8];
    out[0..4].copy_from_slice(&chunk.to_le_bytes());
    let mut prev: i64 = -1;
    for &(k, won) in seeds {
        let mut x = ((i64::from(k) - prev) as u64) << 1 | u64::from(won);
        prev = i64::from(k);
        while x >= 0x80 {
            out.push(x as u8 | 0x80);
            x >>= 7;
        }
        out.push(x as u8);
    }
    let len = (out.len() - 8) as u32;
    out[4..8].copy_from_slice(&len.to_le_bytes());
    out
}

/// Append seed `k` (not won) to a record being built in `out` (8 bytes of head, then the
/// body), `prev` the last offset in it (−1 to start with): the incremental [`encode_seeds`].
#[inline]
pub(crate) fn push_seed(out: &mut Vec<u8>, prev: &mut i64, k: u32) {
    push_flagged_seed(out, prev, k, false);
}

/// [`push_seed`] with its flag (the class lists of a depth pass: "depth 0").
#[inline]
pub(crate) fn push_flagged_seed(out: &mut Vec<u8>, prev: &mut i64, k: u32, flag: bool) {
    let mut x = ((i64::from(k) - *prev) as u64) << 1 | u64::from(flag);
    *prev = i64::from(k);
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Write the head of a record built by [`push_seed`]: its chunk and body length.
pub(crate) fn finish_record(out: &mut [u8], chunk: u32) {
    out[0..4].copy_from_slice(&chunk.to_le_bytes());
    let len = (out.len() - 8) as u32;
    out[4..8].copy_from_slice(&len.to_le_bytes());
}

/// The seeds of a record's body (see [`encode_seeds`]).
pub(crate) fn decode_seeds(bytes: &[u8]) -> Vec<(u32, bool)> {
    let mut out = Vec::new();
    let (mut x, mut shift, mut prev) = (0u64, 0, -1i64);
    for &b in bytes {
        x |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if b < 0x80 {
            prev += (x >> 1) as i64;
            out.push((prev as u32, x & 1 == 1));
            x = 0;
            shift = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_records_round_trip() {
        let mut rng = awari_db::SplitMix64(4);
        let mut seeds: Vec<(u32, bool)> = (0..5000)
            .map(|_| (rng.below(1 << 20) as u32, rng.below(2) == 1))
            .collect();
        seeds.sort_unstable_by_key(|&(k, _)| k);
        seeds.dedup_by_key(|s| s.0);
        seeds.insert(0, (0, true));
        seeds.dedup_by_key(|s| s.0);
        let r = encode_seeds(7, &seeds);
        assert_eq!(u32::from_le_bytes(r[0..4].try_into().unwrap()), 7);
        assert_eq!(decode_seeds(&r[8..]), seeds);
        // Built a seed at a time, the flags all unset.
        let (mut out, mut prev) = (vec![0u8; 8], -1);
        for &(k, _) in &seeds {
            push_seed(&mut out, &mut prev, k);
        }
        finish_record(&mut out, 7);
        let unflagged: Vec<(u32, bool)> = seeds.iter().map(|&(k, _)| (k, false)).collect();
        assert_eq!(out, encode_seeds(7, &unflagged));
    }
}
