//! `awari-solver`: build Awari databases and report on them.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Context;
use awari_db::{level_exists, level_path, Board, Levels, Rules};
use awari_solver::build::{build, BuildOptions, LevelReport, Mode};
use awari_solver::{plan, stats, sys, verify, Progress};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(Parser)]
#[command(
    name = "awari-solver",
    version,
    about = "Build Awari (Oware) endgame databases by parallel retrograde analysis",
    long_about = "Build Awari (Oware) endgame databases by parallel retrograde analysis.\n\n\
                  One table per number of seeds on the board (level), in DIR/level-NN.values; \
                  each entry is the seed difference the side to move obtains with perfect play, \
                  numbered exactly as the Romein & Bal database."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ModeArg {
    Auto,
    Memory,
    LowMemory,
    TwoBit,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum MethodArg {
    Auto,
    Streamed,
    Lookup,
}

#[derive(Subcommand)]
enum Command {
    /// Build every missing level 0..N (resumable: levels present are checked and kept).
    Build {
        /// Database directory (one rule set per directory).
        #[arg(long, default_value = "awari-db")]
        db: PathBuf,
        /// Build levels 0..N (N ≤ 48; level 47 never exists).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=48))]
        max_stones: u32,
        /// Rule set: awari, abapa or grand-slam.
        #[arg(long, default_value = "awari")]
        rules: Rules,
        /// Worker threads (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
        /// Memory the level in progress may use, e.g. 8G (default: what the machine has free).
        #[arg(long, value_parser = sys::parse_size)]
        memory: Option<u64>,
        /// Also write depth-to-conversion tables (level-NN.depth), which `awari-probe line` uses
        /// to realise won positions and `verify` uses to prove the values.
        #[arg(long)]
        depth: bool,
        /// Level algorithm: `memory` (2 bytes of RAM per position, fastest), `low-memory`
        /// (0.67 bytes per position, exits and values streamed from disk), `two-bit` (0.25
        /// bytes per position, under 0.33 in all, with a checkpoint at every step: a killed
        /// build resumes inside the level), or `auto` (the first of these that fits
        /// --memory). Same tables, byte for byte, whichever builds them.
        #[arg(long, value_enum, default_value_t = ModeArg::Auto)]
        mode: ModeArg,
        /// Build over the ranks of an MPI job (`mpirun -n R awari-solver build --distributed`):
        /// each rank holds its slice of each level (2 bytes per position, in memory) and
        /// --memory is per rank; --db must be a directory every rank sees. Needs a binary
        /// built with `--features mpi`.
        #[arg(long)]
        distributed: bool,
        /// Slices of a distributed build are whole granules of 2^K positions (default 22:
        /// one checksum chunk of the table; smaller only to test the slicing).
        #[arg(long, hide = true, default_value_t = awari_solver::distributed::GRANULE_SHIFT,
              value_parser = clap::value_parser!(u32).range(6..=30))]
        granule_shift: u32,
        /// Compress each level as soon as it is built (level-NN.cvalues, about 3.5 bits per
        /// position instead of 8), replacing its plain table; plain levels already present are
        /// compressed too. The levels above read the compressed ones.
        #[arg(long)]
        compress: bool,
    },
    /// Compress a database directory, ours or raw VU `scores.N` files, into another: each
    /// level to level-NN.cvalues, checked by decoding it back before it is renamed into
    /// place. Every reader (probe, Python, stats, verify, build) opens the result with --db.
    /// Resumable: levels already compressed in --out are kept.
    Compress {
        /// The database directory to compress.
        #[arg(long, default_value = "awari-db")]
        db: PathBuf,
        /// The directory to write (created if missing).
        #[arg(long)]
        out: PathBuf,
        /// Levels to compress (default: every level present).
        #[arg(long, num_args = 1.., value_parser = clap::value_parser!(u32).range(0..=48))]
        stones: Vec<u32>,
        /// Worker threads (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Check every table: checksums, every entry recomputed from its children and, with
    /// depth tables, that every win and loss is realised in finitely many plies.
    ///
    /// Levels without a depth table are checked streamed: the level and its lower levels are
    /// read in index order, once per bucket of accumulators that fits in --memory, so the
    /// check runs at disk speed however large the level (no random reads into files).
    Verify {
        /// Database directory.
        #[arg(long, default_value = "awari-db")]
        db: PathBuf,
        /// Levels to verify (default: every level present). Their lower levels must be present.
        #[arg(long, num_args = 1.., value_parser = clap::value_parser!(u32).range(0..=48))]
        stones: Vec<u32>,
        /// Worker threads (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
        /// How many failing entries to print per level.
        #[arg(long, default_value_t = 10)]
        show: usize,
        /// How entries are recomputed: auto (lookup where a depth table exists, else
        /// streamed), streamed (children un-moved into their parents in index order: no random
        /// reads into files; values only) or lookup (each child looked up from its parent:
        /// random reads, fast only while the tables are in the page cache; checks depths).
        #[arg(long, value_enum, default_value = "auto")]
        method: MethodArg,
        /// Memory the streamed check's accumulators may use, one byte per position of a
        /// bucket, e.g. 8G; each bucket streams the level and its lower levels once more
        /// (default: what the machine has free).
        #[arg(long, value_parser = sys::parse_size)]
        memory: Option<u64>,
    },
    /// Compare two database directories level by level, streamed: ours or raw VU `scores.N`
    /// files, in any mix. Exits non-zero if any level differs or is in one directory only.
    Compare {
        /// The first directory.
        a: PathBuf,
        /// The second directory.
        b: PathBuf,
        /// Levels to compare (default: every level in either directory).
        #[arg(long, num_args = 1.., value_parser = clap::value_parser!(u32).range(0..=48))]
        stones: Vec<u32>,
        /// How many differing entries to print per level.
        #[arg(long, default_value_t = 5)]
        show: usize,
        /// Worker threads (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// What building levels 0..N takes: memory, disk and time per level, and totals.
    Plan {
        /// Plan levels 0..N.
        #[arg(long, default_value_t = 48, value_parser = clap::value_parser!(u32).range(0..=48))]
        max_stones: u32,
        /// Memory a level may use, e.g. 512G (default: what this machine has free).
        #[arg(long, value_parser = sys::parse_size)]
        memory: Option<u64>,
        /// Cores to plan for (default: this machine's).
        #[arg(long)]
        threads: Option<usize>,
        /// Build speed per thread, positions per second (default: level 27 in memory on the
        /// 2-core development machine, 7.94 M positions/s, by scripts/ab.sh; levels 0..24
        /// run at 9.9 M/s there, larger levels somewhat slower than 27).
        #[arg(long, default_value_t = 4.0e6)]
        rate_per_thread: f64,
        /// Speed of the low-memory algorithm as a fraction of the in-memory one (default:
        /// measured on the 2-core development machine: 0.88 on levels 0..24 with
        /// scripts/ab.sh LOWMEM=1, 0.93 on level 27 alone).
        #[arg(long, default_value_t = 0.88)]
        low_memory_ratio: f64,
        /// Speed of the two-bit algorithm as a fraction of the in-memory one (default: level
        /// 28 on the 2-core development machine, scripts/bench-two-bit.sh: 0.48 and 0.51 of
        /// the low-memory speed, itself 0.88 of the in-memory one).
        #[arg(long, default_value_t = TWO_BIT_RATIO)]
        two_bit_ratio: f64,
        /// Plan for depth tables too (`build --depth`).
        #[arg(long)]
        depth: bool,
        /// Plan for tables compressed as they are built (`build --compress`): disk from the
        /// compressed sizes measured to 34 seeds (3.9 bits per position) and their trend.
        #[arg(long)]
        compress: bool,
        /// Free disk for the database, e.g. 2T (default: what is free in --db, or in the
        /// current directory when --db does not exist yet).
        #[arg(long, value_parser = sys::parse_size)]
        disk: Option<u64>,
        /// Database directory whose free disk is planned with; the levels already in it are
        /// shown as such and need no time or new disk.
        #[arg(long, default_value = "awari-db")]
        db: PathBuf,
        /// Sequential disk bandwidth in MB/s for the I/O estimate (default: a SATA SSD; a
        /// fast NVMe drive does 2000 or more).
        #[arg(long, default_value_t = 500.0)]
        disk_bandwidth: f64,
        /// Plan a distributed build (`build --distributed`) over this many MPI ranks, each with
        /// --threads cores and --memory-per-rank of memory.
        #[arg(long, default_value_t = 1)]
        ranks: usize,
        /// Memory of each rank, e.g. 64G (with --ranks).
        #[arg(long, value_parser = sys::parse_size)]
        memory_per_rank: Option<u64>,
        /// Network bandwidth each rank sends at, in Gbit/s (with --ranks; default: 10 Gbit
        /// Ethernet).
        #[arg(long, default_value_t = 10.0)]
        network_gbit: f64,
        /// Speed of the distributed build as a fraction of a threaded one on the same cores
        /// (with --ranks; default: scripts/bench-mpi.sh 24 on the 2-core development machine,
        /// 2 ranks × 1 thread against 1 × 2).
        #[arg(long, default_value_t = 0.75)]
        distributed_efficiency: f64,
        /// Bytes sent between 2 ranks per position built (with --ranks; default: measured by
        /// scripts/bench-mpi.sh 24).
        #[arg(long, default_value_t = 15.6)]
        traffic_per_position: f64,
    },
    /// The value histogram of a level.
    Stats {
        /// Database directory.
        #[arg(long, default_value = "awari-db")]
        db: PathBuf,
        /// The level (seeds on the board).
        #[arg(long, value_parser = clap::value_parser!(u32).range(0..=48))]
        stones: u32,
        /// Count all C(N+11,11) boards with N seeds, those with a full opponent row valued by
        /// one ply (how Lincke's published tables count), not only the level's boards.
        #[arg(long)]
        all_configurations: bool,
        /// One JSON document on stdout.
        #[arg(long)]
        json: bool,
    },
}

/// `plan`'s default two-bit speed as a fraction of the in-memory speed (see its `--help`).
const TWO_BIT_RATIO: f64 = 0.44;

/// Progress bars on stderr: one per level, showing phase, positions/s and ETA.
struct Bars {
    bar: Mutex<Option<ProgressBar>>,
    level: Mutex<(u32, u64)>,
}

impl Bars {
    fn new() -> Bars {
        Bars {
            bar: Mutex::new(None),
            level: Mutex::new((0, 0)),
        }
    }

    fn current(&self) -> Option<ProgressBar> {
        self.bar.lock().expect("progress lock").clone()
    }
}

impl Progress for Bars {
    fn level(&self, n: u32, positions: u64) {
        *self.level.lock().expect("progress lock") = (n, positions);
    }

    fn phase(&self, name: &str, total: u64) {
        let (n, _) = *self.level.lock().expect("progress lock");
        let mut slot = self.bar.lock().expect("progress lock");
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

fn print_header() {
    print_cells(&COLUMNS.map(|(h, _)| h.to_string()));
}

fn print_row(r: &LevelReport) {
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

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Build {
            db,
            max_stones,
            rules,
            threads,
            memory,
            depth,
            mode,
            distributed,
            granule_shift,
            compress,
        } => {
            set_threads(threads)?;
            if compress && distributed {
                anyhow::bail!("--compress is not supported with --distributed: compress the database afterwards with awari-solver compress");
            }
            let opts = BuildOptions {
                compress,
                dir: db.clone(),
                max_stones,
                rules,
                memory,
                depth,
                mode: match mode {
                    ModeArg::Auto => Mode::Auto,
                    ModeArg::Memory => Mode::InMemory,
                    ModeArg::LowMemory => Mode::LowMemory,
                    ModeArg::TwoBit => Mode::TwoBit,
                },
            };
            if distributed {
                return build_distributed_cli(&opts, granule_shift);
            }
            let bars = Bars::new();
            eprintln!(
                "building levels 0..{max_stones} of {} under {rules} rules with {} threads",
                db.display(),
                rayon::current_num_threads()
            );
            print_header();
            let start = std::time::Instant::now();
            let (levels, reports) = build(&opts, &bars, |r| {
                if let Some(b) = bars.current() {
                    b.finish_and_clear();
                }
                print_row(r);
                if let Some(c) = &r.compressed {
                    print_compressed(c);
                }
            })?;
            let built: Vec<&LevelReport> = reports.iter().filter(|r| r.seconds.is_some()).collect();
            let positions: u64 = built.iter().map(|r| r.positions).sum();
            let secs = start.elapsed().as_secs_f64();
            println!(
                "total: {} levels built, {positions} positions in {secs:.2} s ({:.0} positions/s); {} levels kept",
                built.len(),
                positions as f64 / secs.max(1e-9),
                reports.len() - built.len()
            );
            print_starts(&levels, max_stones)?;
            Ok(())
        }
        Command::Compare {
            a,
            b,
            stones,
            show,
            threads,
        } => {
            set_threads(threads)?;
            let bars = Bars::new();
            let (x, y) = (Levels::open(&a, None)?, Levels::open(&b, None)?);
            let (mut bytes, start) = (0u64, std::time::Instant::now());
            let reports = awari_solver::compare::compare(&x, &y, &stones, show, &bars, |r| {
                use awari_solver::compare::LevelComparison as C;
                if let Some(bar) = bars.current() {
                    bar.finish_and_clear();
                }
                let rate = r.positions as f64 / r.seconds.max(1e-9) / 1e9;
                match &r.outcome {
                    C::Equal => {
                        bytes += r.positions;
                        println!(
                            "level {:>2}: equal ({} entries, {rate:.2} GB/s)",
                            r.level, r.positions
                        )
                    }
                    C::Differ { count, first } => {
                        bytes += r.positions;
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
                    }
                    C::OnlyIn(first) => println!(
                        "level {:>2}: only in {}",
                        r.level,
                        if *first { a.display() } else { b.display() }
                    ),
                }
            })?;
            let bad = reports
                .iter()
                .filter(|r| r.outcome != awari_solver::compare::LevelComparison::Equal)
                .count();
            let secs = start.elapsed().as_secs_f64();
            println!(
                "{} levels compared, {bad} not equal; {bytes} entries in {secs:.2} s ({:.2} GB/s)",
                reports.len(),
                bytes as f64 / secs.max(1e-9) / 1e9
            );
            if bad > 0 {
                anyhow::bail!("{bad} level(s) differ or are in one directory only");
            }
            Ok(())
        }
        Command::Verify {
            db,
            stones,
            threads,
            show,
            method,
            memory,
        } => {
            set_threads(threads)?;
            let bars = Bars::new();
            let options = verify::VerifyOptions {
                method: match method {
                    MethodArg::Auto => verify::Method::Auto,
                    MethodArg::Streamed => verify::Method::Streamed,
                    MethodArg::Lookup => verify::Method::Lookup,
                },
                memory: memory.or_else(sys::memory_available),
                keep: show,
            };
            if !verify(db, stones, &options, &bars)? {
                anyhow::bail!("verification failed");
            }
            Ok(())
        }
        Command::Plan {
            max_stones,
            memory,
            threads,
            rate_per_thread,
            low_memory_ratio,
            two_bit_ratio,
            depth,
            compress,
            disk,
            db,
            disk_bandwidth,
            ranks,
            memory_per_rank,
            network_gbit,
            distributed_efficiency,
            traffic_per_position,
        } => {
            if ranks > 1 || memory_per_rank.is_some() {
                let cluster = plan::Cluster {
                    ranks: ranks.max(1),
                    memory_per_rank: memory_per_rank
                        .or(memory)
                        .or_else(sys::memory_available)
                        .context("give --memory-per-rank")?,
                    threads: threads.unwrap_or_else(rayon::current_num_threads),
                    rate: rate_per_thread,
                    efficiency: distributed_efficiency,
                    low_ratio: low_memory_ratio,
                    traffic_2: traffic_per_position,
                    network: network_gbit * 1e9 / 8.0,
                    disk: disk_bandwidth * 1e6,
                };
                print!("{}", plan::render_distributed(max_stones, &cluster));
                return Ok(());
            }
            let machine = plan::Machine {
                memory: memory.or_else(sys::memory_available),
                disk: disk.or_else(|| {
                    let dir = if db.exists() {
                        db.as_path()
                    } else {
                        Path::new(".")
                    };
                    sys::disk_free(dir)
                }),
                threads: threads.unwrap_or_else(rayon::current_num_threads),
                rate: rate_per_thread,
                low_ratio: low_memory_ratio,
                two_bit_ratio,
                bandwidth: disk_bandwidth * 1e6,
                built: std::array::from_fn(|n| {
                    level_exists(n as u32)
                        && (level_path(&db, n as u32).exists()
                            || awari_db::compressed_path(&db, n as u32).exists())
                }),
                compress,
            };
            print!("{}", plan::render(max_stones, &machine, depth));
            Ok(())
        }
        Command::Compress {
            db,
            out,
            stones,
            threads,
        } => {
            set_threads(threads)?;
            let source = Levels::open(&db, None)?;
            let bars = Bars::new();
            let start = std::time::Instant::now();
            let reports =
                awari_solver::compress::compress_db(&source, &out, &stones, &bars, |r| {
                    if let Some(b) = bars.current() {
                        b.finish_and_clear();
                    }
                    print_compressed(r);
                })?;
            let entries: u64 = reports.iter().map(|r| r.entries).sum();
            let bytes: u64 = reports.iter().map(|r| r.bytes).sum();
            let source_bytes: u64 = reports.iter().map(|r| r.source_bytes).sum();
            println!(
                "total: {} levels, {entries} positions, {bytes} bytes ({:.3} bits per position, {:.1}× smaller) in {:.2} s",
                reports.len(),
                8.0 * bytes as f64 / entries.max(1) as f64,
                source_bytes as f64 / bytes.max(1) as f64,
                start.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Command::Stats {
            db,
            stones,
            all_configurations,
            json,
        } => {
            let levels = Levels::open(&db, None)?;
            levels.advise(awari_db::Access::Random); // full-row boards look up their children
            let (positions, hist) = stats::histogram(&levels, stones, all_configurations)?;
            if json {
                println!("{}", stats::to_json(stones, positions, &hist));
            } else {
                println!(
                    "level {stones} ({} rules), {positions} {}",
                    levels.rules(),
                    if all_configurations {
                        "boards (all configurations)"
                    } else {
                        "indexed positions"
                    }
                );
                println!("{:>6} {:>15} {:>8}", "value", "positions", "share");
                for (v, c) in &hist {
                    println!(
                        "{v:>+6} {c:>15} {:>7.3}%",
                        100.0 * *c as f64 / positions as f64
                    );
                }
            }
            Ok(())
        }
    }
}

/// One line per compressed level.
fn print_compressed(r: &awari_solver::compress::CompressReport) {
    let how = match r.seconds {
        Some(s) => format!(
            "in {s:.2} s ({:.1} M positions/s)",
            r.entries as f64 / s.max(1e-9) / 1e6
        ),
        None => "kept (already compressed)".to_string(),
    };
    println!(
        "level {:>2} compressed: {} positions, {} bytes, {:.3} bits per position, {how}",
        r.level,
        r.entries,
        r.bytes,
        r.bits_per_position()
    );
}

fn set_threads(threads: Option<usize>) -> anyhow::Result<()> {
    if let Some(t) = threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t.max(1))
            .build_global()
            .context("cannot start the thread pool")?;
    }
    Ok(())
}

fn verify(
    db: PathBuf,
    stones: Vec<u32>,
    options: &verify::VerifyOptions,
    bars: &Bars,
) -> anyhow::Result<bool> {
    let levels = Levels::open(&db, None)?;
    let wanted: Vec<u32> = if stones.is_empty() {
        levels.present().collect()
    } else {
        stones
    };
    if wanted.is_empty() {
        anyhow::bail!("{} holds no levels to verify", db.display());
    }
    let mut all_ok = true;
    let mut depth_everywhere = true;
    for n in wanted {
        bars.level(n, awari_db::level_size(n));
        let start = std::time::Instant::now();
        let read_before = sys::read_bytes();
        let peak = sys::AnonPeak::start();
        let v = verify::verify_level(&levels, n, options, bars)?;
        let peak = peak.finish();
        if let Some(b) = bars.current() {
            b.finish_and_clear();
        }
        let seconds = start.elapsed().as_secs_f64();
        let size = awari_db::level_size(n);
        let cost = format!(
            "{}; {seconds:.2} s, {} positions/s{}{}",
            match v.passes {
                0 => "lookup".to_string(),
                1 => "streamed, 1 pass".to_string(),
                p => format!("streamed, {p} passes"),
            },
            si(size as f64 / seconds.max(1e-9)),
            match (read_before, sys::read_bytes()) {
                (Some(a), Some(b)) => format!(", read {}", sys::human(b.saturating_sub(a))),
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
        depth_everywhere &= v.depth_checked;
        if let Some(e) = &v.checksum {
            println!("level {n:>2}: FAILED checksum: {e} ({cost})");
            all_ok = false;
        }
        if v.passed() {
            println!(
                "level {n:>2}: ok, {size} entries recomputed from their children{} ({cost})",
                if v.depth_checked {
                    ", depths well-founded"
                } else {
                    " (no depth table)"
                }
            );
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
            println!("verified: values are consistent with their children; without depth tables this does not rule out wrong values on cycles (build with --depth for a proof)");
        }
    }
    Ok(all_ok)
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

fn print_starts(levels: &Levels, max_stones: u32) -> anyhow::Result<()> {
    for k in 1..=4u32 {
        if 12 * k > max_stones {
            break;
        }
        let b = Board::uniform(k as u8);
        let v = levels.value(&b)?;
        println!("start with {k} per pit ({b}): {}", describe_start(k, v));
    }
    Ok(())
}

/// `build --distributed`: the build over the ranks of an MPI job; rank 0 reports.
#[cfg(feature = "mpi")]
fn build_distributed_cli(opts: &BuildOptions, shift: u32) -> anyhow::Result<()> {
    use awari_solver::comm::{Comm, MpiComm};
    use awari_solver::distributed::build_distributed;
    let comm = MpiComm::init().context("cannot initialise MPI")?;
    let (me, ranks) = (comm.rank(), comm.size());
    let bars = Bars::new();
    let progress: &dyn Progress = if me == 0 {
        &bars
    } else {
        &awari_solver::Silent
    };
    if me == 0 {
        eprintln!(
            "building levels 0..{} of {} under {} rules on {ranks} ranks × {} threads",
            opts.max_stones,
            opts.dir.display(),
            opts.rules,
            rayon::current_num_threads()
        );
        print_header();
    }
    let start = std::time::Instant::now();
    let mut sent = 0u64;
    let mut messages = 0u64;
    let mut rounds = 0u64;
    let reports = build_distributed(&comm, opts, shift, progress, |r, built| {
        if let Some(t) = built.map(|b| b.traffic) {
            sent += t.words_sent;
            messages += t.messages;
            rounds += t.settle_rounds;
        }
        if me == 0 {
            if let Some(b) = bars.current() {
                b.finish_and_clear();
            }
            print_row(r);
        }
    })
    .with_context(|| format!("rank {me} of {ranks}"))?;
    let totals = comm.sum(&[sent, messages]);
    if me == 0 {
        let built: Vec<&LevelReport> = reports.iter().filter(|r| r.seconds.is_some()).collect();
        let positions: u64 = built.iter().map(|r| r.positions).sum();
        let secs = start.elapsed().as_secs_f64();
        println!(
            "total: {} levels built, {positions} positions in {secs:.2} s ({:.0} positions/s) on {ranks} ranks; {} levels kept",
            built.len(),
            positions as f64 / secs.max(1e-9),
            reports.len() - built.len()
        );
        // A level of n seeds settles in n steps.
        let steps: u64 = built.iter().map(|r| u64::from(r.seeds)).sum();
        println!(
            "traffic: {} bytes sent between ranks ({:.2} per position built); {} messages, {:.1} per rank per settling step; {rounds} settling rounds",
            8 * totals[0],
            8.0 * totals[0] as f64 / positions.max(1) as f64,
            totals[1],
            totals[1] as f64 / (ranks as u64 * steps.max(1)) as f64
        );
    }
    Ok(())
}

/// `build --distributed` without MPI support compiled in.
#[cfg(not(feature = "mpi"))]
fn build_distributed_cli(_: &BuildOptions, _: u32) -> anyhow::Result<()> {
    anyhow::bail!(
        "this awari-solver was built without MPI; rebuild it with `cargo build --release \
         --features mpi` (MPI and libclang installed) and run it under mpirun or srun"
    )
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("awari-solver: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
