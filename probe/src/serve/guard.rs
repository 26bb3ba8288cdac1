//! What stands between a client and the routes: the connections (hyper's HTTP/1 server,
//! driven here so that a client that never finishes its headers is cut off), a body too large
//! refused before it is read, a panic in a handler turned into a generic 500, and every error
//! answer made JSON, `{"error": "..."}`, with no internal text in it.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;

use super::{ApiError, Limits, BODY_MAX, INTERNAL_ERROR};

/// `router` with the guards of this module around every route and the fallbacks.
pub fn guard(router: Router) -> Router {
    router.layer(axum::middleware::from_fn(guard_request))
}

/// The 413 of a body over [`BODY_MAX`] bytes.
pub(super) fn too_large() -> ApiError {
    ApiError(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the request body is larger than {BODY_MAX} bytes"),
    )
}

async fn guard_request(request: Request, next: Next) -> Response {
    // Refused before a byte of the body is read: a client announcing 100 TB gets its answer
    // at once, not after the server has waited for it.
    let announced = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > BODY_MAX as u64) {
        return too_large().into_response();
    }
    let method = request.method().clone();
    let path: String = request.uri().path().chars().take(200).collect();
    match CatchPanic(Box::pin(next.run(request))).await {
        Ok(response) => json_errors(response, &method, &path).await,
        Err(()) => {
            // The panic's own text went to stderr through the panic hook.
            eprintln!("awari-probe serve: error: a handler panicked answering {method} {path}");
            ApiError(StatusCode::INTERNAL_SERVER_ERROR, INTERNAL_ERROR.into()).into_response()
        }
    }
}

/// An error answer that is not JSON already (a rejection of axum's, a route or a method that
/// does not exist) made `{"error": ...}`: a 5xx says only [`INTERNAL_ERROR`], a 4xx the first
/// line of its text, or what its status means.
async fn json_errors(response: Response, method: &Method, path: &str) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if status.as_u16() < 400 || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let message = match status {
        StatusCode::NOT_FOUND => format!("no such page: {method} {path}"),
        StatusCode::METHOD_NOT_ALLOWED => format!("{method} is not allowed on {path}"),
        StatusCode::PAYLOAD_TOO_LARGE => too_large().1,
        s if s.is_server_error() => INTERNAL_ERROR.into(),
        s => {
            let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
            let text = String::from_utf8_lossy(&text);
            match text.lines().next().map(str::trim) {
                Some(line) if !line.is_empty() => line.chars().take(300).collect(),
                _ => s.canonical_reason().unwrap_or("error").to_lowercase(),
            }
        }
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let body = serde_json::json!({ "error": message }).to_string();
    Response::from_parts(parts, axum::body::Body::from(body))
}

/// A future whose panic, while it is polled, is `Err(())` instead of unwinding through the
/// server (the connection would be dropped without an answer).
struct CatchPanic<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(Err(())),
        }
    }
}

/// Serve `router` on `listener` until the process ends: HTTP/1.1, each connection on a task
/// of its own, closed when a request's headers take longer than `limits.header_timeout`
/// (from the connection's start, or from the previous answer on a kept-alive one).
pub async fn serve_router(
    router: Router,
    listener: tokio::net::TcpListener,
    limits: Limits,
) -> std::io::Result<()> {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // A connection that failed before it was accepted: nothing to answer.
            Err(e) if is_connection_error(&e) => continue,
            // Out of file descriptors, say: wait for connections to close.
            Err(e) => {
                eprintln!("awari-probe serve: cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = http.serve_connection(TokioIo::new(stream), service);
        tokio::spawn(async move {
            // A client that went away, or timed out: nothing to do.
            let _ = connection.await;
        });
    }
}

fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    )
}
