//! Boards from text: `Board::parse` (and `FromStr`), the fast `Board::parse_simple` that
//! batch lookups try first, `Board::parse_words` (command-line words), then the board's
//! index: `Level::rank` and `Level::unrank`, its moves under every rule set, and the probe's
//! checks. Asserted besides "no panic": `parse_simple` accepts only what `parse` reads the
//! same; a board's text reads back as the board; rank and unrank are inverse, within the
//! level, and a board has no rank exactly when its opponent row is full.
#![no_main]

use awari_db::{Board, Level, Outcome, Rules};
use libfuzzer_sys::fuzz_target;

fn check(b: &Board) {
    let text = b.to_string();
    assert_eq!(Board::parse(&text).unwrap(), *b);
    assert_eq!(Board::parse_simple(text.as_bytes()), Some(*b));
    assert_eq!(b.rotated().rotated(), *b);
    let _ = b.diagram();
    let level = Level::new(b.seeds());
    match level.rank(b) {
        Some(i) => {
            assert!(i < level.size(), "rank {i} of {b} outside its level");
            assert_eq!(level.unrank(i), *b, "unrank(rank({b}))");
            assert!(!b.opponent_row_full());
        }
        None => assert!(b.opponent_row_full(), "{b} has no rank"),
    }
    for rules in Rules::ALL {
        if let Outcome::Moves(moves) = b.outcome(rules) {
            for m in moves.iter() {
                assert!(m.child.seeds() + u32::from(m.captures) == b.seeds());
            }
        }
    }
    let _ = awari_probe::check_playable(b);
}

fuzz_target!(|data: &[u8]| {
    if let Some(b) = Board::parse_simple(data) {
        let text = std::str::from_utf8(data).expect("parse_simple reads ASCII only");
        assert_eq!(
            Board::parse(text).unwrap(),
            b,
            "parse_simple and parse differ"
        );
        check(&b);
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = awari_probe::parse_captured(text);
    if let Ok(b) = text.parse::<Board>() {
        check(&b);
    }
    let words: Vec<&str> = text.split('\n').collect();
    if let Ok(b) = Board::parse_words(&words) {
        check(&b);
    }
});
