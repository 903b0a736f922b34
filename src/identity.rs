//! Identities: the delivery key, the attempt token, the content hash and the wire-request hash.
//!
//! Four identities, named separately because they answer different questions (see
//! `at-most-once-publishing.md`, "Idempotency identity"):
//!
//! | identity | answers | derived from | never includes |
//! |---|---|---|---|
//! | [`DeliveryKey`] | "did I already do this?" | account, action kind, target, canonical request | any time, any per-attempt value |
//! | [`AttemptToken`] | "which try was this?" | randomness (uuid v4) | content |
//! | [`ContentHash`] | "is this the same text again?" (duplicate window) | normalized text | account, time |
//! | [`WireRequestHash`] | "what exactly went on the wire?" | method, URL, body bytes | time |
//!
//! Every backend uses these functions; nothing else in the crate hashes for identity, so the SQLite and the
//! PostgreSQL store cannot disagree about what "the same post" is.
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;

/// Version tag mixed into every content-derived hash, so a future change of the canonical encoding can never
/// produce a key equal to an old one by accident.
const KEY_DOMAIN: &str = "oncepost/delivery-key/v1";
const CONTENT_DOMAIN: &str = "oncepost/content/v1";
const WIRE_DOMAIN: &str = "oncepost/wire-request/v1";
const REDELIVERY_DOMAIN: &str = "oncepost/redelivery/v1";
const SOURCE_VERSION_DOMAIN: &str = "oncepost/source-version/v1";
const CLAIM_DOMAIN: &str = "oncepost/claim/v1";

/// What kind of side effect an intent asks for. Zero-text verbs (like, reshare, follow) are distinct kinds so
/// that they never collide with each other or with a post on the same target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// A new post with text.
    Post,
    /// A reply to the target, with text.
    Reply,
    /// A quote of the target, with text: both the text and the linkage are in the key.
    Quote,
    /// A like of the target; no text.
    Like,
    /// A reshare of the target; no text.
    Reshare,
    /// Following the target account; no text.
    Follow,
}

impl ActionKind {
    /// The one spelling of this kind, shared by serde, the CLI and the SQL column.
    pub fn label(self) -> &'static str {
        match self {
            ActionKind::Post => "post",
            ActionKind::Reply => "reply",
            ActionKind::Quote => "quote",
            ActionKind::Like => "like",
            ActionKind::Reshare => "reshare",
            ActionKind::Follow => "follow",
        }
    }

    /// Parse the label written by [`ActionKind::label`].
    pub fn from_label(s: &str) -> Option<Self> {
        [
            ActionKind::Post,
            ActionKind::Reply,
            ActionKind::Quote,
            ActionKind::Like,
            ActionKind::Reshare,
            ActionKind::Follow,
        ]
        .into_iter()
        .find(|k| k.label() == s)
    }

    /// Whether this kind carries outgoing text.
    pub fn has_text(self) -> bool {
        matches!(
            self,
            ActionKind::Post | ActionKind::Reply | ActionKind::Quote
        )
    }
}

impl fmt::Display for ActionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The largest post text oncepost accepts, in bytes of UTF-8 (64 KiB), and the largest value of any other
/// compose field. Far above what platforms take (Fixturebook: 10,000 characters), and a bound on what one
/// intent stores, searches for and types into a page.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

/// `Err` with a message naming the limit when `text` is larger than [`MAX_TEXT_BYTES`].
pub fn check_text_size(what: &str, text: &str) -> Result<(), String> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(format!(
            "{what} is {} bytes; the limit is {MAX_TEXT_BYTES} bytes (64 KiB) of UTF-8",
            text.len()
        ));
    }
    Ok(())
}

/// The longest account name, in characters.
pub const ACCOUNT_NAME_MAX: usize = 64;

/// The account-name rule, as every refusal states it (and docs/cli.md documents it).
pub const ACCOUNT_NAME_RULE: &str =
    "1 to 64 characters from A-Z a-z 0-9 . _ @ -, not starting with a dot";

/// Why a string is not an account name.
///
/// Account names become file names (the browser profile `<data-dir>/profiles/<name>` and its lock), so a
/// name that is not a plain file name could leave the data dir (`../../x`) or alias another account's
/// profile under a different lock (`./alice`). Every place a name enters (the command line, the store)
/// checks it with [`check_account_name`]; profile paths are built only from checked names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad account name {shown}: {why} (an account name is {ACCOUNT_NAME_RULE})")]
pub struct AccountNameError {
    /// The name as given, escaped and cut for display.
    pub shown: String,
    /// Which part of the rule it breaks.
    pub why: String,
}

/// Check `name` against [`ACCOUNT_NAME_RULE`].
pub fn check_account_name(name: &str) -> Result<(), AccountNameError> {
    let why = if name.is_empty() {
        Some("it is empty".to_string())
    } else if name.chars().count() > ACCOUNT_NAME_MAX {
        Some(format!("it is longer than {ACCOUNT_NAME_MAX} characters"))
    } else if name.contains(['/', '\\']) {
        Some("it contains a path separator".to_string())
    } else if name.chars().all(|c| c == '.') {
        Some("it is only dots (a path, not a name)".to_string())
    } else if name.starts_with('.') {
        Some("it starts with a dot".to_string())
    } else {
        name.chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-')))
            .map(|c| format!("it contains {c:?}, which is not allowed"))
    };
    match why {
        None => Ok(()),
        Some(why) => {
            let cut: String = name.chars().take(80).collect();
            let more = if name.chars().count() > 80 { "..." } else { "" };
            Err(AccountNameError {
                shown: format!("{cut:?}{more}"),
                why,
            })
        }
    }
}

/// Normalize text the way every identity sees it: Unicode NFC, CRLF and CR turned into LF, and leading and
/// trailing white space removed (platforms trim it, so two texts differing only there are the same post).
pub fn normalize_text(text: &str) -> String {
    let unified = text.replace("\r\n", "\n").replace('\r', "\n");
    unified.nfc().collect::<String>().trim().to_string()
}

/// The canonical projection of the request that will actually be sent: the normalized text (if the kind
/// carries text) and the other compose fields, normalized the same way and ordered by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CanonicalRequest {
    /// Normalized text; `None` for zero-text verbs.
    pub text: Option<String>,
    /// Other fields (title, the quoted post's id, ...), normalized, sorted by name.
    pub fields: BTreeMap<String, String>,
}

impl CanonicalRequest {
    /// Build a canonical request from raw caller input.
    pub fn new(text: Option<&str>, fields: &BTreeMap<String, String>) -> Self {
        CanonicalRequest {
            text: text.map(normalize_text),
            fields: fields
                .iter()
                .map(|(k, v)| (k.trim().to_string(), normalize_text(v)))
                .collect(),
        }
    }
}

/// Everything that decides a delivery key. A caller's source reference is deliberately absent: it is an
/// attribute of the intent, not part of its identity, unless the caller puts it into `request.fields`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliverySpec {
    /// The account that will publish (its stable name in the store).
    pub account: String,
    /// The kind of side effect.
    pub action: ActionKind,
    /// The target's stable identity: the account's own feed for a post (empty string), a post id or URL for
    /// a reply, like, reshare or quote, an account id for a follow.
    pub target: String,
    /// The canonical request projection.
    pub request: CanonicalRequest,
    /// The claim the post makes about a source, if it rests on one: two identical texts about two sources
    /// (or two versions of one) are two deliveries. `None` leaves the key exactly as it was before sources.
    pub claim: Option<ClaimId>,
}

/// Append one length-prefixed component, so that no two different component lists encode to the same bytes.
fn put(h: &mut Sha256, part: &[u8]) {
    h.update((part.len() as u64).to_be_bytes());
    h.update(part);
}

fn finish(h: Sha256) -> String {
    hex::encode(h.finalize())
}

/// The stable identity of one intended external effect: sha256 (hex) over a canonical encoding of (account,
/// action kind, target identity, canonical request projection). Never includes a time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DeliveryKey(String);

impl DeliveryKey {
    /// Compute the key of a delivery.
    pub fn derive(spec: &DeliverySpec) -> Self {
        let mut h = Sha256::new();
        put(&mut h, KEY_DOMAIN.as_bytes());
        put(&mut h, spec.account.trim().as_bytes());
        put(&mut h, spec.action.label().as_bytes());
        put(&mut h, spec.target.trim().as_bytes());
        match &spec.request.text {
            Some(t) => {
                put(&mut h, b"text");
                put(&mut h, t.as_bytes());
            }
            None => put(&mut h, b"no-text"),
        }
        put(&mut h, &(spec.request.fields.len() as u64).to_be_bytes());
        for (k, v) in &spec.request.fields {
            put(&mut h, k.as_bytes());
            put(&mut h, v.as_bytes());
        }
        // Appended only when present: every key minted before sources existed stays the same.
        if let Some(c) = &spec.claim {
            put(&mut h, b"claim");
            put(&mut h, c.0.as_bytes());
        }
        DeliveryKey(finish(h))
    }

    /// The key of a redelivery: the consumed key plus the explicit authorization record (who and why). The
    /// same person giving the same reason for the same consumed key gets the same key, so repeating the
    /// command cannot authorize two extra copies.
    pub fn for_redelivery(consumed: &DeliveryKey, by: &str, reason: &str) -> Self {
        let mut h = Sha256::new();
        put(&mut h, REDELIVERY_DOMAIN.as_bytes());
        put(&mut h, consumed.0.as_bytes());
        put(&mut h, by.trim().as_bytes());
        put(&mut h, normalize_text(reason).as_bytes());
        DeliveryKey(finish(h))
    }

    /// Wrap a key read back from the store or typed by a person. Accepts exactly 64 lowercase hex digits.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        (s.len() == 64
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        .then(|| DeliveryKey(s.to_string()))
    }

    /// The hex string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The intent's marker for platforms that keep one (`readback.marker_field`): `op` and the key's first
    /// 12 hex digits (48 bits), letters and digits only so that a tag, slug or title field keeps it as it is.
    pub fn marker(&self) -> String {
        format!("op{}", &self.0[..12])
    }
}

impl fmt::Display for DeliveryKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `s` is exactly 64 lowercase hex digits (a sha256 written by this module).
fn is_hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The identity of one version of a source: sha256 over its stable id (a canonical URL or an object id,
/// see [`canonical_source_id`]) and its NORMALIZED visible body (`source::normalize`). Never includes when it
/// was fetched, nor the raw bytes (page chrome, tokens and timestamps change on every fetch): the raw hash is
/// capture metadata, kept beside the version, never part of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SourceVersionId(String);

impl SourceVersionId {
    /// The version of `stable_id` whose normalized body is `normalized_body`.
    pub fn of(stable_id: &str, normalized_body: &str) -> Self {
        let mut h = Sha256::new();
        put(&mut h, SOURCE_VERSION_DOMAIN.as_bytes());
        put(&mut h, canonical_source_id(stable_id).as_bytes());
        put(&mut h, normalized_body.as_bytes());
        SourceVersionId(finish(h))
    }

    /// Wrap an id read back from the store or typed by a person (64 lowercase hex digits).
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        is_hex64(s).then(|| SourceVersionId(s.to_string()))
    }

    /// The hex string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SourceVersionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A source's stable id as every identity sees it: trimmed, and an http(s) URL in its canonical form (scheme
/// and host lowercased, default port and fragment dropped, by the `url` crate's parser), so that
/// `HTTPS://Example.org:443/a#top` and `https://example.org/a` are one source. Anything else (an object id)
/// is kept as given, trimmed.
pub fn canonical_source_id(stable_id: &str) -> String {
    let t = stable_id.trim();
    match url::Url::parse(t) {
        Ok(mut u) if matches!(u.scheme(), "http" | "https") => {
            u.set_fragment(None);
            u.to_string()
        }
        _ => t.to_string(),
    }
}

/// The identity of a claim: the source version it rests on plus the claim's own content (normalized like
/// post text). The same sentence about two sources, or about two versions of one, is two claims.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClaimId(String);

impl ClaimId {
    /// The claim `claim` makes about `version`.
    pub fn of(version: &SourceVersionId, claim: &str) -> Self {
        let mut h = Sha256::new();
        put(&mut h, CLAIM_DOMAIN.as_bytes());
        put(&mut h, version.0.as_bytes());
        put(&mut h, normalize_text(claim).as_bytes());
        ClaimId(finish(h))
    }

    /// Wrap an id read back from the store (64 lowercase hex digits).
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        is_hex64(s).then(|| ClaimId(s.to_string()))
    }

    /// The hex string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClaimId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A fresh, random token per attempt; never content-derived.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AttemptToken(String);

impl AttemptToken {
    /// Mint a new random token (uuid v4).
    pub fn mint() -> Self {
        AttemptToken(uuid::Uuid::new_v4().to_string())
    }

    /// Wrap a token read back from the store.
    pub fn from_stored(s: String) -> Self {
        AttemptToken(s)
    }

    /// The token's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AttemptToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// sha256 (hex) of the normalized text: the identity the duplicate-text window compares.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ContentHash(String);

impl ContentHash {
    /// Hash a text after [`normalize_text`]. Zero-text verbs hash the empty string under their own label, so
    /// two likes never trip the duplicate-text window of each other's (absent) text.
    pub fn of(action: ActionKind, text: Option<&str>) -> Self {
        let mut h = Sha256::new();
        put(&mut h, CONTENT_DOMAIN.as_bytes());
        match text {
            Some(t) if action.has_text() => put(&mut h, normalize_text(t).as_bytes()),
            _ => put(&mut h, action.label().as_bytes()),
        }
        ContentHash(finish(h))
    }

    /// Wrap a hash read back from the store.
    pub fn from_stored(s: String) -> Self {
        ContentHash(s)
    }

    /// The hex string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// sha256 (hex) of the request that went on the wire: method, URL and body bytes exactly as sent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WireRequestHash(String);

impl WireRequestHash {
    /// Hash a request as sent.
    pub fn of(method: &str, url: &str, body: &[u8]) -> Self {
        let mut h = Sha256::new();
        put(&mut h, WIRE_DOMAIN.as_bytes());
        put(&mut h, method.to_ascii_uppercase().as_bytes());
        put(&mut h, url.as_bytes());
        put(&mut h, body);
        WireRequestHash(finish(h))
    }

    /// The hex string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(action: ActionKind, text: Option<&str>) -> DeliverySpec {
        DeliverySpec {
            account: "alice".into(),
            action,
            target: "post/42".into(),
            request: CanonicalRequest::new(text, &BTreeMap::new()),
            claim: None,
        }
    }

    #[test]
    fn a_claim_makes_another_delivery_and_its_version_never_includes_time() {
        let plain = DeliveryKey::derive(&spec(ActionKind::Post, Some("Release 1.0 is out")));
        let v1 = SourceVersionId::of("https://news.example/r1", "Release 1.0.\nThree bugs fixed.");
        let v1_again = SourceVersionId::of(
            " HTTPS://News.Example:443/r1#top ",
            "Release 1.0.\nThree bugs fixed.",
        );
        assert_eq!(v1, v1_again, "the stable id is compared canonically");
        let v2 = SourceVersionId::of("https://news.example/r1", "Release 1.0.\nFour bugs fixed.");
        let other_source =
            SourceVersionId::of("https://news.example/r2", "Release 1.0.\nThree bugs fixed.");
        assert_ne!(v1, v2);
        assert_ne!(v1, other_source);
        let key_on = |v: &SourceVersionId| {
            let mut s = spec(ActionKind::Post, Some("Release 1.0 is out"));
            s.claim = Some(ClaimId::of(v, "Release 1.0 is out"));
            DeliveryKey::derive(&s)
        };
        let (k1, k2, k3) = (key_on(&v1), key_on(&v2), key_on(&other_source));
        assert!(k1 != plain && k1 != k2 && k1 != k3 && k2 != k3);
        assert_eq!(key_on(&v1_again), k1);
        assert_eq!(
            ClaimId::of(&v1, "  Release 1.0 is out\r\n"),
            ClaimId::of(&v1, "Release 1.0 is out")
        );
        assert_eq!(SourceVersionId::parse(v1.as_str()), Some(v1.clone()));
        assert_eq!(SourceVersionId::parse("nope"), None);
    }

    #[test]
    fn account_names_follow_the_rule() {
        for ok in [
            "alice",
            "a",
            "alice.work@example-1_x",
            &"a".repeat(64),
            "a..b",
            "x.",
        ] {
            assert_eq!(check_account_name(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("../../../x", "path separator"),
            ("./alice", "path separator"),
            ("a\\b", "path separator"),
            (".", "only dots"),
            ("..", "only dots"),
            ("...", "only dots"),
            (".alice", "starts with a dot"),
            ("a b", "' '"),
            ("alice\n", "'\\n'"),
            ("caf\u{e9}", "'\u{e9}'"),
            ("a\u{1b}[2J", "'\\u{1b}'"),
        ] {
            let e = check_account_name(bad).expect_err(bad);
            assert!(e.why.contains(why), "{bad:?}: {e}");
            assert!(e.to_string().contains(ACCOUNT_NAME_RULE));
            assert!(!e.to_string().chars().any(|c| c.is_control()), "{e}");
        }
        assert!(check_account_name(&"a".repeat(65)).is_err());
    }

    #[test]
    fn zero_text_verbs_on_one_target_get_distinct_keys() {
        let keys: Vec<_> = [
            ActionKind::Like,
            ActionKind::Reshare,
            ActionKind::Follow,
            ActionKind::Reply,
        ]
        .into_iter()
        .map(|a| DeliveryKey::derive(&spec(a, None)))
        .collect();
        for i in 0..keys.len() {
            for j in i + 1..keys.len() {
                assert_ne!(keys[i], keys[j]);
            }
        }
    }

    #[test]
    fn quote_key_covers_text_and_linkage() {
        let mut a = spec(ActionKind::Quote, Some("look"));
        let b = spec(ActionKind::Quote, Some("look"));
        assert_eq!(DeliveryKey::derive(&a), DeliveryKey::derive(&b));
        a.target = "post/43".into();
        assert_ne!(DeliveryKey::derive(&a), DeliveryKey::derive(&b));
        let c = spec(ActionKind::Quote, Some("look!"));
        assert_ne!(DeliveryKey::derive(&c), DeliveryKey::derive(&b));
    }

    #[test]
    fn canonicalization_nfc_and_line_endings() {
        // "é" precomposed vs "e" + combining acute; CRLF vs LF; surrounding blanks.
        let a = spec(ActionKind::Post, Some("caf\u{e9}\r\nbar"));
        let b = spec(ActionKind::Post, Some("  cafe\u{301}\nbar \n"));
        assert_eq!(DeliveryKey::derive(&a), DeliveryKey::derive(&b));
        assert_eq!(
            ContentHash::of(ActionKind::Post, Some("caf\u{e9}\r\nbar")),
            ContentHash::of(ActionKind::Post, Some("cafe\u{301}\nbar"))
        );
    }

    #[test]
    fn components_cannot_run_into_each_other() {
        let mut a = spec(ActionKind::Post, Some("b"));
        a.account = "a".into();
        a.target = String::new();
        let mut b = spec(ActionKind::Post, Some(""));
        b.account = "a".into();
        b.target = "b".into();
        assert_ne!(DeliveryKey::derive(&a), DeliveryKey::derive(&b));
    }

    #[test]
    fn fields_are_in_the_key_in_name_order() {
        let mut f1 = BTreeMap::new();
        f1.insert("title".to_string(), "T".to_string());
        let mut s = spec(ActionKind::Post, Some("x"));
        let plain = DeliveryKey::derive(&s);
        s.request = CanonicalRequest::new(Some("x"), &f1);
        assert_ne!(plain, DeliveryKey::derive(&s));
    }

    #[test]
    fn attempt_tokens_are_random() {
        assert_ne!(AttemptToken::mint(), AttemptToken::mint());
    }

    #[test]
    fn key_parse_round_trips_and_rejects_junk() {
        let k = DeliveryKey::derive(&spec(ActionKind::Post, Some("x")));
        assert_eq!(DeliveryKey::parse(k.as_str()), Some(k.clone()));
        assert_eq!(DeliveryKey::parse("nope"), None);
        assert_eq!(DeliveryKey::parse(&k.as_str().to_uppercase()), None);
    }

    #[test]
    fn redelivery_key_differs_from_consumed_and_is_repeatable() {
        let k = DeliveryKey::derive(&spec(ActionKind::Post, Some("x")));
        let r1 = DeliveryKey::for_redelivery(&k, "ops", "the first copy was deleted");
        let r2 = DeliveryKey::for_redelivery(&k, "ops", "the first copy was deleted");
        assert_eq!(r1, r2);
        assert_ne!(r1, k);
        assert_ne!(r1, DeliveryKey::for_redelivery(&k, "ops", "another reason"));
    }

    #[test]
    fn wire_hash_covers_method_url_body() {
        let a = WireRequestHash::of("POST", "http://x/api", b"{}");
        assert_eq!(a, WireRequestHash::of("post", "http://x/api", b"{}"));
        assert_ne!(a, WireRequestHash::of("POST", "http://x/api", b"{ }"));
        assert_ne!(a, WireRequestHash::of("POST", "http://x/api2", b"{}"));
    }
}
