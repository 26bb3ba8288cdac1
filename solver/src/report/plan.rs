//! `plan`: what building levels 0..N takes, printed from the cost model ([`crate::cost`]):
//! the level sizes, measured build speeds (the defaults, or a machine's own from
//! `scripts/calibrate.sh`) and a disk bandwidth.

use awari_db::{level_exists, level_size};

use crate::level::Mode;
use crate::sys::human;

pub use super::cluster::{render_distributed, Cluster};
pub use crate::cost::*;

/// A table of memory, disk, I/O and estimated time per level, with totals.
///
/// Assumptions (printed with the table): each level is built in memory (2 bytes of RAM per
/// position of the level in progress; 8 with depth tables) when that fits the memory, else
/// with the low-memory algorithm (0.67 bytes per position while settling, plus exit bytes for
/// as much of the level as the memory allows — the lower levels are streamed once per such
/// bucket — and a 1-byte-per-position work file), else with the two-bit algorithm (0.25 bytes
/// per position and per-thread buffers; exit buckets of what the memory holds; exit lists and
/// a log of settled positions, each written and read about once, see [`crate::twobit::work_io`]);
/// disk is 1 byte per position for values (or, with
/// `compress`, the measured compressed size of [`compressed_bytes`]; plus [`depth_bytes`] for
/// depths); compute time = positions / (threads × rate per thread), slowed by the
/// low-memory or two-bit ratio; I/O time = the sequential bytes of [`level_io`] and
/// [`two_bit_io`] (their own part scaled by the machine's measured traffic, if calibrated) at
/// the stated bandwidth, counted as if nothing were cached and nothing overlapped
/// (pessimistic: the lower levels are often still in the page cache, and streaming overlaps
/// computing). The rates are the defaults ([`DEFAULT_RATE`] and the ratios beside it) or a
/// calibration's; larger levels run somewhat slower per position (more cache misses), so
/// compute times are optimistic. A line after the total states the assumptions
/// ([`assumptions`]), and one the time `verify --prove` of the levels would take.
pub fn render(max: u32, m: &Machine, depth: bool) -> String {
    let mut s = String::new();
    let per_sec = m.rate * m.threads as f64;
    s.push_str(&format!(
        "plan: levels 0..{max}, {} threads at {:.2}M positions/s each ({:.1}M/s in memory, {:.0}% of that in low-memory mode, {:.0}% in two-bit mode), memory limit {}, disk free {}, sequential I/O at {:.0} MB/s{}{}\n",
        m.threads,
        m.rate / 1e6,
        per_sec / 1e6,
        m.low_ratio * 100.0,
        m.two_bit_ratio * 100.0,
        m.memory.map_or("unknown".into(), human),
        m.disk.map_or("unknown".into(), human),
        m.bandwidth / 1e6,
        match (depth, m.compress) {
            (true, true) => ", with depth tables, values compressed as built",
            (true, false) => ", with depth tables",
            (false, true) => ", tables compressed as built",
            (false, false) => "",
        },
        match m.mode {
            Mode::Auto => String::new(),
            mode => format!(", every level in {} mode", mode.name()),
        }
    ));
    s.push_str(&format!(
        "{:>5} {:>16} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}  {}\n",
        "level", "positions", "RAM", "disk", "disk total", "I/O", "est. time", "cumulative", "mode"
    ));
    let (mut disk_total, mut secs_total, mut peak_ram, mut io_total) = (0u64, 0f64, 0u64, 0u64);
    // Disk of the values and of the depth tables apart, and of the probe form's values.
    let (mut values_total, mut depth_total, mut probe_total) = (0u64, 0u64, 0u64);
    let mut first_unfit = None;
    let mut first_no_disk = None;
    let mut peak_work = 0u64;
    let mut disk_new = 0u64; // of the levels not built yet
                             // `verify --prove` of every level planned: the depth pass with the proof.
    let mut prove_secs = 0f64;
    let mut prove_classes = None;
    let mut prove_one_bit = None;
    // The first level whose proof does not fit the memory (the depth pass keeps at least a
    // bit a position).
    let mut prove_unfit = None;
    for n in (0..=max).filter(|&n| level_exists(n)) {
        let p = level_size(n);
        // Depth tables as stored by default: plain up to 20 seeds, compressed above.
        let depth_disk = if depth { depth_bytes(n) } else { 0 };
        let values_disk = if m.compress {
            compressed_bytes(n)
        } else {
            p + 64
        };
        let disk = values_disk + depth_disk;
        disk_total += disk;
        values_total += values_disk;
        depth_total += depth_disk;
        probe_total += probe_form_bytes(n);
        if m.memory
            .is_some_and(|memory| crate::depth::least_memory(n, m.threads) > memory)
        {
            prove_unfit.get_or_insert(n);
        }
        if prove_unfit.is_none() {
            let (secs, pass) = prove_estimate(n, m);
            prove_secs += secs;
            match pass {
                ProvePass::Waves => {}
                ProvePass::Classes => {
                    prove_classes.get_or_insert(n);
                }
                ProvePass::OneBit => {
                    prove_classes.get_or_insert(n);
                    prove_one_bit.get_or_insert(n);
                }
            }
        }
        if m.built[n as usize] {
            s.push_str(&format!(
                "{n:>5} {p:>16} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}  in the database\n",
                "–",
                human(disk),
                human(disk_total),
                "–",
                "–",
                duration(secs_total),
            ));
            continue;
        }
        disk_new += disk;
        let plan = level_plan(n, m, depth);
        let secs = plan.seconds(m);
        let LevelPlan {
            mode,
            ram,
            compute,
            io,
            work,
        } = plan;
        if compute.is_nan() && first_unfit.is_none() {
            first_unfit = Some(n);
        }
        // Compressed as built: the plain table stays until its compressed form is written.
        let work = work + if m.compress { p } else { 0 };
        peak_work = peak_work.max(work);
        let disk_ok = m.disk.is_none_or(|free| disk_new + work <= free);
        if !disk_ok && first_no_disk.is_none() {
            first_no_disk = Some(n);
        }
        if secs.is_finite() {
            secs_total += secs;
            io_total += io;
        }
        peak_ram = peak_ram.max(ram);
        s.push_str(&format!(
            "{n:>5} {p:>16} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}  {mode}{}\n",
            human(ram),
            human(disk),
            human(disk_total),
            human(io),
            if secs.is_finite() {
                duration(secs)
            } else {
                "-".into()
            },
            duration(secs_total),
            if disk_ok { "" } else { ", disk full" },
        ));
    }
    let positions: u64 = (0..=max).filter(|&n| level_exists(n)).map(level_size).sum();
    s.push_str(&format!(
        "total: {positions} positions, peak RAM {}, disk {}{}{}, sequential I/O {} ({} of it), about {}{}\n",
        human(peak_ram),
        human(disk_total),
        if depth {
            format!(
                " (values {}, depth tables {})",
                human(values_total),
                human(depth_total)
            )
        } else {
            String::new()
        },
        if peak_work > 0 {
            format!(
                " (+ {} of work files while the level that needs the most is built)",
                human(peak_work)
            )
        } else {
            String::new()
        },
        human(io_total),
        duration(io_total as f64 / m.bandwidth),
        duration(secs_total),
        if first_unfit.is_some() {
            " for the levels that fit in memory"
        } else {
            ""
        }
    ));
    s.push_str(&assumptions(m));
    s.push_str(&format!(
        "to prove: `verify --prove` of levels 0..{} takes about {} more (the depth pass with the proof, its I/O included{}{}){}\n",
        prove_unfit.map_or(max, |n| (0..n).rev().find(|&k| level_exists(k)).unwrap_or(0)),
        duration(prove_secs),
        match prove_classes {
            Some(from) => format!(
                "; from level {from} on by value class: their values exceed the memory beside the pass, so they are read in order"
            ),
            None => String::new(),
        },
        match prove_one_bit {
            Some(from) => format!(
                "; from level {from} on in one bit a position: two do not fit in {}",
                m.memory.map_or("memory".into(), human)
            ),
            None => String::new(),
        },
        match prove_unfit {
            Some(n) => format!(
                "; levels from {n} cannot be proven in {}: the depth pass keeps at least a bit a position",
                m.memory.map_or("memory".into(), human)
            ),
            None => String::new(),
        }
    ));
    if m.compress {
        s.push_str(&format!(
            "to download: the values in the probe form (`compress --probe`), {} ({:.2} bits a position){}\n",
            human(probe_total),
            8.0 * probe_total as f64 / positions as f64,
            if depth {
                format!(
                    ", with the depth tables {}",
                    human(probe_total + depth_total)
                )
            } else {
                String::new()
            }
        ));
    }
    if let Some(n) = first_unfit {
        s.push_str(&format!(
            "levels from {n} do not fit in {}{}\n",
            m.memory.map_or("memory".into(), human),
            ""
        ));
    }
    if let (Some(n), Some(free)) = (first_no_disk, m.disk) {
        s.push_str(&format!(
            "the disk fills at level {n}: the levels of 0..{max} not built yet need {} (+ {} of work file), {} is free\n",
            human(disk_new),
            human(peak_work),
            human(free)
        ));
    }
    s
}

/// The plan's assumptions in one line: the rates per thread of each mode, the out-of-core
/// modes' disk traffic against the model's, the bandwidth, and where they come from.
pub fn assumptions(m: &Machine) -> String {
    let mega = |ratio: f64| format!("{:.2}M", m.rate * ratio / 1e6);
    format!(
        "assumed: per thread, in memory {}, low-memory {}, two-bit {} (with {} exit passes; {:.1}% more time a pass), one-bit {} (as many passes), depth pass {}, verify --prove {} positions/s; low-memory and two-bit disk traffic {:.2}× and {:.2}× the model's; sequential I/O {:.0} MB/s; from {}\n",
        mega(1.0),
        mega(m.low_ratio),
        mega(m.two_bit_ratio),
        m.two_bit_passes,
        TWO_BIT_PASS_COST * 100.0,
        mega(m.two_bit_ratio * ONE_BIT_SPEED),
        mega(m.depth_ratio),
        mega(m.verify_ratio),
        m.low_io_scale,
        m.two_bit_io_scale,
        m.bandwidth / 1e6,
        m.source
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::{two_bit_estimate, PROBE_FORM_BITS, PROBE_FORM_TREND};
    use crate::exits::lower_positions;
    use crate::{lowmem, twobit};

    fn machine(memory: u64, disk: u64) -> Machine {
        Machine {
            memory: Some(memory),
            disk: Some(disk),
            threads: 2,
            rate: 2.0e6,
            low_ratio: 0.8,
            two_bit_ratio: 0.4,
            two_bit_passes: DEFAULT_TWO_BIT_PASSES,
            depth_ratio: 0.4,
            verify_ratio: 0.4,
            bandwidth: 500e6,
            low_io_scale: 1.0,
            two_bit_io_scale: 1.0,
            source: "the tests".into(),
            built: [false; 49],
            compress: false,
            mode: Mode::Auto,
        }
    }

    /// Levels already in the database take no time and no new disk.
    #[test]
    fn built_levels_need_no_new_disk() {
        let g = 1u64 << 30;
        // 0..36 needs 55 GiB of tables; with 0..34 built (31 GiB), 44 GiB free is enough.
        let fresh = render(36, &machine(22 * g, 44 * g), false);
        assert!(fresh.contains("the disk fills at level"), "{fresh}");
        let mut m = machine(22 * g, 44 * g);
        m.built[..=34].fill(true);
        let resumed = render(36, &m, false);
        assert!(!resumed.contains("disk full"), "{resumed}");
        let line34 = resumed
            .lines()
            .find(|l| l.trim_start().starts_with("34 "))
            .unwrap();
        assert!(line34.ends_with("in the database"), "{line34}");
        let line35 = resumed
            .lines()
            .find(|l| l.trim_start().starts_with("35 "))
            .unwrap();
        assert!(!line35.ends_with("in the database"), "{line35}");
    }

    #[test]
    fn io_counts_the_lower_levels_once_per_pass() {
        // Level 20 reads levels 2..=18 (c = 2..18) and writes itself.
        let lower: u64 = (2..=18).map(level_size).sum();
        assert_eq!(level_io(20, 1, false), lower + level_size(20));
        assert_eq!(level_io(20, 3, false), 3 * lower + level_size(20));
        // Low-memory: the work array once written, 2 × 20 steps, once read for the table.
        assert_eq!(
            level_io(20, 1, true),
            lower + level_size(20) * (1 + 40 + 1) + level_size(20)
        );
        // Level 2 reads level 0 only.
        assert_eq!(level_io(2, 1, false), 1 + level_size(2));
    }

    /// The 64 GB desktop of the two-bit algorithm: every level fits, the large ones in
    /// two-bit mode, level 48 with its exits in several passes.
    #[test]
    fn the_full_game_fits_a_64_gb_desktop() {
        let g = 1u64 << 30;
        let desktop = Machine {
            threads: 16,
            bandwidth: 2000e6,
            ..machine(64 * g, 2048 * g)
        };
        let plan = render(48, &desktop, false);
        assert!(
            !plan.contains("does not fit") && !plan.contains("disk full"),
            "{plan}"
        );
        let line48 = plan
            .lines()
            .find(|l| l.trim_start().starts_with("48 "))
            .unwrap();
        assert!(line48.contains("two-bit"), "{line48}");
        // Level 48 in two-bit mode: 0.25 bytes per position, under the 64 GiB.
        assert!(twobit::memory_needed(48, 16, twobit::StateBits::Two) <= 64 * g);
        assert!(twobit::memory_needed(48, 16, twobit::StateBits::Two) >= level_size(48) / 4);
    }

    /// The proof goes by value class from the first level whose values and the pass's
    /// memory exceed the machine's (64 GB: level 42, 58.8 G positions and 14.7 GB of state),
    /// and by waves below it and on a machine that holds every level's values.
    #[test]
    fn the_proof_goes_by_class_where_the_values_exceed_the_memory() {
        let g = 1u64 << 30;
        let prove_line = |memory: u64| {
            let plan = render(48, &machine(memory, 4096 * g), false);
            plan.lines()
                .find(|l| l.starts_with("to prove:"))
                .unwrap()
                .to_string()
        };
        let desktop = prove_line(64 * g);
        assert!(
            desktop.contains("from level 42 on by value class"),
            "{desktop}"
        );
        assert!(!prove_line(1024 * g).contains("value class"));
        // On 32 GiB the values of level 48 are built in one bit, and so is its proof.
        let small = prove_line(32 * g);
        assert!(
            small.contains("levels 0..48 takes")
                && small.contains("on in one bit a position: two do not fit in 32.00 GiB")
                && !small.contains("cannot be proven"),
            "{small}"
        );
        // On 16 GiB not even one bit a position of level 48 fits.
        let tiny = prove_line(16 * g);
        assert!(tiny.contains("cannot be proven in 16.00 GiB"), "{tiny}");
        assert!(!desktop.contains("cannot be proven"), "{desktop}");
        let m = machine(64 * g, 4096 * g);
        assert_eq!(prove_estimate(41, &m).1, ProvePass::Waves);
        assert_eq!(prove_estimate(42, &m).1, ProvePass::Classes);
        // By class the proof reads the lower levels and the level once per bucket, more than
        // the wave pass moves, and takes longer per position.
        let (waves, classes) = (
            prove_estimate(42, &machine(1024 * g, 4096 * g)),
            prove_estimate(42, &m),
        );
        assert!(classes.0 > waves.0, "{classes:?} {waves:?}");
        // Each further exit bucket adds CLASS_PASS_COST of the one-bucket compute: level 48
        // on 64 GiB and on less, the I/O made free.
        let free_io = |memory: u64| Machine {
            bandwidth: f64::INFINITY,
            ..machine(memory, 4096 * g)
        };
        let compute = |memory: u64| {
            let buckets = level_size(48).div_ceil(crate::depth::class_bucket(48, Some(memory), 16));
            (buckets, prove_estimate(48, &free_io(memory)).0)
        };
        // (Both above two bits a position: 48 GiB is the least.)
        let (few, more) = (compute(64 * g), compute(48 * g));
        assert!(more.0 > few.0 && few.0 > 1, "{few:?} {more:?}");
        let one = |(b, t): (u64, f64)| t / (1.0 + (b - 1) as f64 * CLASS_PASS_COST);
        assert!(
            (one(few) - one(more)).abs() < 1e-9 * one(few),
            "{few:?} {more:?}"
        );
        let per_sec = 2.0e6 * 2.0 * 0.4 * CLASS_PROVE_RATIO;
        assert!((one(few) - level_size(48) as f64 / per_sec).abs() < 1e-6 * one(few));
    }

    #[test]
    fn render_says_where_memory_and_disk_run_out() {
        let g = 1u64 << 30;
        let plan = render(48, &machine(24 * g, 80 * g), false);
        assert!(plan.contains("low-memory"), "{plan}");
        assert!(plan.contains("the disk fills at level 37"), "{plan}");
        // On 24 GiB level 48 fits in one bit a position (23.7 GiB); on 16 GiB from 46 nothing
        // fits.
        assert!(!plan.contains("does not fit"), "{plan}");
        let small = render(48, &machine(16 * g, 4096 * g), false);
        assert!(small.contains("does not fit"), "{small}");
        assert!(small.contains("one-bit"), "{small}");
        let big = render(48, &machine(512 * g, 2048 * g), false);
        assert!(
            !big.contains("does not fit") && !big.contains("disk full"),
            "{big}"
        );
        let line48 = big
            .lines()
            .find(|l| l.trim_start().starts_with("48 "))
            .unwrap();
        assert!(line48.ends_with("memory"), "{line48}");
        // With a budget below a level's in-memory need, its exits go in several buckets.
        let squeezed = render(36, &machine(12 * g, 2048 * g), false);
        let line36 = squeezed
            .lines()
            .find(|l| l.trim_start().starts_with("36 "))
            .unwrap();
        assert!(line36.contains("low-memory, 5 exit passes"), "{line36}");
    }

    #[test]
    fn depth_tables_are_plain_to_20_seeds_and_compressed_above() {
        assert_eq!(depth_bytes(20), level_size(20) + 64);
        assert_eq!(
            depth_bytes(21),
            (level_size(21) as f64 * COMPRESSED_DEPTH_BITS / 8.0).ceil() as u64
        );
        // The whole game: 828 GiB of values plus about 2.4 bits a position of depths.
        let plan = render(48, &machine(256 << 30, 4 << 40), true);
        let line = plan.lines().find(|l| l.starts_with("total:")).unwrap();
        assert!(
            line.contains("disk 1.0 TiB (values 828.00 GiB, depth tables 246.47 GiB)"),
            "{line}"
        );
    }

    #[test]
    fn compressed_tables_need_half_the_disk() {
        let plain = render(48, &machine(256 << 30, 4 << 40), false);
        let packed = render(
            48,
            &Machine {
                compress: true,
                ..machine(256 << 30, 4 << 40)
            },
            false,
        );
        let total = |plan: &str| -> String {
            let line = plan.lines().find(|l| l.starts_with("total:")).unwrap();
            line.split("disk ")
                .nth(1)
                .unwrap()
                .split([',', ' '])
                .next()
                .unwrap()
                .to_string()
        };
        assert!(packed.contains("tables compressed as built"), "{packed}");
        assert_eq!(total(&plain), "828.00", "{plain}");
        // 3.9 bits per position measured to 34 seeds, growing slowly: about 424 GiB.
        let g: f64 = total(&packed).parse().unwrap();
        assert!((400.0..460.0).contains(&g), "{packed}");
        assert_eq!(
            compressed_bytes(20),
            (80214915.0f64 * 3.680 / 8.0).ceil() as u64
        );
        // The download: the probe form, measured to 32 seeds, then its trend.
        let line = packed
            .lines()
            .find(|l| l.starts_with("to download:"))
            .unwrap();
        let probe = over_levels(48, probe_form_bytes);
        assert!(
            line.contains(&human(probe)) && !plain.contains("to download"),
            "{line}"
        );
        assert_eq!(
            probe_form_bytes(20),
            (80214915.0f64 * 2.342 / 8.0).ceil() as u64
        );
        let trend = PROBE_FORM_BITS[32] + 2.0 * PROBE_FORM_TREND;
        assert_eq!(
            probe_form_bytes(34),
            (level_size(34) as f64 * trend / 8.0).ceil() as u64
        );
    }

    /// Where both out-of-core algorithms fit, the auto mode takes the one estimated faster:
    /// two-bit on 16 threads (the low-memory work file's traffic outweighs its faster
    /// compute), low-memory on 2 (the compute is the larger part), and `plan` agrees with
    /// `build`'s choice.
    #[test]
    fn auto_mode_weighs_traffic_against_compute() {
        let g = 1u64 << 30;
        assert!(auto_prefers_two_bit(43, 16, Some(64 * g)));
        assert!(!auto_prefers_two_bit(35, 2, Some(16 * g)));
        let line = |threads: usize, memory: u64, n: u32| -> String {
            let plan = render(
                n,
                &Machine {
                    threads,
                    ..machine(memory, 2048 * g)
                },
                false,
            );
            let head = format!("{n:>5} ");
            plan.lines()
                .find(|l| l.starts_with(&head))
                .unwrap()
                .to_string()
        };
        assert!(
            line(16, 64 * g, 43).contains("two-bit"),
            "{}",
            line(16, 64 * g, 43)
        );
        assert!(
            line(2, 16 * g, 35).contains("low-memory"),
            "{}",
            line(2, 16 * g, 35)
        );
    }

    /// `plan --mode` plans every level with that algorithm, as `build --mode` builds it.
    #[test]
    fn a_forced_mode_applies_to_every_level() {
        let g = 1u64 << 30;
        let forced = |mode| {
            render(
                30,
                &Machine {
                    mode,
                    ..machine(64 * g, 2048 * g)
                },
                false,
            )
        };
        let two_bit = forced(Mode::TwoBit);
        let line = two_bit.lines().find(|l| l.starts_with("   22 ")).unwrap();
        // Its exits phase holds a byte per position of the bucket, as far as the memory
        // goes: level 22 in one pass with 64 GiB.
        assert!(line.ends_with("two-bit"), "{line}");
        assert!(two_bit.contains("every level in two-bit mode"), "{two_bit}");
        let low = forced(Mode::LowMemory);
        let line = low.lines().find(|l| l.starts_with("   30 ")).unwrap();
        assert!(line.ends_with("low-memory"), "{line}");
        // A level too large for the forced mode does not fit, even where another mode would.
        let tight = render(
            30,
            &Machine {
                mode: Mode::LowMemory,
                ..machine(1 << 30, 2048 * g)
            },
            false,
        );
        let line = tight.lines().find(|l| l.starts_with("   30 ")).unwrap();
        assert!(line.ends_with("does not fit"), "{line}");
        assert!(
            line.contains(&human(lowmem::memory_needed(30, 2))),
            "{line}"
        );
    }

    /// A two-bit level's compute scales with its exit passes against the passes its rate was
    /// measured with: with as many, the rate as it is; with fewer, faster; with more, slower.
    #[test]
    fn two_bit_compute_follows_the_exit_passes() {
        assert_eq!(two_bit_pass_scale(4, 4), 1.0);
        let one = two_bit_pass_scale(1, 4);
        assert!((one - 1.0 / (1.0 + 3.0 * TWO_BIT_PASS_COST)).abs() < 1e-12);
        assert!(two_bit_pass_scale(2, 4) > one && two_bit_pass_scale(5, 4) > 1.0);
        let g = 1u64 << 30;
        let m = Machine {
            threads: 16,
            mode: Mode::TwoBit,
            ..machine(64 * g, 2048 * g)
        };
        // Level 48 makes 3 passes on 64 GiB, level 40 one.
        for (n, passes) in [(48, 3), (40, 1)] {
            let (p, _, compute, _) = two_bit_estimate(n, &m);
            assert_eq!(p, passes);
            let flat = level_size(n) as f64 / (m.rate * 16.0 * m.two_bit_ratio);
            let want = flat * two_bit_pass_scale(passes, m.two_bit_passes);
            assert!((compute - want).abs() < 1e-6 * want && compute < flat);
            // Measured with as many passes as the level makes: the flat rate.
            let same = Machine {
                two_bit_passes: passes,
                ..m.clone()
            };
            assert!((two_bit_estimate(n, &same).2 - flat).abs() < 1e-6 * flat);
        }
        assert!(
            assumptions(&m).contains("two-bit 0.80M (with 4 exit passes; 5.8% more time a pass)")
        );
    }

    /// What a build has left: the plan's seconds for the levels above, scaled by the pace of
    /// the level just built; nothing for a short level or the last one.
    #[test]
    fn the_time_left_follows_the_pace_of_the_last_level() {
        let g = 1u64 << 30;
        let m = Machine::defaults(16, Some(64 * g));
        let planned = |n: u32| level_plan(n, &m, false).seconds(&m);
        let left = seconds_left(41, 48, &m, false);
        assert!(
            left > 0.0
                && (left
                    - (41..=48)
                        .filter(|&n| level_exists(n))
                        .map(planned)
                        .sum::<f64>())
                .abs()
                    < 1e-6 * left
        );
        // Level 40 at the plan's pace, then twice as slow.
        let line = time_left(&m, 48, false, 40, planned(40)).unwrap();
        assert!(
            line.starts_with(&format!("levels 41..48: about {} more", duration(left))),
            "{line}"
        );
        assert!(line.contains("level 40 took 1.00×"), "{line}");
        let slow = time_left(&m, 48, false, 40, 2.0 * planned(40)).unwrap();
        assert!(
            slow.contains(&duration(2.0 * left)) && slow.contains("2.00×"),
            "{slow}"
        );
        assert!(time_left(&m, 48, false, 46, planned(46))
            .unwrap()
            .starts_with("level 48: about"));
        // Too short to tell, or nothing left.
        assert_eq!(time_left(&m, 48, false, 20, PACE_SECONDS - 0.1), None);
        assert_eq!(time_left(&m, 48, false, 48, 1000.0), None);
        // Levels already built are not left.
        let mut built = m.clone();
        built.built[41..=48].iter_mut().for_each(|b| *b = true);
        assert_eq!(time_left(&built, 48, false, 40, planned(40)), None);
    }

    /// The traffic scales apply to the out-of-core levels' own I/O, not the lower levels'.
    #[test]
    fn io_scales_multiply_the_modelled_work_traffic() {
        let g = 1u64 << 30;
        let io_of = |m: &Machine, n: &str| -> String {
            let plan = render(48, m, false);
            let line = plan
                .lines()
                .find(|l| l.trim_start().starts_with(n))
                .unwrap();
            line.split_whitespace()
                .skip(8)
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        };
        let base = Machine {
            threads: 16,
            ..machine(64 * g, 2048 * g)
        };
        let doubled = Machine {
            two_bit_io_scale: 2.0,
            low_io_scale: 3.0,
            ..base.clone()
        };
        let passes = level_size(48).div_ceil(twobit::exit_bucket(
            48,
            16,
            Some(64 * g),
            twobit::StateBits::Two,
        ));
        assert_eq!(passes, 3);
        let lower = lower_positions(48) * passes;
        assert_eq!(io_of(&base, "48 "), human(two_bit_io(48, passes, 1.0)));
        assert_eq!(
            io_of(&doubled, "48 "),
            human(lower + 2 * twobit::work_io(48))
        );
        let k = level_size(43).div_ceil(lowmem::exit_bucket(43, 16, Some(64 * g)));
        assert!(k > 1);
        let plain = level_io(43, k, true) - lower_positions(43) * k;
        // Level 43 in low-memory mode (the auto mode picks two-bit on 16 threads).
        let low = Machine {
            mode: Mode::LowMemory,
            ..doubled.clone()
        };
        assert_eq!(
            io_of(&low, "43 "),
            human(lower_positions(43) * k + 3 * plain)
        );
        let line = render(48, &doubled, false);
        assert!(
            line.contains("disk traffic 3.00× and 2.00× the model's"),
            "{line}"
        );
        assert!(line.contains("from the tests"), "{line}");
    }

    /// The sum of `bytes` over the levels 0..=max that exist.
    fn over_levels(max: u32, bytes: fn(u32) -> u64) -> u64 {
        (0..=max).filter(|&n| level_exists(n)).map(bytes).sum()
    }

    #[test]
    fn with_depth_tables_the_total_shows_values_and_depths_apart() {
        let plan = render(
            30,
            &Machine {
                compress: true,
                ..machine(256 << 30, 4 << 40)
            },
            true,
        );
        let total = plan.lines().find(|l| l.starts_with("total:")).unwrap();
        let values = over_levels(30, compressed_bytes);
        let depths = over_levels(30, depth_bytes);
        assert!(
            total.contains(&format!(
                "disk {} (values {}, depth tables {})",
                human(values + depths),
                human(values),
                human(depths)
            )),
            "{total}"
        );
        let download = plan
            .lines()
            .find(|l| l.starts_with("to download:"))
            .unwrap();
        let probe = over_levels(30, probe_form_bytes);
        assert!(
            download.contains(&format!("with the depth tables {}", human(probe + depths))),
            "{download}"
        );
    }
}
