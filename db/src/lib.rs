//! # awari-db
//!
//! The game core of the Awari (Oware) solver: the board and the three rule sets, moves and
//! un-moves, the Romein & Bal level index, and the memory-mapped table file format.
//!
//! ```
//! use awari_db::{Board, Level, Rules, Outcome};
//!
//! let b = Board::parse("1 1 1 1 1 2 4 2 3 0 0 0").unwrap();
//! let level = Level::new(b.seeds());
//! let i = level.rank(&b).expect("an opponent pit is empty, so the board is indexed");
//! assert_eq!(level.unrank(i), b);
//! match b.outcome(Rules::Awari) {
//!     Outcome::Moves(moves) => assert_eq!(moves.len(), 6),
//!     Outcome::Terminal(_) => unreachable!(),
//! }
//! ```
#![warn(missing_docs)]

pub mod board;
pub mod compressed;
pub mod dir;
pub mod error;
pub mod files;
pub mod format;
pub mod index;
pub mod moves;
pub mod packed;
mod parent_range;
pub mod pipe;
pub mod random;
pub mod rans;
pub mod rules;
pub mod table;
mod unmoves;

pub use board::{Board, MAX_SEEDS, PITS};
pub use dir::{
    compressed_depth_path, compressed_path, depth_path, level_exists, level_path, raw_path,
    DbError, Levels,
};
pub use error::{one_line, BoardError, ParseRulesError, TableError};
pub use index::{all_boards, binomial, level_size, successor, Level};
pub use moves::{sow_only, Move, MoveList, Outcome, QuietMoves};
pub use parent_range::ParentRange;
pub use random::SplitMix64;
pub use rules::Rules;
pub use table::{
    checksum, write_table, Access, Content, Expect, Header, SharedTable, Table, TableWriter,
};
