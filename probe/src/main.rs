//! `awari-probe`: values and perfect moves from the command line. The options are in
//! [`cli`]; the work in the library.

mod cli;

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use awari_db::{Board, Rules};
use awari_probe::{check_playable, perfect_line, report, score_in_words, Database, LineEnd};
use clap::Parser;
use cli::{Cli, Command};

/// Bad input on the command line or stdin: exit code 2.
#[derive(Debug)]
struct UsageError(String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The board of the command line's words: twelve numbers, `start`, or numbers grouped into
/// fewer quoted words (`"4,4,4,…"`, `"2 2 0 0 0 0" "0 2 3 0 2 1"`), read as one line.
fn parse_board(words: &[String]) -> anyhow::Result<Board> {
    let grouped = words.len() != 12
        && words
            .iter()
            .any(|w| w.contains(|c: char| c.is_whitespace() || c == ','));
    let board = if grouped {
        Board::parse(&words.join(" "))
    } else {
        Board::parse_words(words)
    };
    let board = board.map_err(|e| UsageError(e.to_string()))?;
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
                println!("{}", r.show_json(captured, rules));
            } else {
                print!("{}", r.to_text(rules));
                if let Some(v) = r.value {
                    println!(
                        "score: {}",
                        score_in_words(board.seeds(), v, captured, rules)
                    );
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
                        let lost = f64::from(board.seeds()) - line.result[0] - line.result[1];
                        if lost > 0.0 {
                            format!("game over, {} to no one", fmt(lost))
                        } else {
                            "game over".to_string()
                        }
                    } else {
                        "position repeats: the seeds left are divided evenly".to_string()
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
        Command::Batch { db, json, depth } => {
            let answer = match (json, depth) {
                (true, _) => awari_probe::batch::Answer::Json,
                (false, true) => awari_probe::batch::Answer::ValueDepth,
                (false, false) => awari_probe::batch::Answer::Value,
            };
            batch(open_db(db.db, None)?, answer)
        }
        Command::Serve { db, addr, timeout } => serve(open_db(db.db, None)?, addr, timeout),
    }
}

/// `serve`: the HTTP API and page, until interrupted.
#[cfg(feature = "serve")]
fn serve(db: Database, addr: std::net::SocketAddr, timeout: f64) -> anyhow::Result<()> {
    let levels: Vec<u32> = db.levels().present().collect();
    let rules = db.rules();
    let timeout = std::time::Duration::from_secs_f64(timeout);
    let limits = awari_probe::serve::Limits {
        header_timeout: timeout,
        body_timeout: timeout,
    };
    awari_probe::serve::run_with(db, addr, limits, |bound| {
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
fn serve(_: Database, _: std::net::SocketAddr, _: f64) -> anyhow::Result<()> {
    anyhow::bail!(
        "this awari-probe was built without the `serve` feature; rebuild it with default features"
    )
}

/// `batch` on stdin and stdout; a bad line is a usage error (exit code 2).
fn batch(db: Database, answer: awari_probe::batch::Answer) -> anyhow::Result<()> {
    use awari_probe::batch::BatchError;
    let out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    awari_probe::batch::run(&db, answer, std::io::stdin().lock(), out).map_err(|e| match e {
        BatchError::Line { .. } => anyhow::Error::new(UsageError(e.to_string())),
        // Kept an io::Error, so that a closed pipe ends the run quietly.
        BatchError::Io { what, source } => anyhow::Error::new(source).context(what),
        BatchError::Db(e) => e.into(),
    })
}

fn main() -> ExitCode {
    awari_db::pipe::exit_quietly_on_closed_pipe();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            eprintln!("awari-probe: error: {}", awari_db::one_line(e.as_ref()));
            if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
