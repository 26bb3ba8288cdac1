//! `awari-solver`: build, verify, compare, compress and plan Awari databases. The options
//! are in [`cli`]; the work, and what is printed, in the library.

mod cli;

use std::process::ExitCode;

use anyhow::Context;
use awari_db::Levels;
use awari_solver::build::{build, BuildOptions};
use awari_solver::plan;
use awari_solver::report::{self, Bars};
use awari_solver::{stats, sys, verify};
use clap::Parser;
use cli::{Cli, Command};

fn run(cli: Cli) -> anyhow::Result<()> {
    let log_every = std::time::Duration::from_secs_f64(cli.log_every);
    match cli.command {
        Command::Build {
            db,
            max_stones,
            rules,
            threads,
            memory,
            depth,
            depth_form,
            mode,
            distributed,
            granule_shift,
            compress,
            json,
        } => {
            set_threads(threads)?;
            if compress && distributed {
                anyhow::bail!("--compress is not supported with --distributed: compress the database afterwards with awari-solver compress");
            }
            let opts = BuildOptions {
                compress,
                depth_form: depth_form.into(),
                dir: db.clone(),
                max_stones,
                rules,
                memory,
                depth,
                mode: mode.into(),
            };
            let summary = if json {
                report::Summary::Json
            } else {
                report::Summary::Table
            };
            if distributed {
                return build_distributed_cli(&opts, granule_shift, summary);
            }
            let bars = Bars::logging(log_every);
            eprintln!(
                "building levels 0..{max_stones} of {} under {rules} rules with {} threads",
                db.display(),
                rayon::current_num_threads()
            );
            summary.header();
            let start = std::time::Instant::now();
            // The plan of what is left, at this run's pace (see `plan::time_left`).
            let mut machine = plan::Machine::defaults(
                rayon::current_num_threads(),
                memory.or_else(sys::memory_available),
            );
            machine.mode = opts.mode;
            machine.compress = compress;
            machine.built = plan::built_levels(&db);
            let (levels, reports) = build(&opts, &bars, |r| {
                if let Some(b) = bars.current() {
                    b.finish_and_clear();
                }
                if let Some(line) = r
                    .seconds
                    .and_then(|secs| plan::time_left(&machine, max_stones, depth, r.seeds, secs))
                {
                    eprintln!("{line}");
                }
                summary.level(r);
            })?;
            summary.footer(&report::build_total(
                &reports,
                start.elapsed().as_secs_f64(),
                None,
            ));
            for line in report::starts(&levels, max_stones)? {
                summary.footer(&line);
            }
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
            let bars = Bars::logging(log_every);
            let (x, y) = (Levels::open(&a, None)?, Levels::open(&b, None)?);
            let (mut bytes, start) = (0u64, std::time::Instant::now());
            let reports = awari_solver::compare::compare(&x, &y, &stones, show, &bars, |r| {
                if let Some(bar) = bars.current() {
                    bar.finish_and_clear();
                }
                bytes += report::print_comparison(r, &a, &b);
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
            prove,
            work,
        } => {
            set_threads(threads)?;
            let bars = Bars::logging(log_every);
            let options = verify::VerifyOptions {
                method: method.into(),
                memory: memory.or_else(sys::memory_available),
                keep: show,
                prove,
                work,
            };
            let levels = Levels::open(&db, None)?;
            let wanted: Vec<u32> = if stones.is_empty() {
                levels.present().collect()
            } else {
                stones
            };
            if wanted.is_empty() {
                anyhow::bail!("{} holds no levels to verify", db.display());
            }
            if let (true, Some(budget)) = (prove, memory) {
                // --prove runs the depth pass where a level has no depth table.
                let unproven: Vec<u32> = wanted
                    .iter()
                    .copied()
                    .filter(|&n| levels.depth_table(n).is_none())
                    .collect();
                if !unproven.is_empty() {
                    check_depth_memory(&db, &unproven, budget)?;
                }
            }
            if !report::verify_levels(&levels, &wanted, &options, &bars)? {
                anyhow::bail!("verification failed");
            }
            Ok(())
        }
        Command::Depth {
            db,
            stones,
            out,
            memory,
            check,
            depth_form,
            threads,
        } => {
            set_threads(threads)?;
            let bars = Bars::logging(log_every);
            if let Some(budget) = memory {
                check_depth_memory(&db, &stones, budget)?;
            }
            let memory = memory.or_else(sys::memory_available);
            let start = std::time::Instant::now();
            let done = awari_solver::depth::add_depth_tables(
                &db,
                out.as_deref(),
                &stones,
                memory,
                check,
                depth_form.into(),
                &bars,
                |r| {
                    if let Some(b) = bars.current() {
                        b.finish_and_clear();
                    }
                    report::print_depth(r);
                },
            )?;
            report::print_depth_total(&done, start.elapsed().as_secs_f64());
            Ok(())
        }
        Command::Plan(args) => {
            print!("{}", args.text()?);
            Ok(())
        }
        Command::Compress {
            db,
            out,
            stones,
            probe,
            segment,
            estimate,
            threads,
        } => {
            set_threads(threads)?;
            let source = Levels::open(&db, None)?;
            let bars = Bars::logging(log_every);
            let start = std::time::Instant::now();
            use awari_db::compressed::{Form, Layout, LONG_SEGMENT_LOG2, PROBE_SEGMENT_LOG2};
            let layout: Layout = match (probe, segment) {
                (true, cli::SegmentArg::Long) => {
                    Form::CaptureDontCares.with_segment_log2(LONG_SEGMENT_LOG2)
                }
                (true, cli::SegmentArg::Short) => {
                    Form::CaptureDontCares.with_segment_log2(PROBE_SEGMENT_LOG2)
                }
                (false, _) => Form::SelfContained.into(),
            };
            let on_level = |r: &awari_solver::compress::CompressReport| {
                if let Some(b) = bars.current() {
                    b.finish_and_clear();
                }
                report::print_compressed(r);
            };
            let reports = match out {
                Some(out) if !estimate => awari_solver::compress::compress_db(
                    &source, &out, &stones, layout, &bars, on_level,
                )?,
                _ => {
                    awari_solver::compress::estimate_db(&source, &stones, layout, &bars, on_level)?
                }
            };
            report::print_compress_total(&reports, start.elapsed().as_secs_f64());
            Ok(())
        }
        Command::Stats {
            db,
            stones,
            all_configurations,
            json,
            depth,
        } => {
            let levels = Levels::open(&db, None)?;
            if depth {
                let h = stats::depth_histogram(&levels, stones)?;
                if json {
                    println!("{}", stats::depth_to_json(stones, &h));
                } else {
                    report::print_depth_histogram(stones, &h);
                }
                return Ok(());
            }
            levels.advise(awari_db::Access::Random); // full-row boards look up their children
            let (positions, hist) = stats::histogram(&levels, stones, all_configurations)?;
            if json {
                println!("{}", stats::to_json(stones, positions, &hist));
            } else {
                report::print_histogram(&levels, stones, positions, &hist, all_configurations);
            }
            Ok(())
        }
    }
}

/// Start the thread pool with `threads` workers (absent or 0: one per core, rayon's default).
fn set_threads(threads: Option<usize>) -> anyhow::Result<()> {
    if let Some(t) = threads.filter(|&t| t > 0) {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build_global()
            .context("cannot start the thread pool")?;
    }
    Ok(())
}

/// `build --distributed`: the build over the ranks of an MPI job; rank 0 reports.
#[cfg(feature = "mpi")]
fn build_distributed_cli(
    opts: &BuildOptions,
    shift: u32,
    summary: report::Summary,
) -> anyhow::Result<()> {
    use awari_solver::comm::{Comm, MpiComm};
    let comm = MpiComm::init().context("cannot initialise MPI")?;
    let (me, ranks) = (comm.rank(), comm.size());
    report::build_distributed(&comm, opts, shift, summary)
        .with_context(|| format!("rank {me} of {ranks}"))
}

/// `build --distributed` without MPI support compiled in.
#[cfg(not(feature = "mpi"))]
fn build_distributed_cli(_: &BuildOptions, _: u32, _: report::Summary) -> anyhow::Result<()> {
    anyhow::bail!(
        "this awari-solver was built without MPI; rebuild it with `cargo build --release \
         --features mpi` (MPI and libclang installed) and run it under mpirun or srun"
    )
}

/// Refuses a `--memory` below the least that the depth pass of the largest level asked needs
/// (the one-bit class search: a bit a position and its fixed part), naming that least.
fn check_depth_memory(db: &std::path::Path, stones: &[u32], budget: u64) -> anyhow::Result<()> {
    let largest = match stones.iter().max() {
        Some(&n) => Some(n),
        None => awari_db::Levels::open(db, None)
            .ok()
            .and_then(|l| l.present().max()),
    };
    let Some(n) = largest else { return Ok(()) };
    let least = awari_solver::depth::least_memory(n, rayon::current_num_threads());
    if budget < least {
        anyhow::bail!(
            "--memory {} is below the {} that the depth pass of level {n} needs at least \
             ({:.2} bytes per position); give it at least that",
            sys::human(budget),
            sys::human(least),
            least as f64 / awari_db::level_size(n) as f64
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    awari_db::pipe::exit_quietly_on_closed_pipe();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("awari-solver: error: {}", awari_db::one_line(e.as_ref()));
            ExitCode::from(1)
        }
    }
}
