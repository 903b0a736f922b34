//! A plain fetch of a source URL: one GET, as nobody.
//!
//! Never through the browser. The publishing browser runs in the account's profile, which carries the
//! account's login (cookies, storage): a page fetched there is the page as that account sees it (personalized,
//! paywalled or not, with the account's name in it), and the fetch itself is a request made as the account,
//! which a source fetch must never be. A source is what anyone reading the link sees, so it is fetched by a
//! fresh HTTP client with no cookie store, no referer and no credentials, and read as served (scripts are
//! not run: the normalizer reads the HTML the server sends).
//!
//! Bounds: only `http` and `https` URLs (anything else is refused before any connection), at most
//! [`MAX_REDIRECTS`] redirects, the whole exchange (connect, redirects, headers, body) within the caller's
//! timeout, the body at most [`MAX_SOURCE_BYTES`] (after gzip/deflate decoding; reading stops as soon as it
//! is exceeded), and a status outside 2xx captures nothing.
use std::time::Duration;

use super::{MAX_SOURCE_BYTES, SourceError};

/// The most redirects followed before a fetch is refused.
pub const MAX_REDIRECTS: usize = 5;

/// The user agent every source fetch sends: says who fetches, and that it is not a browser.
pub const USER_AGENT: &str = concat!("oncepost/", env!("CARGO_PKG_VERSION"), " (source fetch)");

/// URLs in messages are cut to this many characters: a message is read by a person.
const URL_SHOWN_CHARS: usize = 300;

/// What a successful fetch brought back.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The body as sent (decoded from gzip/deflate), at most [`MAX_SOURCE_BYTES`].
    pub body: Vec<u8>,
    /// The `Content-Type` header, if any and readable.
    pub content_type: Option<String>,
    /// The URL that answered, after redirects.
    pub final_url: String,
    /// The HTTP status (2xx).
    pub status: u16,
}

/// A URL as shown in a message: redacted (credentials, token parameters) and cut.
fn shown(url: &str) -> String {
    let r = crate::redact::text(url.trim());
    if r.chars().count() > URL_SHOWN_CHARS {
        let cut: String = r.chars().take(URL_SHOWN_CHARS).collect();
        format!("{cut}...")
    } else {
        r
    }
}

/// An error and its causes on one line (reqwest's own message is only the outermost), redacted.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    crate::redact::text(&s)
}

/// GET `url` as nobody, within `timeout` for the whole exchange. See the module docs for the bounds.
pub async fn fetch(url: &str, timeout: Duration) -> Result<Fetched, SourceError> {
    let parsed = url::Url::parse(url.trim()).map_err(|e| SourceError::BadUrl {
        url: shown(url),
        why: e.to_string(),
    })?;
    match parsed.scheme() {
        "http" | "https" => {}
        other => {
            return Err(SourceError::Scheme {
                url: shown(url),
                scheme: other.to_string(),
            });
        }
    }
    // A fresh client per fetch: nothing (cookies, connections) is shared with any other request.
    // reqwest keeps no cookies unless a store is given, and none is.
    let client = reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
        .referer(false)
        .build()
        .map_err(|e| SourceError::Http {
            url: shown(url),
            why: format!("cannot build the HTTP client: {}", chain(&e)),
        })?;
    // One deadline over everything, body included: a server that trickles bytes cannot hold a fetch open.
    match tokio::time::timeout(timeout, exchange(&client, parsed)).await {
        Ok(result) => result,
        Err(_) => Err(SourceError::Timeout {
            url: shown(url),
            timeout,
        }),
    }
}

/// The GET and the bounded read of its body.
async fn exchange(client: &reqwest::Client, url: url::Url) -> Result<Fetched, SourceError> {
    let asked = url.to_string();
    let mut response = client
        .get(url)
        .send()
        .await
        .map_err(|e| transport_error(&asked, &e))?;
    let final_url = response.url().to_string();
    let status = response.status();
    if !status.is_success() {
        return Err(SourceError::Status {
            url: shown(&final_url),
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or("").to_string(),
        });
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    // A declared length over the limit is refused before reading anything.
    if response
        .content_length()
        .is_some_and(|n| n > MAX_SOURCE_BYTES as u64)
    {
        return Err(SourceError::FetchTooLarge {
            url: shown(&final_url),
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| transport_error(&final_url, &e))?
    {
        // Checked before the chunk is kept: the buffer never grows past the limit.
        if body.len() + chunk.len() > MAX_SOURCE_BYTES {
            return Err(SourceError::FetchTooLarge {
                url: shown(&final_url),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Fetched {
        body,
        content_type,
        final_url,
        status: status.as_u16(),
    })
}

fn transport_error(url: &str, e: &reqwest::Error) -> SourceError {
    if e.is_redirect() {
        SourceError::TooManyRedirects { url: shown(url) }
    } else {
        SourceError::Http {
            url: shown(url),
            why: chain(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const T: Duration = Duration::from_secs(20);

    #[tokio::test]
    async fn fetches_html_with_its_content_type() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/a"))
            .and(header("user-agent", USER_AGENT))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw("<p>hello</p>", "text/html; charset=utf-8"),
            )
            .expect(1)
            .mount(&server)
            .await;
        let url = format!("{}/a", server.uri());
        let f = fetch(&url, T).await.expect("fetched");
        assert_eq!(f.status, 200);
        assert_eq!(f.body, b"<p>hello</p>");
        assert_eq!(f.content_type.as_deref(), Some("text/html; charset=utf-8"));
        assert_eq!(f.final_url, url);
        // Sent without cookies or a referer.
        let reqs = server.received_requests().await.unwrap_or_default();
        assert_eq!(reqs.len(), 1);
        assert!(!reqs[0].headers.contains_key("cookie"));
        assert!(!reqs[0].headers.contains_key("referer"));
    }

    #[tokio::test]
    async fn follows_a_redirect_and_reports_where_it_landed() {
        let server = MockServer::start().await;
        Mock::given(path("/old"))
            .respond_with(ResponseTemplate::new(301).insert_header("location", "/new"))
            .mount(&server)
            .await;
        Mock::given(path("/new"))
            .respond_with(ResponseTemplate::new(200).set_body_raw("x", "text/plain"))
            .mount(&server)
            .await;
        let f = fetch(&format!("{}/old", server.uri()), T)
            .await
            .expect("fetched");
        assert_eq!(f.final_url, format!("{}/new", server.uri()));
    }

    #[tokio::test]
    async fn more_than_five_redirects_are_refused() {
        let server = MockServer::start().await;
        for i in 0..=MAX_REDIRECTS {
            Mock::given(path(format!("/r{i}")))
                .respond_with(
                    ResponseTemplate::new(302).insert_header("location", format!("/r{}", i + 1)),
                )
                .mount(&server)
                .await;
        }
        let e = fetch(&format!("{}/r0", server.uri()), T)
            .await
            .expect_err("refused");
        assert!(matches!(e, SourceError::TooManyRedirects { .. }), "{e}");
        assert!(e.to_string().contains("more than 5 times"), "{e}");
    }

    #[tokio::test]
    async fn a_404_is_refused() {
        let server = MockServer::start().await;
        Mock::given(path("/gone"))
            .respond_with(ResponseTemplate::new(404).set_body_raw("no", "text/plain"))
            .mount(&server)
            .await;
        let e = fetch(&format!("{}/gone", server.uri()), T)
            .await
            .expect_err("refused");
        assert!(matches!(e, SourceError::Status { status: 404, .. }), "{e}");
        let m = e.to_string();
        assert!(m.contains("the source URL answered 404 Not Found"), "{m}");
        assert!(m.contains("nothing was captured"), "{m}");
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_refused() {
        let server = MockServer::start().await;
        Mock::given(path("/big"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_raw(vec![b'a'; MAX_SOURCE_BYTES + 1], "text/plain"),
            )
            .mount(&server)
            .await;
        let e = fetch(&format!("{}/big", server.uri()), T)
            .await
            .expect_err("refused");
        assert!(matches!(e, SourceError::FetchTooLarge { .. }), "{e}");
        assert!(e.to_string().contains("4194304 bytes"), "{e}");

        // Exactly the limit is fine.
        Mock::given(path("/limit"))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw(vec![b'a'; MAX_SOURCE_BYTES], "text/plain"),
            )
            .mount(&server)
            .await;
        let f = fetch(&format!("{}/limit", server.uri()), T)
            .await
            .expect("fetched");
        assert_eq!(f.body.len(), MAX_SOURCE_BYTES);
    }

    /// A chunked body has no declared length: the limit is held while reading. The server is a raw
    /// socket on loopback (wiremock always declares a length).
    #[tokio::test]
    async fn a_chunked_body_over_the_limit_stops_reading() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(async move {
            let Ok((mut sock, _)) = listener.accept().await else {
                return 0usize;
            };
            let mut req = [0u8; 4096];
            let _ = sock.read(&mut req).await;
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n";
            if sock.write_all(head.as_bytes()).await.is_err() {
                return 0;
            }
            let chunk = vec![b'a'; 64 * 1024];
            let mut sent = 0usize;
            // Far more than any socket buffers hold: the client must hang up long before.
            while sent < 16 * MAX_SOURCE_BYTES {
                let frame = format!("{:x}\r\n", chunk.len());
                if sock.write_all(frame.as_bytes()).await.is_err()
                    || sock.write_all(&chunk).await.is_err()
                    || sock.write_all(b"\r\n").await.is_err()
                {
                    break;
                }
                sent += chunk.len();
            }
            let _ = sock.write_all(b"0\r\n\r\n").await;
            sent
        });
        let e = fetch(&format!("http://{addr}/stream"), T)
            .await
            .expect_err("refused");
        assert!(matches!(e, SourceError::FetchTooLarge { .. }), "{e}");
        let sent = tokio::time::timeout(T, server)
            .await
            .expect("the server saw the client hang up")
            .unwrap_or(0);
        assert!(sent < 16 * MAX_SOURCE_BYTES, "the client read to the end");
    }

    #[tokio::test]
    async fn only_http_and_https_are_fetched() {
        for url in [
            "ftp://example.org/a.txt",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "data:text/plain,hi",
        ] {
            let e = fetch(url, T).await.expect_err(url);
            assert!(matches!(e, SourceError::Scheme { .. }), "{url}: {e}");
            assert!(e.to_string().contains("only http and https"), "{e}");
        }
        let e = fetch("not a url", T).await.expect_err("bad");
        assert!(matches!(e, SourceError::BadUrl { .. }), "{e}");
    }

    #[tokio::test]
    async fn a_slow_answer_past_the_timeout_is_refused() {
        let server = MockServer::start().await;
        Mock::given(path("/slow"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_raw("late", "text/plain")
                    .set_delay(Duration::from_secs(5)),
            )
            .mount(&server)
            .await;
        let started = std::time::Instant::now();
        let e = fetch(
            &format!("{}/slow", server.uri()),
            Duration::from_millis(300),
        )
        .await
        .expect_err("refused");
        assert!(matches!(e, SourceError::Timeout { .. }), "{e}");
        assert!(e.to_string().contains("300ms"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(4));
    }

    #[test]
    fn messages_redact_credentials_in_urls() {
        assert!(!shown("https://user:hunter2@example.org/a").contains("hunter2"));
        assert!(shown(&"x".repeat(1000)).chars().count() < 400);
    }
}
