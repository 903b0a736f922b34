//! Fixturebook's live channels, for the pages that publish without HTTP (the class of Phoenix LiveView,
//! Meteor/DDP and chat UIs): a WebSocket at `GET /api/live` that saves drafts and publishes posts from
//! frames, and a UDP socket on the same port number that counts every datagram (a WebRTC page's STUN/ICE
//! traffic aims there). Every handshake, frame and datagram is counted before anything else, so a test can
//! show that none arrived.
//!
//! Frames (text, JSON): `{"type":"draft","text":..}` (counted, answered `{"ok":true}`) and
//! `{"type":"publish","text":..,"title"?:..}` (stores a post by the connection's account, answered
//! `{"ok":true,"id":..,"url":..}`). The platform's create fault hits a publish frame too: `commit-then-drop`
//! and `commit-then-500` store it and close the socket unanswered, `commit-then-delay` answers late,
//! `reset-before-read` closes it before storing, `reject-4xx` answers `{"ok":false}`, `no-success-signal`
//! answers `{"ok":true}` without the id.
use std::sync::Arc;

use async_tungstenite::WebSocketStream;
use async_tungstenite::tokio::TokioAdapter;
use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::handshake::derive_accept_key;
use async_tungstenite::tungstenite::protocol::Role;
use futures::StreamExt;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;

use super::Shared;
use super::fault::FaultMode;

/// `GET /api/live` with `Upgrade: websocket`: count the handshake, answer 101, serve frames.
pub(crate) fn upgrade(
    mut req: Request<Incoming>,
    shared: Arc<Shared>,
    account: String,
) -> Response<Full<Bytes>> {
    shared.lock_stats().websocket_handshakes += 1;
    let is_ws = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let key = req
        .headers()
        .get("sec-websocket-key")
        .map(|k| derive_accept_key(k.as_bytes()));
    let (true, Some(accept)) = (is_ws, key) else {
        let mut r = Response::new(Full::new(Bytes::from_static(b"WebSocket only\n")));
        *r.status_mut() = StatusCode::BAD_REQUEST;
        return r;
    };
    let upgrading = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(upgraded) = upgrading.await else {
            return;
        };
        let io = TokioAdapter::new(TokioIo::new(upgraded));
        let ws = WebSocketStream::from_raw_socket(io, Role::Server, None).await;
        serve(ws, shared, account).await;
    });
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(
        header::UPGRADE,
        header::HeaderValue::from_static("websocket"),
    );
    h.insert(
        header::CONNECTION,
        header::HeaderValue::from_static("Upgrade"),
    );
    if let Ok(v) = header::HeaderValue::from_str(&accept) {
        h.insert("sec-websocket-accept", v);
    }
    r
}

async fn serve<S>(ws: WebSocketStream<S>, shared: Arc<Shared>, account: String)
where
    S: futures::AsyncRead + futures::AsyncWrite + Unpin,
{
    let (mut tx, mut rx) = ws.split();
    while let Some(Ok(msg)) = rx.next().await {
        let text = match msg {
            Message::Text(t) => t.to_string(),
            Message::Close(_) => break,
            _ => continue,
        };
        shared.lock_stats().websocket_frames += 1;
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let publish = v.get("type").and_then(|t| t.as_str()) == Some("publish");
        // The create faults hit a publish frame as they hit the create request: what a socket can show of
        // them (no answer after the commit, a late one, the connection dropped before anything is stored).
        let fault = shared.fault();
        if publish && fault.mode == FaultMode::ResetBeforeRead {
            break;
        }
        let answer = match v.get("type").and_then(|t| t.as_str()) {
            Some("publish") => {
                let body = v.get("text").and_then(|t| t.as_str()).unwrap_or("");
                if body.trim().is_empty() {
                    serde_json::json!({"ok": false, "error": "text is empty"})
                } else if matches!(
                    fault.mode,
                    FaultMode::Reject4xx | FaultMode::RateLimited | FaultMode::SessionExpired
                ) {
                    serde_json::json!({"ok": false, "error": "rejected"})
                } else {
                    let title = v
                        .get("title")
                        .and_then(|t| t.as_str())
                        .filter(|t| !t.trim().is_empty())
                        .map(String::from);
                    let post =
                        shared
                            .lock_state()
                            .add_post(body.to_string(), title, account.clone());
                    let _ = shared.persist().await;
                    shared.lock_stats().create_stored += 1;
                    shared.lock_stats().websocket_posts += 1;
                    match fault.mode {
                        FaultMode::CommitThenDrop | FaultMode::CommitThen500 => break,
                        FaultMode::CommitThenDelay => {
                            tokio::time::sleep(fault.delay()).await;
                            serde_json::json!({"ok": true, "id": post.id, "url": format!("/p/{}", post.id)})
                        }
                        FaultMode::NoSuccessSignal => serde_json::json!({"ok": true}),
                        _ => {
                            serde_json::json!({"ok": true, "id": post.id, "url": format!("/p/{}", post.id)})
                        }
                    }
                }
            }
            _ => serde_json::json!({"ok": true}),
        };
        if tx.send(Message::text(answer.to_string())).await.is_err() {
            break;
        }
    }
}

/// Count every datagram that reaches UDP `port` on 127.0.0.1 (the TCP port's number), until the task is
/// aborted.
pub(crate) async fn count_datagrams(socket: tokio::net::UdpSocket, shared: Arc<Shared>) {
    let mut buf = [0u8; 2048];
    while socket.recv_from(&mut buf).await.is_ok() {
        shared.lock_stats().udp_datagrams += 1;
    }
}
