//! The four rule sets (docs/design.md, "The game and the rule sets"), named everywhere by
//! the same strings.

use std::fmt;
use std::str::FromStr;

use crate::error::ParseRulesError;

/// Which variant of the game a board is played under.
///
/// | name         | grand slam (capture of every opponent seed)        | mover cannot move          |
/// |--------------|----------------------------------------------------|----------------------------|
/// | `awari`      | eradicating moves illegal unless every move is one; then the mover takes all (+n) | no seeds: −n |
/// | `abapa`      | legal but captures nothing; an empty opponent must be fed | cannot feed: +n; no seeds: −n |
/// | `grand-slam` | legal, captures, and the capturer takes the rest (+n); feeding as `abapa` | as `abapa` |
/// | `cross-wari` | as `abapa`; an odd pit sows clockwise, an even one counter-clockwise | the seeds left go to no one: 0 |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Rules {
    /// Computer Olympiad rules, solved by Romein & Bal in 2002 (the default).
    #[default]
    Awari,
    /// International competition rules: a grand slam captures nothing.
    Abapa,
    /// A grand slam ends the game and wins every seed for the capturer.
    GrandSlam,
    /// `abapa` with two changes (W. Dan Troyka, 2001): a pit holding an odd number of seeds
    /// sows clockwise, an even one counter-clockwise; the seeds left when the game ends
    /// (no seeds to move, or an empty opponent that cannot be fed) go to no one.
    CrossWari,
}

impl Rules {
    /// All rule sets, in header-code order.
    pub const ALL: [Rules; 4] = [
        Rules::Awari,
        Rules::Abapa,
        Rules::GrandSlam,
        Rules::CrossWari,
    ];

    /// The name used on the command line and in messages.
    pub fn name(self) -> &'static str {
        match self {
            Rules::Awari => "awari",
            Rules::Abapa => "abapa",
            Rules::GrandSlam => "grand-slam",
            Rules::CrossWari => "cross-wari",
        }
    }

    /// The byte stored in table headers.
    pub fn code(self) -> u8 {
        match self {
            Rules::Awari => 0,
            Rules::Abapa => 1,
            Rules::GrandSlam => 2,
            Rules::CrossWari => 3,
        }
    }

    /// The value of a game that ends with `n` seeds on the board because the mover has no
    /// seeds (`mover_stuck`) or cannot feed an empty opponent (or, under `awari`, can only
    /// eradicate): the side that can still move takes them all (−n or +n), except under
    /// `cross-wari`, where they go to no one (0).
    #[inline]
    pub fn end_value(self, n: i8, mover_stuck: bool) -> i8 {
        match (self, mover_stuck) {
            (Rules::CrossWari, _) => 0,
            (_, true) => -n,
            (_, false) => n,
        }
    }

    /// Whether a grand slam (a capture of every opponent seed) is legal and captures nothing.
    #[inline]
    pub fn grand_slam_captures_nothing(self) -> bool {
        matches!(self, Rules::Abapa | Rules::CrossWari)
    }

    /// Whether a pit's parity chooses the sowing direction (`cross-wari`: odd clockwise).
    #[inline]
    pub fn sows_both_ways(self) -> bool {
        self == Rules::CrossWari
    }

    /// The rule set for a header byte, if it names one.
    pub fn from_code(code: u8) -> Option<Rules> {
        Rules::ALL.into_iter().find(|r| r.code() == code)
    }
}

impl fmt::Display for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Rules {
    type Err = ParseRulesError;

    fn from_str(s: &str) -> Result<Rules, ParseRulesError> {
        Rules::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| ParseRulesError { got: s.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip_and_nothing_else_parses() {
        let names: Vec<String> = Rules::ALL.iter().map(|r| r.to_string()).collect();
        assert_eq!(names, ["awari", "abapa", "grand-slam", "cross-wari"]);
        for (k, r) in Rules::ALL.into_iter().enumerate() {
            assert_eq!(r.name().parse::<Rules>().unwrap(), r);
            assert_eq!(r.code(), k as u8);
            assert_eq!(Rules::from_code(r.code()), Some(r));
        }
        assert_eq!(Rules::from_code(4), None);
        for bad in ["", "Awari", "grandslam", "awari ", "oware", "crosswari"] {
            let e = bad.parse::<Rules>().unwrap_err();
            assert_eq!(e.got, bad);
        }
    }
}
