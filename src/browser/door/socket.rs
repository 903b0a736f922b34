//! The one socket the door relays: the WebSocket a contract says its page publishes on
//! (`publish.create_request.method = "WEBSOCKET"`, format 2), the class of chat UIs, Phoenix LiveView and
//! Meteor/DDP apps, which write without any HTTP request.
//!
//! Every other socket is refused by the sinkhole. This one is answered by oncepost: a page's `CONNECT` to the
//! create socket's host and port is accepted, the WebSocket handshake inside the tunnel is read (plain `ws://`
//! only: a `wss://` tunnel carries TLS oncepost cannot read, and is refused) and sent on by oncepost's own
//! connection to the platform, without `Sec-WebSocket-Extensions` (a compressed message could not be read).
//! The platform's frames go to the page as they come. The page's frames go no further until a whole message
//! has arrived and is judged, as every HTTP write is judged by the write guard:
//!
//! ```text
//!   the create message (create_request's url + body_regex)
//!       armed press, first one: handed to the harness, which records it and sends it ONCE
//!       before the press, or any later one: never sent; recorded (a write, or a further create); socket cut
//!   a declared non-publish message ([[non_publish_writes]] with method WEBSOCKET): sent (a publish only)
//!   anything else: never sent; recorded as a write the page attempted; socket cut
//!   ping, pong and close (control frames): sent
//! ```
//!
//! Measured with Fixturebook's `/hostile/websocket`: Chromium opens `ws://` through its proxy as
//! `CONNECT host:port` and sends the handshake in the clear inside it; a cut socket is `1006` to the page.
//! After the create message was written, the platform's messages are kept (bounded) for the success signal
//! `socket_answer`.
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base64::Engine;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use super::super::transport::{CreatePattern, RequestFacts, UrlMatch, WireRequest};
use super::carried::{NotThePost, PostLines};
use super::sinkhole::LiveSocket;

/// The pseudo-method a contract names a WebSocket message with.
pub const WEBSOCKET: &str = "WEBSOCKET";
/// How long the page may take to send its handshake inside the tunnel.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long oncepost waits for the platform: its TCP connection, then its answer to the handshake.
const UPSTREAM_CONNECT: Duration = Duration::from_secs(5);
const UPSTREAM_HANDSHAKE: Duration = Duration::from_secs(10);
/// The most of a handshake read.
const HEAD_MAX: usize = 16 * 1024;
/// The largest message judged (a larger one is never sent: the socket is cut).
const MESSAGE_MAX: usize = 1024 * 1024;
/// How many of the platform's messages after the create are kept, and how many bytes in all.
const ANSWERS_MAX: usize = 64;
const ANSWER_BYTES_MAX: usize = 1024 * 1024;
/// How long the platform's side is read after the page's side ended by itself.
const CLOSING: Duration = Duration::from_secs(5);
/// How long the relay waits for the harness to decide on a handed-over create message (the harness's own
/// bound on its before-send record is 2 s).
const DECISION_TIMEOUT: Duration = Duration::from_secs(10);

/// What happened to one message the page sent on the create socket, for the write guard's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketRecord {
    /// Never sent: not the create, not declared (or a probe, where nothing is sent), or the create before the
    /// press. `declared`: it matched a declared non-publish message (a probe).
    Blocked {
        /// The socket's URL (`http://host:port/path`).
        url: String,
        /// It matched a `[[non_publish_writes]]` declaration.
        declared: bool,
    },
    /// Another create message after the one the press handed over, or one before it that did not carry
    /// the post: never sent.
    Extra {
        /// The socket's URL.
        url: String,
        /// Why it was not this post's (`door/carried.rs`), when that is why.
        not_the_post: Option<NotThePost>,
    },
    /// A declared non-publish message, sent.
    Forwarded {
        /// The socket's URL.
        url: String,
        /// It came after the press and carried every line of the post (see `ForwardedWrite`).
        carried_post: bool,
    },
    /// A declared read message, sent.
    Read,
}

/// Where the write guard takes the relay's records.
pub type Recorder = Arc<dyn Fn(SocketRecord) + Send + Sync>;

/// The create message a press's page sent, handed to the harness: it is sent when (and only when) the
/// harness says so, by the relay's connection to the platform.
#[derive(Debug)]
pub struct Handover {
    /// The message as a request: method `WEBSOCKET`, the socket's URL, the handshake's headers, the payload.
    pub wire: WireRequest,
    go: oneshot::Sender<bool>,
    sent: oneshot::Receiver<Sent>,
}

/// What writing the create message to the platform did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// Every byte was written to the platform's connection.
    Whole,
    /// No byte was taken by the connection (it failed first).
    Nothing(String),
    /// Some bytes went, the write then failed.
    Partly(String),
}

impl Handover {
    /// Send it (`true`) or never (`false`), and learn what the write did. A relay that is gone before it
    /// wrote reports [`Sent::Nothing`] only when it never received the order.
    pub async fn decide(self, send: bool) -> Sent {
        if self.go.send(send).is_err() {
            return Sent::Nothing(
                "the page's socket closed before the message could be sent".into(),
            );
        }
        if !send {
            return Sent::Nothing("not sent: refused by the harness".into());
        }
        match tokio::time::timeout(UPSTREAM_HANDSHAKE, self.sent).await {
            Ok(Ok(s)) => s,
            // The order was received and no report came: it may have been written.
            _ => Sent::Partly("the relay stopped while sending the message".into()),
        }
    }
}

/// What the door does with the sockets it may relay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Mode {
    /// Nothing runs (a lookup, or between sends): every socket is refused.
    #[default]
    Off,
    /// A probe: relayed, only declared read messages leave.
    Probe,
    /// A publish: declared reads and writes leave, the create message once after the press.
    Publish,
}

#[derive(Default)]
struct State {
    /// The create message's pattern (method WEBSOCKET) and its socket's host and port.
    create: Option<(CreatePattern, String, u16)>,
    /// The create socket is a `wss://` one.
    tls: bool,
    /// Live sockets the contract has relayed (`relay = true`).
    live: Vec<LiveSocket>,
    /// Declared non-publish messages (writes: sent during a publish only).
    rules: Vec<CreatePattern>,
    /// Declared read messages (sent wherever the page reads).
    reads: Vec<CreatePattern>,
    mode: Mode,
    /// The press's slot: the first create message after it is handed over here.
    armed: Option<oneshot::Sender<Handover>>,
    /// A press armed the slot (it may have been used or taken back since).
    pressed: bool,
    /// What the create message must carry to be handed over (set by the press).
    post: PostLines,
    /// The platform's messages since the create was written (`None` before).
    answers: Option<Vec<Vec<u8>>>,
    answer_bytes: usize,
    recorder: Option<Recorder>,
    /// Handshakes under way on relayed sockets.
    handshakes: u32,
    /// Read messages sent since the platform last sent anything.
    reads_out: u32,
    /// The relayed sockets' last traffic (a handshake done, a read sent, a platform message).
    last: Option<std::time::Instant>,
}

impl State {
    fn relays(&self, host: &str, port: u16) -> bool {
        self.mode != Mode::Off
            && (self
                .create
                .as_ref()
                .is_some_and(|(_, h, p)| h == host && *p == port)
                || self.live.iter().any(|l| l.host == host && l.port == port))
    }
}

/// The relayed sockets' rules and state, shared by the sinkhole (which relays) and the write guard (which
/// declares, arms and reads).
#[derive(Clone, Default)]
pub struct SocketDoor {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for SocketDoor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("SocketDoor")
            .field("create", &s.create.as_ref().map(|(_, h, p)| (h, p)))
            .field("live", &s.live)
            .field("mode", &s.mode)
            .field("pressed", &s.pressed)
            .finish()
    }
}

/// The host and port of a WebSocket create pattern's URL (`url`, not `url_regex`: the checks refuse that),
/// and whether it is a `wss://` one (written `https://`).
pub fn endpoint_of(create: &CreatePattern) -> Option<(String, u16, bool)> {
    let UrlMatch::Exact(u) = &create.url else {
        return None;
    };
    let u = url::Url::parse(u).ok()?;
    let host = match u.host()? {
        url::Host::Domain(d) => d.to_ascii_lowercase(),
        url::Host::Ipv4(a) => a.to_string(),
        url::Host::Ipv6(a) => a.to_string(),
    };
    Some((host, u.port_or_known_default()?, u.scheme() == "https"))
}

/// The URL a relayed socket is judged by: `http://host:port/path` (`https://` for a `wss://` one) as `url`
/// writes it (default port left out), the same form a contract's `ws://`, `wss://` or `{base_url}` URL is
/// given in (see `contract/plan.rs`).
fn socket_url(host: &str, port: u16, target: &str, tls: bool) -> String {
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let scheme = if tls { "https" } else { "http" };
    let raw = format!("{scheme}://{authority}{target}");
    url::Url::parse(&raw).map(|u| u.to_string()).unwrap_or(raw)
}

impl SocketDoor {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where the relay's records go (the write guard, once, at install).
    pub fn set_recorder(&self, r: Recorder) {
        self.lock().recorder = Some(r);
    }

    /// The contract a publish (`pass`) or probe now runs: its create (when it is a WebSocket message) and
    /// its declared non-publish messages. Replaces the last contract's, and forgets its press.
    pub fn declare(&self, create: Option<CreatePattern>, rules: Vec<CreatePattern>, pass: bool) {
        let mut s = self.lock();
        let endpoint = create.and_then(|c| endpoint_of(&c).map(|e| (c, e)));
        s.tls = endpoint.as_ref().is_some_and(|(_, (_, _, tls))| *tls);
        s.create = endpoint.map(|(c, (h, p, _))| (c, h, p));
        s.rules = rules
            .into_iter()
            .filter(|r| r.method == WEBSOCKET)
            .collect();
        s.mode = if pass { Mode::Publish } else { Mode::Probe };
        s.armed = None;
        s.pressed = false;
        s.answers = None;
        s.answer_bytes = 0;
    }

    /// The declared read messages (`[[read_requests]]` with method WEBSOCKET): sent wherever the page reads.
    pub fn set_reads(&self, reads: Vec<CreatePattern>) {
        self.lock().reads = reads
            .into_iter()
            .filter(|r| r.method == WEBSOCKET)
            .collect();
    }

    /// The live sockets the contract has relayed (`relay = true`).
    pub fn set_live(&self, live: Vec<LiveSocket>) {
        self.lock().live = live;
    }

    /// Forget everything of the last send (a warm browser's next send declares its own).
    pub fn reset(&self) {
        self.declare(None, Vec::new(), false);
        let mut s = self.lock();
        s.mode = Mode::Off;
        s.reads.clear();
        s.live.clear();
        s.handshakes = 0;
        s.reads_out = 0;
        s.last = None;
    }

    /// Whether the socket at `host:port` is a `wss://` one (its tunnel carries TLS).
    pub fn endpoint_tls(&self, host: &str, port: u16) -> bool {
        let s = self.lock();
        match &s.create {
            Some((_, h, p)) if h == host && *p == port => s.tls,
            _ => s
                .live
                .iter()
                .any(|l| l.host == host && l.port == port && l.tls),
        }
    }

    /// Whether a `CONNECT host:port` is relayed now.
    pub fn relays(&self, host: &str, port: u16) -> bool {
        self.lock().relays(host, port)
    }

    /// The create socket's host and port while it is refused (nothing runs that relays it): a tunnel there
    /// is the page's own socket, refused like a declared live one, not a way out it tried.
    pub fn refused_endpoint(&self) -> Option<(String, u16)> {
        let s = self.lock();
        match &s.create {
            Some((_, h, p)) if !s.relays(h, *p) => Some((h.clone(), *p)),
            _ => None,
        }
    }

    /// Arm the press: the first create message from now on that carries `post` (every line of it:
    /// `door/carried.rs`; empty, anything) is handed over through the receiver.
    pub fn arm(&self, post: PostLines) -> oneshot::Receiver<Handover> {
        let (tx, rx) = oneshot::channel();
        let mut s = self.lock();
        s.armed = Some(tx);
        s.post = post;
        s.pressed = true;
        rx
    }

    /// Take the slot back if nothing was handed over: true when nothing was (and from now on every create
    /// message is a further one, never sent).
    pub fn disarm(&self) -> bool {
        self.lock().armed.take().is_some()
    }

    /// The relayed sockets' traffic as a page's data reads: a handshake under way or a read message not yet
    /// answered is one out (see `WriteGuard::data_reads`).
    pub fn activity(&self) -> super::super::write_guard::DataReads {
        let s = self.lock();
        super::super::write_guard::DataReads {
            in_flight: s.handshakes + s.reads_out,
            last: s.last,
        }
    }

    fn traffic(&self, change: impl FnOnce(&mut State)) {
        let mut s = self.lock();
        change(&mut s);
        s.last = Some(std::time::Instant::now());
    }

    /// The platform's messages on the create socket since the create message was written.
    pub fn answers(&self) -> Vec<Vec<u8>> {
        self.lock().answers.clone().unwrap_or_default()
    }

    /// A declared read message goes out: logged, and one read out until the platform sends something.
    fn read_sent(&self) {
        self.traffic(|s| s.reads_out += 1);
        self.record(SocketRecord::Read);
    }

    fn record(&self, r: SocketRecord) {
        let rec = self.lock().recorder.clone();
        if let Some(rec) = rec {
            rec(r);
        }
    }

    /// Whether the tunnel's handshake for `url` (to `host:port`) is relayed: the create socket's URL, a
    /// declared message's, or any socket to a relayed live socket's host and port.
    fn accepts(&self, url: &str, host: &str, port: u16) -> bool {
        let s = self.lock();
        s.relays(host, port)
            && (s
                .create
                .as_ref()
                .is_some_and(|(c, _, _)| c.matches_url(url))
                || s.rules.iter().chain(&s.reads).any(|r| r.matches_url(url))
                || s.live.iter().any(|l| l.host == host && l.port == port))
    }

    fn judge(&self, url: &str, payload: &[u8], compressed: bool) -> Judged {
        let mut s = self.lock();
        // A compressed message cannot be read: it matches no rule with a body, and is never sent.
        let facts = RequestFacts {
            method: WEBSOCKET,
            url,
            headers: &[],
            body: (!compressed).then_some(payload),
        };
        let is_create = s.create.as_ref().is_some_and(|(c, _, _)| c.matches(&facts));
        if is_create {
            // The create is matched first, whatever a declaration says, and leaves only by the press.
            if s.mode != Mode::Publish {
                return Judged::Block { declared: false };
            }
            // Only a message carrying the post is the press's (door/carried.rs): one that does not (an outbox
            // sending an earlier post first) never leaves.
            if s.armed.is_some()
                && let Some(why) = s.post.refusal(url, facts.body)
            {
                return Judged::NotThePost(why);
            }
            return match s.armed.take() {
                Some(slot) => Judged::Create(slot),
                None if s.pressed => Judged::Extra,
                None => Judged::Block { declared: false },
            };
        }
        if s.mode != Mode::Off && s.reads.iter().any(|r| r.matches(&facts)) {
            return Judged::Read;
        }
        let declared = s.rules.iter().any(|r| r.matches(&facts));
        match (declared, s.mode) {
            (true, Mode::Publish) => Judged::Forward {
                carried_post: s.pressed
                    && !s.post.is_empty()
                    && s.post.first_missing(url, facts.body).is_none(),
            },
            (declared, _) => Judged::Block { declared },
        }
    }

    fn open_answers(&self) {
        let mut s = self.lock();
        s.answers = Some(Vec::new());
        s.answer_bytes = 0;
    }

    fn keep_answer(&self, m: &[u8]) {
        self.traffic(|s| s.reads_out = 0);
        let mut s = self.lock();
        let bytes = s.answer_bytes + m.len();
        if let Some(a) = s.answers.as_mut()
            && a.len() < ANSWERS_MAX
            && bytes <= ANSWER_BYTES_MAX
        {
            a.push(m.to_vec());
            s.answer_bytes = bytes;
        }
    }
}

/// How the page's side of a relayed socket ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The page closed it, or its frames could not be read.
    Closed,
    /// The relay cut it: a message that is never sent.
    Cut,
}

enum Judged {
    Create(oneshot::Sender<Handover>),
    Extra,
    /// A create message after the press that does not carry the post (this line of it).
    NotThePost(NotThePost),
    Forward {
        carried_post: bool,
    },
    Read,
    Block {
        declared: bool,
    },
}

/// Why a relayed tunnel was not relayed: the sinkhole records it as a refused knock.
#[derive(Debug)]
pub enum NotRelayed {
    /// TLS inside the tunnel where the create socket is a plain `ws://` one (or the door has no TLS).
    Tls,
    /// No TLS inside the tunnel where the create socket is a `wss://` one.
    Plain,
    /// A socket to the create socket's host at a URL no rule names.
    OtherUrl(String),
    /// No handshake came, or it was not a WebSocket's.
    NoHandshake,
}

/// The page's or the platform's side of a relayed socket, in the clear or in TLS.
type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// The door's TLS for a relayed `wss://` socket. The browser's side ends at oncepost with a certificate made
/// for this process (an ECDSA key that never leaves memory), which Chromium accepts only by its key's pin
/// (`--ignore-certificate-errors-spki-list`: nothing else it could meet is signed by that key, and every
/// HTTP request is fetched by oncepost's own verifying client anyway); the platform's side is verified as
/// reqwest verifies every other connection of oncepost (rustls with the platform's roots).
pub struct DoorTls {
    acceptor: tokio_rustls::TlsAcceptor,
    connector: tokio_rustls::TlsConnector,
    pin: String,
}

impl std::fmt::Debug for DoorTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoorTls").field("pin", &self.pin).finish()
    }
}

impl DoorTls {
    /// The process's door TLS, made once (a key and a certificate: about a millisecond).
    pub fn get() -> Result<&'static DoorTls, String> {
        static ONE: std::sync::OnceLock<Result<DoorTls, String>> = std::sync::OnceLock::new();
        ONE.get_or_init(DoorTls::make)
            .as_ref()
            .map_err(Clone::clone)
    }

    fn make() -> Result<DoorTls, String> {
        use rcgen::PublicKeyData;
        use rustls_platform_verifier::BuilderVerifierExt;
        use sha2::Digest;
        use tokio_rustls::rustls;
        let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
        let cert = rcgen::CertificateParams::new(vec!["oncepost-door.invalid".to_string()])
            .and_then(|p| p.self_signed(&key))
            .map_err(|e| e.to_string())?;
        let pin = base64::engine::general_purpose::STANDARD
            .encode(sha2::Sha256::digest(key.subject_public_key_info()));
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let private = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let mut server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], private)
            .map_err(|e| e.to_string())?;
        // A WebSocket handshake is HTTP/1.1 (Chromium offers h2 too, where the server has it).
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        let mut client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_platform_verifier()
            .map_err(|e| e.to_string())?
            .with_no_client_auth();
        client.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(DoorTls {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server)),
            connector: tokio_rustls::TlsConnector::from(Arc::new(client)),
            pin,
        })
    }

    /// The acceptor for the browser's side of a tunnel (a relayed `wss://` socket; a refused tunnel the
    /// sinkhole looks into).
    pub(super) fn acceptor(&self) -> &tokio_rustls::TlsAcceptor {
        &self.acceptor
    }

    /// The Chromium switch that pins the door's key for the browser's side of a relayed `wss://` socket.
    pub fn chromium_switch(&self) -> String {
        format!("--ignore-certificate-errors-spki-list={}", self.pin)
    }
}

/// Answer a proxy's `CONNECT` as established and tell what the tunnel carries by its first byte, looked at
/// without taking it (a TLS record starts 0x16): `Some(true)` TLS, `Some(false)` in the clear, `None` when
/// the answer could not be written or nothing came within [`HANDSHAKE_TIMEOUT`]. Shared by the relay and by
/// the sinkhole, which opens every tunnel it refuses to read what it carries.
pub(super) async fn open_tunnel(client: &mut TcpStream) -> Option<bool> {
    client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .ok()?;
    let mut first = [0u8; 1];
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, client.peek(&mut first)).await {
        Ok(Ok(1)) => Some(first[0] == 0x16),
        _ => None,
    }
}

/// Relay one tunnel the sinkhole accepted for the create socket. `Err` when it was refused instead (the
/// sinkhole records that as a knock); `Ok` when it was relayed (whatever happened then is in the records).
pub(super) async fn relay(
    mut client: TcpStream,
    host: String,
    port: u16,
    door: SocketDoor,
) -> Result<(), NotRelayed> {
    let Some(tls) = open_tunnel(&mut client).await else {
        let _ = client.shutdown().await;
        return Err(NotRelayed::NoHandshake);
    };
    if tls != door.endpoint_tls(&host, port) {
        let _ = client.shutdown().await;
        return Err(if tls {
            NotRelayed::Tls
        } else {
            NotRelayed::Plain
        });
    }
    let _ = client.set_nodelay(true);
    let (page_read, page_write): (Reader, Writer) = if tls {
        let door_tls = DoorTls::get().map_err(|_| NotRelayed::Tls)?;
        let Ok(Ok(stream)) =
            tokio::time::timeout(HANDSHAKE_TIMEOUT, door_tls.acceptor.accept(client)).await
        else {
            return Err(NotRelayed::NoHandshake);
        };
        let (r, w) = tokio::io::split(stream);
        (Box::new(r), Box::new(w))
    } else {
        let (r, w) = client.into_split();
        (Box::new(r), Box::new(w))
    };
    relay_websocket(page_read, page_write, &host, port, tls, door).await
}

/// The relay past the tunnel (and its TLS): the page's handshake read, sent on by oncepost's own connection,
/// the platform's answer handed back, then the frames both ways.
async fn relay_websocket(
    page_read: Reader,
    page_write: Writer,
    host: &str,
    port: u16,
    tls: bool,
    door: SocketDoor,
) -> Result<(), NotRelayed> {
    let r = handshake_and_relay(page_read, page_write, host, port, tls, door.clone()).await;
    // A socket that ended answers nothing more.
    door.traffic(|s| s.reads_out = 0);
    r
}

/// A handshake under way on a relayed socket, counted as a read out until it is done, either way (a page
/// waiting on its socket shows its posts only after it).
struct Handshaking(SocketDoor);

impl Handshaking {
    fn start(door: &SocketDoor) -> Handshaking {
        door.traffic(|s| s.handshakes += 1);
        Handshaking(door.clone())
    }
}

impl Drop for Handshaking {
    fn drop(&mut self) {
        self.0
            .traffic(|s| s.handshakes = s.handshakes.saturating_sub(1));
    }
}

async fn handshake_and_relay(
    mut page_read: Reader,
    mut page_write: Writer,
    host: &str,
    port: u16,
    tls: bool,
    door: SocketDoor,
) -> Result<(), NotRelayed> {
    let handshaking = Handshaking::start(&door);
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 2048];
    let read_head = async {
        while head_end(&buf).is_none() && buf.len() < HEAD_MAX {
            match page_read.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(HANDSHAKE_TIMEOUT, read_head).await;
    let Some(end) = head_end(&buf) else {
        let _ = page_write.shutdown().await;
        return Err(NotRelayed::NoHandshake);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let early = buf[end..].to_vec();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split_whitespace();
    let (Some("GET"), Some(target)) = (parts.next(), parts.next()) else {
        let _ = page_write.shutdown().await;
        return Err(NotRelayed::NoHandshake);
    };
    let url = socket_url(host, port, target, tls);
    if !door.accepts(&url, host, port) {
        let _ = page_write
            .write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await;
        let _ = page_write.shutdown().await;
        return Err(NotRelayed::OtherUrl(url));
    }
    // The handshake as the page sent it, without the extensions offer: a compressed message could not be
    // judged (and one would be refused), so none is negotiated.
    let mut headers = Vec::new();
    let mut upstream_head = format!("{request_line}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        if name.trim().eq_ignore_ascii_case("sec-websocket-extensions") {
            continue;
        }
        headers.push((name.trim().to_string(), value.trim().to_string()));
        upstream_head.push_str(line);
        upstream_head.push_str("\r\n");
    }
    upstream_head.push_str("\r\n");
    let Some((mut up_read, mut up_write)) = connect_upstream(host, port, tls).await else {
        let _ = page_write
            .write_all(
                b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .await;
        let _ = page_write.shutdown().await;
        return Ok(());
    };
    if up_write.write_all(upstream_head.as_bytes()).await.is_err()
        || up_write.flush().await.is_err()
    {
        let _ = page_write.shutdown().await;
        return Ok(());
    }
    // The platform's answer to the handshake, handed to the page as it is.
    let mut answer = Vec::with_capacity(1024);
    let read_answer = async {
        while head_end(&answer).is_none() && answer.len() < HEAD_MAX {
            match up_read.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => answer.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(UPSTREAM_HANDSHAKE, read_answer).await;
    let switched = answer.starts_with(b"HTTP/1.1 101");
    let handed = page_write.write_all(&answer).await.is_ok() && page_write.flush().await.is_ok();
    drop(handshaking);
    if !handed || !switched {
        let _ = page_write.shutdown().await;
        return Ok(());
    }
    let after_head = head_end(&answer)
        .map(|e| answer[e..].to_vec())
        .unwrap_or_default();
    let wire = Wire {
        url,
        headers,
        door: door.clone(),
    };
    let mut down = tokio::spawn(platform_to_page(up_read, page_write, after_head, door));
    if wire.page_to_platform(page_read, up_write, early).await == End::Cut {
        // Cut: neither way carries anything more.
        down.abort();
    } else if tokio::time::timeout(CLOSING, &mut down).await.is_err() {
        // The page is gone: the platform's last frames (its answer, its close) are read for a bounded time.
        down.abort();
    }
    Ok(())
}

/// oncepost's own connection to the platform's socket: TCP, and TLS verified for `host` when `tls`.
async fn connect_upstream(host: &str, port: u16, tls: bool) -> Option<(Reader, Writer)> {
    let tcp = tokio::time::timeout(UPSTREAM_CONNECT, TcpStream::connect((host, port)))
        .await
        .ok()?
        .ok()?;
    let _ = tcp.set_nodelay(true);
    if !tls {
        let (r, w) = tcp.into_split();
        return Some((Box::new(r), Box::new(w)));
    }
    let name = tokio_rustls::rustls::pki_types::ServerName::try_from(host.to_string()).ok()?;
    let door_tls = DoorTls::get().ok()?;
    let stream = tokio::time::timeout(UPSTREAM_CONNECT, door_tls.connector.connect(name, tcp))
        .await
        .ok()?
        .ok()?;
    let (r, w) = tokio::io::split(stream);
    Some((Box::new(r), Box::new(w)))
}

struct Wire {
    url: String,
    headers: Vec<(String, String)>,
    door: SocketDoor,
}

impl Wire {
    /// The page's frames: control frames sent on at once, a data message only once whole and judged.
    async fn page_to_platform(&self, mut from: Reader, mut to: Writer, early: Vec<u8>) -> End {
        let mut end = End::Closed;
        let mut frames = FrameReader::new(early);
        // The data message being gathered: its frames as they came (sent on as they are) and its payload.
        let mut raw = Vec::new();
        let mut payload = Vec::new();
        let mut compressed = false;
        loop {
            let Some(frame) = frames.next(&mut from).await else {
                break;
            };
            if frame.opcode >= 8 {
                if to.write_all(&frame.raw).await.is_err() || to.flush().await.is_err() {
                    break;
                }
                continue;
            }
            if frame.opcode != 0 {
                compressed = frame.rsv1;
            }
            raw.extend_from_slice(&frame.raw);
            payload.extend_from_slice(&frame.payload);
            if raw.len() > MESSAGE_MAX {
                self.door.record(SocketRecord::Blocked {
                    url: self.url.clone(),
                    declared: false,
                });
                end = End::Cut;
                break;
            }
            if !frame.fin {
                continue;
            }
            let message = std::mem::take(&mut raw);
            let text = std::mem::take(&mut payload);
            match self.door.judge(&self.url, &text, compressed) {
                Judged::Read => self.door.read_sent(),
                Judged::Forward { carried_post } => self.door.record(SocketRecord::Forwarded {
                    url: self.url.clone(),
                    carried_post,
                }),
                Judged::Create(slot) => {
                    self.hand_over(slot, &message, text, &mut to).await;
                    continue;
                }
                Judged::Extra => {
                    self.door.record(SocketRecord::Extra {
                        url: self.url.clone(),
                        not_the_post: None,
                    });
                    end = End::Cut;
                    break;
                }
                Judged::NotThePost(why) => {
                    self.door.record(SocketRecord::Extra {
                        url: self.url.clone(),
                        not_the_post: Some(why),
                    });
                    end = End::Cut;
                    break;
                }
                Judged::Block { declared } => {
                    self.door.record(SocketRecord::Blocked {
                        url: self.url.clone(),
                        declared,
                    });
                    end = End::Cut;
                    break;
                }
            }
            // A read or a declared write: sent on as the page framed it.
            if to.write_all(&message).await.is_err() || to.flush().await.is_err() {
                break;
            }
        }
        // Cut, the page sees its socket closed (1006): nothing it sent after this goes anywhere.
        let _ = to.shutdown().await;
        end
    }

    /// The armed create message: handed to the harness, written once if it says so.
    async fn hand_over(
        &self,
        slot: oneshot::Sender<Handover>,
        message: &[u8],
        payload: Vec<u8>,
        to: &mut Writer,
    ) {
        let (go_tx, go_rx) = oneshot::channel();
        let (sent_tx, sent_rx) = oneshot::channel();
        let handover = Handover {
            wire: WireRequest {
                method: WEBSOCKET.into(),
                url: self.url.clone(),
                headers: self.headers.clone(),
                body: payload,
            },
            go: go_tx,
            sent: sent_rx,
        };
        if slot.send(handover).is_err() {
            return;
        }
        let Ok(Ok(true)) = tokio::time::timeout(DECISION_TIMEOUT, go_rx).await else {
            return;
        };
        // The answers are kept from before the write: the platform may answer before the write returns.
        self.door.open_answers();
        let _ = sent_tx.send(write_once(to, message).await);
    }
}

/// Write `message` once: what the connection took decides what is known.
async fn write_once(to: &mut Writer, message: &[u8]) -> Sent {
    let mut written = 0;
    while written < message.len() {
        match to.write(&message[written..]).await {
            Ok(0) => break,
            Ok(n) => written += n,
            Err(e) if written == 0 => return Sent::Nothing(e.to_string()),
            Err(e) => return Sent::Partly(format!("{written} of {} bytes: {e}", message.len())),
        }
    }
    match (written, message.len()) {
        (w, l) if w == l => match to.flush().await {
            Ok(()) => Sent::Whole,
            Err(e) => Sent::Partly(e.to_string()),
        },
        (0, _) => Sent::Nothing("the platform's connection took no byte".into()),
        (w, l) => Sent::Partly(format!("{w} of {l} bytes written")),
    }
}

/// The platform's frames go to the page as they come; after the create was written its whole data messages
/// are kept for the success signal, even once the page is gone (its socket closed right after the create:
/// the answer still says what the platform made).
async fn platform_to_page(mut from: Reader, mut to: Writer, early: Vec<u8>, door: SocketDoor) {
    let mut parser = FrameReader::new(Vec::new());
    let mut message = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    let mut pending = early;
    let mut page_open = true;
    loop {
        if !pending.is_empty() {
            parser.feed(&pending);
            while let Some(f) = parser.take() {
                if f.opcode < 8 {
                    message.extend_from_slice(&f.payload);
                    if f.fin {
                        door.keep_answer(&message);
                        message.clear();
                    }
                }
            }
            page_open =
                page_open && to.write_all(&pending).await.is_ok() && to.flush().await.is_ok();
            pending.clear();
        }
        match from.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => pending.extend_from_slice(&chunk[..n]),
        }
    }
    let _ = to.shutdown().await;
}

/// Where a head ends (after its blank line).
fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

/// One WebSocket frame: its bytes as they came and its payload unmasked.
#[derive(Debug)]
struct Frame {
    fin: bool,
    rsv1: bool,
    opcode: u8,
    raw: Vec<u8>,
    payload: Vec<u8>,
}

/// Frames out of a byte stream (RFC 6455 section 5.2).
struct FrameReader {
    buf: Vec<u8>,
    broken: bool,
}

impl FrameReader {
    fn new(early: Vec<u8>) -> FrameReader {
        FrameReader {
            buf: early,
            broken: false,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame in the buffer, if there is one. A frame over [`MESSAGE_MAX`] breaks the reader
    /// (nothing more is taken).
    fn take(&mut self) -> Option<Frame> {
        if self.broken {
            return None;
        }
        let b = &self.buf;
        if b.len() < 2 {
            return None;
        }
        let masked = b[1] & 0x80 != 0;
        let (len, mut at) = match b[1] & 0x7f {
            126 => (u16::from_be_bytes([*b.get(2)?, *b.get(3)?]) as u64, 4),
            127 => {
                let bytes: [u8; 8] = b.get(2..10)?.try_into().ok()?;
                (u64::from_be_bytes(bytes), 10)
            }
            n => (n as u64, 2),
        };
        if len > MESSAGE_MAX as u64 {
            self.broken = true;
            return None;
        }
        let mask: Option<[u8; 4]> = if masked {
            let m = b.get(at..at + 4)?.try_into().ok()?;
            at += 4;
            Some(m)
        } else {
            None
        };
        let end = at + len as usize;
        if b.len() < end {
            return None;
        }
        let mut payload = b[at..end].to_vec();
        if let Some(m) = mask {
            for (i, byte) in payload.iter_mut().enumerate() {
                *byte ^= m[i % 4];
            }
        }
        let frame = Frame {
            fin: b[0] & 0x80 != 0,
            rsv1: b[0] & 0x40 != 0,
            opcode: b[0] & 0x0f,
            raw: b[..end].to_vec(),
            payload,
        };
        self.buf.drain(..end);
        Some(frame)
    }

    /// The next frame, reading from `from` as needed; `None` at the end of the stream or a frame too large.
    async fn next(&mut self, from: &mut Reader) -> Option<Frame> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(f) = self.take() {
                return Some(f);
            }
            if self.broken {
                return None;
            }
            match from.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.feed(&chunk[..n]),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mask = [1u8, 2, 3, 4];
        let mut f = vec![(if fin { 0x80 } else { 0 }) | opcode];
        match payload.len() {
            n if n < 126 => f.push(0x80 | n as u8),
            n => {
                f.push(0x80 | 126);
                f.extend_from_slice(&(n as u16).to_be_bytes());
            }
        }
        f.extend_from_slice(&mask);
        f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        f
    }

    #[test]
    fn frames_are_read_whole_unmasked_and_kept_as_they_came() {
        let long = vec![b'x'; 300];
        let mut bytes = masked(false, 1, b"{\"type\":");
        bytes.extend(masked(true, 0, b"\"publish\"}"));
        bytes.extend(masked(true, 1, &long));
        let mut r = FrameReader::new(Vec::new());
        // Fed a byte at a time: a frame is taken only once it is whole.
        let mut frames = Vec::new();
        for b in &bytes {
            r.feed(std::slice::from_ref(b));
            while let Some(f) = r.take() {
                frames.push(f);
            }
        }
        assert_eq!(frames.len(), 3);
        assert_eq!((frames[0].fin, frames[0].opcode), (false, 1));
        assert_eq!(frames[0].payload, b"{\"type\":");
        assert_eq!((frames[1].fin, frames[1].opcode), (true, 0));
        assert_eq!(frames[2].payload, long);
        let raw: Vec<u8> = frames.iter().flat_map(|f| f.raw.clone()).collect();
        assert_eq!(raw, bytes);
    }

    #[test]
    fn a_frame_over_the_bound_breaks_the_reader() {
        let mut head = vec![0x81, 127];
        head.extend_from_slice(&((MESSAGE_MAX as u64) + 1).to_be_bytes());
        let mut r = FrameReader::new(head);
        assert!(r.take().is_none());
        assert!(r.broken);
    }

    fn create() -> CreatePattern {
        let mut c = CreatePattern::new(
            WEBSOCKET,
            UrlMatch::Exact("http://127.0.0.1:9/api/live".into()),
        );
        c.body = Some(regex::Regex::new(r#""type":"publish""#).unwrap());
        c
    }

    fn draft() -> CreatePattern {
        let mut d = CreatePattern::new(
            WEBSOCKET,
            UrlMatch::Exact("http://127.0.0.1:9/api/live".into()),
        );
        d.body = Some(regex::Regex::new(r#"^\{"type":"draft""#).unwrap());
        d
    }

    fn kind(j: Judged) -> &'static str {
        match j {
            Judged::Create(_) => "create",
            Judged::Extra => "extra",
            Judged::NotThePost(_) => "not the post",
            Judged::Forward { .. } => "forward",
            Judged::Read => "read",
            Judged::Block { declared: true } => "block (declared)",
            Judged::Block { declared: false } => "block",
        }
    }

    #[test]
    fn messages_are_judged_as_the_create_a_declared_one_or_a_write() {
        let url = "http://127.0.0.1:9/api/live";
        let publish = br#"{"type":"publish","text":"hi"}"#;
        let d = br#"{"type":"draft","text":"hi"}"#;
        let sub = br#"{"type":"subscribe"}"#;
        let other = br#"{"type":"like","id":3}"#;
        let mut subscribe = draft();
        subscribe.body = Some(regex::Regex::new(r#"^\{"type":"subscribe""#).unwrap());
        let door = SocketDoor::default();
        // Nothing runs: every socket is refused.
        assert!(!door.relays("127.0.0.1", 9));
        // A probe: relayed, only the read messages leave (a declared write is told apart).
        door.declare(Some(create()), vec![draft()], false);
        door.set_reads(vec![subscribe]);
        assert!(door.relays("127.0.0.1", 9));
        assert_eq!(door.refused_endpoint(), None);
        assert_eq!(kind(door.judge(url, sub, false)), "read");
        assert_eq!(kind(door.judge(url, publish, false)), "block");
        assert_eq!(kind(door.judge(url, d, false)), "block (declared)");
        // A publish: drafts pass, the create before the press and anything else are blocked.
        door.declare(Some(create()), vec![draft()], true);
        assert!(door.relays("127.0.0.1", 9));
        assert!(!door.relays("127.0.0.1", 10));
        assert!(
            door.accepts(url, "127.0.0.1", 9)
                && door.accepts(&format!("{url}?v=2"), "127.0.0.1", 9)
        );
        assert!(!door.accepts("http://127.0.0.1:9/api/other", "127.0.0.1", 9));
        assert_eq!(kind(door.judge(url, sub, false)), "read");
        assert_eq!(kind(door.judge(url, d, false)), "forward");
        assert_eq!(kind(door.judge(url, publish, false)), "block");
        assert_eq!(kind(door.judge(url, other, false)), "block");
        // A compressed message cannot be read: never the create, never declared.
        assert_eq!(kind(door.judge(url, d, true)), "block");
        // Armed: the first create is handed over, every later one is a further create.
        // Armed: the first create carrying the post is handed over (one carrying another post is not, and
        // the slot waits on), every later one is a further create.
        let mut post = PostLines::default();
        post.add("hi");
        let _rx = door.arm(post);
        let earlier = br#"{"type":"publish","text":"an earlier post"}"#;
        assert_eq!(kind(door.judge(url, earlier, false)), "not the post");
        assert_eq!(kind(door.judge(url, publish, false)), "create");
        assert_eq!(kind(door.judge(url, publish, false)), "extra");
        assert_eq!(kind(door.judge(url, earlier, false)), "extra");
        assert!(!door.disarm());
        // A warm browser's next send starts from nothing: the create socket is refused again.
        door.reset();
        assert!(!door.relays("127.0.0.1", 9));
        assert_eq!(door.refused_endpoint(), None, "no contract declared");
        // A relayed live socket: any path on its host and port, its reads pass, nothing is a create.
        door.set_live(vec![LiveSocket {
            host: "127.0.0.1".into(),
            port: 10,
            tls: false,
            relay: true,
        }]);
        assert!(
            !door.relays("127.0.0.1", 10),
            "only while a publish or probe runs"
        );
        door.declare(None, Vec::new(), false);
        door.set_reads(vec![{
            let mut r = draft();
            r.url = UrlMatch::Exact("http://127.0.0.1:10/stream".into());
            r.body = Some(regex::Regex::new(r#"^\{"type":"subscribe""#).unwrap());
            r
        }]);
        let live = "http://127.0.0.1:10/stream";
        assert!(
            door.relays("127.0.0.1", 10)
                && door.accepts("http://127.0.0.1:10/any", "127.0.0.1", 10)
        );
        assert_eq!(kind(door.judge(live, sub, false)), "read");
        assert_eq!(kind(door.judge(live, publish, false)), "block");
    }

    #[test]
    fn socket_urls_are_written_as_a_contract_url_is() {
        assert_eq!(
            socket_url("127.0.0.1", 8080, "/api/live?x=1", false),
            "http://127.0.0.1:8080/api/live?x=1"
        );
        assert_eq!(
            socket_url("chat.example", 80, "/ws", false),
            "http://chat.example/ws"
        );
        assert_eq!(
            socket_url("chat.example", 443, "/ws", true),
            "https://chat.example/ws"
        );
        assert_eq!(socket_url("::1", 9, "/", false), "http://[::1]:9/");
        assert_eq!(
            endpoint_of(&create()),
            Some(("127.0.0.1".to_string(), 9, false))
        );
    }
}
