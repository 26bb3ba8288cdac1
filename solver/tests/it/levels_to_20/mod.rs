//! Tests on every level up to 20 (16 under the other rule sets, see [`top_of`] and each
//! test) under the three rule sets, sharing one in-memory build per
//! rule set (the reference): the two-bit algorithm writes the same bytes ([`two_bit`]), and the
//! streamed `verify` agrees with the lookup one and finds changed entries ([`streamed_verify`]),
//! compressed tables hold the same values and serve the builder ([`compressed`]), and the
//! compact depth pass gives the in-memory builder's depths ([`depth`]), and builds killed with
//! SIGKILL again and again resume to the same bytes ([`killed`]).
//!
//! The slow tier: every test here is `#[ignore]`d, so `cargo test --workspace` (the fast tier)
//! skips it; `.ci/run` runs it with `-- --include-ignored`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use awari_db::Rules;

mod compressed;
mod depth;
mod killed;
mod streamed_verify;
mod two_bit;

pub(crate) use crate::common::{assert_level_same, build_mode, copy_levels, temp};

/// The highest level of the reference.
pub(crate) const TOP: u32 = crate::common::reference::SHARED_TOP;

/// The highest level the two defining identities (the two-bit build's bytes, the compact depth
/// pass's depths) reach under `rules`, the reference's own top
/// ([`crate::common::reference::shared_top`]): 20 under awari, 16 under the other rule sets.
/// Level 20 alone is 38 % of levels 0..20 and the only one above 2^26 positions, where the
/// depth pass stops cutting wave 0's chunks in parts; that and the other size-dependent paths
/// do not depend on the rules, and awari takes them (see `shared_top`).
pub(crate) fn top_of(rules: Rules) -> u32 {
    crate::common::reference::shared_top(rules)
}

/// The highest level the streamed and lookup `verify`s both check under `rules`: 20 under
/// awari, 16 (all of [`top_of`]) under the other rule sets.
pub(crate) fn verify_top(rules: Rules) -> u32 {
    if rules == Rules::Awari {
        TOP
    } else {
        16
    }
}

/// Levels 0..=[`top_of`] built in memory, with the in-memory builder's depths beside them (see
/// [`common::reference`]): built once for every test binary of the slow tier, checked once per
/// rule set in this process.
pub(crate) fn reference(rules: Rules) -> &'static Path {
    static DIRS: [OnceLock<PathBuf>; Rules::ALL.len()] =
        [const { OnceLock::new() }; Rules::ALL.len()];
    let slot = Rules::ALL.iter().position(|&r| r == rules).unwrap();
    DIRS[slot].get_or_init(|| crate::common::reference::shared_reference(rules))
}
