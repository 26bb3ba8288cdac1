//! `awari-solver`'s command line: the subcommands and their options (clap), and how an
//! option's value turns into the library's. Nothing here does any work.

use std::path::{Path, PathBuf};

use anyhow::Context;

use awari_db::Rules;
use awari_solver::build::Mode;
use awari_solver::depth::DepthForm;
use awari_solver::{plan, sys, verify};
use clap::{Parser, Subcommand};

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
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// When stderr is not a terminal (a log file), print a progress line there every SECONDS:
    /// time, level, phase and step, share done, rate and ETA. 0: never
    #[arg(long, global = true, value_name = "SECONDS", default_value_t = 60.0,
          value_parser = parse_seconds)]
    pub log_every: f64,
}

/// A non-negative, finite number of seconds.
fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.0..1e9).contains(&s) => Ok(s),
        _ => Err(format!(
            "expected a number of seconds (0 or more), got {text:?}"
        )),
    }
}

/// The most threads `--threads` takes: 1024, or 16 per core on a larger machine.
fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    1024.max(16 * cores)
}

/// A `--threads` count: 0 (one per core) up to [`max_threads`].
fn parse_threads(text: &str) -> Result<usize, String> {
    let max = max_threads();
    match text.trim().parse::<usize>() {
        Ok(t) if t <= max => Ok(t),
        _ => Err(format!(
            "expected a number of threads from 1 to {max} (0: one per core), got {text:?}"
        )),
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ModeArg {
    Auto,
    Memory,
    LowMemory,
    TwoBit,
    OneBit,
}

/// Entries per segment of the probe form (`compress --probe --segment`).
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum SegmentArg {
    /// Twice the decoding a probe, about 0.11 bits a position less: the download's size.
    #[value(name = "256")]
    Long,
    /// Probes about twice as fast (what earlier versions wrote).
    #[value(name = "128")]
    Short,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum DepthFormArg {
    Auto,
    Plain,
    Compressed,
}

impl From<DepthFormArg> for DepthForm {
    fn from(f: DepthFormArg) -> DepthForm {
        match f {
            DepthFormArg::Auto => DepthForm::Auto,
            DepthFormArg::Plain => DepthForm::Plain,
            DepthFormArg::Compressed => DepthForm::Compressed,
        }
    }
}

/// The help of `--depth-form`, shared by `build` and `depth`.
const DEPTH_FORM_HELP: &str = "How depth tables are stored: `plain` (level-NN.depth, 1 byte per position), `compressed` (level-NN.cdepth, about 2-3 bits per position, random access, a checksum per block), or `auto`: plain up to 20 seeds, compressed above. Every reader reads both";

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum MethodArg {
    Auto,
    Streamed,
    Lookup,
}

#[derive(Subcommand)]
pub enum Command {
    /// Build every missing level 0..N (resumable: levels present are checked and kept).
    Build {
        /// Database directory (one rule set per directory).
        #[arg(long, default_value = "awari-db")]
        db: PathBuf,
        /// Build levels 0..N (N ≤ 48; level 47 never exists).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=48))]
        max_stones: u32,
        /// Rule set: awari, abapa, grand-slam or cross-wari.
        #[arg(long, default_value = "awari")]
        rules: Rules,
        /// Worker threads, at most 1024 or 16 per core (default, or 0: one per core).
        #[arg(long, value_parser = parse_threads)]
        threads: Option<usize>,
        /// Memory the level in progress may use, e.g. 8G (default: what the machine has free).
        #[arg(long, value_parser = sys::parse_size)]
        memory: Option<u64>,
        /// Also write depth-to-conversion tables (level-NN.depth), which `awari-probe line` uses
        /// to realise won positions and `verify` uses to prove the values. A level built in
        /// two-bit mode finds its depths as it settles (its steps in waves); the others run
        /// the depth pass after their values.
        #[arg(long)]
        depth: bool,
        #[arg(long, value_enum, default_value_t = DepthFormArg::Auto, help = DEPTH_FORM_HELP)]
        depth_form: DepthFormArg,
        /// Level algorithm: `memory` (2 bytes of RAM per position, fastest), `low-memory`
        /// (0.67 bytes per position, a work file of 1 byte per position streamed at every
        /// step), `two-bit` (0.25 bytes per position for the states, under 0.33 in all, the
        /// rest of --memory for fewer exit passes; exit lists and a log of settled positions
        /// on disk, each written and read about once), `one-bit` (two-bit's files with 0.125
        /// bytes per position for the states, 0.16 in all from 25 seeds up, slower: the
        /// exits it must know are looked up in its exit lists in rounds), or `auto` (memory
        /// where it fits, else the faster of low-memory and two-bit by `plan`'s estimate at its
        /// default rates, else one-bit; a level begun in one of them resumes in it where it
        /// fits, even where memory would fit now: a named mode begins it again).
        /// Every mode checkpoints every 5 minutes, so a killed build resumes inside the level
        /// (memory saves its 2 bytes a position to level-NN.mstate where the disk holds them
        /// beside the table). Same tables, byte for byte, whichever builds them.
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
        /// Compress each level as soon as it is built (level-NN.cvalues, about 3.9 bits per
        /// position instead of 8), replacing its plain table; plain levels already present are
        /// compressed too. The levels above read the compressed ones.
        #[arg(long)]
        compress: bool,
        /// Print the summary as JSON instead of the table: one object a line on stdout, a
        /// level each, as the level finishes; every figure of the table's row under a
        /// snake_case key (seeds, positions, status kept/built/resumed, seconds, peak memory,
        /// I/O, wins/draws/losses, ...), null where unknown (docs/cli.md lists them). The
        /// total and the starts' values go to stderr with the progress.
        #[arg(long)]
        json: bool,
    },
    /// Compress a database directory, ours or raw VU `scores.N` files, into another: each
    /// level to level-NN.cvalues, checked by decoding it back before it is renamed into
    /// place. Every reader (probe, Python, stats, verify, build) opens the result with --db.
    /// Resumable: levels already compressed in --out as asked (form and segment length) are
    /// kept; others are written again.
    Compress {
        /// The database directory to compress.
        #[arg(long, default_value = "awari-db")]
        db: PathBuf,
        /// The directory to write (created if missing).
        #[arg(long, required_unless_present = "estimate")]
        out: Option<PathBuf>,
        /// Levels to compress (default: every level present).
        #[arg(long, num_args = 1.., value_parser = clap::value_parser!(u32).range(0..=48))]
        stones: Vec<u32>,
        /// Write the probe form: smaller (about 2.4 bits per position instead of 3.9), but
        /// each entry is resolved by a capture search into the lower levels, so only the
        /// probe, Python and verify (by lookup) read it, not build, stats or compare. Where
        /// a capture achieves a position's value, the position stores whatever is cheapest.
        #[arg(long)]
        probe: bool,
        /// Entries per segment of the probe form: a probe decodes half a segment on
        /// average, and each segment costs a restart and an index entry. `256`: the smaller
        /// (about 0.11 bits a position less); `128`: probes about twice as fast. Both are
        /// read, as are depth tables of either (the depth pass writes 256).
        #[arg(long, value_enum, default_value = "256", requires = "probe")]
        segment: SegmentArg,
        /// Write nothing: estimate each level's compressed size from a sample of about 2048
        /// groups of it (encoded with a model fitted to them), in seconds a level, within a
        /// few tenths of a percent of the real size.
        #[arg(long, conflicts_with = "out")]
        estimate: bool,
        /// Worker threads, at most 1024 or 16 per core (default, or 0: one per core).
        #[arg(long, value_parser = parse_threads)]
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
        /// Worker threads, at most 1024 or 16 per core (default, or 0: one per core).
        #[arg(long, value_parser = parse_threads)]
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
        /// (default: what the machine has free). A level checked in several buckets records
        /// each bucket done (level-NN.vresume, in --work): a killed check run again with the
        /// same --memory resumes at its next bucket. The depth pass of --prove stays within
        /// it too: 2 bits per position and its wave-0 buckets, or, below 0.25 bytes per
        /// position and 32 MiB, one bit (the value class pass in one bit a position, about
        /// 0.15 bytes per position in all from level 25; less is refused).
        #[arg(long, value_parser = sys::parse_size)]
        memory: Option<u64>,
        /// Prove the values, not only check them: where a level has no depth table, compute
        /// its depths to conversion from its values (0.25 bytes of RAM per position, or one
        /// bit within a smaller --memory; work files on disk; the lower levels streamed) and require every won and lost position
        /// to have one. A level is "proven" only when that holds too; a table that labels a
        /// cycle of quiet moves as won or lost is consistent but fails here, with its boards
        /// named. Works on raw VU scores.N directories. Where the level's values do not fit in
        /// the memory available beside the pass (a memory cgroup's limit counts), the pass goes
        /// by value class and reads them only in order, the value check folded into its exits
        /// buckets: 0.97x the speed with one bucket, 8% slower a further bucket, nothing read
        /// at random (AWARI_DEPTH=classes or waves forces one).
        #[arg(long)]
        prove: bool,
        /// Where --prove keeps its work files, about 1.5 bytes per position of the level at
        /// most, 2.5 by value class, and the streamed check its checkpoint (default: the
        /// database directory; give another for a read-only one).
        #[arg(long)]
        work: Option<PathBuf>,
    },
    /// Add depth-to-conversion tables (level-NN.depth) to an existing database directory,
    /// ours or raw VU scores.N files, without rebuilding its values: each level's depths are
    /// computed from its values and the lower levels in 0.25 bytes of RAM per position, or in
    /// one bit (about 0.15 bytes in all) within a smaller --memory (work files on disk;
    /// resumable: a killed run continues at its last wave; by value class, reading the values
    /// only in order, where they do not fit in the memory available beside the pass or in one
    /// bit). `awari-probe
    /// line` and `show` then play wins out by them, and `verify` checks them. A level whose
    /// values are not the game's (a won or lost position that never converts) is an error,
    /// and no table is written for it.
    Depth {
        /// Database directory.
        #[arg(long, default_value = "awari-db")]
        db: PathBuf,
        /// Levels to add depth tables to (default: every level present). Levels that have
        /// one already are kept.
        #[arg(long, num_args = 1.., value_parser = clap::value_parser!(u32).range(0..=48))]
        stones: Vec<u32>,
        /// Write the depth tables (and the work files) here instead of beside the values;
        /// the values tables are linked into it, so that it is a database directory of its
        /// own (for a read-only directory such as the published files).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Memory the pass may use, e.g. 4G (default: what the machine has free). Below 0.25
        /// bytes per position of the level and 32 MiB it runs the value class pass in one bit
        /// a position (what each wave finds in the rest, spilled to work files beyond; its
        /// first phase in more passes over the lower levels); below a bit a position, 8 MiB
        /// and 3 MiB a thread it is refused, naming the least.
        #[arg(long, value_parser = sys::parse_size)]
        memory: Option<u64>,
        /// Also recompute every entry from its children in the same pass (as `verify`): each
        /// level written is then proven, its values consistent and every win and loss
        /// converting; a wrong entry is an error and no table is written for it. Costs more
        /// lookups (every quiet child of every position).
        #[arg(long)]
        check: bool,
        #[arg(long, value_enum, default_value_t = DepthFormArg::Auto, help = DEPTH_FORM_HELP)]
        depth_form: DepthFormArg,
        /// Worker threads, at most 1024 or 16 per core (default, or 0: one per core).
        #[arg(long, value_parser = parse_threads)]
        threads: Option<usize>,
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
        /// Worker threads, at most 1024 or 16 per core (default, or 0: one per core).
        #[arg(long, value_parser = parse_threads)]
        threads: Option<usize>,
    },
    /// What building levels 0..N takes: memory, disk and time per level, and totals.
    Plan(PlanArgs),
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
        /// The histogram of depths to conversion instead (from the level's depth table), won
        /// and lost positions apart, with the first position of the largest depth.
        #[arg(long, conflicts_with = "all_configurations")]
        depth: bool,
    },
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Auto => Mode::Auto,
            ModeArg::Memory => Mode::InMemory,
            ModeArg::LowMemory => Mode::LowMemory,
            ModeArg::TwoBit => Mode::TwoBit,
            ModeArg::OneBit => Mode::OneBit,
        }
    }
}

impl From<MethodArg> for verify::Method {
    fn from(m: MethodArg) -> verify::Method {
        match m {
            MethodArg::Auto => verify::Method::Auto,
            MethodArg::Streamed => verify::Method::Streamed,
            MethodArg::Lookup => verify::Method::Lookup,
        }
    }
}

/// The options of `plan`.
#[derive(clap::Args)]
pub struct PlanArgs {
    /// Plan levels 0..N.
    #[arg(long, default_value_t = 48, value_parser = clap::value_parser!(u32).range(0..=48))]
    pub max_stones: u32,
    /// Memory a level may use, e.g. 512G (default: what this machine has free).
    #[arg(long, value_parser = sys::parse_size)]
    pub memory: Option<u64>,
    /// Cores to plan for, at most 1024 or 16 per core of this machine (default, or 0: this
    /// machine's).
    #[arg(long, value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// This machine's measured speeds, bytes per position and disk bandwidth, as
    /// scripts/calibrate.sh writes them (JSON; see docs/whole-game.md), instead of the
    /// defaults. The options below that set a rate, a ratio or the bandwidth still win over
    /// the file (a ratio then applies to the file's in-memory rate, or to --rate-per-thread).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Plan every level with this algorithm, where it fits (as `build --mode` builds it), or
    /// `auto`: memory where it fits --memory, else the faster (by this plan's estimate) of
    /// low-memory and two-bit, as `build --mode auto` picks.
    #[arg(long, value_enum, default_value_t = ModeArg::Auto)]
    pub mode: ModeArg,
    /// In-memory build speed per thread, positions per second (default: 2.3e6, the 16-core
    /// machine: levels 25..28 at 33.4–37.4 M positions/s with 16 threads, `awari-solver
    /// build --max-stones 28 --threads 16`; level 24 ran at 3.9 M/s per thread, larger
    /// levels run slower than 28).
    #[arg(long)]
    pub rate_per_thread: Option<f64>,
    /// Speed of the low-memory algorithm as a fraction of the in-memory one (default: 0.88,
    /// not measured on the 16-core machine: the 2-core machine's, levels 0..24 with
    /// scripts/ab.sh LOWMEM=1; 0.93 on level 27 alone).
    #[arg(long)]
    pub low_memory_ratio: Option<f64>,
    /// Speed of the two-bit algorithm as a fraction of the in-memory one, with 4 exit passes
    /// (default: 0.44, the 16-core machine: level 28 at 16.6 M positions/s with `build --mode
    /// two-bit --threads 16`, 4 exit passes, against 37.4 M/s in memory). A level with fewer
    /// passes is planned faster, one with more slower: 5.8% of its one-pass time a pass (the
    /// same machine's exits phase, two-bit against in memory)
    #[arg(long)]
    pub two_bit_ratio: Option<f64>,
    /// Plan for depth tables too (`build --depth`): each level's depth pass after its values
    /// (0.25 bytes of RAM per position, its wave files on disk, 1 byte per position of table).
    #[arg(long)]
    pub depth: bool,
    /// Speed of the depth pass (and of `verify --prove`) as a fraction of the in-memory build
    /// (default: 0.65, the 16-core machine: `verify --prove --stones 28 --threads 16`, the
    /// depth pass with the proof, at 24.3 M positions/s against 37.4 M/s building the level).
    #[arg(long)]
    pub depth_ratio: Option<f64>,
    /// Plan for tables compressed as they are built (`build --compress`): disk from the
    /// compressed sizes measured to 34 seeds (3.9 bits per position) and their trend; and
    /// what the result takes to download, its values in the probe form (`compress --probe`:
    /// 2.4 bits per position, measured or estimated to 32 seeds, and their trend) with the
    /// depth tables (with --depth, whose disk the total shows apart from the values').
    #[arg(long)]
    pub compress: bool,
    /// Free disk for the database, e.g. 2T (default: what is free in --db, or in the
    /// current directory when --db does not exist yet).
    #[arg(long, value_parser = sys::parse_size)]
    pub disk: Option<u64>,
    /// Database directory whose free disk is planned with; the levels already in it are
    /// shown as such and need no time or new disk.
    #[arg(long, default_value = "awari-db")]
    pub db: PathBuf,
    /// Sequential disk bandwidth in MB/s for the I/O estimate (default: 500, a SATA SSD, an
    /// assumption, not measured; a fast NVMe drive does 2000 or more; a --calibration file's
    /// is measured with dd, direct I/O).
    #[arg(long)]
    pub disk_bandwidth: Option<f64>,
    /// Plan a distributed build (`build --distributed`) over this many MPI ranks, each with
    /// --threads cores and --memory-per-rank of memory.
    #[arg(long, default_value_t = 1)]
    pub ranks: usize,
    /// Memory of each rank, e.g. 64G (with --ranks).
    #[arg(long, value_parser = sys::parse_size)]
    pub memory_per_rank: Option<u64>,
    /// Network bandwidth each rank sends at, in Gbit/s (with --ranks; default: 10 Gbit
    /// Ethernet).
    #[arg(long, default_value_t = 10.0)]
    pub network_gbit: f64,
    /// Speed of the distributed build as a fraction of a threaded one on the same cores
    /// (with --ranks; default: scripts/bench-mpi.sh 24 on the 2-core development machine,
    /// 2 ranks × 1 thread against 1 × 2).
    #[arg(long, default_value_t = 0.75)]
    pub distributed_efficiency: f64,
    /// Bytes sent between 2 ranks per position built (with --ranks; default: measured by
    /// scripts/bench-mpi.sh 24).
    #[arg(long, default_value_t = 15.6)]
    pub traffic_per_position: f64,
}

impl PlanArgs {
    /// The plan these options ask for, as `plan` prints it.
    pub fn text(self) -> anyhow::Result<String> {
        let PlanArgs {
            max_stones,
            memory,
            threads,
            calibration,
            mode,
            rate_per_thread,
            low_memory_ratio,
            two_bit_ratio,
            depth,
            depth_ratio,
            compress,
            disk,
            db,
            disk_bandwidth,
            ranks,
            memory_per_rank,
            network_gbit,
            distributed_efficiency,
            traffic_per_position,
        } = self;
        for (name, value) in [
            ("--rate-per-thread", rate_per_thread),
            ("--low-memory-ratio", low_memory_ratio),
            ("--two-bit-ratio", two_bit_ratio),
            ("--depth-ratio", depth_ratio),
            ("--disk-bandwidth", disk_bandwidth),
        ] {
            if value.is_some_and(|x| !(x.is_finite() && x > 0.0)) {
                anyhow::bail!("{name} must be a positive number");
            }
        }
        let given: Vec<&str> = [
            ("--rate-per-thread", rate_per_thread.is_some()),
            ("--low-memory-ratio", low_memory_ratio.is_some()),
            ("--two-bit-ratio", two_bit_ratio.is_some()),
            ("--depth-ratio", depth_ratio.is_some()),
            ("--disk-bandwidth", disk_bandwidth.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect();
        let cal = match &calibration {
            Some(path) => Some(plan::Calibration::read(path)?),
            None => None,
        };
        // An option, else the file's, else the default.
        let ratio_of = |rate: Option<f64>| {
            let c = cal.as_ref()?;
            Some(rate? / c.memory_rate)
        };
        let rate = rate_per_thread
            .or(cal.as_ref().map(|c| c.memory_rate))
            .unwrap_or(plan::DEFAULT_RATE);
        let low_ratio = low_memory_ratio
            .or_else(|| ratio_of(cal.as_ref()?.low_memory_rate))
            .unwrap_or(plan::DEFAULT_LOW_RATIO);
        // The file's two-bit rate was measured with its exit passes; an option's or the
        // default's with the default's.
        let two_bit_passes = match (two_bit_ratio, &cal) {
            (None, Some(c)) if c.two_bit_rate.is_some() => c
                .two_bit_io
                .map_or(plan::DEFAULT_TWO_BIT_PASSES, |io| io.passes),
            _ => plan::DEFAULT_TWO_BIT_PASSES,
        };
        let two_bit_ratio = two_bit_ratio
            .or_else(|| ratio_of(cal.as_ref()?.two_bit_rate))
            .unwrap_or(plan::DEFAULT_TWO_BIT_RATIO);
        // --depth-ratio sets both, as its help says; a file has them apart.
        let verify_ratio = depth_ratio
            .or_else(|| ratio_of(cal.as_ref()?.verify_rate))
            .unwrap_or(plan::DEFAULT_DEPTH_RATIO);
        let depth_ratio = depth_ratio
            .or_else(|| ratio_of(cal.as_ref()?.depth_rate))
            .unwrap_or(plan::DEFAULT_DEPTH_RATIO);
        let bandwidth = disk_bandwidth
            .map(|mb| mb * 1e6)
            .or_else(|| cal.as_ref()?.bandwidth())
            .unwrap_or(plan::DEFAULT_BANDWIDTH);
        let scale = |sample: Option<plan::IoSample>, two_bit: bool| {
            sample.map_or(1.0, |s| s.scale(two_bit).unwrap_or(1.0))
        };
        let low_io_scale = scale(cal.as_ref().and_then(|c| c.low_memory_io), false);
        let two_bit_io_scale = scale(cal.as_ref().and_then(|c| c.two_bit_io), true);
        let source = format!(
            "{}{}",
            calibration
                .as_ref()
                .map_or(plan::DEFAULT_SOURCE.to_string(), |p| format!(
                    "calibration {}",
                    p.display()
                )),
            if given.is_empty() {
                String::new()
            } else {
                format!(", with {} as given", given.join(", "))
            }
        );
        if ranks > 1 || memory_per_rank.is_some() {
            let cluster = plan::Cluster {
                ranks: ranks.max(1),
                memory_per_rank: memory_per_rank
                    .or(memory)
                    .or_else(sys::memory_available)
                    .context("give --memory-per-rank")?,
                threads: threads
                    .filter(|&t| t > 0)
                    .unwrap_or_else(rayon::current_num_threads),
                rate,
                efficiency: distributed_efficiency,
                low_ratio,
                traffic_2: traffic_per_position,
                network: network_gbit * 1e9 / 8.0,
                disk: bandwidth,
            };
            return Ok(plan::render_distributed(max_stones, &cluster));
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
            threads: threads
                .filter(|&t| t > 0)
                .unwrap_or_else(rayon::current_num_threads),
            rate,
            low_ratio,
            two_bit_ratio,
            two_bit_passes,
            depth_ratio,
            verify_ratio,
            bandwidth,
            low_io_scale,
            two_bit_io_scale,
            source,
            mode: mode.into(),
            built: plan::built_levels(&db),
            compress,
        };
        Ok(plan::render(max_stones, &machine, depth))
    }
}
