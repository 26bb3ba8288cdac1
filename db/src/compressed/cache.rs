//! Decoded segments, kept per thread: a probe that lands in a segment decoded a moment ago
//! (a capture search's children, the small levels a batch of random boards keeps returning
//! to, a line's positions) reads its value without decoding the segment again.
//!
//! ```text
//!   slot = hash(table, segment) mod SLOTS        one direct-mapped array per thread
//!   +-------+---------+-----+------------------------+
//!   | table | segment | len | values 0..len (i8)      |   len: entries decoded so far
//!   +-------+---------+-----+------------------------+
//! ```
//!
//! A slot holds the prefix of its segment decoded so far; an entry past it decodes the segment
//! again from its start, as far as that entry, and keeps the longer prefix. Only decodes that
//! succeeded are kept, so a block is still checked at its first decode; a table's key is
//! unique to one open, so a slot never answers for another table.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::TableError;

use super::MAX_SEGMENT;

/// Slots per thread: 8192 segments of up to 256 values, about 2.1 MiB.
const SLOTS_LOG2: u32 = 13;
/// Values per slot: the largest segment of any form.
const WIDTH: usize = MAX_SEGMENT;

/// A key unique to each open table (0 is never one: an empty slot's).
pub(super) fn new_key() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

struct Slot {
    table: u64,
    segment: u64,
    len: usize,
    values: [i8; WIDTH],
}

thread_local! {
    /// This thread's slots, made at its first probe of a compressed table.
    static SLOTS: RefCell<Vec<Slot>> = const { RefCell::new(Vec::new()) };
}

#[inline]
fn slot_of(table: u64, segment: u64) -> usize {
    let h = (segment ^ table.rotate_left(40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> (64 - SLOTS_LOG2)) as usize
}

/// Entry `k` of segment `segment` of the table keyed `table`: from this thread's slots, or
/// by `decode(out)`, which fills `out` with the segment's entries `0..out.len()`.
pub(super) fn entry(
    table: u64,
    segment: u64,
    k: usize,
    decode: impl FnOnce(&mut [i8]) -> Result<(), TableError>,
) -> Result<i8, TableError> {
    debug_assert!(k < WIDTH);
    SLOTS.with(|cell| {
        let Ok(mut slots) = cell.try_borrow_mut() else {
            // Re-entered (no decoder probes another table, but never panic for it).
            let mut out = [0i8; WIDTH];
            decode(&mut out[..=k])?;
            return Ok(out[k]);
        };
        if slots.is_empty() {
            *slots = (0..1usize << SLOTS_LOG2)
                .map(|_| Slot {
                    table: 0,
                    segment: 0,
                    len: 0,
                    values: [0; WIDTH],
                })
                .collect();
        }
        let slot = &mut slots[slot_of(table, segment)];
        if slot.table == table && slot.segment == segment && k < slot.len {
            return Ok(slot.values[k]);
        }
        // Emptied first: a decode that fails leaves nothing behind.
        slot.table = 0;
        slot.len = 0;
        decode(&mut slot.values[..=k])?;
        slot.table = table;
        slot.segment = segment;
        slot.len = k + 1;
        Ok(slot.values[k])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_slot_answers_its_prefix_and_decodes_past_it() {
        let calls = Cell::new(0);
        let table = new_key();
        let decode = |out: &mut [i8]| {
            calls.set(calls.get() + 1);
            for (i, v) in out.iter_mut().enumerate() {
                *v = i as i8 - 5;
            }
            Ok(())
        };
        assert_eq!(entry(table, 3, 10, decode).unwrap(), 5);
        assert_eq!(entry(table, 3, 4, decode).unwrap(), -1);
        assert_eq!(entry(table, 3, 10, decode).unwrap(), 5);
        assert_eq!(calls.get(), 1, "the prefix 0..=10 was kept");
        assert_eq!(entry(table, 3, 20, decode).unwrap(), 15);
        assert_eq!(calls.get(), 2, "past the prefix: decoded again");
        // Another table, or another segment, never reads this slot.
        let other = new_key();
        assert_eq!(
            entry(other, 3, 4, |out| {
                out.fill(7);
                Ok(())
            })
            .unwrap(),
            7
        );
        assert_eq!(
            entry(table, 4, 4, |out| {
                out.fill(9);
                Ok(())
            })
            .unwrap(),
            9
        );
    }

    #[test]
    fn a_failed_decode_is_not_kept() {
        let table = new_key();
        let err = || TableError::Mismatch {
            path: "x".into(),
            field: "test",
            expected: String::new(),
            got: String::new(),
        };
        assert!(entry(table, 1, 2, |_| Err(err())).is_err());
        assert!(
            entry(table, 1, 0, |_| Err(err())).is_err(),
            "nothing was kept"
        );
        assert_eq!(
            entry(table, 1, 2, |out| {
                out.fill(3);
                Ok(())
            })
            .unwrap(),
            3
        );
        // A decode past the prefix that writes part of the slot and then fails: the slot no
        // longer answers, not even for the prefix it held.
        let failing = |out: &mut [i8]| {
            out.fill(-1);
            Err(err())
        };
        assert!(entry(table, 1, 5, failing).is_err());
        let four = |out: &mut [i8]| {
            out.fill(4);
            Ok(())
        };
        assert_eq!(entry(table, 1, 1, four).unwrap(), 4);
    }
}
