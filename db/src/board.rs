//! The board: 12 pits written from the side to move.
//!
//! ```text
//!            opponent (North)
//!      pit  11  10   9   8   7   6
//!          [ ] [ ] [ ] [ ] [ ] [ ]
//!          [ ] [ ] [ ] [ ] [ ] [ ]
//!      pit   0   1   2   3   4   5
//!            mover (South), sowing runs left to right, then up and back
//! ```

use std::fmt;
use std::str::FromStr;

use crate::error::BoardError;

/// Number of pits on the board.
pub const PITS: usize = 12;
/// Seeds in the game (4 in each of 12 pits).
pub const MAX_SEEDS: u32 = 48;

/// A position, always from the side to move: pits 0..5 are the mover's row, 6..11 the opponent's.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Board {
    pits: [u8; PITS],
}

impl Board {
    /// The start position: four seeds in every pit.
    pub const START: Board = Board { pits: [4; PITS] };

    /// A board from pit counts, checked to hold at most 48 seeds.
    pub fn new(pits: [u8; PITS]) -> Result<Board, BoardError> {
        let total: u32 = pits.iter().map(|&p| u32::from(p)).sum();
        if total > MAX_SEEDS {
            return Err(BoardError::TooManySeeds { got: total });
        }
        Ok(Board { pits })
    }

    /// A board from pit counts the caller knows to total at most 48.
    pub const fn from_pits(pits: [u8; PITS]) -> Board {
        Board { pits }
    }

    /// `k` seeds in every pit (the start position is `uniform(4)`).
    pub const fn uniform(k: u8) -> Board {
        Board { pits: [k; PITS] }
    }

    /// The pit counts, mover's row first.
    pub const fn pits(&self) -> [u8; PITS] {
        self.pits
    }

    /// Seeds on the board.
    pub fn seeds(&self) -> u32 {
        self.pits.iter().map(|&p| u32::from(p)).sum()
    }

    /// Seeds in the mover's row (pits 0..5).
    pub fn mover_seeds(&self) -> u32 {
        self.pits[..6].iter().map(|&p| u32::from(p)).sum()
    }

    /// Seeds in the opponent's row (pits 6..11).
    pub fn opponent_seeds(&self) -> u32 {
        self.pits[6..].iter().map(|&p| u32::from(p)).sum()
    }

    /// Whether every opponent pit holds a seed: such a board is in no level (docs/design.md,
    /// "Levels and the index").
    pub fn opponent_row_full(&self) -> bool {
        self.pits[6..].iter().all(|&p| p > 0)
    }

    /// The same position seen by the other player (rows swapped).
    pub fn rotated(&self) -> Board {
        let mut pits = [0; PITS];
        for (i, p) in pits.iter_mut().enumerate() {
            *p = self.pits[(i + 6) % PITS];
        }
        Board { pits }
    }

    /// Parse 12 whitespace- or comma-separated numbers, or the word `start`. Does not allocate
    /// (batch lookups parse millions of lines).
    pub fn parse(text: &str) -> Result<Board, BoardError> {
        let text = text.trim();
        if text == "start" {
            return Ok(Board::START);
        }
        let mut pits = [0u8; PITS];
        let mut count = 0usize;
        for word in text
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty())
        {
            if count < PITS {
                pits[count] = parse_pit(count, word)?;
            }
            count += 1;
        }
        if count != PITS {
            return Err(BoardError::WrongPitCount { got: count });
        }
        Board::new(pits)
    }

    /// The board of a line of plain ASCII text holding exactly 12 numbers of at most two
    /// digits, separated by spaces, tabs or commas (what [`Board::parse`] accepts, read
    /// without validating text or splitting words); `None` for anything else, which
    /// [`Board::parse`] then decides, with its error if any.
    pub fn parse_simple(line: &[u8]) -> Option<Board> {
        let mut pits = [0u8; PITS];
        let mut count = 0usize;
        let mut digits = 0u32; // digits of the number being read
        let mut x = 0u8;
        for &b in line {
            if b.is_ascii_digit() {
                if digits == 2 {
                    return None;
                }
                x = 10 * x + (b - b'0');
                digits += 1;
            } else if matches!(b, b' ' | b'\t' | b',' | b'\r' | b'\n') {
                if digits > 0 {
                    *pits.get_mut(count)? = x;
                    count += 1;
                    (digits, x) = (0, 0);
                }
            } else {
                return None;
            }
        }
        if digits > 0 {
            *pits.get_mut(count)? = x;
            count += 1;
        }
        if count != PITS || pits.iter().any(|&p| u32::from(p) > MAX_SEEDS) {
            return None;
        }
        Board::new(pits).ok()
    }

    /// Parse a board given as separate words (command-line arguments).
    pub fn parse_words<S: AsRef<str>>(words: &[S]) -> Result<Board, BoardError> {
        if words.len() == 1 && words[0].as_ref().trim() == "start" {
            return Ok(Board::START);
        }
        if words.len() == 1 && words[0].as_ref().split_whitespace().count() > 1 {
            return Board::parse(words[0].as_ref());
        }
        if words.len() != PITS {
            return Err(BoardError::WrongPitCount { got: words.len() });
        }
        let mut pits = [0u8; PITS];
        for (pit, (slot, word)) in pits.iter_mut().zip(words).enumerate() {
            *slot = parse_pit(pit, word.as_ref())?;
        }
        Board::new(pits)
    }

    /// A diagram with the mover's row at the bottom, pit numbers underneath and above.
    pub fn diagram(&self) -> String {
        let mut s = String::new();
        s.push_str("          11  10   9   8   7   6\n");
        s.push_str("  North ");
        for i in (6..12).rev() {
            s.push_str(&format!("{:>4}", self.pits[i]));
        }
        s.push_str("\n  South ");
        for i in 0..6 {
            s.push_str(&format!("{:>4}", self.pits[i]));
        }
        s.push_str("   (to move)\n           0   1   2   3   4   5\n");
        s
    }
}

/// One pit count: a whole number 0..=48.
fn parse_pit(pit: usize, word: &str) -> Result<u8, BoardError> {
    let word = word.trim();
    match word.parse::<u32>() {
        Ok(v) if v <= MAX_SEEDS => Ok(v as u8),
        Ok(v) => Err(BoardError::TooManySeeds { got: v }),
        Err(_) => Err(BoardError::BadNumber {
            pit,
            got: word.to_string(),
        }),
    }
}

impl fmt::Debug for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Board({self})")
    }
}

impl fmt::Display for Board {
    /// The 12 counts separated by spaces, the form `parse` reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.pits.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl FromStr for Board {
    type Err = BoardError;

    fn from_str(s: &str) -> Result<Board, BoardError> {
        Board::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A board prints as its 12 counts, one space between them, and reads back from that
    /// text by `parse`, `FromStr` and `parse_simple` alike; `Debug` wraps the same text.
    #[test]
    fn text_round_trips() {
        let b = Board::new([10, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 10]).unwrap();
        let text = "10 1 2 3 4 5 6 7 0 0 0 10";
        assert_eq!(b.to_string(), text);
        assert_eq!(format!("{b:?}"), format!("Board({text})"));
        assert_eq!(text.parse::<Board>(), Ok(b));
        assert_eq!(Board::parse(text), Ok(b));
        assert_eq!(Board::parse_simple(text.as_bytes()), Some(b));
        assert_eq!(" 4 x".parse::<Board>(), Board::parse(" 4 x"));
        assert!(" 4 x".parse::<Board>().is_err());
    }

    /// A pit word above 48 is an error naming that count, even where it would wrap around a
    /// byte to a small one (256 + 4) and the rest of the board is empty or not.
    #[test]
    fn pit_words_above_48_are_errors() {
        for (word, got) in [("49", 49), ("260", 260), ("300", 300)] {
            let mut words = vec!["1"; PITS];
            words[5] = word;
            assert_eq!(
                Board::parse_words(&words),
                Err(BoardError::TooManySeeds { got }),
                "{word}"
            );
            assert_eq!(
                Board::parse(&words.join(" ")),
                Err(BoardError::TooManySeeds { got }),
                "{word}"
            );
        }
    }

    /// The diagram puts pit 0 bottom left, the mover's row left to right, the opponent's
    /// right to left above it (counts right-aligned, two digits fit).
    #[test]
    fn diagram_rows_run_counterclockwise() {
        let b = Board::new([0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 12]).unwrap();
        let want = "          11  10   9   8   7   6\n\
                    \x20 North   12   0   0   8   7   6\n\
                    \x20 South    0   1   2   3   4   5   (to move)\n\
                    \x20          0   1   2   3   4   5\n";
        assert_eq!(b.diagram(), want);
    }

    /// The seed counts of a board, of each row, whether the opponent row is full, and the
    /// rotation, on boards where each differs (mutation testing found the row counts untested).
    #[test]
    fn rows_count_their_own_seeds() {
        let b = Board::new([1, 0, 2, 0, 0, 3, 4, 0, 0, 5, 0, 6]).unwrap();
        assert_eq!(
            (b.seeds(), b.mover_seeds(), b.opponent_seeds()),
            (21, 6, 15)
        );
        assert!(!b.opponent_row_full());
        let r = b.rotated();
        assert_eq!(r.pits(), [4, 0, 0, 5, 0, 6, 1, 0, 2, 0, 0, 3]);
        assert_eq!((r.mover_seeds(), r.opponent_seeds()), (15, 6));
        let full = Board::new([0, 0, 0, 0, 0, 9, 1, 2, 1, 1, 1, 1]).unwrap();
        assert_eq!((full.mover_seeds(), full.opponent_seeds()), (9, 7));
        assert!(full.opponent_row_full());
        let mut rng = crate::SplitMix64(8);
        for _ in 0..1000 {
            let n = rng.below(49) as u32;
            let b = rng.board(n);
            let p = b.pits();
            let mover: u32 = p[..6].iter().map(|&x| u32::from(x)).sum();
            assert_eq!(b.mover_seeds(), mover, "{b}");
            assert_eq!(b.mover_seeds() + b.opponent_seeds(), b.seeds(), "{b}");
            assert_eq!(b.rotated().opponent_seeds(), mover, "{b}");
        }
    }

    #[test]
    fn words_are_twelve_pits_or_start_or_one_line() {
        let words: Vec<String> = (0..12).map(|i| (i % 5).to_string()).collect();
        let b = Board::parse_words(&words).unwrap();
        assert_eq!(b.pits(), [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1]);
        assert_eq!(Board::parse_words(&["start"]).unwrap(), Board::START);
        assert_eq!(Board::parse_words(&[words.join(" ")]).unwrap(), b);
        assert_eq!(
            Board::parse_words(&words[..11]),
            Err(BoardError::WrongPitCount { got: 11 })
        );
        let mut bad = words.clone();
        bad[3] = "x".into();
        assert!(Board::parse_words(&bad).is_err());
        bad[3] = "49".into();
        assert!(Board::parse_words(&bad).is_err());
        // One word of one number is one pit given, whatever the word: not a line to parse.
        for one in ["x", "4", "49"] {
            assert_eq!(
                Board::parse_words(&[one]),
                Err(BoardError::WrongPitCount { got: 1 }),
                "{one}"
            );
        }
        assert_eq!(
            BoardError::WrongPitCount { got: 1 }.to_string(),
            "a board has 12 pits, got 1 number"
        );
        assert_eq!(
            BoardError::WrongPitCount { got: 11 }.to_string(),
            "a board has 12 pits, got 11 numbers"
        );
        // Twelve words, one of them two numbers: that pit's word is bad, not the count.
        let mut two = words.clone();
        two[0] = "4 4".into();
        assert_eq!(
            Board::parse_words(&two),
            Err(BoardError::BadNumber {
                pit: 0,
                got: "4 4".into()
            })
        );
    }

    /// `parse_simple` gives what `parse` gives, or leaves the line to it.
    #[test]
    fn parse_simple_agrees_with_parse() {
        let mut rng = crate::SplitMix64(5);
        let mut lines: Vec<String> = [
            "",
            " ",
            "start",
            "0 0 0 0 0 0 0 0 0 0 0 1",
            "4,4,4,4,4,4,4,4,4,4,4,4",
            "4, 4 ,4\t4 4 4 4 4 4 4 4 4\r\n",
            "04 4 4 4 4 4 4 4 4 4 4 4",
            "1 2 3",
            "1 1 1 1 1 1 1 1 1 1 1 1 1",
            "49 0 0 0 0 0 0 0 0 0 0 0",
            "100 0 0 0 0 0 0 0 0 0 0 0",
            "20 20 20 0 0 0 0 0 0 0 0 0",
            "-1 0 0 0 0 0 0 0 0 0 0 1",
            "+1 0 0 0 0 0 0 0 0 0 0 1",
            "1 0 0 0 0 0 0 0 0 0 0 x",
            ",,1 0 0 0 0 0 0 0 0 0 0 1,,",
            "1 0 0 0 0 0 0 0 0 0 0 1\u{a0}",
            // Eleven numbers, two separators in a row once: no empty number between them.
            "4  4 4 4 4 4 4 4 4 4 4",
            "4,4,4,4,4,,4,4,4,4,4",
            "4, 4, 4, 4, 4, 4, 4, 4, 4, 4,\t4",
            // Eleven numbers and a separator at the end: no twelfth number after it.
            "4 4 4 4 4 4 4 4 4 4 4 ",
            "4,4,4,4,4,4,4,4,4,4,4,\n",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for _ in 0..2000 {
            let seps = [" ", ",", "\t", ", ", "  "];
            // Mostly 12 small numbers (boards), sometimes too many, too few or too large.
            let count = if rng.below(4) == 0 {
                10 + rng.below(4)
            } else {
                12
            };
            let words: Vec<String> = (0..count)
                .map(|_| {
                    let top = if rng.below(8) == 0 { 60 } else { 5 };
                    rng.below(top).to_string()
                })
                .collect();
            // One separator for the line, or one per gap.
            let one = rng.below(2) == 0;
            let mut sep = seps[rng.below(seps.len() as u64) as usize];
            let mut line = String::new();
            for (k, w) in words.iter().enumerate() {
                if k > 0 {
                    if !one {
                        sep = seps[rng.below(seps.len() as u64) as usize];
                    }
                    line.push_str(sep);
                }
                line.push_str(w);
            }
            lines.push(line);
        }
        let mut simple = 0;
        for line in &lines {
            let slow = Board::parse(line);
            if let Some(b) = Board::parse_simple(line.as_bytes()) {
                assert_eq!(slow.as_ref().ok(), Some(&b), "{line:?}");
                simple += 1;
            }
        }
        assert!(simple > 200, "the simple path took only {simple} lines");
    }
}
