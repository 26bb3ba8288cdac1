//! `awari-probe`: values and perfect moves from the command line.

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use awari_db::{Board, Rules};
use awari_probe::{
    check_playable, parse_captured, perfect_line, report, score_in_words, Database, LineEnd,
};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "awari-probe",
    version,
    about = "Look up Awari (Oware) positions: values, best moves, perfect lines",
    long_about = "Look up Awari (Oware) positions in a database built by awari-solver (or a \
                  directory of the VU 2024 release's raw scores.N files).\n\n\
                  A board is 12 numbers, the seeds in pits 0..11 counted counter-clockwise from \
                  the side to move (pits 0..5 are the mover's row, left to right), or the word \
                  `start`. A value is the seed difference the side to move obtains, from the \
                  seeds still on the board, with perfect play: +2 means the mover captures two \
                  more of them than the opponent; 0 is a draw."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct DbArgs {
    /// Database directory [default: ./awari-db]. `show` works without one.
    #[arg(long)]
    db: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Show a board: diagram, index, every pit's move, and (with a database) values and best moves.
    Show {
        #[command(flatten)]
        db: DbArgs,
        /// Rule set: awari, abapa or grand-slam (a database's header decides; a different
        /// --rules is an error).
        #[arg(long)]
        rules: Option<Rules>,
        /// One JSON document on stdout instead of text.
        #[arg(long)]
        json: bool,
        /// Seeds already captured by the side to move and by the opponent, e.g. 10,16: the
        /// final score is then given too.
        #[arg(long, value_parser = parse_captured)]
        captured: Option<(u32, u32)>,
        /// The board: 12 numbers or `start`.
        #[arg(required = true, num_args = 1..=12, allow_negative_numbers = true)]
        board: Vec<String>,
    },
    /// Play a perfect-play game from a board to its end.
    Line {
        #[command(flatten)]
        db: DbArgs,
        /// One JSON document on stdout instead of text.
        #[arg(long)]
        json: bool,
        /// Stop after this many plies.
        #[arg(long, default_value_t = 2000)]
        max_plies: usize,
        /// The board: 12 numbers or `start`.
        #[arg(required = true, num_args = 1..=12, allow_negative_numbers = true)]
        board: Vec<String>,
    },
    /// Values of many boards: one board per line on stdin, one value per line on stdout.
    Batch {
        #[command(flatten)]
        db: DbArgs,
        /// Print the JSON of `show` for each board instead of its value.
        #[arg(long)]
        json: bool,
    },
    /// Serve the database over HTTP: a JSON API (/api/position, /api/line, /api/batch,
    /// /api/health) and, at /, a page to explore and play perfect Awari.
    Serve {
        #[command(flatten)]
        db: DbArgs,
        /// Address to listen on (port 0: any free port).
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: std::net::SocketAddr,
    },
}

/// Bad input on the command line or stdin: exit code 2.
#[derive(Debug)]
struct UsageError(String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn parse_board(words: &[String]) -> anyhow::Result<Board> {
    let board = Board::parse_words(words).map_err(|e| UsageError(e.to_string()))?;
    check_playable(&board).map_err(UsageError)?;
    Ok(board)
}

fn open_db(dir: Option<PathBuf>, rules: Option<Rules>) -> anyhow::Result<Database> {
    let dir = dir.unwrap_or_else(|| PathBuf::from("awari-db"));
    Ok(Database::open(&dir, rules)?)
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Show {
            db,
            rules,
            json,
            captured,
            board,
        } => {
            let board = parse_board(&board)?;
            if let Some((a, b)) = captured {
                if a + b + board.seeds() != 48 {
                    return Err(UsageError(format!(
                        "--captured {a},{b} and {} seeds on the board make {}, not 48",
                        board.seeds(),
                        a + b + board.seeds()
                    ))
                    .into());
                }
            }
            // An explicit --db must work; ./awari-db, picked up only because it is there, must
            // not turn a plain show into an error: then the board is shown without values.
            let default_db = Path::new("awari-db");
            let implicit = db.db.is_none() && default_db.is_dir();
            let note = |e: &dyn std::fmt::Display| {
                eprintln!("note: ./awari-db not used ({e}); showing the board without values");
            };
            let database = match db.db {
                Some(dir) => Some(open_db(Some(dir), rules)?),
                None if implicit => match open_db(None, rules) {
                    Ok(d) => Some(d),
                    Err(e) => {
                        note(&e);
                        None
                    }
                },
                None => None,
            };
            let rules = match (&database, rules) {
                (Some(d), _) => d.rules(),
                (None, r) => r.unwrap_or_default(),
            };
            let r = match report(&board, rules, database.as_ref()) {
                Err(e) if implicit => {
                    note(&e);
                    report(&board, rules, None)?
                }
                r => r?,
            };
            if json {
                println!("{}", r.show_json(captured));
            } else {
                print!("{}", r.to_text(rules));
                if let Some(v) = r.value {
                    println!("score: {}", score_in_words(board.seeds(), v, captured));
                } else {
                    println!("(no database: values need `awari-solver build`, see --help)");
                }
            }
            Ok(())
        }
        Command::Line {
            db,
            json,
            max_plies,
            board,
        } => {
            let board = parse_board(&board)?;
            let database = open_db(db.db, None)?;
            let line = perfect_line(&database, &board, max_plies)?;
            if json {
                println!("{}", line.to_json());
                return Ok(());
            }
            print!("{}", board.diagram());
            println!(
                "value {:+} for South (to move), {} rules",
                line.value,
                database.rules()
            );
            println!(
                "{:>4}  {:<5} {:>3} {:>8}  {:>7}  board after (next mover first)",
                "ply", "side", "pit", "captures", "S-N"
            );
            let (mut s, mut n) = (0u32, 0u32);
            for (k, p) in line.plies.iter().enumerate() {
                if p.by_first_mover {
                    s += u32::from(p.captures);
                } else {
                    n += u32::from(p.captures);
                }
                println!(
                    "{:>4}  {:<5} {:>3} {:>8}  {:>7}  {}",
                    k + 1,
                    if p.by_first_mover { "South" } else { "North" },
                    p.pit,
                    p.captures,
                    format!("{s}-{n}"),
                    p.board
                );
            }
            let fmt = awari_probe::seeds_text;
            match line.end {
                LineEnd::Terminal | LineEnd::Repetition => println!(
                    "result: South {} - North {} of the {} seeds ({}){}",
                    fmt(line.result[0]),
                    fmt(line.result[1]),
                    board.seeds(),
                    if line.end == LineEnd::Terminal {
                        "game over"
                    } else {
                        "position repeats: the seeds left are divided evenly"
                    },
                    if line.result[0] - line.result[1] == f64::from(line.value) {
                        ", as predicted"
                    } else {
                        ""
                    }
                ),
                LineEnd::Unrealised => println!(
                    "stopped: a position repeats while the value is not 0; the value could not \
                     be realised without depth information (depth-to-conversion tables)"
                ),
                LineEnd::PlyLimit => println!("stopped: --max-plies {max_plies} reached"),
            }
            Ok(())
        }
        Command::Batch { db, json } => batch(open_db(db.db, None)?, json),
        Command::Serve { db, addr } => serve(open_db(db.db, None)?, addr),
    }
}

/// `serve`: the HTTP API and page, until interrupted.
#[cfg(feature = "serve")]
fn serve(db: Database, addr: std::net::SocketAddr) -> anyhow::Result<()> {
    let levels: Vec<u32> = db.levels().present().collect();
    let rules = db.rules();
    awari_probe::serve::run(db, addr, |bound| {
        eprintln!(
            "serving {} levels of {rules} rules ({}..{}) on http://{bound}/ (Ctrl-C stops)",
            levels.len(),
            levels.first().copied().unwrap_or(0),
            levels.last().copied().unwrap_or(0)
        );
    })
    .with_context(|| format!("serving on {addr}"))
}

#[cfg(not(feature = "serve"))]
fn serve(_: Database, _: std::net::SocketAddr) -> anyhow::Result<()> {
    anyhow::bail!(
        "this awari-probe was built without the `serve` feature; rebuild it with default features"
    )
}

/// Read boards from stdin, one per line, and print one value (or `show` JSON) per line.
///
/// Input is read in blocks of whole lines, and each block is answered on all cores, its
/// answers written in input order. The first bad line stops the run with its line number,
/// after every line before it has been answered.
fn batch(db: Database, json: bool) -> anyhow::Result<()> {
    use rayon::prelude::*;
    /// Input bytes per block: large enough to keep the cores busy, small enough to stream.
    const BLOCK: usize = 1 << 20;
    /// Lines per task within a block.
    const TASK: usize = 1 << 10;
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut first = 1u64; // the line number of the block's first line
    let mut block: Vec<u8> = Vec::with_capacity(2 * BLOCK);
    let mut rest: Vec<u8> = Vec::new(); // a line begun at the end of the previous block
    let mut texts: Vec<Vec<u8>> = Vec::new();
    loop {
        block.clear();
        block.append(&mut rest);
        let eof = fill(&mut input, &mut block, BLOCK)?;
        // Whole lines only: keep what follows the last newline for the next block.
        if !eof {
            let end = block.iter().rposition(|&b| b == b'\n').map_or(0, |k| k + 1);
            rest.extend_from_slice(&block[end..]);
            block.truncate(end);
        }
        if block.is_empty() {
            if eof {
                break;
            }
            continue;
        }
        let lines: Vec<&[u8]> = block.split_inclusive(|&b| b == b'\n').collect();
        let tasks = lines.len().div_ceil(TASK);
        if texts.len() < tasks {
            texts.resize_with(tasks, Vec::new);
        }
        // Each task's answers go to its own buffer, kept from block to block.
        let errors: Vec<Option<anyhow::Error>> = texts[..tasks]
            .par_iter_mut()
            .zip(lines.par_chunks(TASK))
            .enumerate()
            .map(|(t, (text, chunk))| {
                text.clear();
                let start = first + (t * TASK) as u64;
                if !json {
                    return answer_values(&db, chunk, start, text).err();
                }
                for (k, line) in chunk.iter().enumerate() {
                    if let Err(e) = answer_json(&db, line, start + k as u64, text) {
                        return Some(e);
                    }
                }
                None
            })
            .collect();
        for (text, err) in texts.iter().zip(errors) {
            out.write_all(text)?;
            if let Some(e) = err {
                out.flush()?;
                return Err(e);
            }
        }
        first += lines.len() as u64;
        if eof {
            break;
        }
    }
    out.flush()?;
    Ok(())
}

/// Append up to `want` bytes of `input` to `buf`; returns whether the input has ended.
fn fill(input: &mut impl Read, buf: &mut Vec<u8>, want: usize) -> anyhow::Result<bool> {
    let mut got = 0;
    while got < want {
        let k = input
            .by_ref()
            .take((want - got) as u64)
            .read_to_end(buf)
            .context("reading stdin")?;
        if k == 0 {
            return Ok(true);
        }
        got += k;
    }
    Ok(false)
}

/// The board of one `batch` input line (`None` for a blank line), checked as `show` checks it.
fn parse_line(line: &[u8], number: u64) -> anyhow::Result<Option<Board>> {
    let board = match Board::parse_simple(line) {
        Some(board) => board,
        None => {
            let text = std::str::from_utf8(line)
                .map_err(|_| UsageError(format!("stdin line {number}: not UTF-8 text")))?
                .trim();
            if text.is_empty() {
                return Ok(None);
            }
            Board::parse(text).map_err(|e| UsageError(format!("stdin line {number}: {e}")))?
        }
    };
    check_playable(&board).map_err(|e| UsageError(format!("stdin line {number}: {e}")))?;
    Ok(Some(board))
}

/// Append the answer to one `batch --json` input line (nothing for a blank line).
fn answer_json(db: &Database, line: &[u8], number: u64, out: &mut Vec<u8>) -> anyhow::Result<()> {
    if let Some(board) = parse_line(line, number)? {
        report(&board, db.rules(), Some(db))?.write_json(out);
        out.push(b'\n');
    }
    Ok(())
}

/// Append the values of `lines` (the first is line `first`), one per non-blank line. Lines go
/// in groups of 16: every entry is located first (rank), then the 16 are read together, so
/// that their random reads are in flight at once. On an error, the lines before it are
/// answered first.
fn answer_values(
    db: &Database,
    lines: &[&[u8]],
    first: u64,
    out: &mut Vec<u8>,
) -> anyhow::Result<()> {
    const GROUP: usize = 16;
    for (g, group) in lines.chunks(GROUP).enumerate() {
        let mut values: [Option<i8>; GROUP] = [None; GROUP];
        let mut entries: [Option<(&awari_db::Table, u64)>; GROUP] = [None; GROUP];
        let mut failure = None;
        for (k, line) in group.iter().enumerate() {
            let number = first + (g * GROUP + k) as u64;
            let located = parse_line(line, number).and_then(|board| {
                let Some(board) = board else { return Ok(()) };
                let seeds = board.seeds();
                match awari_db::Level::new(seeds).rank(&board) {
                    Some(i) => {
                        let table = db.levels().require(seeds)?;
                        table.prefetch_value(i);
                        entries[k] = Some((table, i));
                    }
                    // A full opponent row: valued by one ply of lookups.
                    None => values[k] = Some(db.value(&board)?),
                }
                Ok(())
            });
            if let Err(e) = located {
                failure = Some((k, e));
                break;
            }
        }
        let answered = failure.as_ref().map_or(group.len(), |f| f.0);
        for (v, entry) in values.iter_mut().zip(entries).take(answered) {
            if let Some((table, i)) = entry {
                *v = Some(table.value(i)?);
            }
        }
        for v in values.iter().take(answered).flatten() {
            if *v < 0 {
                out.push(b'-');
            }
            let a = v.unsigned_abs();
            if a >= 10 {
                out.push(b'0' + a / 10);
            }
            out.push(b'0' + a % 10);
            out.push(b'\n');
        }
        if let Some((_, e)) = failure {
            return Err(e);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            eprintln!("awari-probe: error: {e:#}");
            if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
