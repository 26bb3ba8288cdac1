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
//! other database failures are 500. Lookups read memory-mapped tables, so a page-cache miss
//! blocks the thread that takes it: every request that reads a table runs on tokio's blocking
//! pool, never on the async workers. At most one line per core is computed at a time (a line
//! is up to 2000 plies of lookups); further line requests wait their turn.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use awari_db::{Board, DbError};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::{check_playable, parse_captured, perfect_line, report, Database};

/// The most boards one batch request may hold.
pub const BATCH_MAX: usize = 10_000;
/// The longest line the server computes.
pub const LINE_MAX_PLIES: usize = 2000;

const PAGE: &str = include_str!("page.html");

struct App {
    db: Database,
    lines: Semaphore,
}

/// An error answer: status and the one-line message.
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, message.into())
}

impl From<DbError> for ApiError {
    fn from(e: DbError) -> ApiError {
        let status = match e {
            DbError::MissingLevel { .. } => StatusCode::NOT_FOUND,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(status, e.to_string())
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
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
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
        .map_err(|e| ApiError(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    let app = Arc::clone(&app);
    blocking(move || Ok(Json(perfect_line(&app.db, &board, max_plies)?.to_json()))).await
}

async fn batch(State(app): State<Arc<App>>, body: Bytes) -> Result<Json<Value>, ApiError> {
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
        let words: Vec<String> = match item {
            Value::Array(xs) => xs
                .iter()
                .map(|x| match x {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
            Value::String(s) => vec![s.clone()],
            other => vec![other.to_string()],
        };
        let board = Board::parse_words(&words).map_err(|e| bad(format!("board {k}: {e}")))?;
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

async fn health(State(app): State<Arc<App>>) -> Json<Value> {
    let levels: Vec<u32> = app.db.levels().present().collect();
    Json(json!({
        "status": "ok",
        "rules": app.db.rules().name(),
        "levels": levels,
        "raw": app.db.levels().is_raw(),
        "checksums": "headers and lengths checked when opened; data checksums are checked by `awari-solver verify`, not by the server",
    }))
}

/// The routes over `db`.
pub fn router(db: Database) -> Router {
    let app = Arc::new(App {
        db,
        lines: Semaphore::new(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        ),
    });
    Router::new()
        .route("/", get(page))
        .route("/api/position", get(position))
        .route("/api/line", get(line))
        .route("/api/batch", post(batch))
        .route("/api/health", get(health))
        .with_state(app)
}

/// Serve `db` on `listener` until the process ends.
pub async fn serve(db: Database, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    axum::serve(listener, router(db)).await
}

/// Bind `addr` and serve `db` there, on a runtime of its own (the CLI's entry point); calls
/// `bound` with the address actually bound (port 0 picks a free one).
pub fn run(db: Database, addr: SocketAddr, bound: impl FnOnce(SocketAddr)) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        bound(listener.local_addr()?);
        serve(db, listener).await
    })
}
