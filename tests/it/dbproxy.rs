//! A TCP proxy in front of PostgreSQL that a test can cut (every open connection dropped at once), slow (a
//! delay before each chunk is passed on) and **snip**: cut one connection in the middle of a chosen
//! transaction, at its `COMMIT`, either before the `COMMIT` reaches the server (the transaction rolls back)
//! or after it (the transaction commits and its answer is lost). The transaction is chosen by a tag the store
//! puts in its statements (`/* oncepost: authorize */`, `/* oncepost: settle */`), read from the frontend
//! protocol's messages: a simple query, or a `Parse` (and every later `Bind` of that prepared statement).
//! A tagged statement run outside a transaction block (the store's one-statement transitions on PostgreSQL)
//! is its own transaction: it commits at the `Sync` that ends it, so that `Sync` is where it is cut (a
//! simple query: the query itself).
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Where a snip cuts a tagged transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snip {
    /// The connection is dropped instead of passing the `COMMIT` on: the server rolls back.
    BeforeCommit,
    /// The `COMMIT` is passed on, its answer held back, and the connection dropped once the server has had
    /// time to commit: the client cannot know that it did.
    AfterCommit,
}

/// One armed snip: the next transaction carrying `tag` is cut at its `COMMIT`.
#[derive(Debug, Clone)]
pub struct Target {
    pub tag: &'static str,
    pub snip: Snip,
}

#[derive(Default)]
struct Shared {
    delay_ms: AtomicU64,
    armed: Mutex<Option<Target>>,
    snipped: AtomicU64,
}

pub struct DbProxy {
    pub port: u16,
    shared: Arc<Shared>,
    conns: Arc<Mutex<Vec<watch::Sender<bool>>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl DbProxy {
    pub async fn start(upstream_port: u16) -> DbProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy bind");
        let port = listener.local_addr().unwrap().port();
        let shared: Arc<Shared> = Arc::default();
        let conns: Arc<Mutex<Vec<watch::Sender<bool>>>> = Arc::default();
        let (sh, c) = (shared.clone(), conns.clone());
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (cut_tx, cut_rx) = watch::channel(false);
                {
                    let mut all = c.lock().unwrap();
                    all.retain(|h| !h.is_closed());
                    all.push(cut_tx.clone());
                }
                let sh = sh.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream_port)).await else {
                        return;
                    };
                    // Small writes go out at once: with Nagle's algorithm a message written after another
                    // waits for the first one's (delayed) ACK, about 40 ms per round trip.
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    let hold = Arc::new(AtomicBool::new(false));
                    tokio::join!(
                        frontend(cr, sw, sh.clone(), hold.clone(), cut_tx, cut_rx.clone()),
                        backend(sr, cw, sh, hold, cut_rx)
                    );
                });
            }
        });
        DbProxy {
            port,
            shared,
            conns,
            accept,
        }
    }

    /// Drop every open connection (a partition, healed at once for new connections).
    pub fn cut(&self) -> usize {
        let all = std::mem::take(&mut *self.conns.lock().unwrap());
        let n = all.iter().filter(|h| !h.is_closed()).count();
        for h in all {
            let _ = h.send(true);
        }
        n
    }

    pub fn set_delay(&self, ms: u64) {
        self.shared.delay_ms.store(ms, Ordering::Relaxed);
    }

    /// Arm a snip: the next transaction carrying the tag is cut at its `COMMIT` (once).
    pub fn arm(&self, target: Target) {
        *self.shared.armed.lock().unwrap() = Some(target);
    }

    /// Disarm a snip that has not fired; whether one was armed.
    pub fn disarm(&self) -> bool {
        self.shared.armed.lock().unwrap().take().is_some()
    }

    /// How many snips have fired.
    pub fn snipped(&self) -> u64 {
        self.shared.snipped.load(Ordering::Relaxed)
    }
}

impl Drop for DbProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

/// The server's answers to the client, until the connection is cut or a snip holds them back.
async fn backend(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    shared: Arc<Shared>,
    hold: Arc<AtomicBool>,
    mut cut: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = tokio::select! {
            r = from.read(&mut buf) => match r { Ok(0) | Err(_) => break, Ok(n) => n },
            _ = cut.wait_for(|c| *c) => break,
        };
        let d = shared.delay_ms.load(Ordering::Relaxed);
        if d > 0 {
            tokio::time::sleep(Duration::from_millis(d)).await;
        }
        if hold.load(Ordering::SeqCst) || to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// The client's messages to the server, read message by message so a tagged transaction's `COMMIT` can be
/// found.
async fn frontend(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    shared: Arc<Shared>,
    hold: Arc<AtomicBool>,
    cut_tx: watch::Sender<bool>,
    mut cut: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    let mut wire = Wire::default();
    'conn: loop {
        let n = tokio::select! {
            r = from.read(&mut buf) => match r { Ok(0) | Err(_) => break, Ok(n) => n },
            _ = cut.wait_for(|c| *c) => break,
        };
        pending.extend_from_slice(&buf[..n]);
        let d = shared.delay_ms.load(Ordering::Relaxed);
        if d > 0 {
            tokio::time::sleep(Duration::from_millis(d)).await;
        }
        // Pass on every complete message, in one write per read (as the client wrote them); a snip decides at
        // a tagged transaction's COMMIT.
        let mut at = 0;
        let mut snip = None;
        while let Some(len) = wire.next_len(&pending[at..]) {
            if let Look::Snip(s) = wire.look(&pending[at..at + len], &shared) {
                snip = Some(s);
                break;
            }
            at += len;
        }
        match snip {
            None => {
                if to.write_all(&pending[..at]).await.is_err() {
                    break 'conn;
                }
                pending.drain(..at);
            }
            Some(Snip::BeforeCommit) => {
                // What came before the COMMIT goes on; the COMMIT does not, and the connection drops.
                hold.store(true, Ordering::SeqCst);
                let _ = to.write_all(&pending[..at]).await;
                shared.snipped.fetch_add(1, Ordering::SeqCst);
                let _ = cut_tx.send(true);
                break 'conn;
            }
            Some(Snip::AfterCommit) => {
                // Counted now: the client may see the connection drop (the held answer ends the backend's
                // relay) and finish before the sleep below does.
                shared.snipped.fetch_add(1, Ordering::SeqCst);
                hold.store(true, Ordering::SeqCst);
                // The COMMIT and whatever follows it in this read (a Sync) go on; the answer does not.
                let _ = to.write_all(&pending).await;
                let _ = to.flush().await;
                tokio::time::sleep(Duration::from_millis(500)).await;
                let _ = cut_tx.send(true);
                break 'conn;
            }
        }
    }
    let _ = to.shutdown().await;
}

/// What the proxy knows of one connection's frontend protocol.
#[derive(Default)]
struct Wire {
    /// Past the startup message (the first messages carry no type byte).
    started: bool,
    /// Prepared statements' texts by name (the unnamed one under "").
    statements: HashMap<Vec<u8>, String>,
    /// The open transaction carried the armed tag.
    tagged: Option<Snip>,
    /// A transaction block is open (`BEGIN` seen, no `COMMIT`/`ROLLBACK` yet).
    in_block: bool,
    /// A tagged statement ran outside a transaction block: cut at the `Sync` that commits it.
    tagged_alone: Option<Snip>,
}

enum Look {
    Pass,
    Snip(Snip),
}

const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;
const CANCEL_REQUEST: u32 = 80_877_102;

impl Wire {
    /// The length of the first complete message in `b`, if it is all there.
    fn next_len(&self, b: &[u8]) -> Option<usize> {
        let (head, len_at) = if self.started { (1, 1) } else { (0, 0) };
        if b.len() < len_at + 4 {
            return None;
        }
        let len = u32::from_be_bytes(b[len_at..len_at + 4].try_into().ok()?) as usize;
        let total = head + len;
        (b.len() >= total).then_some(total)
    }

    fn look(&mut self, msg: &[u8], shared: &Shared) -> Look {
        if !self.started {
            let code = msg
                .get(4..8)
                .and_then(|c| c.try_into().ok())
                .map_or(0, u32::from_be_bytes);
            if ![SSL_REQUEST, GSSENC_REQUEST, CANCEL_REQUEST].contains(&code) {
                self.started = true;
            }
            return Look::Pass;
        }
        if msg[0] == b'S'
            && let Some(snip) = self.tagged_alone.take()
        {
            return Look::Snip(snip);
        }
        let body = &msg[5..];
        let text = match msg[0] {
            b'Q' => Some(cstr(body, 0).0),
            b'P' => {
                let (name, next) = cstr(body, 0);
                let (query, _) = cstr(body, next);
                self.statements
                    .insert(name.clone().into_bytes(), query.clone());
                Some(query)
            }
            b'B' => {
                let (_portal, next) = cstr(body, 0);
                let (stmt, _) = cstr(body, next);
                self.statements.get(stmt.as_bytes()).cloned()
            }
            _ => None,
        };
        let Some(text) = text else {
            return Look::Pass;
        };
        let head = text.trim_start().to_ascii_uppercase();
        if msg[0] != b'P' && (head.starts_with("BEGIN") || head.starts_with("START TRANSACTION")) {
            self.in_block = true;
        }
        if head.starts_with("COMMIT") || head.starts_with("END") {
            self.in_block = false;
            if let Some(snip) = self.tagged.take() {
                return Look::Snip(snip);
            }
        } else if head.starts_with("ROLLBACK") || head.starts_with("ABORT") {
            self.in_block = false;
            self.tagged = None;
        } else if self.tagged.is_none() && msg[0] != b'P' {
            // A statement is tagged when it runs (a simple query, or a Bind of a prepared one), not when
            // it is prepared.
            let mut armed = shared.armed.lock().unwrap();
            if armed.as_ref().is_some_and(|t| text.contains(t.tag)) {
                let snip = armed.take().map(|t| t.snip);
                if self.in_block {
                    self.tagged = snip;
                } else if msg[0] == b'Q' {
                    // A simple query outside a block commits as it runs.
                    return snip.map_or(Look::Pass, Look::Snip);
                } else {
                    self.tagged_alone = snip;
                }
            }
        }
        Look::Pass
    }
}

/// The NUL-terminated string at `at`, and where the next field starts.
fn cstr(b: &[u8], at: usize) -> (String, usize) {
    let rest = b.get(at..).unwrap_or_default();
    let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
    (
        String::from_utf8_lossy(&rest[..end]).into_owned(),
        at + end + 1,
    )
}
