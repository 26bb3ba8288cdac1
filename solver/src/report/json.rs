//! The build summary as JSON (`build --json`): one object a level, every figure of the
//! table's row under a snake_case key, numbers as numbers and `null` where a figure is not
//! known. The keys are listed in docs/cli.md.

use serde_json::{json, Value};

use super::MEANINGFUL;
use crate::build::{LevelReport, Mode};

/// Level `r`'s line of `build --json`. Per-position figures follow the table: `null` unless
/// the level was built here and has at least 2^20 positions (below that the process's own few
/// MiB dominate; the byte counts are there).
pub fn level_json(r: &LevelReport) -> Value {
    let positions = r.positions as f64;
    let built = r.seconds.is_some();
    let per = |b: Option<u64>| match b {
        Some(b) if built && r.positions >= MEANINGFUL => Some(b as f64 / positions),
        _ => None,
    };
    let exits = r.exits.as_ref();
    let exits_read = exits.and_then(|e| e.bytes_read);
    let read_over_lower = match (exits_read, exits.map(|e| e.lower_bytes)) {
        (Some(b), Some(lower)) if lower >= MEANINGFUL => Some(b as f64 / lower as f64),
        _ => None,
    };
    let status = match (r.mode, r.resumed) {
        (None, _) => "kept",
        (Some(_), None) => "built",
        (Some(_), Some(_)) => "resumed",
    };
    let share = |c: Option<u64>| c.map(|c| c as f64 / r.positions.max(1) as f64);
    let compressed = r.compressed.as_ref();
    json!({
        "seeds": r.seeds,
        "positions": r.positions,
        "status": status,
        "mode": r.mode.map(Mode::name),
        "seconds": r.seconds,
        "positions_per_second": r.seconds.map(|s| positions / s.max(1e-9)),
        "peak_rss_bytes": r.peak_rss,
        "peak_rss_bytes_per_position": per(r.peak_rss),
        "peak_anon_bytes": r.peak_anon,
        "peak_anon_bytes_per_position": per(r.peak_anon),
        "exits_seconds": exits.map(|e| e.seconds),
        "exit_passes": exits.map(|e| e.passes),
        "exits_read_bytes": exits_read,
        "lower_bytes": exits.map(|e| e.lower_bytes),
        "exits_read_over_lower": read_over_lower,
        "read_bytes": r.io.map(|io| io.read),
        "written_bytes": r.io.map(|io| io.written),
        "read_bytes_per_position": per(r.io.map(|io| io.read)),
        "written_bytes_per_position": per(r.io.map(|io| io.written)),
        "wins": r.counts.map(|c| c.wins),
        "draws": r.counts.map(|c| c.draws),
        "losses": r.counts.map(|c| c.losses),
        "win_share": share(r.counts.map(|c| c.wins)),
        "draw_share": share(r.counts.map(|c| c.draws)),
        "loss_share": share(r.counts.map(|c| c.losses)),
        "max_depth": r.max_depth,
        "resumed_at": r.resumed.map(|(stage, _)| stage.to_string()),
        "resumes": r.mode.map(|_| r.resumed.map_or(0, |(_, times)| times)),
        "compressed_bytes": compressed.map(|c| c.bytes),
        "compressed_bits_per_position": compressed.map(|c| c.bits_per_position()),
        "compress_seconds": compressed.and_then(|c| c.seconds),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::LevelIo;
    use crate::compress::CompressReport;
    use crate::exits::ExitsStats;

    #[test]
    fn a_kept_level_has_its_size_and_nulls() {
        let v = level_json(&LevelReport::kept(16));
        assert_eq!(v["seeds"], 16);
        assert_eq!(v["positions"], awari_db::level_size(16));
        assert_eq!(v["status"], "kept");
        for key in [
            "mode",
            "seconds",
            "positions_per_second",
            "peak_anon_bytes",
            "exit_passes",
            "wins",
            "resumes",
            "compressed_bytes",
        ] {
            assert!(v[key].is_null(), "{key}: {}", v[key]);
        }
        // One line, no spaces: what scripts split on.
        assert!(!v.to_string().contains(['\n', ' ']), "{v}");
    }

    #[test]
    fn a_built_level_has_every_figure() {
        let mut r = LevelReport::kept(20);
        let n = r.positions;
        r.seconds = Some(4.0);
        r.mode = Some(Mode::TwoBit);
        r.peak_rss = Some(3 * n);
        r.peak_anon = Some(n);
        r.exits = Some(ExitsStats {
            seconds: 1.5,
            bytes_read: Some(1 << 21),
            lower_bytes: 1 << 22,
            passes: 5,
        });
        r.io = Some(LevelIo {
            read: 2 * n,
            written: n / 2,
        });
        r.counts = Some(crate::level::LevelCounts {
            wins: n / 2,
            draws: n / 4,
            losses: n - n / 2 - n / 4,
        });
        r.compressed = Some(CompressReport {
            level: 20,
            entries: n,
            source_bytes: n,
            bytes: n,
            seconds: Some(0.5),
            estimated: false,
        });
        let v = level_json(&r);
        assert_eq!(v["status"], "built");
        assert_eq!(v["mode"], "two-bit");
        assert_eq!(v["positions_per_second"], n as f64 / 4.0);
        assert_eq!(v["peak_rss_bytes_per_position"], 3.0);
        assert_eq!(v["peak_anon_bytes_per_position"], 1.0);
        assert_eq!(v["exit_passes"], 5);
        assert_eq!(v["exits_read_over_lower"], 0.5);
        assert_eq!(v["read_bytes_per_position"], 2.0);
        assert_eq!(v["written_bytes"], n / 2);
        assert_eq!(v["wins"], n / 2);
        assert_eq!(v["resumes"], 0);
        assert!(v["resumed_at"].is_null());
        assert_eq!(v["compressed_bits_per_position"], 8.0);
        r.resumed = Some((crate::twobit::Stage::Settle { next: 3 }, 2));
        let v = level_json(&r);
        assert_eq!(v["status"], "resumed");
        assert_eq!(v["resumed_at"], "step 3");
        assert_eq!(v["resumes"], 2);
    }

    #[test]
    fn per_position_figures_of_a_small_level_are_null_as_in_the_table() {
        let mut r = LevelReport::kept(8);
        assert!(r.positions < MEANINGFUL);
        r.seconds = Some(0.01);
        r.mode = Some(Mode::InMemory);
        r.peak_anon = Some(1 << 20);
        let v = level_json(&r);
        assert_eq!(v["peak_anon_bytes"], 1 << 20);
        assert!(v["peak_anon_bytes_per_position"].is_null());
    }
}
