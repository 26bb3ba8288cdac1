//! A bounded soak of `awari-probe serve`, localhost only: C keep-alive connections send a mix
//! of requests until COUNT are done or SECONDS have passed, and every answer is checked.
//!
//! The mix, per request: 80 % `GET /api/position` of a random board of levels 0..MAX (must
//! answer 200 with its JSON document), 6 % `GET /api/line` of such a board (200), 6 % a bad
//! board (must answer 400), 4 % `POST /api/batch` of 64 boards (200), 2 % a malformed request
//! line and 2 % an oversized one (a 128 KiB query: refused with a 4xx status or by closing the
//! connection; the connection is then made again). Prints one line: requests, requests/s,
//! latency p50 and p99 of the valid requests, their errors (must be 0), and the refusals.
//!
//! Usage: cargo run --release --example soak -- ADDR [COUNT=100000] [SECONDS=60] [C=16] [MAX=20]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use awari_db::{Level, SplitMix64};

/// What a request must get.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A valid request: 200.
    Valid,
    /// A bad board: 400.
    Bad,
    /// A malformed or oversized request: a 4xx status, or the connection closed.
    Refused,
}

struct Connection {
    addr: SocketAddr,
    reader: BufReader<TcpStream>,
    out: TcpStream,
}

impl Connection {
    fn open(addr: SocketAddr) -> Connection {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Connection {
            addr,
            reader: BufReader::new(stream.try_clone().unwrap()),
            out: stream,
        }
    }

    /// Send `request` and read the answer: its status, or `None` when the connection broke.
    fn exchange(&mut self, request: &[u8]) -> Option<u16> {
        self.out.write_all(request).ok()?;
        let mut status = String::new();
        if self.reader.read_line(&mut status).ok()? == 0 {
            return None;
        }
        let code = status.split_whitespace().nth(1)?.parse().ok()?;
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().ok()?;
            }
        }
        let mut body = vec![0u8; length];
        self.reader.read_exact(&mut body).ok()?;
        Some(code)
    }

    fn reopen(&mut self) {
        *self = Connection::open(self.addr);
    }
}

fn board_text(rng: &mut SplitMix64, max: u64) -> String {
    let n = rng.below(max + 1) as u32;
    let level = Level::new(n);
    let b = level.unrank(rng.below(level.size())).pits();
    b.iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr: SocketAddr = args
        .first()
        .expect("usage: soak ADDR [COUNT] [SECONDS] [C] [MAX]")
        .parse()
        .expect("ADDR: host:port");
    assert!(addr.ip().is_loopback(), "the soak is for localhost only");
    let arg = |k: usize, d: u64| args.get(k).map_or(d, |s| s.parse().expect("a number"));
    let (count, seconds, conns, max) = (arg(1, 100_000), arg(2, 60), arg(3, 16), arg(4, 20));
    assert!(seconds <= 600, "at most 10 minutes");
    let next = AtomicU64::new(0);
    let errors = AtomicU64::new(0);
    let refused = AtomicU64::new(0);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let mut latencies: Vec<u32> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..conns)
            .map(|c| {
                let (next, errors, refused) = (&next, &errors, &refused);
                s.spawn(move || {
                    let mut rng = SplitMix64(1000 + c);
                    let mut conn = Connection::open(addr);
                    let mut mine = Vec::new();
                    while next.fetch_add(1, Relaxed) < count && Instant::now() < deadline {
                        let roll = rng.below(100);
                        let (kind, request) = match roll {
                            0..=79 => (
                                Kind::Valid,
                                format!(
                                    "GET /api/position?board={} HTTP/1.1\r\nHost: localhost\r\n\r\n",
                                    board_text(&mut rng, max)
                                ),
                            ),
                            80..=85 => (
                                Kind::Valid,
                                format!(
                                    "GET /api/line?board={}&max_plies=200 HTTP/1.1\r\nHost: localhost\r\n\r\n",
                                    board_text(&mut rng, max)
                                ),
                            ),
                            86..=91 => (
                                Kind::Bad,
                                "GET /api/position?board=1,2,x HTTP/1.1\r\nHost: localhost\r\n\r\n"
                                    .to_string(),
                            ),
                            92..=95 => {
                                let boards: Vec<String> = (0..64)
                                    .map(|_| format!("[{}]", board_text(&mut rng, max)))
                                    .collect();
                                let body = format!("{{\"boards\":[{}]}}", boards.join(","));
                                (
                                    Kind::Valid,
                                    format!(
                                        "POST /api/batch HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                                        body.len()
                                    ),
                                )
                            }
                            96..=97 => (Kind::Refused, "GARBAGE\r\n\r\n".to_string()),
                            _ => (
                                Kind::Refused,
                                format!(
                                    "GET /api/position?board={} HTTP/1.1\r\nHost: localhost\r\n\r\n",
                                    "9".repeat(128 << 10)
                                ),
                            ),
                        };
                        let t = Instant::now();
                        let got = conn.exchange(request.as_bytes());
                        let ok = match (kind, got) {
                            (Kind::Valid, Some(200)) => {
                                mine.push(t.elapsed().as_micros() as u32);
                                true
                            }
                            (Kind::Bad, Some(400)) => true,
                            (Kind::Refused, None) | (Kind::Refused, Some(400..=499)) => {
                                refused.fetch_add(1, Relaxed);
                                true
                            }
                            _ => false,
                        };
                        if !ok {
                            errors.fetch_add(1, Relaxed);
                        }
                        if got.is_none() || kind == Kind::Refused {
                            conn.reopen();
                        }
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len().max(1) - 1) as f64 * p) as usize)
            .copied()
            .unwrap_or(0)
    };
    let done = next.load(Relaxed).min(count);
    println!(
        "{done} requests in {secs:.2} s: {:.0} requests/s over {conns} connections; valid ones {}, latency p50 {} µs, p99 {} µs; errors {}; refused as they should be {}",
        done as f64 / secs,
        latencies.len(),
        pct(0.5),
        pct(0.99),
        errors.load(Relaxed),
        refused.load(Relaxed)
    );
    if errors.load(Relaxed) > 0 {
        std::process::exit(1);
    }
}
