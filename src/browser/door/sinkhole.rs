//! The sinkhole: the only proxy Chromium knows. It reads a request head, records it, answers 403 and
//! closes. Nothing is ever forwarded, so whatever reaches it (a WebSocket or WebTransport handshake, a
//! TURN/TCP relay, Chromium's own background calls) goes no further than this process.
//!
//! Through an HTTP proxy even plain `ws://` arrives as `CONNECT host:port` (measured), so one refused
//! attempt is one line here, from any frame or worker, and no page data. A tunnel is recorded the moment it
//! is asked for, then opened and read before it is refused: the request inside it (over TLS ended here with
//! the door's own certificate, which the browser pins) says what it was, which its `CONNECT` line cannot.
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::super::BrowserError;
use super::socket::{self, NotRelayed, SocketDoor};

/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(3);
/// The most of a request head that is read (and kept, cut to [`KEPT_LINE`]).
const HEAD_MAX: usize = 8 * 1024;
/// The most of a request line kept in the ledger.
const KEPT_LINE: usize = 512;
/// The most knocks kept (a page hammering the door must not grow memory without bound).
const LEDGER_MAX: usize = 10_000;

/// Hosts Chromium itself calls at start-up and now and then, with every background switch set (measured:
/// about 13 lines per launch: start.duckduckgo.com, content-autofill.googleapis.com, accounts.google.com,
/// update.googleapis.com, clients2.google.com). Refused like everything else; only not an alarm.
const CHROMIUM_OWN: &[&str] = &[
    "google.com",
    "googleapis.com",
    "gstatic.com",
    "gvt1.com",
    "gvt2.com",
    "googleusercontent.com",
    "duckduckgo.com",
];

/// One refused attempt to go past the door.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Knock {
    /// Order of arrival (0-based, over the session).
    pub seq: usize,
    /// Milliseconds since the door opened.
    pub at_ms: u64,
    /// The request line as received (cut), e.g. `CONNECT 127.0.0.1:8080 HTTP/1.1`.
    pub request_line: String,
    /// The host it wanted to reach.
    pub host: String,
    /// The port it wanted to reach, when the request line names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// True when the host is one Chromium calls by itself, the head (or, for a tunnel, the head inside it)
    /// is the browser's own speculative load (`Sec-Purpose: prefetch`), or nothing was asked at all (not an
    /// alarm).
    pub chromium_own: bool,
    /// For a tunnel: the request read inside it before it was refused (none when it carried no HTTP request,
    /// such as TURN, or showed none in time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inside: Option<Inside>,
}

/// The request a refused tunnel carried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Inside {
    /// Its request line, without the query (a socket's URL may carry a session token), cut.
    pub request_line: String,
    /// It came inside TLS (an `https://` load, a `wss://` socket).
    pub tls: bool,
    /// It asked to become a WebSocket (`Upgrade: websocket`).
    pub websocket: bool,
}

impl Knock {
    /// What this knock most likely was, for a person reading evidence.
    pub fn describe(&self) -> String {
        if self.request_line.starts_with("CONNECT ") {
            match &self.inside {
                Some(i) => format!(
                    "a tunnel to {} carrying {}{} ({}) was refused",
                    self.host,
                    if i.websocket {
                        "a WebSocket handshake"
                    } else {
                        "a request"
                    },
                    if i.tls { " over TLS" } else { "" },
                    i.request_line
                ),
                None => format!(
                    "a tunnel to {} (a WebSocket, WebTransport or TURN connection) was refused",
                    self.host
                ),
            }
        } else {
            format!(
                "a request that did not go through oncepost ({}) was refused",
                self.request_line
            )
        }
    }
}

/// Where a contract says its page's live sockets connect (`live_sockets`: a timeline's updates, a chat's
/// presence): a host and port, which is all a proxied socket shows of itself (`CONNECT host:port`, never
/// its path). Such an attempt is refused like any other; declared, it is not taken for the page's way to
/// publish (see [`Sinkhole::page_knocks_since`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveSocket {
    /// Host, lowercase (an IPv6 address without brackets).
    pub host: String,
    /// Port.
    pub port: u16,
    /// A `wss://` one (its tunnel carries TLS).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tls: bool,
    /// Relayed instead of refused (`relay = true`: `socket.rs`); refused knocks to it (where nothing is
    /// relayed) are still not taken for a way out.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub relay: bool,
}

impl LiveSocket {
    /// Whether `knock` was a tunnel to this host and port.
    pub fn matches(&self, knock: &Knock) -> bool {
        knock.request_line.starts_with("CONNECT ")
            && knock.host == self.host
            && knock.port == Some(self.port)
    }
}

#[derive(Debug)]
struct Ledger {
    opened: Instant,
    knocks: Vec<Knock>,
    dropped: usize,
}

/// A running sinkhole; its accept loop stops when the last handle is dropped.
#[derive(Debug, Clone)]
pub struct Sinkhole {
    addr: SocketAddr,
    ledger: Arc<Mutex<Ledger>>,
    /// The live sockets the running publish or probe's contract declares (empty: none).
    live: Arc<Mutex<Vec<LiveSocket>>>,
    /// The one socket relayed instead of refused: the create socket of a contract that publishes over a
    /// WebSocket (`socket.rs`).
    sockets: SocketDoor,
    task: Arc<tokio::task::JoinHandle<()>>,
}

impl Drop for Sinkhole {
    fn drop(&mut self) {
        // The last handle stops the accept loop.
        if Arc::strong_count(&self.task) == 1 {
            self.task.abort();
        }
    }
}

impl Sinkhole {
    /// Listen on a free port of 127.0.0.1. A tunnel `sockets` relays is handed to it; every other is refused.
    pub async fn start(sockets: SocketDoor) -> Result<Sinkhole, BrowserError> {
        let listener =
            TcpListener::bind("127.0.0.1:0")
                .await
                .map_err(|e| BrowserError::Launch {
                    message: format!("cannot open the network door (127.0.0.1): {e}"),
                })?;
        let addr = listener.local_addr().map_err(|e| BrowserError::Launch {
            message: format!("cannot read the door's address: {e}"),
        })?;
        let ledger = Arc::new(Mutex::new(Ledger {
            opened: Instant::now(),
            knocks: Vec::new(),
            dropped: 0,
        }));
        let l2 = ledger.clone();
        let s2 = sockets.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    // Out of descriptors or similar: back off a little instead of spinning.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                let ledger = l2.clone();
                let sockets = s2.clone();
                tokio::spawn(async move { answer(stream, &ledger, sockets).await });
            }
        });
        Ok(Sinkhole {
            addr,
            ledger,
            live: Arc::new(Mutex::new(Vec::new())),
            sockets,
            task: Arc::new(task),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many knocks so far (a mark for [`Sinkhole::knocks_since`]).
    pub fn mark(&self) -> usize {
        let l = self.ledger.lock().unwrap_or_else(PoisonError::into_inner);
        l.knocks.len() + l.dropped
    }

    /// Every knock after `mark`, Chromium's own included.
    pub fn knocks_since(&self, mark: usize) -> Vec<Knock> {
        let l = self.ledger.lock().unwrap_or_else(PoisonError::into_inner);
        l.knocks.iter().filter(|k| k.seq >= mark).cloned().collect()
    }

    /// The live sockets of the contract a publish or probe now runs (`live_sockets`), replacing the last
    /// one's: every publish and probe of a session sets its own, none for a contract that declares none.
    pub fn declare_live_sockets(&self, live: Vec<LiveSocket>) {
        // The ones to relay go to the socket door (which relays them while a publish or probe runs).
        self.sockets
            .set_live(live.iter().filter(|l| l.relay).cloned().collect());
        *self.live.lock().unwrap_or_else(PoisonError::into_inner) = live;
    }

    /// The knocks after `mark` that are neither Chromium's own nor a declared live socket: the page tried
    /// a channel oncepost refuses, which may be how it publishes.
    pub fn page_knocks_since(&self, mark: usize) -> Vec<Knock> {
        self.page_knocks_where(mark, false)
    }

    /// The knocks after `mark` to a declared live socket: refused like the others (nothing went further),
    /// kept as evidence, never an alarm.
    pub fn live_knocks_since(&self, mark: usize) -> Vec<Knock> {
        self.page_knocks_where(mark, true)
    }

    /// The page's knocks (not Chromium's own) after `mark` that are (`live`) or are not to a declared live
    /// socket.
    fn page_knocks_where(&self, mark: usize, live: bool) -> Vec<Knock> {
        let declared = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        // The create socket of a contract that publishes over a WebSocket, while it is refused (a probe): the
        // page's own socket, not a way out it tried.
        let create = self
            .sockets
            .refused_endpoint()
            .map(|(host, port)| LiveSocket {
                host,
                port,
                tls: false,
                relay: false,
            });
        let mut v = self.knocks_since(mark);
        v.retain(|k| {
            !k.chromium_own
                && (declared.iter().any(|s| s.matches(k))
                    || create.as_ref().is_some_and(|s| s.matches(k)))
                    == live
        });
        v
    }
}

/// Read a request head; relay it when it is a tunnel to the create socket of a running publish, else refuse
/// it (and record it either way it was refused).
async fn answer(mut stream: TcpStream, ledger: &Mutex<Ledger>, sockets: SocketDoor) {
    let Head {
        line, speculative, ..
    } = read_head(&mut stream).await;
    if line.starts_with("CONNECT ")
        && let (host, Some(port)) = target(&line)
        && sockets.relays(&host, port)
    {
        match socket::relay(stream, host.clone(), port, sockets).await {
            Ok(()) => {}
            // Refused inside the tunnel: a knock like any other, named for a person reading evidence.
            Err(why) => {
                let seen = match why {
                    NotRelayed::Tls => {
                        "TLS inside, where the create socket is a plain ws:// one".to_string()
                    }
                    NotRelayed::Plain => {
                        "no TLS inside, where the create socket is a wss:// one".to_string()
                    }
                    NotRelayed::OtherUrl(url) => format!("a socket to {url}, which no rule names"),
                    NotRelayed::NoHandshake => "no WebSocket handshake in it".to_string(),
                };
                record(ledger, &format!("{line} ({seen})"));
            }
        }
        return;
    }
    let seq = record_as(ledger, &line, speculative);
    if line.starts_with("CONNECT ") {
        look_inside(stream, ledger, seq).await;
        return;
    }
    refuse(&mut stream).await;
}

/// Answer 403 and close.
async fn refuse<S: AsyncWrite + Unpin>(stream: &mut S) {
    let _ = stream
        .write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .await;
    let _ = stream.shutdown().await;
}

/// Open a refused tunnel, read the request inside it, note it on the knock (already recorded, as the
/// page's: a check made meanwhile counts it, the cautious reading), then refuse that request. Over https a
/// tunnel's `CONNECT` line is all a proxy sees of a load: the browser's own speculative loads of a page's
/// speculation rules (`Sec-Purpose: prefetch`, which no page can send) show only inside, and without this
/// an https page with eager rules was never pressed (tests/it/door.rs). The browser's side of the TLS ends
/// here with the door's certificate (pinned at launch, `socket::DoorTls`); nothing is sent on, and a tunnel
/// that shows no request within the bounds is closed as it is.
async fn look_inside(mut stream: TcpStream, ledger: &Mutex<Ledger>, seq: Option<usize>) {
    let Some(tls) = socket::open_tunnel(&mut stream).await else {
        return;
    };
    if tls {
        let Ok(tls) = socket::DoorTls::get() else {
            return;
        };
        let Ok(Ok(mut inner)) =
            tokio::time::timeout(HEAD_TIMEOUT, tls.acceptor().accept(stream)).await
        else {
            return;
        };
        let head = read_head(&mut inner).await;
        note_inside(ledger, seq, &head, true);
        refuse(&mut inner).await;
    } else {
        let head = read_head(&mut stream).await;
        note_inside(ledger, seq, &head, false);
        refuse(&mut stream).await;
    }
}

/// Put what a tunnel carried on its knock: the request line (without its query) when it is one, and the
/// knock is the browser's own when the request inside is its speculative load.
fn note_inside(ledger: &Mutex<Ledger>, seq: Option<usize>, head: &Head, tls: bool) {
    let Some(request_line) = http_request_line(&head.line) else {
        return;
    };
    let mut l = ledger.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(k) = l.knocks.iter_mut().find(|k| Some(k.seq) == seq) {
        k.chromium_own |= head.speculative;
        k.inside = Some(Inside {
            request_line,
            tls,
            websocket: head.websocket,
        });
    }
}

/// `METHOD target HTTP/x` without the target's query, or `None` for bytes that are no request line.
fn http_request_line(line: &str) -> Option<String> {
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || method.is_empty()
        || !method.bytes().all(|b| b.is_ascii_uppercase())
        || !version.starts_with("HTTP/")
    {
        return None;
    }
    let path = match target.split_once('?') {
        Some((path, _)) => format!("{path}?…"),
        None => target.to_string(),
    };
    Some(format!("{method} {path} {version}"))
}

/// What a request head says: its first line (cut to [`KEPT_LINE`]), whether it is the browser's own
/// speculative load ([`is_speculative`]) and whether it asks for a WebSocket.
struct Head {
    line: String,
    speculative: bool,
    websocket: bool,
}

/// A request head, read within [`HEAD_TIMEOUT`].
async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> Head {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let read_head = async {
        while buf.len() < HEAD_MAX && !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(HEAD_TIMEOUT, read_head).await;
    let head = String::from_utf8_lossy(&buf);
    let line = head
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(KEPT_LINE)
        .collect();
    Head {
        line,
        speculative: is_speculative(&head),
        websocket: header_is(&head, "upgrade", "websocket"),
    }
}

/// Whether a head has header `name` whose value starts with `value` (both without regard to case).
fn header_is(head: &str, name: &str, value: &str) -> bool {
    head.lines().skip(1).any(|h| {
        h.split_once(':').is_some_and(|(n, v)| {
            n.trim().eq_ignore_ascii_case(name) && v.trim().to_ascii_lowercase().starts_with(value)
        })
    })
}

/// A head carrying `Sec-Purpose: prefetch` (or `prefetch;prerender`) is the browser's own speculative load:
/// a page's speculation rules (`<script type="speculationrules">`, which WordPress 6.8 and many shops ship)
/// have Chromium fetch the listed pages by itself, from the browser process, around CDP `Fetch`, so it
/// reaches this sinkhole (measured on the headless shell 156: both carry the header). No page can send the
/// header (`Sec-` names are forbidden to scripts), and it is refused like any knock: nothing leaves. Over
/// https the header is inside the tunnel's TLS, read there ([`look_inside`]).
fn is_speculative(head: &str) -> bool {
    header_is(head, "sec-purpose", "prefetch")
}

fn record(ledger: &Mutex<Ledger>, line: &str) {
    record_as(ledger, line, false);
}

/// [`record`], `speculative` when the head was the browser's own speculative load ([`is_speculative`]).
/// The knock's `seq`, or `None` when the ledger is full (the knock only counted).
fn record_as(ledger: &Mutex<Ledger>, line: &str, speculative: bool) -> Option<usize> {
    let (host, port) = target(line);
    // A connection that sent no request head carries nothing: Chromium preconnects to its proxy
    // speculatively (measured: empty connections a few seconds after a page load).
    let chromium_own = speculative || line.trim().is_empty() || is_chromium_own(&host);
    let mut l = ledger.lock().unwrap_or_else(PoisonError::into_inner);
    let seq = l.knocks.len() + l.dropped;
    if l.knocks.len() >= LEDGER_MAX {
        l.dropped += 1;
        return None;
    }
    let at_ms = l.opened.elapsed().as_millis() as u64;
    l.knocks.push(Knock {
        seq,
        at_ms,
        request_line: line.to_string(),
        host,
        port,
        chromium_own,
        inside: None,
    });
    Some(seq)
}

/// The host and port a proxy request line wants: `CONNECT host:port HTTP/1.1` or
/// `GET http://host:port/path HTTP/1.1` (no port when the line names none).
fn target(line: &str) -> (String, Option<u16>) {
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("");
    let authority = if method.eq_ignore_ascii_case("CONNECT") {
        target
    } else {
        let rest = target.split_once("://").map(|(_, r)| r).unwrap_or(target);
        rest.split(['/', '?', '#']).next().unwrap_or("")
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    // [v6]:port, host:port or host.
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (h, after) = rest.split_once(']').unwrap_or((rest, ""));
        (h, after.strip_prefix(':'))
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    (host.to_ascii_lowercase(), port.and_then(|p| p.parse().ok()))
}

fn is_chromium_own(host: &str) -> bool {
    CHROMIUM_OWN
        .iter()
        .any(|d| host == *d || host.ends_with(&format!(".{d}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_from_both_request_line_shapes() {
        let t = |l: &str| target(l);
        assert_eq!(
            t("CONNECT 127.0.0.1:9000 HTTP/1.1"),
            ("127.0.0.1".into(), Some(9000))
        );
        assert_eq!(t("CONNECT [::1]:443 HTTP/1.1"), ("::1".into(), Some(443)));
        assert_eq!(
            t("POST http://Example.org:81/x?y HTTP/1.1"),
            ("example.org".into(), Some(81))
        );
        assert_eq!(
            t("GET http://a.example/x HTTP/1.1"),
            ("a.example".into(), None)
        );
        assert_eq!(t(""), (String::new(), None));
    }

    #[tokio::test]
    async fn a_declared_live_socket_is_refused_but_not_the_pages_way_out() {
        let s = Sinkhole::start(SocketDoor::default()).await.unwrap();
        let mark = s.mark();
        s.declare_live_sockets(vec![LiveSocket {
            host: "127.0.0.1".into(),
            port: 8080,
            tls: false,
            relay: false,
        }]);
        for line in [
            "CONNECT 127.0.0.1:8080 HTTP/1.1",
            "CONNECT 127.0.0.1:8081 HTTP/1.1",
            "CONNECT localhost:8080 HTTP/1.1",
            "GET http://127.0.0.1:8080/x HTTP/1.1",
        ] {
            record(&s.ledger, line);
        }
        let hosts =
            |v: Vec<Knock>| -> Vec<String> { v.into_iter().map(|k| k.request_line).collect() };
        assert_eq!(
            hosts(s.live_knocks_since(mark)),
            ["CONNECT 127.0.0.1:8080 HTTP/1.1"]
        );
        assert_eq!(
            hosts(s.page_knocks_since(mark)),
            [
                "CONNECT 127.0.0.1:8081 HTTP/1.1",
                "CONNECT localhost:8080 HTTP/1.1",
                "GET http://127.0.0.1:8080/x HTTP/1.1"
            ]
        );
        // The next contract declares none: every knock is the page's again.
        s.declare_live_sockets(Vec::new());
        assert_eq!(s.page_knocks_since(mark).len(), 4);
        assert!(s.live_knocks_since(mark).is_empty());
    }

    #[test]
    fn only_chromium_hosts_are_its_own() {
        assert!(is_speculative(
            "GET http://127.0.0.1:8/next HTTP/1.1\r\nHost: 127.0.0.1:8\r\nsec-purpose: prefetch;prerender\r\n"
        ));
        assert!(is_speculative(
            "GET http://h/ HTTP/1.1\r\nSec-Purpose: prefetch\r\n"
        ));
        assert!(!is_speculative(
            "GET http://h/ HTTP/1.1\r\nX-Purpose: prefetch\r\n"
        ));
        assert!(!is_speculative(
            "GET http://h/sec-purpose:prefetch HTTP/1.1\r\n"
        ));
        assert!(is_chromium_own("accounts.google.com"));
        assert!(is_chromium_own("update.googleapis.com"));
        assert!(!is_chromium_own("notgoogle.com"));
        assert!(!is_chromium_own("127.0.0.1"));
        assert!(!is_chromium_own("google.com.evil.example"));
    }

    /// A tunnel is recorded as asked for, then opened: the request inside is refused and noted on the
    /// knock (its query left out); one that is the browser's speculative load becomes its own.
    #[tokio::test]
    async fn a_tunnel_is_recorded_then_opened_and_what_it_carries_refused() {
        let s = Sinkhole::start(SocketDoor::default()).await.unwrap();
        for (purpose, websocket, own) in [
            ("", "Upgrade: websocket\r\nConnection: Upgrade\r\n", false),
            ("Sec-Purpose: prefetch\r\n", "", true),
        ] {
            let mark = s.mark();
            let mut c = TcpStream::connect(s.addr()).await.unwrap();
            c.write_all(b"CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
                .await
                .unwrap();
            let mut opened = [0u8; 39];
            c.read_exact(&mut opened).await.unwrap();
            assert_eq!(&opened, b"HTTP/1.1 200 Connection established\r\n\r\n");
            // Recorded before anything is sent inside, as the page's.
            let k = s.knocks_since(mark);
            assert_eq!(
                (k.len(), k[0].chromium_own, &k[0].inside),
                (1, false, &None)
            );
            let inner = format!(
                "GET /live?token=s3cret HTTP/1.1\r\nHost: 127.0.0.1:1\r\n{purpose}{websocket}\r\n"
            );
            c.write_all(inner.as_bytes()).await.unwrap();
            let mut answer = String::new();
            c.read_to_string(&mut answer).await.unwrap();
            assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
            let k = s.knocks_since(mark);
            assert_eq!(k.len(), 1);
            assert_eq!(k[0].host, "127.0.0.1");
            assert_eq!(k[0].chromium_own, own, "{k:?}");
            assert_eq!(
                k[0].inside,
                Some(Inside {
                    request_line: "GET /live?… HTTP/1.1".into(),
                    tls: false,
                    websocket: !websocket.is_empty(),
                })
            );
            assert_eq!(s.page_knocks_since(mark).len(), usize::from(!own));
        }
    }

    #[test]
    fn only_request_lines_are_kept_from_inside_a_tunnel() {
        assert_eq!(
            http_request_line("GET /a/b?x=1 HTTP/1.1").as_deref(),
            Some("GET /a/b?… HTTP/1.1")
        );
        assert_eq!(
            http_request_line("POST /a HTTP/1.1").as_deref(),
            Some("POST /a HTTP/1.1")
        );
        for junk in [
            "",
            "\u{1}\u{2}binary",
            "get /a HTTP/1.1",
            "GET /a",
            "GET /a b HTTP/1.1",
        ] {
            assert_eq!(http_request_line(junk), None, "{junk:?}");
        }
    }
}
