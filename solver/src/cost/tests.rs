//! `plan`'s cost model, checked: the chooser's branches, the modelled traffic against what
//! builds measured, and the in-memory saves.

use super::*;

/// Needs of 100 bytes in memory, 60 low-memory and 40 two-bit (where offered); one-bit
/// not offered (see `one_bit_only_where_nothing_else_fits`).
const NEEDS: Needs = Needs {
    in_memory: 100,
    low_memory: 60,
    two_bit: Some(40),
    one_bit: None,
};

/// A tie-break that must not be asked.
fn unasked() -> bool {
    panic!("the tie-break was asked")
}

fn choice(mode: Mode, needed: u64, fits: bool) -> Result<Choice, NotOffered> {
    Ok(Choice { mode, needed, fits })
}

/// An in-memory level saves its state every 5 minutes, or every ten times a save's own
/// time on a slow disk; the plan counts the saves' bytes and holds their file.
#[test]
fn in_memory_levels_count_their_saves() {
    assert_eq!(memory_saves(299.0, 1 << 30, 2e9), 0);
    assert_eq!(memory_saves(650.0, 1 << 30, 2e9), 2);
    // 28.5 GB at 500 MB/s: 57 s a save, one every 570 s.
    assert_eq!(memory_saves(1200.0, 28_500_000_000, 500e6), 2);
    let m = Machine::defaults(2, None);
    let quick = level_plan(20, &m, false);
    assert_eq!((quick.work, quick.io), (0, level_io(20, 1, false)));
    let long = level_plan(30, &m, false);
    let save = crate::level::saved_state_bytes(30);
    let saves = memory_saves(long.compute, save, m.bandwidth);
    assert!(saves >= 1, "{saves}");
    assert_eq!(long.work, save);
    assert_eq!(long.io, level_io(30, 1, false) + saves * save);
}

/// One bit moves what two bits move with as many exit passes, its rounds' bytes, and its
/// part files once more for each further conversion window: level 21 under the 32 GB
/// plan's squeeze takes 6 passes and 2 windows a bucket, 20.80 bytes a position in all
/// (20.82 measured, see [`ONE_BIT_ROUND_BYTES`]).
#[test]
fn one_bit_traffic_counts_its_rounds_and_its_conversion_windows() {
    let m = Machine::defaults(2, Some(38270209));
    let (passes, _, _, io) = records_estimate(21, &m, twobit::StateBits::One);
    assert_eq!(passes, 6);
    let bucket = twobit::exit_bucket(21, 2, m.memory, twobit::StateBits::One);
    assert_eq!(twobit::convert_reads(21, bucket, twobit::StateBits::One), 2);
    let p = level_size(21) as f64;
    let two_bits = two_bit_io(21, passes, 1.0) as f64;
    let want = two_bits + p * (ONE_BIT_ROUND_BYTES + PART_BYTES);
    assert!((io as f64 - want).abs() < 2.0, "{io} against {want}");
    assert!((io as f64 / p - 20.82).abs() < 0.1, "{}", io as f64 / p);
    // Two bits read their part files once.
    let bucket = twobit::exit_bucket(21, 2, m.memory, twobit::StateBits::Two);
    assert_eq!(twobit::convert_reads(21, bucket, twobit::StateBits::Two), 1);
}

/// With `--depth`, a two-bit level finds its depths as it settles (its values' time ×
/// [`TWO_BIT_DEPTHS_TIME`], [`TWO_BIT_DEPTHS_BYTES`] a position more moved, the same RAM);
/// in-memory and one-bit levels run the depth pass after their values.
#[test]
fn a_two_bit_level_with_depths_costs_its_waves_not_a_depth_pass() {
    let m = Machine::defaults(16, Some(32 << 30));
    let (values, depths) = (level_plan(40, &m, false), level_plan(40, &m, true));
    assert!(values.mode.starts_with("two-bit"), "{}", values.mode);
    assert_eq!(depths.mode, format!("{}, with depths", values.mode));
    assert!((depths.compute / values.compute - TWO_BIT_DEPTHS_TIME).abs() < 1e-9);
    let more = depths.io - values.io;
    assert_eq!(more, (level_size(40) as f64 * TWO_BIT_DEPTHS_BYTES) as u64);
    assert_eq!(depths.ram, values.ram);
    for (n, pass) in [
        (36, "memory, then the depth pass"),
        (48, "then the depth pass in one bit"),
    ] {
        let p = level_plan(n, &m, true);
        assert!(p.mode.contains(pass), "level {n}: {}", p.mode);
        assert!(p.compute > level_plan(n, &m, false).compute);
    }
}

/// A forced mode is kept with its own need, fitting or not, and asks no tie-break.
#[test]
fn a_forced_mode_is_kept() {
    for (budget, fits) in [
        (None, [true; 3]),
        (Some(100), [true; 3]),
        (Some(50), [false, false, true]),
    ] {
        assert_eq!(
            choose(Mode::InMemory, NEEDS, budget, unasked),
            choice(Mode::InMemory, 100, fits[0])
        );
        assert_eq!(
            choose(Mode::LowMemory, NEEDS, budget, unasked),
            choice(Mode::LowMemory, 60, fits[1])
        );
        assert_eq!(
            choose(Mode::TwoBit, NEEDS, budget, unasked),
            choice(Mode::TwoBit, 40, fits[2])
        );
    }
    // A need equal to the budget fits, one byte more does not.
    assert!(
        choose(Mode::LowMemory, NEEDS, Some(60), unasked)
            .unwrap()
            .fits
    );
    assert!(
        !choose(Mode::LowMemory, NEEDS, Some(59), unasked)
            .unwrap()
            .fits
    );
}

/// Auto takes in memory wherever it fits (no limit, or a budget of its need), before the
/// out-of-core algorithms and without asking the tie-break.
#[test]
fn auto_takes_in_memory_where_it_fits() {
    for budget in [None, Some(100), Some(1 << 40)] {
        assert_eq!(
            choose(Mode::Auto, NEEDS, budget, unasked),
            choice(Mode::InMemory, 100, true)
        );
    }
    let offered_none = Needs {
        two_bit: None,
        ..NEEDS
    };
    assert_eq!(
        choose(Mode::Auto, offered_none, Some(100), unasked),
        choice(Mode::InMemory, 100, true)
    );
}

/// Where both out-of-core algorithms fit and in memory does not, the tie-break decides.
#[test]
fn auto_asks_the_tie_break_where_both_out_of_core_fit() {
    for budget in [Some(60), Some(99)] {
        assert_eq!(
            choose(Mode::Auto, NEEDS, budget, || true),
            choice(Mode::TwoBit, 40, true)
        );
        assert_eq!(
            choose(Mode::Auto, NEEDS, budget, || false),
            choice(Mode::LowMemory, 60, true)
        );
    }
}

/// Where only one out-of-core algorithm fits, it is taken without the tie-break, whichever
/// of the two needs less.
#[test]
fn auto_takes_the_one_that_fits() {
    assert_eq!(
        choose(Mode::Auto, NEEDS, Some(50), unasked),
        choice(Mode::TwoBit, 40, true)
    );
    let low_smaller = Needs {
        low_memory: 30,
        ..NEEDS
    };
    assert_eq!(
        choose(Mode::Auto, low_smaller, Some(35), unasked),
        choice(Mode::LowMemory, 30, true)
    );
}

/// Where nothing fits, auto names the smaller need, low-memory's on a tie.
#[test]
fn auto_names_the_smaller_need_where_nothing_fits() {
    assert_eq!(
        choose(Mode::Auto, NEEDS, Some(39), unasked),
        choice(Mode::TwoBit, 40, false)
    );
    let low_smaller = Needs {
        low_memory: 30,
        ..NEEDS
    };
    assert_eq!(
        choose(Mode::Auto, low_smaller, Some(29), unasked),
        choice(Mode::LowMemory, 30, false)
    );
    let tie = Needs {
        low_memory: 40,
        ..NEEDS
    };
    assert_eq!(
        choose(Mode::Auto, tie, Some(39), unasked),
        choice(Mode::LowMemory, 40, false)
    );
    assert_eq!(
        choose(Mode::Auto, NEEDS, Some(0), unasked),
        choice(Mode::TwoBit, 40, false)
    );
}

/// One-bit, offered with a need of 20: auto takes it only where no other fits, names it
/// where nothing fits, and it is kept where forced; not offered, forcing it is refused.
#[test]
fn one_bit_only_where_nothing_else_fits() {
    let needs = Needs {
        one_bit: Some(20),
        ..NEEDS
    };
    for budget in [None, Some(100)] {
        assert_eq!(
            choose(Mode::Auto, needs, budget, unasked),
            choice(Mode::InMemory, 100, true)
        );
    }
    assert_eq!(
        choose(Mode::Auto, needs, Some(60), || true),
        choice(Mode::TwoBit, 40, true)
    );
    assert_eq!(
        choose(Mode::Auto, needs, Some(40), unasked),
        choice(Mode::TwoBit, 40, true)
    );
    assert_eq!(
        choose(Mode::Auto, needs, Some(39), unasked),
        choice(Mode::OneBit, 20, true)
    );
    assert_eq!(
        choose(Mode::Auto, needs, Some(20), unasked),
        choice(Mode::OneBit, 20, true)
    );
    assert_eq!(
        choose(Mode::Auto, needs, Some(19), unasked),
        choice(Mode::OneBit, 20, false)
    );
    assert_eq!(
        choose(Mode::OneBit, needs, Some(100), unasked),
        choice(Mode::OneBit, 20, true)
    );
    assert_eq!(
        choose(Mode::OneBit, NEEDS, None, unasked),
        Err(NotOffered(Mode::OneBit))
    );
}

/// Without two-bit (the distributed build), auto takes low-memory where in memory does not
/// fit, fitting or not, and forcing two-bit is refused.
#[test]
fn without_two_bit_auto_falls_back_to_low_memory() {
    let needs = Needs {
        two_bit: None,
        ..NEEDS
    };
    assert_eq!(
        choose(Mode::Auto, needs, Some(60), unasked),
        choice(Mode::LowMemory, 60, true)
    );
    assert_eq!(
        choose(Mode::Auto, needs, Some(50), unasked),
        choice(Mode::LowMemory, 60, false)
    );
    assert_eq!(
        choose(Mode::TwoBit, needs, None, unasked),
        Err(NotOffered(Mode::TwoBit))
    );
    assert_eq!(
        choose(Mode::LowMemory, needs, Some(50), unasked),
        choice(Mode::LowMemory, 60, false)
    );
    assert_eq!(
        choose(Mode::InMemory, needs, Some(100), unasked),
        choice(Mode::InMemory, 100, true)
    );
    assert_eq!(
        NotOffered(Mode::TwoBit).to_string(),
        "the two-bit algorithm is not offered by this build"
    );
}

/// A level's needs are its algorithms' own.
#[test]
fn a_levels_needs_are_its_algorithms() {
    for (n, threads) in [(0, 1), (20, 2), (30, 16), (48, 64)] {
        assert_eq!(
            Needs::level(n, threads),
            Needs {
                in_memory: memory_needed(n),
                low_memory: lowmem::memory_needed(n, threads),
                two_bit: Some(twobit::memory_needed(n, threads, twobit::StateBits::Two)),
                one_bit: Some(twobit::memory_needed(n, threads, twobit::StateBits::One)),
            }
        );
    }
}

/// `plan` at the default rates plans each level with the algorithm `build` would pick, or
/// shows that it does not fit where `build` would refuse it.
#[test]
fn plan_picks_what_build_picks() {
    let g = 1u64 << 30;
    let mut seen = std::collections::HashSet::new();
    for mode in [
        Mode::Auto,
        Mode::InMemory,
        Mode::LowMemory,
        Mode::TwoBit,
        Mode::OneBit,
    ] {
        for (threads, memory) in [
            (2, Some(g)),
            (2, Some(16 * g)),
            (16, Some(64 * g)),
            (16, None),
        ] {
            let m = Machine {
                mode,
                ..Machine::defaults(threads, memory)
            };
            for n in (20..=48).filter(|&n| level_exists(n)) {
                let c = choose(mode, Needs::level(n, threads), memory, || {
                    auto_prefers_two_bit(n, threads, memory)
                })
                .unwrap();
                let plan = level_plan(n, &m, false);
                let want = if c.fits {
                    c.mode.name()
                } else {
                    "does not fit"
                };
                assert!(
                    plan.mode.starts_with(want),
                    "level {n}, {mode:?}, {memory:?}: {}",
                    plan.mode
                );
                assert!(plan.mode.starts_with("low-memory") == (want == "low-memory"));
                if !c.fits {
                    assert_eq!(plan.ram, c.needed);
                }
                seen.insert(want);
            }
        }
    }
    // Every outcome is exercised.
    assert_eq!(seen.len(), 5, "{seen:?}");
}
