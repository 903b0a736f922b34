//! Exit codes (documented in docs/cli.md) and the one error type of the command line.
use crate::store::StoreError;

/// Process exit codes. Stable: scripts and agents branch on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Done.
    Ok = 0,
    /// Something broke inside oncepost or its database.
    Internal = 1,
    /// Bad input: arguments, unknown key or account, bad store URL, unreadable file.
    BadInput = 2,
    /// A probe found a failing required locator or an attempted write.
    ProbeFailed = 3,
    /// The state table refuses the operation for the intent's current state (nothing changed).
    Refused = 4,
    /// The store cannot be used: locked by another process, written by a newer oncepost, unreachable.
    StoreUnavailable = 5,
    /// Publish outcome: indeterminate.
    Indeterminate = 10,
    /// Publish outcome: failed (definitively not sent).
    Failed = 11,
    /// Publish outcome: parked.
    Parked = 12,
    /// Publish outcome: in progress elsewhere.
    InProgressElsewhere = 13,
    /// `reconcile` stopped by SIGINT/SIGTERM with work not started (nothing recorded for it).
    Interrupted = 130,
}

/// An error on its way to stderr, with the exit code it means.
#[derive(Debug)]
pub struct CliError {
    /// The code to exit with.
    pub exit: Exit,
    /// One clear line for a person.
    pub message: String,
}

impl CliError {
    /// Bad input.
    pub fn bad_input(message: impl Into<String>) -> Self {
        CliError {
            exit: Exit::BadInput,
            message: message.into(),
        }
    }

    /// Internal failure.
    pub fn internal(message: impl Into<String>) -> Self {
        CliError {
            exit: Exit::Internal,
            message: message.into(),
        }
    }
}

impl Exit {
    /// The exit code for a store error.
    pub fn of_store(e: &StoreError) -> Exit {
        match e {
            StoreError::UnknownKey(_)
            | StoreError::UnknownAccount(_)
            | StoreError::AccountExists(_)
            | StoreError::BadLocation(..)
            | StoreError::Invalid(_) => Exit::BadInput,
            StoreError::WrongState { .. }
            | StoreError::ReconcileSpent(_)
            | StoreError::Refused(_) => Exit::Refused,
            StoreError::LeaseHeld { .. } | StoreError::Fenced { .. } => Exit::InProgressElsewhere,
            StoreError::Locked(_) | StoreError::SchemaTooNew { .. } => Exit::StoreUnavailable,
            StoreError::Corrupt { .. }
            | StoreError::StateMismatch { .. }
            | StoreError::Decode(_)
            | StoreError::Migrate(_)
            | StoreError::Db(_) => Exit::Internal,
        }
    }
}

impl From<StoreError> for CliError {
    fn from(e: StoreError) -> Self {
        CliError {
            exit: Exit::of_store(&e),
            message: e.to_string(),
        }
    }
}
