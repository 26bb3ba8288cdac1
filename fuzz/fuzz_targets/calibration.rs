//! The plan's calibration file (`plan --calibration FILE`): the bytes read by
//! `Calibration::read` (as a file) and `Calibration::parse` (as text), which must agree; a
//! calibration that parses then set on a machine as the command line sets it, and the plan
//! rendered from it (`render`, `seconds_left`, `time_left`, `assumptions`). Only "no panic, no
//! hang, no huge allocation" and the readers' agreement are asserted.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use awari_fuzz::{replace, scratch};
use awari_solver::plan::{self, Calibration, Machine};
use libfuzzer_sys::fuzz_target;

static FILE: OnceLock<PathBuf> = OnceLock::new();

/// The machine the command line makes of a calibration (`solver/src/cli.rs`, `plan`).
fn machine(c: &Calibration) -> Machine {
    let ratio = |rate: Option<f64>| rate.map(|r| r / c.memory_rate);
    let scale = |s: Option<plan::IoSample>, two_bit: bool| {
        s.map_or(1.0, |s| s.scale(two_bit).unwrap_or(1.0))
    };
    let mut m = Machine::defaults(2, Some(8 << 30));
    m.rate = c.memory_rate;
    m.low_ratio = ratio(c.low_memory_rate).unwrap_or(plan::DEFAULT_LOW_RATIO);
    if c.two_bit_rate.is_some() {
        m.two_bit_passes = c
            .two_bit_io
            .map_or(plan::DEFAULT_TWO_BIT_PASSES, |io| io.passes);
    }
    m.two_bit_ratio = ratio(c.two_bit_rate).unwrap_or(plan::DEFAULT_TWO_BIT_RATIO);
    m.verify_ratio = ratio(c.verify_rate).unwrap_or(plan::DEFAULT_DEPTH_RATIO);
    m.depth_ratio = ratio(c.depth_rate).unwrap_or(plan::DEFAULT_DEPTH_RATIO);
    m.bandwidth = c.bandwidth().unwrap_or(plan::DEFAULT_BANDWIDTH);
    m.low_io_scale = scale(c.low_memory_io, false);
    m.two_bit_io_scale = scale(c.two_bit_io, true);
    m.source = "calibration fuzz".into();
    m
}

fuzz_target!(
    init: {
        FILE.set(scratch("calibration").join("calibration.json")).unwrap();
    },
    |data: &[u8]| {
        let path = FILE.get().unwrap();
        replace(path, data);
        let read = Calibration::read(path);
        let parsed = std::str::from_utf8(data).map(Calibration::parse);
        match (&read, &parsed) {
            (Ok(a), Ok(Ok(b))) => assert_eq!(a, b),
            (Ok(_), _) => panic!("read accepts what parse refuses"),
            (Err(_), Ok(Ok(_))) => panic!("parse accepts what read refuses"),
            _ => {}
        }
        let Ok(c) = read else { return };
        let _ = c.bandwidth();
        for s in [c.low_memory_io, c.two_bit_io].into_iter().flatten() {
            let _ = s.scale(false);
            let _ = s.scale(true);
        }
        let m = machine(&c);
        for depth in [false, true] {
            let _ = plan::render(40, &m, depth);
            let _ = plan::seconds_left(0, 48, &m, depth);
            let _ = plan::time_left(&m, 40, depth, 20, 100.0);
        }
        let _ = plan::assumptions(&m);
        for n in [20, 30, 40] {
            let _ = plan::two_bit_is_faster(n, &m);
        }
    }
);
