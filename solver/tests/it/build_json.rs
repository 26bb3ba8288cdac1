//! `build --json`: a JSON object a level on stdout, which the scripts in `scripts/` read; and
//! `stats --json` as docs/cli.md shows it.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{temp, BIN};

/// The keys of every line, in their order (docs/cli.md).
const KEYS: [&str; 31] = [
    "seeds",
    "positions",
    "status",
    "mode",
    "seconds",
    "positions_per_second",
    "peak_rss_bytes",
    "peak_rss_bytes_per_position",
    "peak_anon_bytes",
    "peak_anon_bytes_per_position",
    "exits_seconds",
    "exit_passes",
    "exits_read_bytes",
    "lower_bytes",
    "exits_read_over_lower",
    "read_bytes",
    "written_bytes",
    "read_bytes_per_position",
    "written_bytes_per_position",
    "wins",
    "draws",
    "losses",
    "win_share",
    "draw_share",
    "loss_share",
    "max_depth",
    "resumed_at",
    "resumes",
    "compressed_bytes",
    "compressed_bits_per_position",
    "compress_seconds",
];

fn build(dir: &Path, stones: &str, extra: &[&str]) -> Output {
    solver(&["build", "--json", "--max-stones", stones], dir, extra)
}

/// `awari-solver ARGS --db DIR EXTRA`, which must succeed.
fn solver(args: &[&str], dir: &Path, extra: &[&str]) -> Output {
    let out = Command::new(BIN)
        .args(args)
        .arg("--db")
        .arg(dir)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every line of stdout, parsed; each must be one JSON object with exactly [`KEYS`].
fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line:?}"));
            let keys: Vec<&str> = v
                .as_object()
                .unwrap_or_else(|| panic!("not an object: {line}"))
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(keys, KEYS, "{line}");
            v
        })
        .collect()
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a count: {v}"))
}

#[test]
fn build_json_prints_a_line_per_level_and_kept_levels_on_a_second_run() {
    let dir = temp("levels");
    let out = build(&dir, "8", &[]);
    let levels = lines(&out);
    assert_eq!(levels.len(), 9, "levels 0..8");
    for (n, v) in levels.iter().enumerate() {
        let size = awari_db::level_size(n as u32);
        assert_eq!(u(v, "seeds"), n as u64, "{v}");
        assert_eq!(u(v, "positions"), size, "{v}");
        assert_eq!(v["status"], "built", "{v}");
        assert_eq!(v["mode"], "memory", "{v}");
        assert_eq!(u(v, "wins") + u(v, "draws") + u(v, "losses"), size, "{v}");
        let shares: f64 = ["win_share", "draw_share", "loss_share"]
            .iter()
            .map(|k| v[k].as_f64().unwrap())
            .sum();
        assert!((shares - 1.0).abs() < 1e-9, "{v}");
        let seconds = v["seconds"].as_f64().expect("seconds");
        let rate = v["positions_per_second"].as_f64().expect("rate");
        assert!(seconds > 0.0 && rate > 0.0, "{v}");
        assert!(
            (rate * seconds - size as f64).abs() <= 1e-6 * size as f64,
            "{v}"
        );
        assert!(u(v, "peak_anon_bytes") > 0, "{v}");
        assert_eq!(u(v, "exit_passes"), 1, "{v}");
        assert_eq!(u(v, "resumes"), 0, "{v}");
        assert!(v["resumed_at"].is_null() && v["max_depth"].is_null(), "{v}");
        // Under 2^20 positions, per-position figures are null, as the table's are "–".
        assert!(v["peak_anon_bytes_per_position"].is_null(), "{v}");
        assert!(v["compressed_bytes"].is_null(), "{v}");
    }
    // Nothing else on stdout: the total and the starts' values went to stderr.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("total: 9 levels built"), "{err}");

    // Levels 0..8 are kept, level 9 built with its depth table.
    let out = build(&dir, "9", &["--depth"]);
    let levels = lines(&out);
    assert_eq!(levels.len(), 10);
    for v in &levels[..9] {
        assert_eq!(v["status"], "kept", "{v}");
        for key in ["mode", "wins", "peak_anon_bytes", "exit_passes", "resumes"] {
            assert!(v[key].is_null(), "{key}: {v}");
        }
    }
    let top = &levels[9];
    assert_eq!(top["status"], "built", "{top}");
    assert_eq!(
        u(top, "wins") + u(top, "draws") + u(top, "losses"),
        awari_db::level_size(9)
    );
    assert!(u(top, "max_depth") > 0, "{top}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn build_json_gives_the_compressed_size() {
    let dir = temp("compress");
    let levels = lines(&build(&dir, "6", &["--compress"]));
    assert_eq!(levels.len(), 7);
    for v in &levels {
        let bytes = u(v, "compressed_bytes");
        let bits = v["compressed_bits_per_position"].as_f64().unwrap();
        assert!(bytes > 0, "{v}");
        assert!(
            (bits - 8.0 * bytes as f64 / u(v, "positions") as f64).abs() < 1e-9,
            "{v}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// docs/cli.md shows `stats --json` output as it is: each of its three example lines is what
/// `stats` prints for level 6 (values, all configurations, depths).
#[test]
fn the_stats_documents_in_cli_md_are_real_output() {
    let dir = temp("stats-doc");
    build(&dir, "6", &["--depth"]);
    let doc = crate::common::contracts::repo_file("docs/cli.md");
    for extra in [&[][..], &["--all-configurations"], &["--depth"]] {
        let out = solver(&["stats", "--json", "--stones", "6"], &dir, extra);
        let line = String::from_utf8(out.stdout).unwrap();
        let line = line.trim_end();
        assert!(
            doc.lines().any(|l| l == line),
            "docs/cli.md does not show `stats --json {extra:?}` as it is: {line}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
