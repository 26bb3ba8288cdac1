//! `awari-probe serve`: the HTTP API, over a real socket, against the library.
#![cfg(feature = "serve")]

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::OnceLock;

use awari_db::compressed::Form;
use awari_db::{Rules, SplitMix64};
use awari_probe::{perfect_line, report, Database};
use serde_json::{json, Value};

/// Levels 0..16 (awari rules, depth tables along: the crate's shared test database), served
/// on a free port for all tests of this file.
fn server() -> &'static (SocketAddr, PathBuf) {
    static SERVER: OnceLock<(SocketAddr, PathBuf)> = OnceLock::new();
    SERVER.get_or_init(|| {
        let dir = common::db(Rules::Awari).to_path_buf();
        let db = Database::open(&dir, None).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            awari_probe::serve::run(db, "127.0.0.1:0".parse().unwrap(), |a| tx.send(a).unwrap())
                .unwrap()
        });
        (rx.recv().unwrap(), dir)
    })
}

/// One HTTP/1.1 request; returns the status and the body.
fn request(method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    request_at(server().0, method, path, body)
}

/// [`request`] to the server at `addr`.
fn request_at(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let body = body.unwrap_or("");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    (status, body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = s.split_once("\r\n").unwrap();
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
}

fn get_json(path: &str) -> (u16, Value) {
    let (status, body) = request("GET", path, None);
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn database() -> Database {
    Database::open(&server().1, None).unwrap()
}

#[test]
fn vu_example_and_start_positions() {
    let (status, j) = get_json("/api/position?board=1,1,1,1,1,2,4,2,3,0,0,0");
    assert_eq!(status, 200);
    let b = awari_db::Board::parse("1 1 1 1 1 2 4 2 3 0 0 0").unwrap();
    // The same document as `show --json`.
    assert_eq!(
        j,
        report(&b, Rules::Awari, Some(&database()))
            .unwrap()
            .show_json(None, Rules::Awari)
    );
    common::assert_vu_example(&j);
    // With captured seeds: the predicted final score.
    let (_, j) = get_json("/api/position?board=1,1,1,1,1,2,4,2,3,0,0,0&captured=20,12");
    assert_eq!(j["final"], json!([28, 20]));
    // The one-seed start: a draw (a full opponent row, valued by one ply); spaces work too.
    let (status, j) = get_json("/api/position?board=1%201%201%201%201%201%201%201%201%201%201%201");
    assert_eq!(
        (status, j["value"].clone(), j["index"].clone()),
        (200, json!(0), Value::Null)
    );
    // Its perfect line: the document of `line --json`.
    let (status, j) = get_json("/api/line?board=1,1,1,1,1,1,1,1,1,1,1,1");
    assert_eq!(status, 200);
    let line = perfect_line(&database(), &awari_db::Board::uniform(1), 2000).unwrap();
    assert_eq!(j, line.to_json());
    let (_, j) = get_json("/api/line?board=1,1,1,1,1,1,1,1,1,1,1,1&max_plies=3");
    assert_eq!(j["plies"].as_array().unwrap().len(), 3);
    // Health.
    let (status, j) = get_json("/api/health");
    assert_eq!(status, 200);
    assert_eq!(j["rules"], "awari");
    assert_eq!(j["levels"], json!((0..=16).collect::<Vec<u32>>()));
    // The page.
    let (status, page) = request("GET", "/", None);
    assert_eq!(status, 200);
    assert!(page.contains("<title>Awari oracle</title>") && page.contains("/api/position"));
}

#[test]
fn every_error_status() {
    let cases: &[(&str, &str, Option<&str>, u16, &str)] = &[
        ("GET", "/api/position", None, 400, "missing parameter"),
        ("GET", "/api/position?board=1,2,3", None, 400, "12 pits"),
        (
            "GET",
            "/api/position?board=49,0,0,0,0,0,0,0,0,0,0,0",
            None,
            400,
            "49 seeds",
        ),
        (
            "GET",
            "/api/position?board=x,0,0,0,0,0,0,0,0,0,0,1",
            None,
            400,
            "pit 0",
        ),
        (
            "GET",
            "/api/position?board=4,4,4,4,4,4,4,4,4,4,4,3",
            None,
            400,
            "47 seeds",
        ),
        (
            "GET",
            "/api/position?board=1,1,1,1,1,1,1,1,1,1,1,1&captured=1",
            None,
            400,
            "captured",
        ),
        (
            "GET",
            "/api/position?board=2,2,2,2,2,2,2,2,2,2,2,2",
            None,
            404,
            "level 24 is missing",
        ),
        (
            "GET",
            "/api/line?board=2,2,2,2,2,2,2,2,2,2,2,2",
            None,
            404,
            "missing",
        ),
        (
            "GET",
            "/api/line?board=1,1,1,1,1,1,1,1,1,1,1,1&max_plies=99999",
            None,
            400,
            "max_plies",
        ),
        ("POST", "/api/batch", Some("not json"), 400, "JSON"),
        ("POST", "/api/batch", Some("{\"boards\": 3}"), 400, "boards"),
        (
            "POST",
            "/api/batch",
            Some("{\"boards\": [[1,2]]}"),
            400,
            "board 0: a board has 12 pits",
        ),
        (
            "POST",
            "/api/batch",
            Some("{\"boards\": [[0,0,0,0,0,0,0,0,0,0,0,1],[-1,0,0,0,0,0,0,0,0,0,0,0]]}"),
            400,
            "board 1: pit 0",
        ),
        (
            "POST",
            "/api/batch",
            Some("{\"boards\": [[2,2,2,2,2,2,2,2,2,2,2,2]]}"),
            404,
            "level 24",
        ),
        // Neither an array nor a string, or a pit that is not a number: said so, the value
        // not echoed.
        (
            "POST",
            "/api/batch",
            Some("{\"boards\": [{\"a\": 1, \"b\": 2}]}"),
            400,
            "board 0: a board is an array of 12 numbers or a string, not an object",
        ),
        (
            "POST",
            "/api/batch",
            Some("{\"boards\": [[[1,1,1,1,1,1,1,1,1,1,1,1]]]}"),
            400,
            "board 0: pit 0 is an array, not a number",
        ),
    ];
    for &(method, path, body, status, message) in cases {
        let (got, text) = request(method, path, body);
        assert_eq!(got, status, "{method} {path}: {text}");
        let j: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: {text}"));
        let e = j["error"].as_str().unwrap();
        assert!(e.contains(message), "{path}: {e}");
        assert_eq!(e.lines().count(), 1, "{path}: {e}");
    }
    // A string is read as a line: numbers separated by spaces, tabs or commas.
    let body = r#"{"boards": ["1,1,1,1,1,1,1,1,1,1,1,1", "0 0 0 0 1 2\t0 1 1 0 0 0"]}"#;
    let (status, text) = request("POST", "/api/batch", Some(body));
    assert_eq!((status, text.as_str()), (200, r#"{"values":[0,-1]}"#));
    // Too many boards.
    let many = json!({ "boards": vec![[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]; 10_001] }).to_string();
    let (status, text) = request("POST", "/api/batch", Some(&many));
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("at most 10000"), "{text}");
    // A bad request harms no other: the server still answers.
    assert_eq!(get_json("/api/health").0, 200);
    // Unknown routes.
    assert_eq!(request("GET", "/api/nothing", None).0, 404);
}

#[test]
fn a_thousand_random_boards_through_batch() {
    let db = database();
    let mut rng = SplitMix64(17);
    let boards: Vec<awari_db::Board> = (0..1000)
        .map(|_| {
            let n = rng.below(17) as u32;
            rng.board(n)
        })
        .filter(|b| b.seeds() != 47)
        .collect();
    let body = json!({ "boards": boards.iter().map(|b| b.pits()).collect::<Vec<_>>() }).to_string();
    let (status, text) = request("POST", "/api/batch", Some(&body));
    assert_eq!(status, 200, "{text}");
    let j: Value = serde_json::from_str(&text).unwrap();
    let got: Vec<i64> = j["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let expected: Vec<i64> = boards
        .iter()
        .map(|b| i64::from(db.value(b).unwrap()))
        .collect();
    assert_eq!(got, expected);
}

/// The same database compressed, served by a second server: 100,000 random boards through
/// /api/batch get the same values, and a position the same JSON.
#[test]
fn a_compressed_database_serves_the_same_answers() {
    compressed_serves_the_same_answers(Form::SelfContained);
}

/// As [`a_compressed_database_serves_the_same_answers`], in the probe form.
#[test]
fn a_database_in_the_probe_form_serves_the_same_answers() {
    compressed_serves_the_same_answers(Form::CaptureDontCares);
}

fn compressed_serves_the_same_answers(form: Form) {
    let top = common::COMPRESSED_TOP;
    let db = Database::open(common::compressed(form), None).unwrap();
    assert!(db.levels().require(top).unwrap().is_compressed());
    assert_eq!(
        db.levels().require(top).unwrap().is_probe_form(),
        form.is_probe()
    );
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        awari_probe::serve::run(db, "127.0.0.1:0".parse().unwrap(), |a| tx.send(a).unwrap())
            .unwrap()
    });
    let addr = rx.recv().unwrap();
    let mut rng = SplitMix64(41);
    let boards: Vec<awari_db::Board> = (0..100_000)
        .map(|_| {
            let n = rng.below(u64::from(top) + 1) as u32;
            rng.board(n)
        })
        .collect();
    // In requests of 10,000 boards, the most the server takes at once.
    for part in boards.chunks(10_000) {
        let body =
            json!({ "boards": part.iter().map(|b| b.pits()).collect::<Vec<_>>() }).to_string();
        let (status, a) = request("POST", "/api/batch", Some(&body));
        assert_eq!(status, 200, "{a}");
        let (status, b) = request_at(addr, "POST", "/api/batch", Some(&body));
        assert_eq!(status, 200, "{b}");
        let values: Value = serde_json::from_str(&a).unwrap();
        assert_eq!(values["values"].as_array().unwrap().len(), part.len());
        assert_eq!(values, serde_json::from_str::<Value>(&b).unwrap());
    }
    for b in boards.iter().step_by(10_000) {
        let path = format!(
            "/api/position?board={}",
            b.pits().map(|p| p.to_string()).join(",")
        );
        assert_eq!(
            request("GET", &path, None),
            request_at(addr, "GET", &path, None)
        );
    }
}

/// Requests at once from several clients, bad ones among them: every answer is right.
#[test]
fn concurrent_requests_do_not_disturb_each_other() {
    let db = database();
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let db = &db;
            s.spawn(move || {
                let mut rng = SplitMix64(t);
                for k in 0..50 {
                    if k % 10 == 3 {
                        assert_eq!(request("GET", "/api/position?board=1,2", None).0, 400);
                        continue;
                    }
                    let n = rng.below(17) as u32;
                    let b = rng.board(n);
                    let p: Vec<String> = b.pits().iter().map(|x| x.to_string()).collect();
                    let (status, j) = get_json(&format!("/api/position?board={}", p.join(",")));
                    assert_eq!(status, 200);
                    assert_eq!(j["value"], i64::from(db.value(&b).unwrap()));
                }
            });
        }
    });
}

/// Every byte but unreserved ones percent-encoded (a query parameter's value).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

mod json_properties {
    use proptest::prelude::*;
    use serde_json::{json, Value};

    // Boards of up to 18 seeds: 16 is the server's highest level.
    use super::common::any_board;
    use super::{database, encode, request};

    /// A JSON scalar of the kinds a client might send for a pit, right or wrong.
    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            6 => (0i64..=8).prop_map(Value::from),
            1 => any::<i64>().prop_map(Value::from),
            1 => any::<u64>().prop_map(Value::from),
            1 => any::<f64>().prop_map(|x| json!(x)),
            1 => "[0-9 ,-]{0,4}|\\PC{0,6}".prop_map(Value::from),
            1 => Just(Value::Null),
            1 => any::<bool>().prop_map(Value::from),
        ]
    }

    /// A JSON value: scalars, arrays and objects, nested.
    fn value() -> impl Strategy<Value = Value> {
        scalar().prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..14).prop_map(Value::Array),
                prop::collection::hash_map("[a-z]{0,6}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// An answer's status is one of the documented ones, and its body JSON.
    fn answered(status: u16, body: &str) -> Result<Value, TestCaseError> {
        prop_assert!(
            matches!(status, 200 | 400 | 404),
            "status {} ({})",
            status,
            body
        );
        let j: Value = serde_json::from_str(body)
            .map_err(|e| TestCaseError::fail(format!("not JSON ({e}): {body}")))?;
        if status != 200 {
            prop_assert!(j["error"].is_string(), "{}", j);
        }
        Ok(j)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]

        /// Any body to the batch API: an answer, never a failure; the values right where the
        /// boards are.
        #[test]
        fn any_batch_body_is_answered(
            boards in prop::collection::vec(any_board(18), 0..6),
            noise in prop::collection::vec(value(), 0..3),
            text in "\\PC{0,40}",
            kind in 0usize..4,
        ) {
            let good: Vec<Value> = boards.iter().map(|b| json!(b.pits())).collect();
            let body = match kind {
                0 => json!({ "boards": good }).to_string(),
                1 => json!({ "boards": good.iter().cloned().chain(noise).collect::<Vec<_>>() })
                    .to_string(),
                2 => json!({ "boards": noise }).to_string(),
                _ => text,
            };
            let (status, text) = request("POST", "/api/batch", Some(&body));
            let j = answered(status, &text)?;
            if kind == 0 {
                let db = database();
                let want: Result<Vec<i8>, _> = boards.iter().map(|b| db.value(b)).collect();
                match want {
                    Ok(values) => {
                        prop_assert_eq!(status, 200);
                        prop_assert_eq!(j, json!({ "values": values }));
                    }
                    Err(_) => prop_assert_eq!(status, 404),
                }
            }
        }

        /// Any text as a position's board, its captured seeds or a line's length: an answer,
        /// never a failure.
        #[test]
        fn any_query_is_answered(
            board in prop_oneof![
                any_board(18).prop_map(|b| b.to_string().replace(' ', ",")),
                "[0-9, ]{0,30}",
                "\\PC{0,30}",
            ],
            captured in prop::option::of("[0-9,]{0,6}|\\PC{0,8}"),
            plies in prop::option::of("[0-9]{0,5}|\\PC{0,6}"),
        ) {
            let mut position = format!("/api/position?board={}", encode(&board));
            if let Some(c) = &captured {
                position += &format!("&captured={}", encode(c));
            }
            let (status, text) = request("GET", &position, None);
            answered(status, &text)?;
            let mut line = format!("/api/line?board={}", encode(&board));
            if let Some(p) = &plies {
                line += &format!("&max_plies={}", encode(p));
            }
            let (status, text) = request("GET", &line, None);
            answered(status, &text)?;
        }
    }
}

/// A server of `router` with timeouts of 1 s, on a free port.
fn guarded_server(router: axum::Router) -> SocketAddr {
    let limits = awari_probe::serve::Limits {
        header_timeout: std::time::Duration::from_secs(1),
        body_timeout: std::time::Duration::from_secs(1),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            awari_probe::serve::serve_router(router, listener, limits)
                .await
                .unwrap();
        })
    });
    rx.recv().unwrap()
}

/// The test database served with timeouts of 1 s.
fn quick_server() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let limits = awari_probe::serve::Limits {
            header_timeout: std::time::Duration::from_secs(1),
            body_timeout: std::time::Duration::from_secs(1),
        };
        guarded_server(awari_probe::serve::router_with(database(), limits))
    })
}

/// Send `raw` to `addr` and read until the server closes the connection, at most 5 s: the
/// bytes read, and how long it took.
fn exchange(addr: SocketAddr, raw: &[u8]) -> (String, std::time::Duration) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let start = std::time::Instant::now();
    // Written beside the reads: the server may answer (and close) before it has all of it.
    let mut writer = s.try_clone().unwrap();
    let raw = raw.to_vec();
    std::thread::spawn(move || {
        let _ = writer.write_all(&raw);
    });
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => got.extend_from_slice(&buf[..k]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!(
                "the connection is still open after {:?} ({e}); read: {}",
                start.elapsed(),
                String::from_utf8_lossy(&got)
            ),
        }
    }
    (String::from_utf8_lossy(&got).into_owned(), start.elapsed())
}

/// The status and JSON body of an answer read by [`exchange`].
fn answer(raw: &str) -> (u16, Value) {
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("{raw}"));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    let j = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {raw}"));
    (status, j)
}

/// A client that never finishes its headers, or never sends any, is cut off after the header
/// timeout; one that finishes them in time is answered.
#[test]
fn slow_headers_are_cut_off() {
    let addr = quick_server();
    for raw in [
        &b"GET /api/health HTTP/1.1\r\nHost: x\r\n"[..],
        b"GET /api",
        b"",
    ] {
        let (got, took) = exchange(addr, raw);
        assert!(got.is_empty() || got.starts_with("HTTP/1.1 408"), "{got}");
        assert!(took < std::time::Duration::from_secs(3), "{took:?}");
    }
    let (got, _) = exchange(
        addr,
        b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(answer(&got).0, 200, "{got}");
}

/// A body announced larger than the limit is 413 at once, with a JSON body, however large
/// the announcement; a body that comes too slowly is 408.
#[test]
fn large_and_slow_bodies_are_refused() {
    let addr = quick_server();
    for length in ["99999999999999", "2097153"] {
        let raw = format!(
            "POST /api/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n{{\"boards\": ["
        );
        let (got, took) = exchange(addr, raw.as_bytes());
        let (status, j) = answer(&got);
        assert_eq!(status, 413, "{got}");
        assert!(
            j["error"]
                .as_str()
                .unwrap()
                .contains("larger than 2097152 bytes"),
            "{j}"
        );
        assert!(took < std::time::Duration::from_millis(900), "{took:?}");
    }
    // Chunked, without a length: refused once past the limit.
    let mut raw =
        b"POST /api/batch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..40 {
        raw.extend_from_slice(format!("{:x}\r\n", 65536).as_bytes());
        raw.extend(std::iter::repeat_n(b' ', 65536));
        raw.extend_from_slice(b"\r\n");
    }
    let (got, _) = exchange(addr, &raw);
    assert_eq!(answer(&got).0, 413, "{got}");
    // 10 bytes of 100, then nothing.
    let (got, took) = exchange(
        addr,
        b"POST /api/batch HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"boards\":",
    );
    let (status, j) = answer(&got);
    assert_eq!(status, 408, "{got}");
    assert!(
        j["error"]
            .as_str()
            .unwrap()
            .contains("took longer than 1 s"),
        "{j}"
    );
    assert!(took < std::time::Duration::from_secs(3), "{took:?}");
}

/// Routes and methods that do not exist are JSON errors too.
#[test]
fn every_error_answer_is_json() {
    let addr = quick_server();
    for (method, path, status, message) in [
        ("GET", "/api/nothing", 404, "no such page: GET /api/nothing"),
        ("GET", "/nothing/at/all", 404, "no such page"),
        ("GET", "/api/batch", 405, "GET is not allowed on /api/batch"),
        (
            "POST",
            "/api/position",
            405,
            "POST is not allowed on /api/position",
        ),
        ("DELETE", "/", 405, "DELETE is not allowed on /"),
    ] {
        let (got, body) = request_at(addr, method, path, None);
        assert_eq!(got, status, "{method} {path}: {body}");
        let j: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        let e = j["error"].as_str().unwrap();
        assert!(e.contains(message), "{method} {path}: {e}");
    }
    // The default server's too.
    let (status, body) = request("GET", "/api/nothing", None);
    assert_eq!(status, 404);
    assert!(body.contains("\"error\""), "{body}");
}

/// A panic in a handler is a generic 500, its text nowhere in the answer; the server goes on.
#[test]
fn a_panic_is_a_generic_500() {
    use axum::routing::get;
    let router = awari_probe::serve::guard(
        axum::Router::new()
            .route(
                "/boom",
                get(|| async {
                    if std::hint::black_box(true) {
                        panic!("secret panic text at /home/somebody");
                    }
                    "unreached"
                }),
            )
            .route("/fine", get(|| async { "fine" })),
    );
    let addr = guarded_server(router);
    for _ in 0..3 {
        let (status, body) = request_at(addr, "GET", "/boom", None);
        assert_eq!(status, 500, "{body}");
        assert!(
            !body.contains("secret") && !body.contains("panic"),
            "{body}"
        );
        let j: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(j["error"], awari_probe::serve::INTERNAL_ERROR);
        assert_eq!(request_at(addr, "GET", "/fine", None), (200, "fine".into()));
    }
}

/// A damaged table (a value of 127) is a generic 500: the file and the entry are on the
/// server's stderr, not in the answer.
#[test]
fn a_damaged_table_is_a_500_without_internal_text() {
    let dir = common::temp("serve-damaged");
    std::fs::create_dir_all(&dir).unwrap();
    let source = common::db(Rules::Awari);
    for n in (0..16).filter(|&n| awari_db::level_exists(n)) {
        let to = awari_db::level_path(&dir, n);
        std::os::unix::fs::symlink(awari_db::level_path(source, n), to).unwrap();
    }
    let mut bytes = std::fs::read(awari_db::level_path(source, 16)).unwrap();
    bytes[64 + 588953] = 127;
    std::fs::write(awari_db::level_path(&dir, 16), bytes).unwrap();
    let router = awari_probe::serve::router(Database::open(&dir, None).unwrap());
    let addr = guarded_server(router);
    let vu = "1,1,1,1,1,2,4,2,3,0,0,0";
    for (method, path, body) in [
        ("GET", format!("/api/position?board={vu}"), None),
        ("GET", format!("/api/line?board={vu}"), None),
        (
            "POST",
            "/api/batch".to_string(),
            Some(format!("{{\"boards\": [[{vu}]]}}")),
        ),
    ] {
        let (status, text) = request_at(addr, method, &path, body.as_deref());
        assert_eq!(status, 500, "{path}: {text}");
        let j: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(j["error"], awari_probe::serve::INTERNAL_ERROR, "{path}");
        assert!(!text.contains("127") && !text.contains(".values"), "{text}");
    }
    // Other positions are still answered.
    let (status, _) = request_at(
        addr,
        "GET",
        "/api/position?board=0,0,0,0,0,0,0,0,0,0,0,1",
        None,
    );
    assert_eq!(status, 200);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// docs/cli.md's exchanges with the server are real: each `$ curl` there, asked of this
/// server, gets the status (200, or the one its comment gives) and the answer shown, the
/// database's path read as `awari-db`, and `levels` aside (the docs' database stops at 12
/// seeds, this one at 16).
#[test]
fn the_exchanges_in_cli_md_are_real() {
    let doc = common::contracts::repo_file("docs/cli.md");
    let exchanges = doc.split("Real exchanges").nth(1).unwrap();
    let exchanges = exchanges.split("```text\n").nth(1).unwrap();
    let exchanges = exchanges.split("```").next().unwrap();
    let mut lines = exchanges.lines();
    let mut checked = 0;
    while let Some(line) = lines.next() {
        let Some(curl) = line.strip_prefix("$ curl ") else {
            assert!(line.is_empty(), "an answer without its request: {line}");
            continue;
        };
        let shown = lines.next().unwrap();
        let (call, comment) = curl.rsplit_once('\'').unwrap();
        let quoted: Vec<&str> = call.split('\'').skip(1).step_by(2).collect();
        let (method, body, url) = match quoted[..] {
            [url] => ("GET", None, url),
            [body, url] if call.starts_with("-X POST -d ") => ("POST", Some(body), url),
            _ => panic!("not a request this test knows: {line}"),
        };
        let want_status = comment
            .split_once("# HTTP ")
            .map_or(200, |(_, s)| s.trim().parse().unwrap());
        let path = url.strip_prefix("http://127.0.0.1:8080").unwrap();
        let (status, text) = request(method, path, body);
        let text = text.replace(server().1.to_str().unwrap(), "awari-db");
        let (mut got, mut want): (Value, Value) = (
            serde_json::from_str(&text).unwrap(),
            serde_json::from_str(shown).unwrap(),
        );
        for j in [&mut got, &mut want] {
            if let Some(o) = j.as_object_mut() {
                o.remove("levels");
            }
        }
        assert_eq!((status, got), (want_status, want), "docs/cli.md: {line}");
        checked += 1;
    }
    assert_eq!(checked, 6, "the requests docs/cli.md shows");
}

/// `/api/health` says what is checked: this library's tables as they are read, the VU
/// release's raw files not at all (they carry no checksums).
#[test]
fn health_says_what_is_checked() {
    let (_, j) = get_json("/api/health");
    assert_eq!(j["raw"], false);
    assert!(
        j["checksums"].as_str().unwrap().contains("4 MiB chunk"),
        "{j}"
    );
    let raw = common::temp("serve-raw");
    std::fs::create_dir_all(&raw).unwrap();
    for n in 0..=6 {
        let bytes = std::fs::read(awari_db::level_path(common::db(Rules::Awari), n)).unwrap();
        let data = &bytes[64..64 + awari_db::level_size(n) as usize];
        std::fs::write(raw.join(format!("scores.{n}")), data).unwrap();
    }
    let addr = guarded_server(awari_probe::serve::router(
        Database::open(&raw, None).unwrap(),
    ));
    let (status, text) = request_at(addr, "GET", "/api/health", None);
    assert_eq!(status, 200);
    let j: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(j["raw"], true);
    assert!(
        j["checksums"].as_str().unwrap().contains("no checksums"),
        "{j}"
    );
    std::fs::remove_dir_all(&raw).unwrap();
}
