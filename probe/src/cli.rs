//! `awari-probe`'s command line: the subcommands and their options (clap). Nothing here
//! does any work.

use std::path::PathBuf;

use awari_db::Rules;
use awari_probe::parse_captured;
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
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args)]
pub struct DbArgs {
    /// Database directory [default: ./awari-db]. `show` works without one.
    #[arg(long)]
    pub db: Option<PathBuf>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Show a board: diagram, index, every pit's move, and (with a database) values and best moves.
    Show {
        #[command(flatten)]
        db: DbArgs,
        /// Rule set: awari, abapa, grand-slam or cross-wari (a database's header decides; a different
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
        /// Print `value depth` for each board: its value and its depth to conversion (plies
        /// until a capture or the end of the game with perfect play; every level asked must
        /// have a depth table, see awari-solver depth).
        #[arg(long, conflicts_with = "json")]
        depth: bool,
    },
    /// Serve the database over HTTP: a JSON API (/api/position, /api/line, /api/batch,
    /// /api/health) and, at /, a page to explore and play perfect Awari.
    Serve {
        #[command(flatten)]
        db: DbArgs,
        /// Address to listen on (port 0: any free port).
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: std::net::SocketAddr,
        /// Seconds a client may take to send a request's headers (the connection is then
        /// closed), and again its body (then 408), 0.001..=3600.
        #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_timeout)]
        timeout: f64,
    },
}

/// A timeout in seconds: above 0, at most an hour.
fn parse_timeout(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.001..=3600.0).contains(&s) => Ok(s),
        _ => Err(format!(
            "expected a number of seconds from 0.001 to 3600, got {text:?}"
        )),
    }
}
