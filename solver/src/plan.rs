//! `plan`: what building levels 0..N takes, from the level sizes and a measured build speed.

use awari_db::{level_exists, level_size};

use crate::level::memory_needed;
use crate::sys::human;

/// A table of memory, disk and estimated time per level, with totals.
///
/// Assumptions (printed with the table): the in-memory algorithm (2 bytes of RAM per position
/// of the level in progress; 8 with depth tables), lower levels read through the page cache;
/// disk of 1 byte per position for values (+1 or 2 for depths, counted as 2); time =
/// positions / (threads × rate per thread), the rate measured by `scripts/bench.sh` on levels
/// 0..24 — larger levels run somewhat slower per position (more cache misses), so the times
/// are a lower bound.
pub fn render(max: u32, memory: Option<u64>, threads: usize, rate: f64, depth: bool) -> String {
    let mut s = String::new();
    let per_sec = rate * threads as f64;
    s.push_str(&format!(
        "plan: levels 0..{max}, {threads} threads at {:.2}M positions/s each ({:.1}M/s), memory limit {}{}\n",
        rate / 1e6,
        per_sec / 1e6,
        memory.map_or("unknown".into(), human),
        if depth { ", with depth tables" } else { "" }
    ));
    s.push_str(&format!(
        "{:>5} {:>16} {:>11} {:>11} {:>11} {:>14}  {}\n",
        "level", "positions", "RAM", "disk", "est. time", "cumulative", "fits?"
    ));
    let (mut disk_total, mut secs_total, mut peak_ram) = (0u64, 0f64, 0u64);
    let mut first_unfit = None;
    for n in (0..=max).filter(|&n| level_exists(n)) {
        let p = level_size(n);
        let ram = memory_needed(n, depth);
        let disk = p * if depth { 3 } else { 1 } + 128;
        let secs = p as f64 / per_sec;
        disk_total += disk;
        secs_total += secs;
        peak_ram = peak_ram.max(ram);
        let fits = memory.is_none_or(|m| ram <= m);
        if !fits && first_unfit.is_none() {
            first_unfit = Some(n);
        }
        s.push_str(&format!(
            "{n:>5} {p:>16} {:>11} {:>11} {:>11} {:>14}  {}\n",
            human(ram),
            human(disk),
            duration(secs),
            duration(secs_total),
            if fits {
                "yes"
            } else {
                "no: needs the low-memory mode"
            }
        ));
    }
    s.push_str(&format!(
        "total: {} positions, peak RAM {}, disk {}, about {}\n",
        (0..=max)
            .filter(|&n| level_exists(n))
            .map(level_size)
            .sum::<u64>(),
        human(peak_ram),
        human(disk_total),
        duration(secs_total)
    ));
    if let Some(n) = first_unfit {
        s.push_str(&format!(
            "levels from {n} do not fit in memory with the in-memory builder; the low-memory builder (planned) is needed for them\n"
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
