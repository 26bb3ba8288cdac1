//! Built tables against published figures: Lincke's histograms (levels 0..12, all
//! configurations), the VU example position, and the one-seed-per-pit start.

use awari_db::{Board, Rules};
use awari_solver::build::{build, BuildOptions};
use awari_solver::{stats, Silent};

use crate::common::temp;

#[test]
fn lincke_histograms_and_vu_example() {
    let dir = temp("published");
    let opts = BuildOptions {
        dir: dir.clone(),
        max_stones: 16,
        rules: Rules::Awari,
        memory: None,
        depth: false,
        mode: Default::default(),
        compress: false,
        depth_form: Default::default(),
    };
    let (levels, reports) = build(&opts, &Silent, |_| {}).unwrap();
    assert_eq!(reports.len(), 17);

    let want: serde_json::Value =
        serde_json::from_str(include_str!("../data/lincke_histograms_0_12.json")).unwrap();
    for n in 0..=12u32 {
        let (total, hist) = stats::histogram(&levels, n, true).unwrap();
        assert_eq!(total, awari_db::all_boards(n), "level {n}");
        let got = stats::to_json(n, total, &hist)["histogram"].clone();
        assert_eq!(got, want[n.to_string()], "level {n}");
    }

    // docs/design.md, "Test vectors": value 0; the six moves give -1 -1 -2 -2 -2 0.
    let b = Board::parse("1 1 1 1 1 2 4 2 3 0 0 0").unwrap();
    assert_eq!(levels.value(&b).unwrap(), 0);
    let moves = b.legal_moves(Rules::Awari);
    let values: Vec<i8> = moves
        .iter()
        .map(|m| levels.move_value(m).unwrap())
        .collect();
    assert_eq!(values, vec![-1, -1, -2, -2, -2, 0]);

    // One seed per pit (12 seeds) is a draw [Romein & Bal / Lincke].
    assert_eq!(levels.value(&Board::uniform(1)).unwrap(), 0);

    // A rebuild keeps every level.
    let (_, again) = build(&opts, &Silent, |_| {}).unwrap();
    assert!(again.iter().all(|r| r.seconds.is_none()));

    // Another rule set in the same directory is refused.
    let err = build(
        &BuildOptions {
            rules: Rules::Abapa,
            ..opts.clone()
        },
        &Silent,
        |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("awari") && err.contains("abapa"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The committed results (`results/histograms-awari.json`, written by `scripts/histograms.sh`
/// from the long builds) hold every level once, in order, each counting all C(n+11, 11)
/// boards with values in −n..=n, and agree with Lincke's published histograms on levels 0..12.
#[test]
fn committed_histograms_are_consistent() {
    let results: serde_json::Value =
        serde_json::from_str(include_str!("../../../results/histograms-awari.json")).unwrap();
    assert_eq!(results["rules"], "awari");
    let lincke: serde_json::Value =
        serde_json::from_str(include_str!("../data/lincke_histograms_0_12.json")).unwrap();
    let levels = results["levels"].as_array().unwrap();
    assert!(levels.len() >= 25, "levels 0..24 at least");
    for (k, level) in levels.iter().enumerate() {
        let n = level["stones"].as_u64().unwrap() as u32;
        assert_eq!(
            n,
            if k < 47 { k as u32 } else { k as u32 + 1 },
            "levels in order"
        );
        let hist = level["histogram"].as_object().unwrap();
        let total: u64 = hist.values().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(total, awari_db::all_boards(n), "level {n}");
        assert_eq!(level["positions"].as_u64().unwrap(), total, "level {n}");
        for v in hist.keys() {
            let v: i64 = v.parse().unwrap();
            assert!(v.abs() <= i64::from(n), "level {n}: value {v}");
        }
        if n <= 12 {
            assert_eq!(level["histogram"], lincke[n.to_string()], "level {n}");
        }
    }
}
