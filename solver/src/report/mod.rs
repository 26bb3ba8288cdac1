//! What the command line prints, for every phase: the progress bars ([`Bars`]), the build
//! summary (the table, or a JSON object a level: [`Summary`]) and the values of the starts,
//! the lines of `compare`, `compress`, `stats` and `verify`, the distributed build's report,
//! and [`plan`], what a build will take. The binaries call these; the phases report through
//! [`Progress`].

mod cluster;
mod json;
pub mod plan;

pub use json::level_json;

use std::io::IsTerminal;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use awari_db::{Board, DbError, Levels};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::build::{BuildError, BuildOptions, LevelReport, Mode};
use crate::compare::{LevelComparison, LevelReport as ComparedLevel};
use crate::compress::CompressReport;
use crate::{sys, verify, Progress};

/// Progress on stderr: a bar per phase, showing level, phase, positions/s and ETA, when
/// stderr is a terminal; else, with [`Bars::logging`], a plain line at a fixed interval, for
/// a build that runs for hours with its stderr in a log file:
///
/// ```text
/// 2026-12-01 23:10:05 UTC level 36 settle (step 12): 25.0% of 14.26G after 1:00:00, 990.1k/s, eta 3:00:00
/// ```
pub struct Bars {
    shared: Arc<Shared>,
    /// The log ticker: dropping the sender stops it.
    ticker: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

/// What the bars and the log ticker share.
struct Shared {
    bar: Mutex<Option<ProgressBar>>,
    level: Mutex<(u32, u64)>,
    phase: Mutex<String>,
}

impl Bars {
    /// Bars on a terminal, nothing otherwise.
    pub fn new() -> Bars {
        Bars {
            shared: Arc::new(Shared {
                bar: Mutex::new(None),
                level: Mutex::new((0, 0)),
                phase: Mutex::new(String::new()),
            }),
            ticker: None,
        }
    }

    /// Bars on a terminal; otherwise a progress line on stderr every `every` (none if zero).
    pub fn logging(every: Duration) -> Bars {
        let mut bars = Bars::new();
        if every.is_zero() || std::io::stderr().is_terminal() {
            return bars;
        }
        let (stop, wait) = mpsc::channel::<()>();
        let shared = Arc::clone(&bars.shared);
        let handle = std::thread::spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(every) {
                if let Some(line) = shared.log_line(SystemTime::now()) {
                    eprintln!("{line}");
                }
            }
        });
        bars.ticker = Some((stop, handle));
        bars
    }

    /// The bar of the phase in progress.
    pub fn current(&self) -> Option<ProgressBar> {
        self.shared.current()
    }
}

impl Shared {
    fn current(&self) -> Option<ProgressBar> {
        self.bar.lock().expect("progress lock").clone()
    }

    /// The log line of the phase in progress, if one is.
    fn log_line(&self, now: SystemTime) -> Option<String> {
        let bar = self.current().filter(|b| !b.is_finished())?;
        let phase = self.phase.lock().expect("progress lock").clone();
        let message = bar.message();
        let doing = if message.is_empty() || message == phase {
            phase
        } else {
            format!("{phase} ({message})")
        };
        Some(progress_line(
            now,
            &bar.prefix(),
            &doing,
            bar.position(),
            bar.length().unwrap_or(0),
            bar.elapsed(),
        ))
    }
}

impl Drop for Bars {
    fn drop(&mut self) {
        if let Some((stop, handle)) = self.ticker.take() {
            drop(stop);
            let _ = handle.join();
        }
    }
}

impl Default for Bars {
    fn default() -> Bars {
        Bars::new()
    }
}

impl Progress for Bars {
    fn level(&self, n: u32, positions: u64) {
        *self.shared.level.lock().expect("progress lock") = (n, positions);
    }

    fn phase(&self, name: &str, total: u64) {
        let (n, _) = *self.shared.level.lock().expect("progress lock");
        let mut slot = self.shared.bar.lock().expect("progress lock");
        if let Some(b) = slot.take() {
            b.finish_and_clear();
        }
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let b = ProgressBar::with_draw_target(Some(total), target);
        b.set_style(
            ProgressStyle::with_template(
                "level {prefix:>2} {msg:<8} [{bar:30}] {percent:>3}% {per_sec:>14} eta {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        b.set_prefix(n.to_string());
        b.set_message(name.to_string());
        b.enable_steady_tick(Duration::from_millis(200));
        *self.shared.phase.lock().expect("progress lock") = name.to_string();
        *slot = Some(b);
    }

    fn advance(&self, k: u64) {
        if let Some(b) = self.current() {
            b.inc(k);
        }
    }

    fn message(&self, msg: &str) {
        if let Some(b) = self.current() {
            b.set_message(msg.to_string());
        }
    }
}

/// One progress line of the log: UTC time, level, what is being done, the share done of
/// `total` units, the time the phase has taken, its average rate and the ETA at that rate.
/// (The average, not the bar's recent rate: the settling steps report in bursts.)
fn progress_line(
    now: SystemTime,
    level: &str,
    doing: &str,
    done: u64,
    total: u64,
    elapsed: Duration,
) -> String {
    let done = done.min(total);
    let percent = if total == 0 {
        100.0
    } else {
        done as f64 * 100.0 / total as f64
    };
    let secs = elapsed.as_secs_f64();
    // Nothing done yet: no rate, no ETA.
    let (rate, eta) = if done == 0 || secs <= 0.0 {
        ("–".to_string(), "–".to_string())
    } else {
        let per_sec = done as f64 / secs;
        let left = ((total - done) as f64 / per_sec).min(1e9);
        (si(per_sec), clock(Duration::from_secs_f64(left)))
    };
    format!(
        "{} level {level} {doing}: {percent:.1}% of {} after {}, {rate}/s, eta {eta}",
        utc(now),
        si(total as f64),
        clock(elapsed),
    )
}

/// A duration as h:mm:ss.
fn clock(d: Duration) -> String {
    let secs = d.as_secs();
    format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// `t` as `YYYY-MM-DD hh:mm:ss UTC` (the proleptic Gregorian calendar).
fn utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Count from 0000-03-01, so that a leap day ends its year: 146,097 days per 400 years,
    // then 36,524 per century, 1,461 per 4 years and 365 per year.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// A start's value in words.
fn describe_start(k: u32, v: i8) -> String {
    match v {
        0 => "draw".to_string(),
        v if v > 0 => format!("first player wins by {v}"),
        v => format!("second player wins by {}", -v),
    }
    .to_string()
        + &format!(
            " (value {v:+}, {k} seed{} per pit)",
            if k == 1 { "" } else { "s" }
        )
}

/// The build summary's columns: header and width (every cell is right-aligned to it).
const COLUMNS: [(&str, usize); 18] = [
    ("level", 5),
    ("positions", 15),
    ("seconds", 8),
    ("pos/s", 10),
    ("peak RSS", 10),
    ("B/pos", 6),
    ("peak anon", 10),
    ("B/pos", 6),
    ("exits s", 8),
    ("read", 10),
    ("/lower", 6),
    ("I/O r/pos", 9),
    ("w/pos", 6),
    ("wins", 7),
    ("draws", 7),
    ("losses", 7),
    ("max depth", 9),
    ("mode", 10),
];

/// Levels smaller than this show "–" for per-position memory (fixed costs dominate).
const MEANINGFUL: u64 = 1 << 20;

fn print_cells(cells: &[String]) {
    let line: Vec<String> = cells
        .iter()
        .zip(COLUMNS)
        .map(|(c, (_, w))| format!("{c:>w$}"))
        .collect();
    println!("{}", line.join(" "));
}

/// The build summary's header line.
pub fn print_header() {
    print_cells(&COLUMNS.map(|(h, _)| h.to_string()));
}

/// The build summary's line of one level (and a second when it was resumed).
pub fn print_row(r: &LevelReport) {
    const NONE: &str = "–";
    let total = r.positions.max(1) as f64;
    let pct = |x: Option<u64>| {
        x.map_or(NONE.to_string(), |x| {
            format!("{:.2}%", 100.0 * x as f64 / total)
        })
    };
    let built = r.seconds.is_some();
    let per = |b: Option<u64>| match b {
        Some(b) if built && r.positions >= MEANINGFUL => format!("{:.2}", b as f64 / total),
        _ => NONE.to_string(),
    };
    let size = |b: Option<u64>| match b {
        Some(b) if built => sys::human(b),
        _ => NONE.to_string(),
    };
    let exits = r.exits.as_ref();
    let read_ratio = match exits.and_then(|e| e.bytes_read.map(|b| (b, e.lower_bytes))) {
        Some((b, lower)) if lower >= MEANINGFUL => format!("{:.2}", b as f64 / lower as f64),
        _ => NONE.to_string(),
    };
    print_cells(&[
        r.seeds.to_string(),
        r.positions.to_string(),
        r.seconds.map_or("kept".to_string(), |s| format!("{s:.2}")),
        r.seconds.map_or(NONE.to_string(), |s| {
            format!("{:.0}", r.positions as f64 / s.max(1e-9))
        }),
        size(r.peak_rss),
        per(r.peak_rss),
        size(r.peak_anon),
        per(r.peak_anon),
        exits.map_or(NONE.to_string(), |e| format!("{:.2}", e.seconds)),
        size(exits.and_then(|e| e.bytes_read)),
        read_ratio,
        per(r.io.map(|io| io.read)),
        per(r.io.map(|io| io.written)),
        pct(r.counts.map(|c| c.wins)),
        pct(r.counts.map(|c| c.draws)),
        pct(r.counts.map(|c| c.losses)),
        r.max_depth.map_or(NONE.to_string(), |d| d.to_string()),
        r.mode.map_or(NONE, Mode::name).to_string(),
    ]);
    if let Some((stage, times)) = r.resumed {
        println!(
            "level {}: resumed at {stage} ({times} resume{} in all; the times above count each run up to its last checkpoint)",
            r.seeds,
            if times == 1 { "" } else { "s" }
        );
    }
}

/// One line per compressed level.
pub fn print_compressed(r: &CompressReport) {
    let how = match r.seconds {
        Some(s) => format!(
            "in {s:.2} s ({:.1} M positions/s)",
            r.entries as f64 / s.max(1e-9) / 1e6
        ),
        None => "kept (already compressed)".to_string(),
    };
    println!(
        "level {:>2} {}: {} positions, {} bytes, {:.3} bits per position, {how}",
        r.level,
        if r.estimated {
            "estimated"
        } else {
            "compressed"
        },
        r.entries,
        r.bytes,
        r.bits_per_position()
    );
}

/// `compress`'s last line.
pub fn print_compress_total(reports: &[CompressReport], seconds: f64) {
    let entries: u64 = reports.iter().map(|r| r.entries).sum();
    let bytes: u64 = reports.iter().map(|r| r.bytes).sum();
    let source_bytes: u64 = reports.iter().map(|r| r.source_bytes).sum();
    let estimated = if reports.iter().any(|r| r.estimated) {
        " (estimated from samples, nothing written)"
    } else {
        ""
    };
    println!(
        "total{estimated}: {} levels, {entries} positions, {bytes} bytes ({:.3} bits per position, {:.1}× smaller) in {seconds:.2} s",
        reports.len(),
        8.0 * bytes as f64 / entries.max(1) as f64,
        source_bytes as f64 / bytes.max(1) as f64,
    );
}

/// How `build` prints its summary on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Summary {
    /// The table: a header, a row a level (and its compression's line), then the total and
    /// the starts' values.
    Table,
    /// `--json`: a JSON object a line, one a level ([`level_json`]), and nothing else; the
    /// total and the starts' values go to stderr.
    Json,
}

impl Summary {
    /// The table's header; nothing in JSON.
    pub fn header(self) {
        if self == Summary::Table {
            print_header();
        }
    }

    /// The line of a level, as it finishes.
    pub fn level(self, r: &LevelReport) {
        match self {
            Summary::Table => {
                print_row(r);
                if let Some(c) = &r.compressed {
                    print_compressed(c);
                }
            }
            Summary::Json => println!("{}", level_json(r)),
        }
    }

    /// A line after the levels (the total, the starts' values): on stdout under the table, on
    /// stderr beside JSON, which keeps stdout a level a line.
    pub fn footer(self, line: &str) {
        match self {
            Summary::Table => println!("{line}"),
            Summary::Json => eprintln!("{line}"),
        }
    }
}

/// The build summary's last line.
pub fn build_total(reports: &[LevelReport], seconds: f64, ranks: Option<usize>) -> String {
    let built: Vec<&LevelReport> = reports.iter().filter(|r| r.seconds.is_some()).collect();
    let positions: u64 = built.iter().map(|r| r.positions).sum();
    format!(
        "total: {} levels built, {positions} positions in {seconds:.2} s ({:.0} positions/s){}; {} levels kept",
        built.len(),
        positions as f64 / seconds.max(1e-9),
        ranks.map_or(String::new(), |r| format!(" on {r} ranks")),
        reports.len() - built.len()
    )
}

/// `compare`'s line (and differing entries) of one level; the entries it compared.
pub fn print_comparison(r: &ComparedLevel, a: &Path, b: &Path) -> u64 {
    let rate = r.positions as f64 / r.seconds.max(1e-9) / 1e9;
    match &r.outcome {
        LevelComparison::Equal => {
            println!(
                "level {:>2}: equal ({} entries, {rate:.2} GB/s)",
                r.level, r.positions
            );
            r.positions
        }
        LevelComparison::Differ { count, first } => {
            println!(
                "level {:>2}: {count} of {} entries differ",
                r.level, r.positions
            );
            for d in first {
                println!(
                    "  index {}: {}  {} in {}, {} in {}",
                    d.index,
                    d.board,
                    d.values.0,
                    a.display(),
                    d.values.1,
                    b.display()
                );
            }
            r.positions
        }
        LevelComparison::OnlyIn(first) => {
            println!(
                "level {:>2}: only in {}",
                r.level,
                if *first { a.display() } else { b.display() }
            );
            0
        }
    }
}

/// `stats`: the histogram of level `n` (`positions` boards), as text.
pub fn print_histogram(
    levels: &Levels,
    n: u32,
    positions: u64,
    hist: &std::collections::BTreeMap<i8, u64>,
    all_configurations: bool,
) {
    println!(
        "level {n} ({} rules), {positions} {}",
        levels.rules(),
        if all_configurations {
            "boards (all configurations)"
        } else {
            "indexed positions"
        }
    );
    println!("{:>6} {:>15} {:>8}", "value", "positions", "share");
    for (v, c) in hist {
        println!(
            "{v:>+6} {c:>15} {:>7.3}%",
            100.0 * *c as f64 / positions as f64
        );
    }
}

/// `stats --depth`: a line per depth, won and lost positions apart.
pub fn print_depth_histogram(n: u32, h: &crate::stats::DepthHistogram) {
    println!(
        "level {n}: {} positions, {} drawn (depth 0), largest depth {}",
        h.positions,
        h.draws,
        h.max_depth()
    );
    println!("{:>6} {:>15} {:>15}", "depth", "won", "lost");
    for d in 0..=h.max_depth() {
        let w = h.won.get(d).copied().unwrap_or(0);
        let l = h.lost.get(d).copied().unwrap_or(0);
        println!("{d:>6} {w:>15} {l:>15}");
    }
    if let Some((i, b, v)) = h.deepest {
        println!("deepest: index {i}, board {b}, value {v:+}");
    }
}

/// `verify` of levels `wanted` of `levels`, one line per level (and its failing entries), and
/// what was proven; whether every level passed.
pub fn verify_levels(
    levels: &Levels,
    wanted: &[u32],
    options: &verify::VerifyOptions,
    bars: &Bars,
) -> Result<bool, verify::VerifyError> {
    let mut all_ok = true;
    let mut depth_everywhere = true;
    for &n in wanted {
        bars.level(n, awari_db::level_size(n));
        let start = std::time::Instant::now();
        let read_before = sys::read_bytes();
        let chars_before = sys::io_chars();
        let peak = sys::AnonPeak::start();
        let v = verify::verify_level(levels, n, options, bars)?;
        let chars = chars_before.zip(sys::io_chars());
        let peak = peak.finish();
        if let Some(b) = bars.current() {
            b.finish_and_clear();
        }
        let seconds = start.elapsed().as_secs_f64();
        let size = awari_db::level_size(n);
        let cost = format!(
            "{}; {seconds:.2} s, {} positions/s{}{}{}",
            match (v.passes, v.proof.is_some()) {
                (p, true) => format!(
                    "depth pass, {p} exit pass{}",
                    if p == 1 { "" } else { "es" }
                ),
                (0, _) => "lookup".to_string(),
                (1, _) => "streamed, 1 pass".to_string(),
                (p, _) => format!("streamed, {p} passes"),
            },
            si(size as f64 / seconds.max(1e-9)),
            match (read_before, sys::read_bytes()) {
                (Some(a), Some(b)) => format!(", read {}", sys::human(b.saturating_sub(a))),
                _ => String::new(),
            },
            // The proof's work files (read and written through system calls; the tables it
            // reads through memory maps are not counted).
            match (&v.proof, chars) {
                (Some(_), Some(((r0, w0), (r1, w1)))) if size > 0 => format!(
                    ", work files read {:.2} and written {:.2} B/pos",
                    r1.saturating_sub(r0) as f64 / size as f64,
                    w1.saturating_sub(w0) as f64 / size as f64
                ),
                _ => String::new(),
            },
            // Per position only where the level outweighs the process's own few MiB.
            peak.map_or(String::new(), |p| if size >= 1 << 20 {
                format!(
                    ", peak anon {} ({:.2} B/pos)",
                    sys::human(p),
                    p as f64 / size as f64
                )
            } else {
                format!(", peak anon {}", sys::human(p))
            }),
        );
        depth_everywhere &= v.proven();
        if let Some(e) = &v.checksum {
            println!("level {n:>2}: FAILED checksum: {e} ({cost})");
            all_ok = false;
        }
        if v.passed() {
            let how = match &v.proof {
                Some(p) => format!(
                    "; proven: every win and loss converts within {} plies (depths computed from the values)",
                    p.max_depth
                ),
                None if v.depth_checked => "; proven: depths well-founded (depth table)".into(),
                None => " (consistent; not proven: no depth table checked; --prove proves it, but not in the probe form)".into(),
            };
            println!(
                "level {n:>2}: ok, {size} entries recomputed from their children{how} ({cost})"
            );
        } else if let Some(p) = v
            .proof
            .as_ref()
            .filter(|p| p.unproven > 0 && v.failures == 0)
        {
            all_ok = false;
            println!(
                "level {n:>2}: NOT PROVEN: consistent, but {} won or lost positions never convert (a cycle of quiet moves labelled won or lost; the game draws it) ({cost})",
                p.unproven
            );
            for u in &p.examples {
                println!(
                    "  level {n} index {} board {}: stored {:+}, no finite depth to conversion",
                    u.index, u.board, u.value
                );
            }
        } else if v.failures > 0 {
            all_ok = false;
            println!(
                "level {n:>2}: FAILED: {} entries wrong ({cost})",
                v.failures
            );
            for m in &v.examples {
                println!(
                    "  level {} index {} board {}: {}",
                    m.level, m.index, m.board, m.what
                );
            }
        }
    }
    if all_ok {
        if depth_everywhere {
            println!("verified: every value is the game value, given the move generator (see `verify` in the docs)");
        } else {
            println!("verified: values are consistent with their children; without depths this does not rule out wrong values on cycles (verify --prove, or depth tables, prove them)");
        }
    }
    Ok(all_ok)
}

/// The line of one level of `awari-solver depth`.
pub fn print_depth(r: &crate::depth::LevelDepth) {
    let n = r.level;
    let size = awari_db::level_size(n);
    let file = format!(
        "{} ({}, {:.2} bits/pos)",
        r.table
            .file_name()
            .map_or(String::new(), |f| f.to_string_lossy().into_owned()),
        sys::human(r.table_bytes),
        8.0 * r.table_bytes as f64 / size.max(1) as f64
    );
    let Some(d) = &r.report else {
        println!("level {n:>2}: depth table kept: {file}");
        return;
    };
    let anon = r.peak_anon.map_or(String::new(), |p| {
        format!(
            ", peak anon {} ({:.2} B/pos)",
            sys::human(p),
            p as f64 / size.max(1) as f64
        )
    });
    let resumed = match d.resumed {
        None => String::new(),
        Some(None) => ", resumed in wave 0".into(),
        Some(Some(k)) => format!(", resumed after wave {k}"),
    };
    let converted = d.histogram.first().copied().unwrap_or(0) - d.draws;
    // With --check: every entry recomputed, so the level is proven.
    let checked = if r.checked {
        "; proven (values checked)"
    } else {
        ""
    };
    let waves = format!(
        ", wave files {} ({:.2} B/pos)",
        sys::human(d.wave_bytes),
        d.wave_bytes as f64 / size.max(1) as f64
    );
    let traffic = r.traffic.map_or(String::new(), |(read, written)| {
        format!(
            ", read {:.2} and written {:.2} B/pos",
            read as f64 / size.max(1) as f64,
            written as f64 / size.max(1) as f64
        )
    });
    println!(
        "level {n:>2}: max depth {:>3}; depth 0: {} draws, {} convert at once; {size} positions in {:.2} s ({} positions/s, {} exit pass{}){anon}{waves}{traffic}{resumed}{checked}; {file}",
        d.max_depth,
        d.draws,
        converted,
        r.seconds,
        si(size as f64 / r.seconds.max(1e-9)),
        d.exits.passes,
        if d.exits.passes == 1 { "" } else { "es" },
    );
}

/// The last line of `awari-solver depth`.
pub fn print_depth_total(done: &[crate::depth::LevelDepth], seconds: f64) {
    let made: Vec<_> = done.iter().filter(|r| r.report.is_some()).collect();
    let positions: u64 = made.iter().map(|r| awari_db::level_size(r.level)).sum();
    let bytes: u64 = made.iter().map(|r| r.table_bytes).sum();
    let deepest = made
        .iter()
        .filter_map(|r| r.report.as_ref().map(|d| (d.max_depth, r.level)))
        .max();
    println!(
        "{} depth table(s) written, {} kept: {positions} positions, {} in {seconds:.2} s{}",
        made.len(),
        done.len() - made.len(),
        sys::human(bytes),
        deepest.map_or(String::new(), |(d, n)| format!(
            "; the longest conversion: {d} plies (level {n})"
        ))
    );
}

/// A rate with an SI prefix: 9.87M.
fn si(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.2}G", x / 1e9),
        x if x >= 1e6 => format!("{:.2}M", x / 1e6),
        x if x >= 1e3 => format!("{:.1}k", x / 1e3),
        x => format!("{x:.0}"),
    }
}

/// The lines of the values of the starts with 1, 2, … seeds in every pit that levels
/// 0..`max_stones` hold.
pub fn starts(levels: &Levels, max_stones: u32) -> Result<Vec<String>, DbError> {
    let mut lines = Vec::new();
    for k in 1..=4u32 {
        if 12 * k > max_stones {
            break;
        }
        let b = Board::uniform(k as u8);
        let v = levels.value(&b)?;
        lines.push(format!(
            "start with {k} per pit ({b}): {}",
            describe_start(k, v)
        ));
    }
    Ok(lines)
}

/// `build --distributed` over the ranks of `comm`; rank 0 reports, as `summary` says.
pub fn build_distributed(
    comm: &dyn crate::comm::Comm,
    opts: &BuildOptions,
    shift: u32,
    summary: Summary,
) -> Result<(), BuildError> {
    let (me, ranks) = (comm.rank(), comm.size());
    let bars = Bars::new();
    let progress: &dyn Progress = if me == 0 { &bars } else { &crate::Silent };
    if me == 0 {
        eprintln!(
            "building levels 0..{} of {} under {} rules on {ranks} ranks × {} threads",
            opts.max_stones,
            opts.dir.display(),
            opts.rules,
            rayon::current_num_threads()
        );
        summary.header();
    }
    let start = std::time::Instant::now();
    let mut sent = 0u64;
    let mut messages = 0u64;
    let mut rounds = 0u64;
    let reports =
        crate::distributed::build_distributed(comm, opts, shift, progress, |r, built| {
            if let Some(t) = built.map(|b| b.traffic) {
                sent += t.words_sent;
                messages += t.messages;
                rounds += t.settle_rounds;
            }
            if me == 0 {
                if let Some(b) = bars.current() {
                    b.finish_and_clear();
                }
                summary.level(r);
            }
        })?;
    let totals = comm.sum(&[sent, messages]);
    if me == 0 {
        summary.footer(&build_total(
            &reports,
            start.elapsed().as_secs_f64(),
            Some(ranks),
        ));
        let built: Vec<&LevelReport> = reports.iter().filter(|r| r.seconds.is_some()).collect();
        let positions: u64 = built.iter().map(|r| r.positions).sum();
        // A level of n seeds settles in n steps.
        let steps: u64 = built.iter().map(|r| u64::from(r.seeds)).sum();
        summary.footer(&format!(
            "traffic: {} bytes sent between ranks ({:.2} per position built); {} messages, {:.1} per rank per settling step; {rounds} settling rounds",
            8 * totals[0],
            8.0 * totals[0] as f64 / positions.max(1) as f64,
            totals[1],
            totals[1] as f64 / (ranks as u64 * steps.max(1)) as f64
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn utc_matches_the_calendar() {
        // Timestamps from Python's datetime, in and around leap years and centuries.
        for (secs, text) in [
            (0, "1970-01-01 00:00:00 UTC"),
            (951_868_799, "2000-02-29 23:59:59 UTC"),
            (946_641_600, "1999-12-31 12:00:00 UTC"),
            (1_796_166_605, "2026-12-01 23:10:05 UTC"),
            (4_107_542_400, "2100-03-01 00:00:00 UTC"),
        ] {
            assert_eq!(utc(at(secs)), text);
        }
    }

    #[test]
    fn a_progress_line_says_level_phase_share_rate_and_eta() {
        let line = progress_line(
            at(1_796_166_605),
            "36",
            "settle (step 12)",
            3_564_417_912,
            14_257_671_649,
            Duration::from_secs(3600),
        );
        assert_eq!(
            line,
            "2026-12-01 23:10:05 UTC level 36 settle (step 12): 25.0% of 14.26G after 1:00:00, 990.1k/s, eta 3:00:00"
        );
        let empty = progress_line(at(0), "0", "write", 0, 0, Duration::ZERO);
        assert!(
            empty.ends_with("level 0 write: 100.0% of 0 after 0:00:00, –/s, eta –"),
            "{empty}"
        );
    }

    #[test]
    fn the_log_line_names_the_phase_and_its_step() {
        let bars = Bars::new();
        assert!(bars.shared.log_line(at(0)).is_none(), "no phase, no line");
        bars.level(7, 1000);
        bars.phase("settle", 1000);
        bars.advance(250);
        bars.message("step 3");
        let line = bars.shared.log_line(at(0)).expect("a phase is in progress");
        assert!(
            line.contains("level 7 settle (step 3): 25.0% of 1.0k"),
            "{line}"
        );
        bars.current().expect("bar").finish_and_clear();
        assert!(
            bars.shared.log_line(at(0)).is_none(),
            "a finished phase has no line"
        );
    }
}
