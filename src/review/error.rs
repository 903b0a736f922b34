//! The review page's one error type. Every failure becomes a response here, with one status per variant;
//! internal causes are logged, never rendered (a person sees a clear line, an attacker learns nothing).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::store::StoreError;

/// Everything that can go wrong serving or exporting the review page.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// Wrong or missing session token, unknown route, unknown intent, or evidence not linked from the
    /// intent. Deliberately one answer for all, so probing reveals nothing.
    #[error("not found")]
    NotFound,
    /// A POST without the right CSRF token, or from another origin.
    #[error("forbidden: this action did not come from the review page")]
    Forbidden,
    /// The person's input cannot be used (shown on the page; nothing changed).
    #[error("{0}")]
    BadInput(String),
    /// The state table refuses the action for the intent's current state (shown on the page; nothing changed).
    #[error("{0}")]
    Refused(String),
    /// A non-loopback address was not asked for with `--bind`.
    #[error(
        "refusing to listen on {0}: the review page listens on loopback only unless --bind names the address explicitly"
    )]
    NonLoopbackBind(std::net::IpAddr),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {message}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        message: String,
    },
    /// The export directory could not be written.
    #[error("cannot write the report to {path}: {message}")]
    Export {
        /// The file or directory.
        path: String,
        /// Why.
        message: String,
    },
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// Anything else inside oncepost.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ReviewError {
    /// The HTTP status for this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ReviewError::NotFound => StatusCode::NOT_FOUND,
            ReviewError::Forbidden => StatusCode::FORBIDDEN,
            ReviewError::BadInput(_) => StatusCode::BAD_REQUEST,
            ReviewError::Refused(_) => StatusCode::CONFLICT,
            ReviewError::Store(e) => match e {
                StoreError::UnknownKey(_) => StatusCode::NOT_FOUND,
                StoreError::Invalid(_) | StoreError::UnknownAccount(_) => StatusCode::BAD_REQUEST,
                StoreError::WrongState { .. }
                | StoreError::ReconcileSpent(_)
                | StoreError::LeaseHeld { .. }
                | StoreError::Fenced { .. }
                | StoreError::Refused(_) => StatusCode::CONFLICT,
                StoreError::Locked(_) => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            },
            ReviewError::NonLoopbackBind(_)
            | ReviewError::Bind { .. }
            | ReviewError::Export { .. }
            | ReviewError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// What a person may read on the page: the message for their own mistakes and refusals, a generic line
    /// for everything internal (the cause goes to the log).
    pub fn public_message(&self) -> String {
        match self {
            ReviewError::Store(StoreError::UnknownKey(_)) => "Not found.".into(),
            ReviewError::Store(
                e @ (StoreError::Invalid(_)
                | StoreError::WrongState { .. }
                | StoreError::ReconcileSpent(_)
                | StoreError::LeaseHeld { .. }
                | StoreError::Fenced { .. }
                | StoreError::Locked(_)),
            ) => format!("Nothing changed: {e}."),
            ReviewError::NotFound => "Not found.".into(),
            ReviewError::Forbidden => {
                "Forbidden: this action did not come from this review page.".into()
            }
            ReviewError::BadInput(m) | ReviewError::Refused(m) => format!("Nothing changed: {m}"),
            _ => "Something went wrong inside oncepost; nothing is shown here. See the terminal running \
                  `oncepost review`."
                .into(),
        }
    }
}

impl IntoResponse for ReviewError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(error = %self, "review page error");
        }
        let body = super::pages::message_page(status, &self.public_message());
        (
            status,
            [(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")],
            body,
        )
            .into_response()
    }
}
