//! `plan --ranks`: what a distributed build of levels 0..N takes on a cluster of MPI ranks.

use awari_db::{level_exists, level_size};

use super::plan::duration;
use crate::level::Mode;
use crate::lowmem;
use crate::sys::human;

/// What a distributed plan assumes about the cluster.
#[derive(Clone, Copy, Debug)]
pub struct Cluster {
    /// MPI ranks.
    pub ranks: usize,
    /// Memory each rank may use.
    pub memory_per_rank: u64,
    /// Cores per rank.
    pub threads: usize,
    /// In-memory build speed per thread, positions per second (single machine).
    pub rate: f64,
    /// Speed of the distributed build as a fraction of a threaded one on the same cores.
    pub efficiency: f64,
    /// Speed of the low-memory algorithm as a fraction of the in-memory one (a rank whose
    /// slice does not fit in memory builds it with the low-memory algorithm).
    pub low_ratio: f64,
    /// Bytes sent between ranks per position built, measured with 2 ranks (half of the
    /// updates cross); with R ranks (R − 1)/R of them do.
    pub traffic_2: f64,
    /// Network bandwidth each rank can send at, bytes per second.
    pub network: f64,
    /// Sequential bandwidth at which each rank reads its part of the lower levels from the
    /// shared directory, bytes per second.
    pub disk: f64,
}

/// A table of the per-rank memory, traffic and time of a distributed build of levels 0..N.
///
/// Assumptions (printed with the table): every rank holds 2 bytes per position of its slice
/// when that fits its memory, else 0.67 bytes per position and exit buckets (the low-memory
/// algorithm, slower by the low-memory ratio, whose work file streams add I/O); compute time = positions / (ranks ×
/// threads × rate × efficiency); each rank sends its share of the traffic, at the stated
/// network bandwidth, while computing stops (the exchanges are blocking); each rank reads
/// 1/R of the lower levels (once per level) and writes 1/R of the table, at the stated disk
/// bandwidth. Nothing overlaps, so the times are pessimistic on that count and optimistic on
/// the speed of large levels (more cache misses).
pub fn render_distributed(max: u32, c: &Cluster) -> String {
    let r = c.ranks as f64;
    let per_position = c.traffic_2 * 2.0 * (r - 1.0) / r;
    let per_sec = c.rate * c.threads as f64 * r * c.efficiency;
    let mut s = format!(
        "plan: levels 0..{max} on {} ranks × {} threads at {:.2}M positions/s each, {:.0}% of that distributed ({:.1}M/s in all; {:.0}% of that in low-memory mode), {} of memory per rank, network {:.2} GB/s per rank ({:.1} Gbit/s), {:.2} bytes sent per position built ({:.2} measured with 2 ranks), lower levels read at {:.0} MB/s per rank\n",
        c.ranks,
        c.threads,
        c.rate / 1e6,
        c.efficiency * 100.0,
        per_sec / 1e6,
        c.low_ratio * 100.0,
        human(c.memory_per_rank),
        c.network / 1e9,
        c.network * 8.0 / 1e9,
        per_position,
        c.traffic_2,
        c.disk / 1e6,
    );
    s.push_str(&format!(
        "{:>5} {:>16} {:>12} {:>14} {:>11} {:>11} {:>11}  {}\n",
        "level", "positions", "RAM/rank", "sent/rank", "network", "est. time", "cumulative", ""
    ));
    let (mut total, mut peak, mut sent_total) = (0f64, 0u64, 0f64);
    let mut first_unfit = None;
    for n in (0..=max).filter(|&n| level_exists(n)) {
        let p = level_size(n);
        let slice = p.div_ceil(c.ranks as u64);
        // The distributed build's choice ([`crate::cost::choose`]) on a slice of this size.
        let choice = crate::cost::choose(
            Mode::Auto,
            crate::distributed::slice_needs(slice, c.threads),
            Some(c.memory_per_rank),
            || false,
        )
        .expect("auto is always offered");
        let (ram, fits) = (choice.needed, choice.fits);
        let low_mode = choice.mode == Mode::LowMemory;
        let (passes, work) = if low_mode {
            let bucket = lowmem::slice_bucket(slice, c.threads, Some(c.memory_per_rank));
            (slice.div_ceil(bucket), slice * (2 * u64::from(n) + 2))
        } else {
            (1, 0)
        };
        let sent = per_position * p as f64 / r;
        let network = sent / c.network;
        let io =
            ((crate::exits::lower_positions(n) * passes + p) as f64 / r + work as f64) / c.disk;
        let compute = p as f64 / per_sec / if low_mode { c.low_ratio } else { 1.0 };
        let secs = compute + network + io;
        if !fits && first_unfit.is_none() {
            first_unfit = Some(n);
        }
        if fits {
            total += secs;
            sent_total += sent;
            peak = peak.max(ram);
        }
        s.push_str(&format!(
            "{n:>5} {p:>16} {:>12} {:>14} {:>11} {:>11} {:>11}  {}\n",
            human(ram),
            human(sent as u64),
            duration(network),
            if fits { duration(secs) } else { "-".into() },
            duration(total),
            match (fits, low_mode, passes) {
                (false, _, _) => "does not fit".to_string(),
                (true, true, 1) => "low-memory".to_string(),
                (true, true, k) => format!("low-memory, {k} exit passes"),
                _ => String::new(),
            }
        ));
    }
    s.push_str(&format!(
        "total: peak RAM per rank {}, {} sent per rank, about {}{}\n",
        human(peak),
        human(sent_total as u64),
        duration(total),
        if first_unfit.is_some() {
            " for the levels that fit"
        } else {
            ""
        }
    ));
    if let Some(n) = first_unfit {
        s.push_str(&format!(
            "levels from {n} do not fit in {} per rank, even with the low-memory algorithm: more ranks or more memory\n",
            human(c.memory_per_rank),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributed_plan_of_the_full_game() {
        let c = Cluster {
            ranks: 16,
            memory_per_rank: 64 << 30,
            threads: 16,
            rate: 2.0e6,
            efficiency: 0.7,
            low_ratio: 0.8,
            traffic_2: 14.0,
            network: 1.25e9,
            disk: 500e6,
        };
        let s = render_distributed(48, &c);
        let row = |s: &str, n: &str| -> String {
            let line = s.lines().find(|l| l.trim_start().starts_with(n));
            line.expect("a row per level").to_string()
        };
        // Level 48: 203.6 G positions, 2 bytes each over 16 ranks (+ 4 MiB) = 23.71 GiB per rank.
        assert!(row(&s, "48 ").contains("203648015935"), "{s}");
        assert!(row(&s, "48 ").contains("23.71 GiB"), "{s}");
        assert!(
            !s.contains("does not fit") && !s.contains("low-memory,"),
            "{s}"
        );
        // 4 GiB per rank holds level 39's slices in memory (3.5 GiB), not level 40's (4.4 GiB):
        // from there on the ranks run the low-memory algorithm, and level 48 fits no way.
        let small = render_distributed(
            48,
            &Cluster {
                memory_per_rank: 4 << 30,
                ..c
            },
        );
        assert!(!row(&small, "39 ").contains("low-memory"), "{small}");
        assert!(row(&small, "40 ").contains("low-memory"), "{small}");
        assert!(row(&small, "48 ").contains("does not fit"), "{small}");
        assert!(small.contains("levels from"), "{small}");
    }
}
