//! `plan`: what building levels 0..N takes, from the level sizes and a measured build speed.

use awari_db::{level_exists, level_size};

use crate::level::memory_needed;
use crate::lowmem;
use crate::sys::human;

/// A table of memory, disk and estimated time per level, with totals.
///
/// Assumptions (printed with the table): each level is built in memory (2 bytes of RAM per
/// position of the level in progress; 8 with depth tables) when that fits `memory`, else with
/// the low-memory algorithm (0.67 bytes per position, plus a 1-byte-per-position work file);
/// lower levels are read through the page cache; disk is 1 byte per position for values (+2
/// for depths); time = positions / (threads × rate per thread), slowed by `low_ratio` for
/// low-memory levels. The rates are measured by `scripts/bench.sh` on the development machine's
/// levels 0..28; larger levels run somewhat slower per position (more cache misses), so the times
/// are optimistic.
pub fn render(
    max: u32,
    memory: Option<u64>,
    threads: usize,
    rate: f64,
    low_ratio: f64,
    depth: bool,
) -> String {
    let mut s = String::new();
    let per_sec = rate * threads as f64;
    s.push_str(&format!(
        "plan: levels 0..{max}, {threads} threads at {:.2}M positions/s each ({:.1}M/s in memory, {:.0}% of that in low-memory mode), memory limit {}{}\n",
        rate / 1e6,
        per_sec / 1e6,
        low_ratio * 100.0,
        memory.map_or("unknown".into(), human),
        if depth { ", with depth tables" } else { "" }
    ));
    s.push_str(&format!(
        "{:>5} {:>16} {:>11} {:>11} {:>11} {:>14}  {}\n",
        "level", "positions", "RAM", "disk", "est. time", "cumulative", "mode"
    ));
    let (mut disk_total, mut secs_total, mut peak_ram) = (0u64, 0f64, 0u64);
    let mut first_unfit = None;
    for n in (0..=max).filter(|&n| level_exists(n)) {
        let p = level_size(n);
        let fits = |need: u64| memory.is_none_or(|m| need <= m);
        let in_memory = memory_needed(n, depth);
        let low = lowmem::memory_needed(n, threads);
        let (mode, ram, secs) = if fits(in_memory) {
            ("memory", in_memory, p as f64 / per_sec)
        } else if !depth && fits(low) {
            ("low-memory", low, p as f64 / (per_sec * low_ratio))
        } else {
            if first_unfit.is_none() {
                first_unfit = Some(n);
            }
            (
                "does not fit",
                if depth { in_memory } else { low },
                f64::NAN,
            )
        };
        let disk = p * if depth { 3 } else { 1 } + 128;
        disk_total += disk;
        if secs.is_finite() {
            secs_total += secs;
        }
        peak_ram = peak_ram.max(ram);
        s.push_str(&format!(
            "{n:>5} {p:>16} {:>11} {:>11} {:>11} {:>14}  {mode}\n",
            human(ram),
            human(disk),
            if secs.is_finite() {
                duration(secs)
            } else {
                "-".into()
            },
            duration(secs_total),
        ));
    }
    s.push_str(&format!(
        "total: {} positions, peak RAM {}, disk {} (+ the largest level once more while it is built in low-memory mode), about {}{}\n",
        (0..=max).filter(|&n| level_exists(n)).map(level_size).sum::<u64>(),
        human(peak_ram),
        human(disk_total),
        duration(secs_total),
        if first_unfit.is_some() { " for the levels that fit" } else { "" }
    ));
    if let Some(n) = first_unfit {
        s.push_str(&format!(
            "levels from {n} do not fit in {}{}\n",
            memory.map_or("memory".into(), human),
            if depth {
                " with depth tables, which need the in-memory builder"
            } else {
                ""
            }
        ));
    }
    s
}

/// Seconds in words: `42 s`, `3.5 min`, `2.1 h`, `4.0 days`.
pub fn duration(secs: f64) -> String {
    if secs < 90.0 {
        format!("{secs:.0} s")
    } else if secs < 5400.0 {
        format!("{:.1} min", secs / 60.0)
    } else if secs < 172_800.0 {
        format!("{:.1} h", secs / 3600.0)
    } else {
        format!("{:.1} days", secs / 86400.0)
    }
}
