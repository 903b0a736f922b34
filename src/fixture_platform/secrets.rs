//! The `secrets` hostile variant: a page and a create API that plant credentials in every place a publisher
//! might persist or print them, so a test can grep everything oncepost wrote for each value.
//!
//! The page (`fixtures/hostile/secrets.html`) keeps script state, a hidden input, an inline handler, a
//! `javascript:` link, a `data-session` attribute and a visible Bearer value in its DOM, and its create
//! request carries `X-Auth-Key`, `X-Api-Key`, `X-Client-Secret` and `?access_token=`. A create request
//! carrying `X-Auth-Key` is answered (whatever the fault mode) with secret response headers (`Set-Cookie`,
//! `X-Session-Token`), secret JSON members at several depths and a Bearer value in the body, and a
//! permalink URL with `?access_token=` that the page then navigates to.
use http_body_util::{BodyExt, Full};
use hyper::Response;
use hyper::body::Bytes;
use hyper::header::{self, HeaderMap, HeaderValue};
use serde_json::{Value, json};

/// One planted secret: where it is, and its value (unique, so a grep finds exactly it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlantedSecret {
    /// Where the variant puts it.
    pub place: &'static str,
    /// The value.
    pub value: &'static str,
}

const fn plant(place: &'static str, value: &'static str) -> PlantedSecret {
    PlantedSecret { place, value }
}

/// Planted in the page (DOM and the create request its script sends).
pub const PAGE_SECRETS: &[PlantedSecret] = &[
    plant("data-session attribute", "fbs-data-attr-44f0aa"),
    plant("hidden input value", "fbs-hidden-input-3c9d41"),
    plant("Bearer value in page text", "fbs-dom-bearer-90ab3e"),
    plant("javascript: URL", "fbs-jsurl-1b6c52"),
    plant("onerror handler", "fbs-onerror-8e2f17"),
    plant("script state session", "fbs-script-session-5d1e0c"),
    plant("script state apiKey", "fbs-script-apikey-77a2b9"),
    plant(
        "create request URL ?access_token=",
        "fbs-query-token-c3a9e0",
    ),
    plant("create request X-Auth-Key", "fbs-hdr-auth-key-2f81c7"),
    plant("create request X-Api-Key", "fbs-hdr-api-key-6a0d93"),
    plant(
        "create request X-Client-Secret",
        "fbs-hdr-client-secret-b47e15",
    ),
];

const SET_COOKIE: &str = "fbs-set-cookie-0e7d52";
const SESSION_TOKEN_HEADER: &str = "fbs-resp-session-token-5b2c88";
const BODY_SESSION: &str = "fbs-body-session-1d4f6a";
const BODY_API_KEY: &str = "fbs-body-api-key-93c0e2";
const BODY_PASSWORD: &str = "fbs-body-password-7e15b4";
const BODY_CLIENT_SECRET: &str = "fbs-body-client-secret-2a8d67";
const BODY_BEARER: &str = "fbs-body-bearer-c61f09";
const BODY_DEEP: &str = "fbs-body-refresh-deep-4e9ab1";
const REDIRECT_TOKEN: &str = "fbs-redirect-token-8d2b71";

/// Planted by the server in its answer to the create request.
pub const RESPONSE_SECRETS: &[PlantedSecret] = &[
    plant("response Set-Cookie", SET_COOKIE),
    plant("response X-Session-Token", SESSION_TOKEN_HEADER),
    plant("response body session", BODY_SESSION),
    plant("response body api_key", BODY_API_KEY),
    plant("response body password", BODY_PASSWORD),
    plant("response body client_secret", BODY_CLIENT_SECRET),
    plant("response body Bearer value", BODY_BEARER),
    plant("response body meta.oauth.refresh_token", BODY_DEEP),
    plant("permalink URL ?access_token=", REDIRECT_TOKEN),
];

/// Whether a create request came from the `secrets` page (it carries `X-Auth-Key`).
pub(crate) fn wants(headers: &HeaderMap) -> bool {
    headers.contains_key("x-auth-key")
}

/// Add the planted secrets to a create answer: headers always; JSON members when the body is a JSON object,
/// and `?access_token=` on its `url` (which the page navigates to on success).
pub(crate) async fn plant_into(resp: Response<Full<Bytes>>) -> Response<Full<Bytes>> {
    let (mut parts, body) = resp.into_parts();
    let bytes = match body.collect().await {
        Ok(c) => c.to_bytes(),
        Err(never) => match never {},
    };
    let body = match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(mut obj)) => {
            if let Some(url) = obj.get("url").and_then(Value::as_str).map(str::to_owned) {
                let with_token = format!("{url}?access_token={REDIRECT_TOKEN}");
                if let Ok(v) = HeaderValue::from_str(&with_token) {
                    parts.headers.insert(header::LOCATION, v);
                }
                obj.insert("url".into(), json!(with_token));
            }
            obj.insert("session".into(), json!(BODY_SESSION));
            obj.insert("api_key".into(), json!(BODY_API_KEY));
            obj.insert(
                "user".into(),
                json!({ "name": "fixture", "password": BODY_PASSWORD }),
            );
            obj.insert("client_secret".into(), json!(BODY_CLIENT_SECRET));
            obj.insert(
                "debug".into(),
                json!(format!("sent with Authorization: Bearer {BODY_BEARER}")),
            );
            obj.insert(
                "meta".into(),
                json!({ "oauth": { "refresh_token": BODY_DEEP, "scope": "post" } }),
            );
            Bytes::from(Value::Object(obj).to_string())
        }
        _ => bytes,
    };
    parts.headers.append(
        header::SET_COOKIE,
        HeaderValue::from_static("fbs_sid=fbs-set-cookie-0e7d52; Path=/; HttpOnly"),
    );
    parts.headers.insert(
        "x-session-token",
        HeaderValue::from_static(SESSION_TOKEN_HEADER),
    );
    Response::from_parts(parts, Full::new(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_carries_every_page_secret_and_the_cookie_constant_matches() {
        let page = include_str!("../../fixtures/hostile/secrets.html");
        for s in PAGE_SECRETS {
            assert!(page.contains(s.value), "{} missing from the page", s.place);
        }
        let all: Vec<_> = PAGE_SECRETS
            .iter()
            .chain(RESPONSE_SECRETS)
            .map(|s| s.value)
            .collect();
        let unique: std::collections::BTreeSet<_> = all.iter().collect();
        assert_eq!(unique.len(), all.len(), "values are unique");
        assert!("fbs_sid=fbs-set-cookie-0e7d52; Path=/; HttpOnly".contains(SET_COOKIE));
    }
}
