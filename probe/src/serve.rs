//! `awari-probe serve`: the database as an HTTP JSON API, and a page to explore and play
//! perfect Awari (cargo feature `serve`, on by default).
//!
//! | request | answer |
//! |---|---|
//! | `GET /` | the page (static, embedded, no build step, no CDN) |
//! | `GET /api/position?board=p0,…,p11[&captured=a,b]` | the document of `show --json` |
//! | `GET /api/line?board=…[&max_plies=N]` | the document of `line --json` (N ≤ 2000) |
//! | `POST /api/batch` `{"boards": [[12 ints], …]}` (≤ 10,000) | `{"values": [v, …]}` |
//! | `GET /api/health` | levels present, rules, what has been checked |
//!
//! Bad input is HTTP 400 and a missing level 404, each with `{"error": the CLI's message}`;
//! other database failures (a damaged table) are 500 with a generic message, the error itself
//! on the server's stderr. Every other error answer is JSON too (404, 405, 408, 413), and a
//! panic in a handler is a generic 500 (`serve/guard.rs`). Lookups read memory-mapped tables,
//! so a page-cache miss blocks the thread that takes it: every request that reads a table runs
//! on tokio's blocking pool, never on the async workers. At most one line per core is
//! computed at a time (a line is up to 2000 plies of lookups); further line requests wait
//! their turn.
//!
//! A client has [`Limits::header_timeout`] to send a request's headers (the connection is
//! then closed) and [`Limits::body_timeout`] for its body (408); a body over [`BODY_MAX`]
//! bytes is 413, at once where its `Content-Length` says so.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use awari_db::{Board, DbError};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Query, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::{check_playable, parse_captured, perfect_line, report, Database};

mod guard;

pub use guard::{guard, serve_router};

/// The most boards one batch request may hold.
pub const BATCH_MAX: usize = 10_000;
/// The longest line the server computes.
pub const LINE_MAX_PLIES: usize = 2000;
/// The largest request body, in bytes (10,000 boards take under 400 KB).
pub const BODY_MAX: usize = 2 << 20;

/// How long a client may take to send a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// For a request's headers, from the connection's start or the end of the previous
    /// answer: past it the connection is closed (an idle kept-alive connection too).
    pub header_timeout: Duration,
    /// For a request's body, once its headers have come: past it the answer is 408.
    pub body_timeout: Duration,
}

impl Default for Limits {
    /// 10 seconds each.
    fn default() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
        }
    }
}

const PAGE: &str = include_str!("page.html");

/// The message of every 500: what went wrong is on the server's stderr, not in the answer.
pub const INTERNAL_ERROR: &str =
    "internal error: the server could not answer this request (its log says why)";

struct App {
    db: Database,
    lines: Semaphore,
    limits: Limits,
}

/// An error answer: status and the one-line message.
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

impl ApiError {
    /// A 500: `detail` goes to stderr, the answer says only [`INTERNAL_ERROR`].
    fn internal(detail: &(dyn std::error::Error + 'static)) -> ApiError {
        eprintln!("awari-probe serve: error: {}", awari_db::one_line(detail));
        ApiError(StatusCode::INTERNAL_SERVER_ERROR, INTERNAL_ERROR.into())
    }
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, message.into())
}

impl From<DbError> for ApiError {
    fn from(e: DbError) -> ApiError {
        match e {
            DbError::MissingLevel { .. } => ApiError(StatusCode::NOT_FOUND, e.to_string()),
            _ => ApiError::internal(&e),
        }
    }
}

/// A board from a query's `board` parameter: 12 numbers separated by commas (or spaces), or
/// `start`; checked as the CLI checks it.
fn board_param(q: &HashMap<String, String>) -> Result<Board, ApiError> {
    let text = q
        .get("board")
        .ok_or_else(|| bad("missing parameter: board=p0,p1,…,p11"))?;
    let board = Board::parse(text).map_err(|e| bad(e.to_string()))?;
    check_playable(&board).map_err(bad)?;
    Ok(board)
}

/// Run `f` on the blocking pool (it reads memory-mapped tables).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    // A panic's text stays out of the answer (it went to stderr as it happened).
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(&e))?
}

async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        PAGE,
    )
}

async fn position(
    State(app): State<Arc<App>>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let board = board_param(&q)?;
    let captured = q
        .get("captured")
        .map(|c| parse_captured(c).map_err(|e| bad(format!("captured: {e}"))))
        .transpose()?;
    blocking(move || {
        let r = report(&board, app.db.rules(), Some(&app.db))?;
        Ok(match captured {
            Some(_) => Json(r.show_json(captured, app.db.rules())).into_response(),
            // The same text, written directly (the common request: no serde_json tree).
            None => {
                let mut text = Vec::with_capacity(1024);
                r.write_json(&mut text);
                ([(header::CONTENT_TYPE, "application/json")], text).into_response()
            }
        })
    })
    .await
}

async fn line(
    State(app): State<Arc<App>>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let board = board_param(&q)?;
    let max_plies = match q.get("max_plies") {
        None => LINE_MAX_PLIES,
        Some(m) => match m.parse::<usize>() {
            Ok(m) if m <= LINE_MAX_PLIES => m,
            _ => {
                return Err(bad(format!(
                    "max_plies: '{m}' is not a number of plies 0..{LINE_MAX_PLIES}"
                )))
            }
        },
    };
    let _turn = app
        .lines
        .acquire()
        .await
        .map_err(|e| ApiError::internal(&e))?;
    let app = Arc::clone(&app);
    blocking(move || Ok(Json(perfect_line(&app.db, &board, max_plies)?.to_json()))).await
}

async fn batch(State(app): State<Arc<App>>, request: Request) -> Result<Json<Value>, ApiError> {
    let timeout = app.limits.body_timeout;
    let body = tokio::time::timeout(timeout, Bytes::from_request(request, &()))
        .await
        .map_err(|_| {
            ApiError(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body took longer than {} s to arrive",
                    timeout.as_secs_f64()
                ),
            )
        })?
        .map_err(|r| match r.status() {
            StatusCode::PAYLOAD_TOO_LARGE => guard::too_large(),
            status => ApiError(status, r.body_text()),
        })?;
    let doc: Value = serde_json::from_slice(&body).map_err(|e| {
        bad(format!(
            "the body must be JSON {{\"boards\": [[12 ints], …]}}: {e}"
        ))
    })?;
    let list = doc
        .get("boards")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("the body must be JSON {\"boards\": [[12 ints], …]}"))?;
    if list.len() > BATCH_MAX {
        return Err(bad(format!(
            "{} boards: at most {BATCH_MAX} per request",
            list.len()
        )));
    }
    let mut boards = Vec::with_capacity(list.len());
    for (k, item) in list.iter().enumerate() {
        let board = match item {
            Value::Array(xs) => {
                let mut words = Vec::with_capacity(xs.len());
                for (pit, x) in xs.iter().enumerate() {
                    words.push(match x {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        _ => {
                            let what = json_kind(x);
                            return Err(bad(format!(
                                "board {k}: pit {pit} is {what}, not a number"
                            )));
                        }
                    });
                }
                Board::parse_words(&words)
            }
            Value::String(s) => Board::parse(s),
            _ => {
                return Err(bad(format!(
                    "board {k}: a board is an array of 12 numbers or a string, not {}",
                    json_kind(item)
                )))
            }
        };
        let board = board.map_err(|e| bad(format!("board {k}: {e}")))?;
        check_playable(&board).map_err(|e| bad(format!("board {k}: {e}")))?;
        boards.push(board);
    }
    blocking(move || {
        let values = boards
            .iter()
            .map(|b| app.db.value(b))
            .collect::<Result<Vec<i8>, DbError>>()?;
        Ok(Json(json!({ "values": values })))
    })
    .await
}

/// What a JSON value is, for an error message (not the value: it may be large).
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What `/api/health` says is checked, of this library's tables and of the VU release's raw
/// files.
const CHECKS: &str = "headers and lengths checked when opened; the data as it is read: a plain table's 4 MiB chunk at its first read (a version-1 table whole), a compressed table's blocks at each decode; `awari-solver verify` checks whole tables";
const RAW_CHECKS: &str = "lengths checked when opened; the VU release's raw files carry no checksums: `awari-solver compare` checks them against a build";

async fn health(State(app): State<Arc<App>>) -> Json<Value> {
    let levels: Vec<u32> = app.db.levels().present().collect();
    let raw = app.db.levels().is_raw();
    Json(json!({
        "status": "ok",
        "rules": app.db.rules().name(),
        "levels": levels,
        "raw": raw,
        "checksums": if raw {
            RAW_CHECKS
        } else {
            CHECKS
        },
    }))
}

/// The routes over `db`, with the default [`Limits`].
pub fn router(db: Database) -> Router {
    router_with(db, Limits::default())
}

/// The routes over `db`, guarded ([`guard`]): every error answer JSON, a panic a generic
/// 500, a body over [`BODY_MAX`] 413.
pub fn router_with(db: Database, limits: Limits) -> Router {
    let app = Arc::new(App {
        db,
        lines: Semaphore::new(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        ),
        limits,
    });
    let routes = Router::new()
        .route("/", get(page))
        .route("/api/position", get(position))
        .route("/api/line", get(line))
        .route("/api/batch", post(batch))
        .route("/api/health", get(health))
        .layer(DefaultBodyLimit::max(BODY_MAX))
        .with_state(app);
    guard(routes)
}

/// Serve `db` on `listener` until the process ends, with the default [`Limits`].
pub async fn serve(db: Database, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    serve_with(db, listener, Limits::default()).await
}

/// Serve `db` on `listener` until the process ends.
pub async fn serve_with(
    db: Database,
    listener: tokio::net::TcpListener,
    limits: Limits,
) -> std::io::Result<()> {
    serve_router(router_with(db, limits), listener, limits).await
}

/// Bind `addr` and serve `db` there, on a runtime of its own, with the default [`Limits`];
/// calls `bound` with the address actually bound (port 0 picks a free one).
pub fn run(db: Database, addr: SocketAddr, bound: impl FnOnce(SocketAddr)) -> std::io::Result<()> {
    run_with(db, addr, Limits::default(), bound)
}

/// [`run`] with `limits` (the CLI's entry point).
pub fn run_with(
    db: Database,
    addr: SocketAddr,
    limits: Limits,
    bound: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        bound(listener.local_addr()?);
        serve_with(db, listener, limits).await
    })
}
