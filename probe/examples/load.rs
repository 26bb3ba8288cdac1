//! A bounded HTTP load generator for `awari-probe serve`, localhost only: C keep-alive
//! connections send `GET /api/position` for random boards of levels 0..MAX until COUNT
//! requests are answered or SECONDS have passed; prints requests/s and latency percentiles.
//!
//! Usage: cargo run --release --example load -- ADDR [COUNT=200000] [SECONDS=20] [C=4] [MAX=20]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use awari_db::{Level, SplitMix64};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr: SocketAddr = args
        .first()
        .expect("usage: load ADDR [COUNT] [SECONDS] [C] [MAX]")
        .parse()
        .expect("ADDR: host:port");
    assert!(addr.ip().is_loopback(), "load is for localhost only");
    let arg = |k: usize, d: u64| args.get(k).map_or(d, |s| s.parse().expect("a number"));
    let (count, seconds, conns, max) = (arg(1, 200_000), arg(2, 20), arg(3, 4), arg(4, 20));
    let next = AtomicU64::new(0);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let mut latencies: Vec<u32> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..conns)
            .map(|c| {
                let next = &next;
                s.spawn(move || {
                    let mut rng = SplitMix64(c);
                    let stream = TcpStream::connect(addr).expect("connect");
                    stream.set_nodelay(true).unwrap();
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut out = stream;
                    let mut mine = Vec::new();
                    while next.fetch_add(1, Ordering::Relaxed) < count && Instant::now() < deadline
                    {
                        let n = rng.below(max + 1) as u32;
                        let level = Level::new(n);
                        let b = level.unrank(rng.below(level.size())).pits();
                        let board: Vec<String> = b.iter().map(|p| p.to_string()).collect();
                        let t = Instant::now();
                        write!(
                            out,
                            "GET /api/position?board={} HTTP/1.1\r\nHost: localhost\r\n\r\n",
                            board.join(",")
                        )
                        .unwrap();
                        let mut length = 0usize;
                        let mut status = String::new();
                        reader.read_line(&mut status).unwrap();
                        assert!(status.contains(" 200 "), "{status}");
                        loop {
                            let mut line = String::new();
                            reader.read_line(&mut line).unwrap();
                            if line == "\r\n" {
                                break;
                            }
                            let lower = line.to_ascii_lowercase();
                            if let Some(v) = lower.strip_prefix("content-length:") {
                                length = v.trim().parse().unwrap();
                            }
                        }
                        let mut body = vec![0u8; length];
                        reader.read_exact(&mut body).unwrap();
                        mine.push(t.elapsed().as_micros() as u32);
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
    let pct = |p: f64| latencies[((latencies.len() - 1) as f64 * p) as usize];
    println!(
        "{} requests in {secs:.2} s: {:.0} requests/s over {conns} connections; latency p50 {} µs, p99 {} µs, max {} µs",
        latencies.len(),
        latencies.len() as f64 / secs,
        pct(0.5),
        pct(0.99),
        latencies.last().unwrap()
    );
}
