//! Property tests (proptest): generated boards of any level up to 48, generated text and
//! generated damage to table files, each case shrunk to a smallest failing one.
//!
//! - the index is a bijection: every indexed board ranks inside its level and unranks back;
//! - un-moves invert moves: every quiet child lists its parent among its predecessors, and
//!   every capturing child lists it among its un-captures;
//! - board text never panics the parser, and what it accepts prints back the same;
//! - a values or depth table with any byte changed either fails to open, fails its checksum,
//!   or holds the same entries: never a panic, never a wrong value or depth that verifies.

use awari_db::{write_table, Board, Expect, Header, Level, Rules, Table};
use proptest::prelude::*;

/// A board with at most 48 seeds, any spread (pits grow until the seeds run out).
fn board() -> impl Strategy<Value = Board> {
    (0u32..=48, prop::array::uniform12(0u32..=1000)).prop_map(|(seeds, weights)| {
        // Spread `seeds` over the pits in proportion to the weights, the rest to pit 0.
        let total: u32 = weights.iter().sum::<u32>().max(1);
        let mut pits = [0u8; 12];
        let mut left = seeds;
        for (p, w) in pits.iter_mut().zip(weights) {
            let k = (seeds * w / total).min(left);
            *p = k as u8;
            left -= k;
        }
        pits[0] += left as u8;
        Board::new(pits).expect("at most 48 seeds")
    })
}

fn rules() -> impl Strategy<Value = Rules> {
    prop::sample::select(Rules::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn the_index_is_a_bijection(b in board()) {
        let level = Level::new(b.seeds());
        match level.rank(&b) {
            Some(i) => {
                prop_assert!(i < level.size());
                prop_assert_eq!(level.unrank(i), b);
            }
            // Only a full opponent row is outside the level.
            None => prop_assert!(b.opponent_row_full()),
        }
    }

    #[test]
    fn unmoves_invert_moves(b in board(), rules in rules()) {
        for m in b.legal_moves(rules).iter() {
            if m.captures == 0 {
                prop_assert!(
                    m.child.predecessors(rules).contains(&(b, m.pit)),
                    "{}: {} pit {} → {} is not un-moved", rules, b, m.pit, m.child
                );
            } else {
                prop_assert!(
                    m.child.uncaptures(rules, m.captures).contains(&(b, m.pit)),
                    "{}: {} pit {} → {} (captures {}) is not un-captured",
                    rules, b, m.pit, m.child, m.captures
                );
            }
        }
    }

    #[test]
    fn board_text_never_panics(text in "\\PC{0,40}|[0-9 ,]{0,40}") {
        if let Ok(b) = Board::parse(&text) {
            prop_assert!(b.seeds() <= 48);
            prop_assert_eq!(Board::parse(&b.to_string()).unwrap(), b);
        }
    }

    #[test]
    fn a_damaged_table_is_an_error_or_the_same_values(
        offset in 0usize..(64 + 2464320),
        xor in 1u8..=255,
        level in 0u32..=13,
        depth in any::<bool>(),
    ) {
        let dir = std::env::temp_dir().join(format!("awari-prop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("level-{level:02}.values"));
        let size = awari_db::level_size(level) as usize;
        let data: Vec<u8> = (0..size).map(|i| (i % 7) as u8).collect();
        // A values table, or a depth table (the same format, content 1).
        let header = if depth {
            Header::depth(Rules::Awari, level, 1)
        } else {
            Header::values(Rules::Awari, level)
        };
        write_table(&path, header, &data).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let offset = offset % bytes.len();
        bytes[offset] ^= xor;
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(t) = Table::open(&path, Expect::default()) {
            if t.verify().is_ok() {
                // Only a header byte nothing reads (reserved) may change unnoticed.
                prop_assert_eq!(t.header().seeds, level);
                prop_assert_eq!(t.header().content, header.content);
                for i in 0..size as u64 {
                    prop_assert_eq!(t.entry(i), u16::from(data[i as usize]));
                }
            }
        }
        std::fs::remove_file(&path).unwrap();
    }
}
