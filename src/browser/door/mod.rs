//! The page's one door to the network, and oncepost holds the key.
//!
//! Measured (shared/notes/write-channels-facts.md, Chromium 156): CDP `Fetch` never pauses a WebSocket
//! handshake or WebTransport, `Network.setBlockedURLs` blocks no WebSocket, CDP events about them arrive
//! after the server has the bytes, and nothing in CDP reports WebRTC. The one layer that measured zero bytes
//! out on every channel from every kind of frame and worker is a browser with no route out:
//!
//! ```text
//!   page, frames, workers ──HTTP──▶ Fetch.requestPaused (browser-wide) ──▶ oncepost answers every one:
//!                                      GET/HEAD: fetched by oncepost's own client (reads.rs), fulfilled
//!                                      the armed create request: sent ONCE by the harness (transport.rs)
//!                                      any other write: failed before it leaves (write_guard.rs)
//!   anything else (WebSocket, WebTransport, TURN/TCP, Chromium's own calls)
//!        ──▶ --proxy-server=127.0.0.1:<sinkhole>: logged and refused (403), no byte goes further,
//!            but the create socket of a contract that publishes over a WebSocket, during a publish:
//!            relayed by oncepost, each message judged whole; the armed create message sent ONCE by the
//!            harness (socket.rs)
//!   WebRTC UDP ──▶ no UDP at all: a seccomp filter on every Chromium process (no_udp.rs; the guard
//!                  installs it), and --webrtc-ip-handling-policy=disable_non_proxied_udp where honoured
//! ```
//!
//! So the create request, sent once by the harness after the store's authorization, is the only write that
//! can leave a session. The sinkhole is also a browser-wide tripwire: every refused WebSocket, WebTransport
//! or TURN attempt from any context is one [`Knock`], which the probe reports and the publish flow turns into
//! a side-effect alarm (and, before the press, into "do not press": see `publish`).
pub mod carried;
pub mod no_udp;
pub mod reads;
pub mod sinkhole;
pub mod socket;
pub mod typed;

pub use reads::{MAX_READ_BODY, ReadFetcher};
pub use sinkhole::{Knock, LiveSocket, Sinkhole};
pub use socket::SocketDoor;

use super::BrowserError;

/// The door of one browser session: the sinkhole the browser's proxy points at, and the client that
/// fetches every read the page makes.
#[derive(Debug, Clone)]
pub struct Door {
    sinkhole: Sinkhole,
    reads: ReadFetcher,
    sockets: SocketDoor,
}

impl Door {
    /// Open the sinkhole (a free port on 127.0.0.1) and build the read client. Must happen before Chromium
    /// starts: its command line names the sinkhole.
    pub async fn open() -> Result<Door, BrowserError> {
        let sockets = SocketDoor::default();
        let sinkhole = Sinkhole::start(sockets.clone()).await?;
        let reads = ReadFetcher::new()?;
        Ok(Door {
            sinkhole,
            reads,
            sockets,
        })
    }

    /// The Chromium switches that leave the browser no route out but the sinkhole. `<-loopback>` matters:
    /// without it Chromium bypasses the proxy for 127.0.0.1 (TURN/TCP to loopback leaked when measured).
    ///
    /// And the pin of the door's own key (`socket::DoorTls`), so the browser's side of a relayed `wss://`
    /// create socket ends at oncepost: no certificate but one made in this process is accepted that way.
    pub fn chromium_switches(&self) -> Vec<String> {
        let mut switches = vec![
            format!("--proxy-server=http://{}", self.sinkhole.addr()),
            "--proxy-bypass-list=<-loopback>".into(),
            "--webrtc-ip-handling-policy=disable_non_proxied_udp".into(),
        ];
        match socket::DoorTls::get() {
            Ok(tls) => switches.push(tls.chromium_switch()),
            // Without it a wss:// create socket cannot be relayed: its tunnel is refused, as every socket.
            Err(e) => tracing::warn!(error = %e, "no TLS for the door's relayed socket"),
        }
        switches
    }

    /// The tripwire.
    pub fn sinkhole(&self) -> &Sinkhole {
        &self.sinkhole
    }

    /// The read client.
    pub fn reads(&self) -> &ReadFetcher {
        &self.reads
    }

    /// The relayed create socket's rules and state.
    pub fn sockets(&self) -> &SocketDoor {
        &self.sockets
    }
}
