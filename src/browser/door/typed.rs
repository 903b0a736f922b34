//! Whether a "read" carries what oncepost typed into the page: a GET or HEAD whose URL holds the draft is a
//! write (an analytics pixel, a draft-sync GET, a page that creates by a GET), failed before it leaves from
//! the fill on (after the press, oncepost's own read page may carry it: the read-back searches by it).
//!
//! A page does not have to send the text as typed. What is looked for, in the URL as it is, percent-decoded
//! and form-decoded (`+` as a space):
//! - the value's beginning as typed, and as a JSON string holds it (a quote, a backslash or a line break
//!   escaped: `?d=` + `JSON.stringify(...)`);
//! - the same beginning in base64, standard and URL-safe: `btoa(...)` of the text, or of a JSON object
//!   holding it. Base64 turns every 3 bytes into 4 characters, so a text inside a larger payload shows
//!   differently depending on where it starts (its offset modulo 3): each of the three alignments is looked
//!   for, without the characters its first and last groups share with the bytes around it;
//! - a value too short to look for inside a URL ([`MIN_WATCHED_CHARS`]: an ordinary URL holds short words
//!   by chance) when a whole path segment or query value is it.
//!
//! Not recognised (said so in docs/publish.md): a text the page hashes, compresses, encrypts or cuts into
//! pieces. Those pages still cannot make a post by a read that leaves: Fixturebook's and real platforms'
//! create requests are writes, and every write but the authorized one is failed.
use base64::Engine;

/// Typed values shorter than this (in characters) are recognised only as a whole path segment or query
/// value.
pub const MIN_WATCHED_CHARS: usize = 8;
/// How much of a typed value is looked for in a URL (a URL may carry a cut copy).
const WATCHED_PREFIX_CHARS: usize = 32;
/// The shortest base64 run looked for: two groups (six bytes of the text).
const MIN_BASE64_CHARS: usize = 8;

/// One value typed into the page, as a URL may carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    /// Substrings whose presence means the URL carries the value.
    needles: Vec<String>,
    /// A short value: carried when a whole path segment or query value is it.
    whole: Option<String>,
}

impl Watched {
    /// What to look for of `value` (trimmed); `None` for an empty value.
    pub fn of(value: &str) -> Option<Watched> {
        let v = value.trim();
        if v.is_empty() {
            return None;
        }
        if v.chars().count() < MIN_WATCHED_CHARS {
            return Some(Watched {
                needles: Vec::new(),
                whole: Some(v.to_string()),
            });
        }
        let head: String = v.chars().take(WATCHED_PREFIX_CHARS).collect();
        let mut needles = vec![head.clone()];
        let json = serde_json::to_string(&head).unwrap_or_default();
        let json = json.trim_matches('"');
        if json != head && !json.is_empty() {
            needles.push(json.to_string());
        }
        for bytes in [head.as_bytes(), json.as_bytes()] {
            for skip in 0..3 {
                let Some(rest) = bytes.get(skip..) else {
                    continue;
                };
                let whole_groups = rest.len() / 3 * 3;
                for engine in [
                    &base64::engine::general_purpose::STANDARD,
                    &base64::engine::general_purpose::URL_SAFE,
                ] {
                    let b = engine.encode(&rest[..whole_groups]);
                    if b.len() >= MIN_BASE64_CHARS && !needles.contains(&b) {
                        needles.push(b);
                    }
                }
            }
        }
        Some(Watched {
            needles,
            whole: None,
        })
    }

    /// Whether `url` carries this value.
    pub fn carried_by(&self, url: &str) -> bool {
        match &self.whole {
            Some(short) => pieces(url).any(|p| p.trim() == short),
            None => {
                let decoded = percent_decoded(url);
                let form = percent_decoded(&url.replace('+', " "));
                self.needles.iter().any(|n| {
                    url.contains(n.as_str())
                        || decoded.contains(n.as_str())
                        || form.contains(n.as_str())
                })
            }
        }
    }
}

impl Watched {
    /// Whether a request body (as UTF-8) carries this value: as a URL would (typed, percent- or
    /// form-decoded, JSON-escaped, base64); a short value when a JSON string or a form value is it.
    pub fn carried_by_body(&self, body: &str) -> bool {
        match &self.whole {
            Some(short) => {
                let json = serde_json::to_string(short).unwrap_or_default();
                body.contains(&json)
                    || body.split('&').any(|pair| {
                        pair.split_once('=').is_some_and(|(_, v)| {
                            percent_decoded(&v.replace('+', " ")).trim() == short
                        })
                    })
            }
            None => self.carried_by(body),
        }
    }
}

fn percent_decoded(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// A URL's path segments and query values, each percent-decoded, and form-decoded (`+` as a space).
fn pieces(url: &str) -> impl Iterator<Item = String> + '_ {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let no_fragment = after_scheme.split('#').next().unwrap_or_default();
    let (path, query) = no_fragment.split_once('?').unwrap_or((no_fragment, ""));
    let segments = path.split('/').skip(1).map(percent_decoded);
    let values = query
        .split('&')
        .map(|pair| pair.split_once('=').map_or(pair, |(_, v)| v))
        .flat_map(|v| [percent_decoded(v), percent_decoded(&v.replace('+', " "))]);
    segments.chain(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn carries(url: &str, typed: &str) -> bool {
        Watched::of(typed).is_some_and(|w| w.carried_by(url))
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn a_body_carries_the_draft_as_a_url_would_and_a_short_one_as_a_whole_value() {
        let long = Watched::of("first words of the draft").unwrap();
        assert!(long.carried_by_body(r#"{"variables":{"q":"first words of the draft"}}"#));
        assert!(long.carried_by_body("q=first+words+of+the+draft&x=1"));
        assert!(!long.carried_by_body(r#"{"operationName":"Posts"}"#));
        let short = Watched::of("hi \"x\"").unwrap();
        assert!(
            short.carried_by_body(r#"{"text":"hi \"x\""}"#),
            "as a JSON string"
        );
        assert!(
            short.carried_by_body("a=1&text=hi+%22x%22"),
            "as a form value"
        );
        assert!(
            !short.carried_by_body(r#"{"text":"hi \"x\" there"}"#),
            "inside a longer value"
        );
    }

    #[test]
    fn a_url_carrying_typed_text_is_recognised_in_every_encoding() {
        let typed = "Quarterly results";
        assert!(carries("http://x/p?d=Quarterly%20results%20are", typed));
        assert!(carries("http://x/p?d=Quarterly+results", typed));
        assert!(carries("http://x/Quarterly results", typed));
        assert!(!carries("http://x/p?d=Quarterly", typed));
        assert!(Watched::of("  ").is_none());
    }

    #[test]
    fn a_text_in_json_or_base64_is_recognised_wherever_it_starts() {
        let typed = "He said \"ship it\"\nand left";
        let json = serde_json::json!({ "t": typed }).to_string();
        let enc = |s: &str| {
            percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
        };
        assert!(carries(&format!("http://x/p?d={}", enc(&json)), typed));
        // btoa of the JSON, and of the text after 0, 1 and 2 other bytes; percent-encoded or not.
        for pad in ["", "a", "ab", "abc"] {
            let b = b64(&format!("{pad}{json}"));
            assert!(carries(&format!("http://x/p?d={b}"), typed), "{pad:?}");
            assert!(
                carries(&format!("http://x/p?d={}", enc(&b)), typed),
                "{pad:?}"
            );
            let u =
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{pad}{typed}"));
            assert!(carries(&format!("http://x/p/{u}"), typed), "{pad:?}");
        }
        // Another text's base64 is not it.
        assert!(!carries(
            &format!("http://x/p?d={}", b64("He said nothing at all")),
            typed
        ));
    }

    #[test]
    fn a_short_text_is_recognised_only_as_a_whole_value() {
        let typed = "hey you";
        assert!(carries("http://x/api/pixel?d=hey%20you", typed));
        assert!(carries("http://x/api/pixel?a=1&d=hey+you#top", typed));
        assert!(carries("http://x/say/hey%20you/now", typed));
        // Inside a longer value, or as a word of the URL, it may be anything.
        assert!(!carries("http://x/api/pixel?d=hey%20you%20there", typed));
        assert!(!carries("http://x/heyyou?d=hey%21", "hey"));
        assert!(carries("http://x/p?q=hey", "hey"));
    }
}
