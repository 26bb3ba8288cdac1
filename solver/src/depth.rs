//! Depth to conversion: what the `level-NN.depth` tables hold.
//!
//! The depth of a position is the number of plies, with perfect play, until its value is
//! *converted*: until a capture or the end of the game, after which the lower levels take over.
//! It is the breadth-first wave in which the builder settles the position:
//!
//! | position | depth |
//! |---|---|
//! | drawn (value 0) | 0 (no conversion needed; repetition divides the seeds) |
//! | terminal (no seeds, no move, forced eradication, failed feed) | 0 |
//! | won, and a capturing move achieves the value | 0 |
//! | lost, and only capturing moves achieve the value | 0 |
//! | won by v, otherwise | 1 + the smallest depth of a child lost by v (a value-optimal quiet move) |
//! | lost by v, otherwise | 1 + the largest depth of a child won by v (its value-optimal quiet moves) |
//!
//! So a winner always has a value-optimal move that captures or lowers the depth, and every
//! value-optimal quiet move of a loser lowers the depth: playing those, a won or lost position
//! reaches a capture or the end of the game, and the predicted score, in at most `depth` plies.
//! `awari-solver verify` checks exactly these two properties for every entry.
//!
//! Entries are one byte when the level's largest depth is below 256, otherwise two (u16 LE);
//! the header's "bytes per entry" says which. Depths never saturate: a level whose depth
//! exceeded 65535 would fail to build.
