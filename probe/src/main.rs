//! `awari-probe`: values and perfect moves from the command line.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use awari_db::{Board, Rules};
use awari_probe::{report, Database};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "awari-probe",
    version,
    about = "Look up Awari (Oware) positions: values, best moves, perfect lines",
    long_about = "Look up Awari (Oware) positions.\n\nA board is 12 numbers, the seeds in pits 0..11 \
                  counted counter-clockwise from the side to move (pits 0..5 are the mover's row, \
                  left to right), or the word `start`. A value is the seed difference the side to \
                  move obtains from the seeds still on the board with perfect play."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show a board: diagram, index, every pit's move, and (with a database) values.
    Show {
        /// Database directory; without one (or when it does not exist and --db was not given)
        /// the board is shown without values.
        #[arg(long)]
        db: Option<PathBuf>,
        /// Rule set: awari, abapa or grand-slam (must match the database).
        #[arg(long)]
        rules: Option<Rules>,
        /// One JSON document on stdout instead of text.
        #[arg(long)]
        json: bool,
        /// The board: 12 numbers or `start`.
        #[arg(required = true, num_args = 1..=12, allow_negative_numbers = true)]
        board: Vec<String>,
    },
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Show {
            db,
            rules,
            json,
            board,
        } => {
            let board = Board::parse_words(&board).map_err(|e| UsageError(e.to_string()))?;
            let default_db = PathBuf::from("awari-db");
            let database = match db {
                Some(dir) => Some(Database::open(&dir, rules)?),
                None if default_db.is_dir() => Some(Database::open(&default_db, rules)?),
                None => None,
            };
            let rules = match (&database, rules) {
                (Some(d), _) => d.rules(),
                (None, r) => r.unwrap_or_default(),
            };
            let r = report(&board, rules, database.as_ref()).context("lookup failed")?;
            if json {
                println!("{}", r.to_json());
            } else {
                print!("{}", r.to_text(rules));
            }
            Ok(())
        }
    }
}

/// Bad input on the command line: reported like clap's own errors, exit code 2.
#[derive(Debug)]
struct UsageError(String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("awari-probe: error: {e:#}");
            if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
