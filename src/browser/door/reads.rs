//! Every read the page makes (GET and HEAD, from any frame, worker or service worker) is fetched by
//! oncepost's own client and handed to the page with `Fetch.fulfillRequest`; Chromium itself never opens a
//! connection to anything (its proxy is the sinkhole).
//!
//! Measured with this design inside oncepost (write-channels-facts.md): no cost on ordinary pages (publish
//! 1622 vs 1716 ms, 300 small scripts faster); a 20 MB body 999 ms vs 433 ms; a body of about 85 MB or more
//! dropped the whole DevTools connection, so bodies are capped at [`MAX_READ_BODY`] and the one request
//! above it fails. A fulfilled request gets its whole body at once, so a response that streams reaches the
//! page only when it ends: a long poll ends by itself (bounded by the read timeout); a server-sent event
//! stream (`text/event-stream`) never does, and a page that shows its posts from one (a live feed) would show
//! nothing. So an event stream is handed over in pieces: what arrived once a complete event is in and the
//! stream has been quiet [`EVENTS_QUIET`] (or [`EVENTS_MAX`] after it began), then the stream is closed; the
//! page's `EventSource` fires those events and reconnects by itself (with `Last-Event-ID`) for the next.
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::fetch::EventRequestPaused;
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;

use super::super::BrowserError;
use super::super::transport::build_wire_request;

/// The largest response body handed to a page.
pub const MAX_READ_BODY: usize = 32 * 1024 * 1024;
/// TCP (and TLS) setup bound of one read.
const READ_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Whole-read bound.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// An event stream is handed over once it has held a complete event and been quiet this long...
const EVENTS_QUIET: Duration = Duration::from_millis(150);
/// ...or this long after its answer began, whatever it holds (an `EventSource` then reconnects).
const EVENTS_MAX: Duration = Duration::from_secs(3);

/// What the page gets for one read.
#[derive(Debug)]
pub enum ReadAnswer {
    /// The response, to fulfil the paused request with.
    Fulfill {
        /// Status code.
        status: u16,
        /// Response headers, one entry per value (each `Set-Cookie` its own: Chromium then stores it).
        headers: Vec<(String, String)>,
        /// The decoded body.
        body: Vec<u8>,
    },
    /// No response: the page sees this network error.
    Fail {
        /// The error the page sees.
        reason: ErrorReason,
        /// Why, for the guard's fault log.
        why: String,
    },
}

/// The client that fetches the page's reads: pooled, no proxy, redirects handed back to Chromium (which
/// follows them, and the next hop pauses again), gzip/deflate asked for and decoded.
#[derive(Debug, Clone)]
pub struct ReadFetcher {
    client: reqwest::Client,
}

impl ReadFetcher {
    /// A fetcher with the door's bounds.
    pub fn new() -> Result<Self, BrowserError> {
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(READ_CONNECT_TIMEOUT)
            .timeout(READ_TIMEOUT)
            .gzip(true)
            .deflate(true)
            .build()
            .map_err(|e| BrowserError::Launch {
                message: format!("cannot build the door's read client: {e}"),
            })?;
        Ok(ReadFetcher { client })
    }

    /// Fetch the read a paused request asks for. Only GET, HEAD and CORS preflights (OPTIONS) to http(s)
    /// are fetched, without a body: the guard never hands anything else here.
    pub async fn fetch(&self, ev: &EventRequestPaused) -> ReadAnswer {
        let method = ev.request.method.to_ascii_uppercase();
        let method = match method.as_str() {
            "GET" => reqwest::Method::GET,
            "HEAD" => reqwest::Method::HEAD,
            "OPTIONS" => reqwest::Method::OPTIONS,
            other => {
                return ReadAnswer::Fail {
                    reason: ErrorReason::BlockedByClient,
                    why: format!("{other} is not a read"),
                };
            }
        };
        self.pass(ev, method, None).await
    }

    /// Send a write the contract declares non-publishing (the guard decided that; never the create
    /// request), with its body, and bring back the answer for the page. Such writes are harmless by
    /// declaration, so the pooled client is fine here; the create request has its own one-shot sender.
    pub async fn send_declared(&self, ev: &EventRequestPaused) -> ReadAnswer {
        let wire = match build_wire_request(ev) {
            Ok(w) => w,
            Err(why) => {
                return ReadAnswer::Fail {
                    reason: ErrorReason::Failed,
                    why,
                };
            }
        };
        let method = match reqwest::Method::from_bytes(wire.method.to_ascii_uppercase().as_bytes())
        {
            Ok(m) => m,
            Err(e) => {
                return ReadAnswer::Fail {
                    reason: ErrorReason::BlockedByClient,
                    why: format!("bad method {:?}: {e}", wire.method),
                };
            }
        };
        self.pass(ev, method, Some(wire.body)).await
    }

    async fn pass(
        &self,
        ev: &EventRequestPaused,
        method: reqwest::Method,
        body: Option<Vec<u8>>,
    ) -> ReadAnswer {
        let url = match url::Url::parse(&ev.request.url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => u,
            _ => {
                return ReadAnswer::Fail {
                    reason: ErrorReason::BlockedByClient,
                    why: format!("not an http(s) read: {}", ev.request.url),
                };
            }
        };
        // Chromium's own headers for this request (Cookie included, HttpOnly too), minus hop-by-hop ones and
        // Accept-Encoding: the client asks for what it can decode.
        let headers = match build_wire_request(ev) {
            Ok(w) => w.headers,
            Err(why) => {
                return ReadAnswer::Fail {
                    reason: ErrorReason::Failed,
                    why,
                };
            }
        };
        let mut b = self.client.request(method, url);
        for (k, v) in &headers {
            b = b.header(k, v);
        }
        if let Some(body) = body {
            b = b.body(body);
        }
        let mut resp = match b.send().await {
            Ok(r) => r,
            Err(e) => {
                let reason = if e.is_timeout() {
                    ErrorReason::TimedOut
                } else if e.is_connect() {
                    ErrorReason::ConnectionRefused
                } else {
                    ErrorReason::Failed
                };
                return ReadAnswer::Fail {
                    reason,
                    why: format!("read {} failed: {e}", ev.request.url),
                };
            }
        };
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let event_stream = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.trim_start().starts_with("text/event-stream"));
        let began = tokio::time::Instant::now();
        let mut body = Vec::new();
        loop {
            let next = if event_stream {
                // Quiet after a complete event, else until the stream's bound: then hand over what came.
                let until = if holds_an_event(&body) {
                    (tokio::time::Instant::now() + EVENTS_QUIET).min(began + EVENTS_MAX)
                } else {
                    began + EVENTS_MAX
                };
                match tokio::time::timeout_at(until, resp.chunk()).await {
                    Ok(next) => next,
                    Err(_) => break,
                }
            } else {
                resp.chunk().await
            };
            match next {
                Ok(Some(c)) => {
                    if body.len() + c.len() > MAX_READ_BODY {
                        return ReadAnswer::Fail {
                            reason: ErrorReason::Failed,
                            why: format!(
                                "read {} is over {} MiB: not handed to the page",
                                ev.request.url,
                                MAX_READ_BODY / (1024 * 1024)
                            ),
                        };
                    }
                    body.extend_from_slice(&c);
                }
                Ok(None) => break,
                Err(e) => {
                    return ReadAnswer::Fail {
                        reason: if e.is_timeout() {
                            ErrorReason::TimedOut
                        } else {
                            ErrorReason::Failed
                        },
                        why: format!("read {} broke off: {e}", ev.request.url),
                    };
                }
            }
        }
        ReadAnswer::Fulfill {
            status,
            headers,
            body,
        }
    }
}

/// Whether an event-stream body holds at least one complete event (a blank line ends one).
fn holds_an_event(body: &[u8]) -> bool {
    body.windows(2).any(|w| w == b"\n\n")
        || body.windows(4).any(|w| w == b"\r\n\r\n")
        || body.windows(2).any(|w| w == b"\r\r")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// "decoded by the door", gzip-encoded (mtime 0).
    const GZIP: &[u8] = &[
        31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 75, 73, 77, 206, 79, 73, 77, 81, 72, 170, 84, 40, 201, 72,
        85, 72, 201, 207, 47, 2, 0, 249, 31, 65, 248, 19, 0, 0, 0,
    ];
    /// The same text, HTTP's "deflate" (zlib-wrapped).
    const DEFLATE: &[u8] = &[
        120, 156, 75, 73, 77, 206, 79, 73, 77, 81, 72, 170, 84, 40, 201, 72, 85, 72, 201, 207, 47,
        2, 0, 69, 197, 6, 249,
    ];

    /// A server that answers one request with `body` under `Content-Encoding: encoding`; its URL, and the
    /// request head it read.
    async fn encoded_once(
        encoding: &'static str,
        body: &'static [u8],
    ) -> (String, tokio::task::JoinHandle<String>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/page.js", listener.local_addr().unwrap());
        let served = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = sock.read(&mut buf).await.unwrap();
                assert!(n > 0, "the request head ended early");
                head.extend_from_slice(&buf[..n]);
            }
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/javascript\r\ncontent-encoding: {encoding}\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            sock.write_all(answer.as_bytes()).await.unwrap();
            sock.write_all(body).await.unwrap();
            sock.shutdown().await.unwrap();
            String::from_utf8_lossy(&head).to_ascii_lowercase()
        });
        (url, served)
    }

    /// A server-sent event stream that sends one event after 100 ms and then stays open (a live feed): the
    /// page gets that event within the quiet bound, not after the 30 s read timeout (a failed read).
    #[tokio::test]
    async fn an_event_stream_is_handed_over_once_an_event_came_and_it_went_quiet() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/stream", listener.local_addr().unwrap());
        let served = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = sock.read(&mut buf).await.unwrap();
            sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
            sock.write_all(b"event: posts\ndata: {\"ok\":true}\n\n")
                .await
                .unwrap();
            // Open until the reader goes (a live stream never ends by itself).
            let _ = sock.read(&mut buf).await;
        });
        let t = std::time::Instant::now();
        let answer = ReadFetcher::new().unwrap().fetch(&paused_get(&url)).await;
        let took = t.elapsed();
        let ReadAnswer::Fulfill { status, body, .. } = answer else {
            panic!("{answer:?}");
        };
        assert_eq!(status, 200);
        assert_eq!(body, b"event: posts\ndata: {\"ok\":true}\n\n");
        assert!(took < EVENTS_MAX, "handed over after {took:?}");
        served.await.unwrap();
    }

    /// A paused GET of `url` as Chromium reports it, with Chromium's own Accept-Encoding.
    fn paused_get(url: &str) -> EventRequestPaused {
        serde_json::from_value(serde_json::json!({
            "requestId": "interception-1",
            "frameId": "frame-1",
            "resourceType": "Script",
            "request": {
                "url": url,
                "method": "GET",
                "headers": { "Accept-Encoding": "gzip, deflate, br, zstd", "Accept": "*/*" },
                "initialPriority": "High",
                "referrerPolicy": "no-referrer",
            },
        }))
        .expect("a paused request")
    }

    /// The page gets the decoded body, and no Content-Encoding (nor the encoded length) that would make
    /// Chromium decode it a second time. The request asks only for what the client decodes.
    #[tokio::test]
    async fn gzip_and_deflate_reads_reach_the_page_decoded() {
        let fetcher = ReadFetcher::new().unwrap();
        for (encoding, body) in [("gzip", GZIP), ("deflate", DEFLATE)] {
            let (url, served) = encoded_once(encoding, body).await;
            let answer = fetcher.fetch(&paused_get(&url)).await;
            let head = served.await.unwrap();
            let ReadAnswer::Fulfill {
                status,
                headers,
                body,
            } = answer
            else {
                panic!("{encoding}: {answer:?}");
            };
            assert_eq!(status, 200);
            assert_eq!(body, b"decoded by the door", "{encoding}");
            assert!(
                !headers
                    .iter()
                    .any(|(k, _)| k == "content-encoding" || k == "content-length"),
                "{encoding}: {headers:?}"
            );
            let accepted = head
                .lines()
                .find_map(|l| l.strip_prefix("accept-encoding:"))
                .map(str::trim)
                .unwrap_or_default()
                .to_string();
            assert!(
                accepted.contains("gzip")
                    && accepted.contains("deflate")
                    && !accepted.contains("br"),
                "{encoding}: accept-encoding {accepted:?}"
            );
        }
    }
}
