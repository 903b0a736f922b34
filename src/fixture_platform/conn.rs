//! Accepting connections and serving each one with hyper's HTTP/1 connection driver.
//!
//! We drive hyper per connection ourselves (instead of a framework's `serve`) because the fault modes
//! need the raw socket: `commit-then-drop` closes it with no response, `reset-before-read` resets it
//! (SO_LINGER 0) after the head. Keep-alive stays ON: Chromium's silent re-send only happens on a
//! reused connection, and tests must be able to show it.
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use super::{SHUTDOWN_GRACE, Shared, routes};

/// A client must finish sending a request head within this long (slowloris bound).
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How a handler asks its connection task to end the connection instead of answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnAction {
    /// Close the socket normally (FIN) without writing a response.
    Drop,
    /// Close the socket with RST (SO_LINGER 0) without writing a response.
    Reset,
}

/// Per-connection channel from the request handler to the task that owns the socket.
#[derive(Debug, Default)]
pub(crate) struct ConnControl {
    action: Mutex<Option<ConnAction>>,
    notify: Notify,
}

impl ConnControl {
    /// Ask the connection task to end the connection; the caller should then never complete.
    pub(crate) fn end(&self, action: ConnAction) {
        *self.action.lock().unwrap_or_else(PoisonError::into_inner) = Some(action);
        self.notify.notify_one();
    }

    pub(crate) async fn ended(&self) -> ConnAction {
        loop {
            if let Some(a) = *self.action.lock().unwrap_or_else(PoisonError::into_inner) {
                return a;
            }
            self.notify.notified().await;
        }
    }
}

/// Accept until shutdown, then wait (bounded) for every connection task.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    tasks.spawn(serve_connection(stream, shared.clone(), shutdown.clone(), tls.clone()));
                }
                Err(e) => {
                    // EMFILE and friends: back off briefly instead of spinning.
                    tracing::warn!(error = %e, "fixture platform accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.changed() => break,
            // Reap finished connection tasks so the set does not grow without bound.
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(listener);
    // Each task bounds its own graceful phase; this outer bound is a backstop.
    let all = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE + Duration::from_secs(1), all)
        .await
        .is_err()
    {
        tasks.abort_all();
    }
}

async fn serve_connection(
    stream: TcpStream,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let _ = stream.set_nodelay(true);
    let reset = Arc::new(AtomicBool::new(false));
    let socket = Socket {
        stream,
        reset: reset.clone(),
    };
    match tls {
        None => serve_io(socket, reset, shared, shutdown).await,
        // The TLS port: the same platform over https (its root in `tls-root.pem`).
        Some(acceptor) => {
            if let Ok(Ok(stream)) =
                tokio::time::timeout(HEADER_READ_TIMEOUT, acceptor.accept(socket)).await
            {
                serve_io(stream, reset, shared, shutdown).await;
            }
        }
    }
}

async fn serve_io<I>(
    io: I,
    reset: Arc<AtomicBool>,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let socket = io;
    let control = Arc::new(ConnControl::default());
    let svc_control = control.clone();
    let service = service_fn(move |req| {
        let shared = shared.clone();
        let control = svc_control.clone();
        async move {
            // The live feed's event stream (`?spa=sse`) is the one answer that streams: it stays open.
            if req.method() == hyper::Method::GET && req.uri().path() == "/api/stream" {
                return Ok::<_, std::convert::Infallible>(routes::event_stream());
            }
            Ok(routes::handle(req, shared, control)
                .await
                .map(BodyExt::boxed_unsync))
        }
    });
    let conn = http1::Builder::new()
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(socket), service)
        // The live channel (`GET /api/live`) upgrades to a WebSocket.
        .with_upgrades();
    tokio::pin!(conn);
    if *shutdown.borrow() {
        return;
    }
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!(error = %e, "fixture platform connection ended with an error");
            }
        }
        action = control.ended() => {
            if action == ConnAction::Reset {
                reset.store(true, Ordering::Relaxed);
            }
            // Dropping `conn` here closes the socket without writing anything (with RST once `reset` is set).
        }
        _ = shutdown.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn.as_mut()).await;
        }
    }
}

/// A connection's socket as hyper drives it. Once `reset` is set, its close sends RST instead of FIN: SO_LINGER
/// with a zero timeout goes on just before the descriptor is closed (a zero linger never blocks the close).
pub(crate) struct Socket {
    stream: TcpStream,
    reset: Arc<AtomicBool>,
}

impl Socket {
    /// Wrap `stream`; setting `reset` makes its close an RST.
    pub(crate) fn new(stream: TcpStream, reset: Arc<AtomicBool>) -> Self {
        Socket { stream, reset }
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        if self.reset.load(Ordering::Relaxed)
            && let Err(e) = self.stream.set_zero_linger()
        {
            tracing::warn!(error = %e, "SO_LINGER 0 failed; close will be a FIN");
        }
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
