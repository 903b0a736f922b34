//! Platform binding: the contract's platform, its version and the base URL's origin. An intent records the
//! platform and origin at its first publish and each attempt's contract version; a publish, a reconcile and the
//! worker compare their own binding with that record before touching the intent, so one platform's pages are
//! never read as evidence about another platform's intent.
use serde::Serialize;

use super::format::Contract;
use super::plan::PlanError;

/// Where a command publishes or looks: one contract at one base URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Binding {
    /// The contract's `platform`.
    pub platform: String,
    /// The contract version ([`Contract::hash`]).
    pub version: String,
    /// The base URL's origin, `scheme://host[:port]`.
    pub origin: String,
    /// The contract's `origins.allowed`, expanded: where permalinks taken from a page may point.
    pub allowed_origins: Vec<String>,
}

/// How an intent's record compares with a [`Binding`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingCheck {
    /// Same platform, and the version and origin are the recorded ones (or were not recorded).
    Same,
    /// The intent belongs to another platform: nothing about it may be read or written through this one.
    OtherPlatform {
        /// What the intent records.
        recorded: String,
        /// This binding's platform.
        given: String,
    },
    /// Same platform, but another contract version or another deployment (origin) than the intent's.
    Changed {
        /// `(recorded, given)` when the version differs.
        version: Option<(String, String)>,
        /// `(recorded, given)` when the origin differs.
        origin: Option<(String, String)>,
    },
}

impl std::fmt::Display for BindingCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BindingCheck::Same => f.write_str("same platform, contract version and origin"),
            BindingCheck::OtherPlatform { recorded, given } => write!(
                f,
                "the intent belongs to platform {recorded:?}; this contract is for platform {given:?}"
            ),
            BindingCheck::Changed { version, origin } => {
                let mut parts = Vec::new();
                if let Some((r, g)) = version {
                    parts.push(format!(
                        "its last attempt ran with contract version {}, this contract is version {}",
                        short(r),
                        short(g)
                    ));
                }
                if let Some((r, g)) = origin {
                    parts.push(format!("it was published at {r}, this base URL is {g}"));
                }
                f.write_str(&parts.join("; "))
            }
        }
    }
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// The origin (`scheme://host[:port]`) of an http(s) URL.
pub fn origin_of(url: &str) -> Result<String, PlanError> {
    let u = url::Url::parse(url).map_err(|e| PlanError::BaseUrl {
        url: url.into(),
        why: e.to_string(),
    })?;
    if !matches!(u.scheme(), "http" | "https") || u.host().is_none() {
        return Err(PlanError::BaseUrl {
            url: url.into(),
            why: "need http(s)://host[:port]".into(),
        });
    }
    Ok(u.origin().ascii_serialization())
}

impl Contract {
    /// The binding of this contract at `base_url`.
    pub fn binding(&self, base_url: &str) -> Result<Binding, PlanError> {
        let probe = self.probe_plan(base_url)?;
        Ok(Binding {
            platform: self.platform.clone(),
            version: self.hash(),
            origin: origin_of(base_url)?,
            allowed_origins: probe.allowed_origins,
        })
    }
}

impl Binding {
    /// Compare an intent's record with this binding. `recorded_version` and `recorded_origin` are `None` when
    /// the intent never recorded one (never begun; created before bindings existed): nothing to compare.
    pub fn check(
        &self,
        recorded_platform: &str,
        recorded_version: Option<&str>,
        recorded_origin: Option<&str>,
    ) -> BindingCheck {
        if recorded_platform != self.platform {
            return BindingCheck::OtherPlatform {
                recorded: recorded_platform.to_string(),
                given: self.platform.clone(),
            };
        }
        let version = recorded_version
            .filter(|v| *v != self.version)
            .map(|v| (v.to_string(), self.version.clone()));
        let origin = recorded_origin
            .filter(|o| *o != self.origin)
            .map(|o| (o.to_string(), self.origin.clone()));
        if version.is_none() && origin.is_none() {
            BindingCheck::Same
        } else {
            BindingCheck::Changed { version, origin }
        }
    }

    /// Compare with an intent as the store holds it (the platform falls back to the account's for intents
    /// from before bindings were recorded).
    pub fn check_intent(&self, intent: &crate::store::Intent) -> BindingCheck {
        self.check(
            intent
                .contract_platform
                .as_deref()
                .unwrap_or(&intent.platform),
            intent.contract_version.as_deref(),
            intent.base_origin.as_deref(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b() -> Binding {
        Binding {
            platform: "fixture".into(),
            version: "v2".into(),
            origin: "http://127.0.0.1:8080".into(),
            allowed_origins: vec!["http://127.0.0.1:8080".into()],
        }
    }

    #[test]
    fn another_platform_is_never_the_same_whatever_else_matches() {
        assert!(matches!(
            b().check("other", Some("v2"), Some("http://127.0.0.1:8080")),
            BindingCheck::OtherPlatform { .. }
        ));
        assert_eq!(
            b().check("fixture", Some("v2"), Some("http://127.0.0.1:8080")),
            BindingCheck::Same
        );
        assert_eq!(b().check("fixture", None, None), BindingCheck::Same);
        let c = b().check("fixture", Some("v1"), Some("http://127.0.0.1:9090"));
        assert_eq!(
            c,
            BindingCheck::Changed {
                version: Some(("v1".into(), "v2".into())),
                origin: Some((
                    "http://127.0.0.1:9090".into(),
                    "http://127.0.0.1:8080".into()
                )),
            }
        );
        assert!(c.to_string().contains("published at http://127.0.0.1:9090"));
    }

    #[test]
    fn the_origin_drops_the_path_and_keeps_the_port() {
        assert_eq!(
            origin_of("http://127.0.0.1:8080/app/").unwrap(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            origin_of("https://example.org:443/x").unwrap(),
            "https://example.org"
        );
        assert!(origin_of("javascript:alert(1)").is_err());
    }
}
