//! The review page's guards: the session token in the URL, the CSRF token in every form, the Origin/Referer
//! check on every POST, the bind-address policy, and the headers every response carries.
//!
//! Both tokens are 256 random bits from the kernel ([`crate::secret`]), hex-encoded, compared in constant
//! time so a wrong guess takes as long as a right one.
use std::net::SocketAddr;

use axum::http::{HeaderMap, HeaderValue, header};

use super::error::ReviewError;

/// 256 random bits, hex-encoded (64 characters).
pub fn random_token() -> Result<String, ReviewError> {
    crate::secret::random_hex::<32>()
        .map_err(|e| ReviewError::Internal(format!("no randomness from the kernel: {e}")))
}

/// Compare two secrets in time that depends only on their lengths (which are public: always 64).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    crate::secret::same(a, b)
}

/// Where the server may listen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindChoice {
    /// Not chosen by the person: must be a loopback address (127.0.0.1 by default).
    Default(SocketAddr),
    /// Chosen explicitly with `--bind`: any address is allowed (the person asked for it).
    Explicit(SocketAddr),
}

impl BindChoice {
    /// The address to bind, or [`ReviewError::NonLoopbackBind`] when a non-loopback address was not asked for
    /// explicitly. The page lists unpublished text and evidence: exposing it beyond this machine must be a
    /// deliberate act.
    pub fn resolve(self) -> Result<SocketAddr, ReviewError> {
        match self {
            BindChoice::Default(a) if !a.ip().is_loopback() => {
                Err(ReviewError::NonLoopbackBind(a.ip()))
            }
            BindChoice::Default(a) | BindChoice::Explicit(a) => Ok(a),
        }
    }
}

/// The origins a POST may come from: the server's own address (and `localhost` for a loopback bind).
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    allowed: Vec<String>,
    /// Bound to 0.0.0.0 / [::]: the origin is then whatever host the browser used, checked against `Host`.
    any_host_on_port: Option<u16>,
}

impl OriginPolicy {
    /// The policy for a server listening on `local`.
    pub fn for_local(local: SocketAddr) -> Self {
        let port = local.port();
        let mut allowed = vec![format!("http://{local}")];
        if local.ip().is_loopback() {
            allowed.push(format!("http://localhost:{port}"));
        }
        OriginPolicy {
            allowed,
            any_host_on_port: local.ip().is_unspecified().then_some(port),
        }
    }

    /// The canonical origin (used for printed URLs).
    pub fn primary(&self) -> &str {
        &self.allowed[0]
    }

    fn is_allowed(&self, origin: &str, headers: &HeaderMap) -> bool {
        if self.allowed.iter().any(|a| a == origin) {
            return true;
        }
        // Unspecified bind: the page's origin is the Host the browser used; it must name our port.
        if let Some(port) = self.any_host_on_port
            && let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok())
            && host
                .rsplit_once(':')
                .and_then(|(_, p)| p.parse::<u16>().ok())
                == Some(port)
        {
            return origin == format!("http://{host}");
        }
        false
    }

    /// A POST must name one of our origins in `Origin`, or (when a browser sends no Origin) start its
    /// `Referer` with one. Neither header: refused (browsers send Origin on every form POST).
    pub fn check(&self, headers: &HeaderMap) -> Result<(), ReviewError> {
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().map_err(|_| ReviewError::Forbidden)?;
            return if self.is_allowed(origin, headers) {
                Ok(())
            } else {
                Err(ReviewError::Forbidden)
            };
        }
        if let Some(referer) = headers.get(header::REFERER) {
            let referer = referer.to_str().map_err(|_| ReviewError::Forbidden)?;
            let url = url::Url::parse(referer).map_err(|_| ReviewError::Forbidden)?;
            let origin = url.origin().ascii_serialization();
            return if self.is_allowed(&origin, headers) {
                Ok(())
            } else {
                Err(ReviewError::Forbidden)
            };
        }
        Err(ReviewError::Forbidden)
    }
}

/// The Content-Security-Policy of every response: nothing external, no scripts at all, images and forms from
/// this server only, never framed. `style_hash` is the base64 sha256 of the page's one inline stylesheet.
pub fn content_security_policy(style_hash: &str) -> String {
    format!(
        "default-src 'none'; img-src 'self'; style-src 'sha256-{style_hash}'; form-action 'self'; \
         frame-ancestors 'none'; base-uri 'none'"
    )
}

/// Add the headers every response carries (pages, images, errors alike).
pub fn add_security_headers(headers: &mut HeaderMap, csp: &HeaderValue) {
    headers.insert(header::CONTENT_SECURITY_POLICY, csp.clone());
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The token is in the URL: never hand it to another site, but keep Referer for our own POSTs.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_256_bits_and_differ() {
        let a = random_token().unwrap();
        let b = random_token().unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }

    #[test]
    fn constant_time_eq_compares() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn non_loopback_needs_explicit_bind() {
        let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert!(matches!(
            BindChoice::Default(any).resolve(),
            Err(ReviewError::NonLoopbackBind(_))
        ));
        assert_eq!(BindChoice::Default(lo).resolve().unwrap(), lo);
        assert_eq!(BindChoice::Explicit(any).resolve().unwrap(), any);
    }

    #[test]
    fn origin_policy() {
        let p = OriginPolicy::for_local("127.0.0.1:8080".parse().unwrap());
        let mut h = HeaderMap::new();
        assert!(p.check(&h).is_err(), "no Origin, no Referer");
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8080"),
        );
        assert!(p.check(&h).is_ok());
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8081"),
        );
        assert!(p.check(&h).is_err());
        h.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(p.check(&h).is_err());
        let mut r = HeaderMap::new();
        r.insert(
            header::REFERER,
            HeaderValue::from_static("http://localhost:8080/tok/x"),
        );
        assert!(p.check(&r).is_ok());
        r.insert(
            header::REFERER,
            HeaderValue::from_static("http://evil.test/tok/x"),
        );
        assert!(p.check(&r).is_err());
    }
}
