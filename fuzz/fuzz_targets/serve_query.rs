//! The HTTP server's request handling: the input as a request (method, path and query,
//! content type, body) sent to `serve::router` over levels 0..6 under awari, with tower's
//! `oneshot` on a current-thread runtime (no socket). Asserted besides "no panic, no hang, no
//! huge allocation": over a healthy database no request gets a 5xx, and every error answer
//! is JSON `{"error": "..."}`, as `probe/src/serve.rs` promises.
//!
//! Input: a byte choosing the method (bits 0-2), the route prefix (bits 3-5) and whether the
//! body is announced as JSON (bit 6); then the rest of the URI up to the first newline; then
//! the body.
#![no_main]

use std::sync::OnceLock;

use awari_db::Rules;
use awari_fuzz::{build_db, one_thread, scratch, Input};
use awari_probe::{serve, Database};
use awari_solver::depth::DepthForm;
use axum::body::Body;
use axum::http::{header, Method, Request};
use axum::Router;
use libfuzzer_sys::fuzz_target;
use tower::ServiceExt;

struct Setup {
    router: Router,
    rt: tokio::runtime::Runtime,
}

static SETUP: OnceLock<Setup> = OnceLock::new();

fn setup() -> Setup {
    one_thread();
    let dir = scratch("serve_query").join("db");
    build_db(&dir, 6, Some(DepthForm::Plain));
    let db = Database::open(&dir, Some(Rules::Awari)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(1)
        .build()
        .unwrap();
    Setup {
        router: serve::router(db),
        rt,
    }
}

const METHODS: [Method; 8] = [
    Method::GET,
    Method::POST,
    Method::GET,
    Method::HEAD,
    Method::PUT,
    Method::DELETE,
    Method::OPTIONS,
    Method::PATCH,
];

const PREFIXES: [&str; 8] = [
    "/api/position?board=",
    "/api/line?board=",
    "/api/batch",
    "/api/health",
    "/",
    "/api/position?",
    "/api/line?max_plies=",
    "",
];

fuzz_target!(
    init: {
        SETUP.set(setup()).ok();
    },
    |data: &[u8]| {
        let s = SETUP.get().unwrap();
        let mut input = Input(data);
        let b = input.u8();
        let method = METHODS[usize::from(b & 7)].clone();
        let prefix = PREFIXES[usize::from(b >> 3 & 7)];
        let rest = input.rest();
        let (uri, body) = match rest.iter().position(|&c| c == b'\n') {
            Some(k) => (&rest[..k], &rest[k + 1..]),
            None => (rest, &[][..]),
        };
        let Ok(uri) = std::str::from_utf8(uri) else { return };
        let mut request = Request::builder().method(method).uri(format!("{prefix}{uri}"));
        if b & 64 != 0 {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        let Ok(request) = request.body(Body::from(body.to_vec())) else {
            return;
        };
        let path = request.uri().to_string();
        let response = s.rt.block_on(s.router.clone().oneshot(request)).unwrap();
        let status = response.status();
        let json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("application/json"));
        let bytes = s
            .rt
            .block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
            .unwrap();
        assert!(!status.is_server_error(), "{status} for {path}");
        if status.is_client_error() && !bytes.is_empty() {
            assert!(json, "a {status} answer that is not JSON for {path}");
            let doc: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON error answer");
            assert!(doc.get("error").is_some_and(|e| e.is_string()), "{doc}");
        }
    }
);
