//! `oncepost contract check FILE [--json]`: validate a platform contract and print its version (hash);
//! `oncepost contract migrate FILE [--dry-run]`: rewrite a format 1 contract as format 2.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use super::output::{errln, outln};
use crate::contract::{Contract, ContractError, FORMAT_VERSION, Migrated};

/// Contract subcommands.
#[derive(Debug, Subcommand)]
pub enum ContractCommand {
    /// Validate a contract file; errors come with file:line:column and an explanation (exit 2 when invalid).
    Check {
        /// The contract file (selectors/NAME.toml).
        file: PathBuf,
        /// Print a JSON result instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Rewrite a format 1 contract as format 2 in place (comments kept; checked before it is written).
    Migrate {
        /// The contract file.
        file: PathBuf,
        /// Print the migrated file instead of writing it.
        #[arg(long)]
        dry_run: bool,
    },
    /// The contract versions the store keeps (one per version an attempt ran with), newest first, with the
    /// number of intents whose last attempt ran with each.
    List {
        /// One JSON array instead of the table.
        #[arg(long)]
        json: bool,
    },
}

impl ContractCommand {
    /// Whether the subcommand reads the store (run in the async runtime with the global options).
    pub fn uses_store(&self) -> bool {
        matches!(self, ContractCommand::List { .. })
    }
}

/// Run a contract subcommand that needs no store.
pub fn run(cmd: &ContractCommand) -> ExitCode {
    match cmd {
        ContractCommand::Check { file, json } => check(file, *json),
        ContractCommand::Migrate { file, dry_run } => migrate(file, *dry_run),
        ContractCommand::List { .. } => {
            errln!("oncepost: contract list reads the store");
            ExitCode::from(1)
        }
    }
}

/// `oncepost contract list`.
pub async fn list(ctx: &super::Context, json: bool) -> Result<super::Exit, super::CliError> {
    let versions = ctx.open_store().await?.contract_versions().await?;
    if json {
        outln!(
            "{}",
            serde_json::to_string(&versions)
                .map_err(|e| super::CliError::internal(e.to_string()))?
        );
    } else if versions.is_empty() {
        outln!("no contract versions kept yet (each publish keeps the one it runs with)");
    } else {
        outln!(
            "{:<64}  {:<16}  {:<23}  intents",
            "version",
            "platform",
            "first seen (UTC)"
        );
        for v in &versions {
            outln!(
                "{:<64}  {:<16}  {:<23}  {}",
                v.hash,
                super::output::clean(&v.platform),
                crate::utc::display(v.first_seen_at),
                v.intents
            );
        }
    }
    Ok(super::Exit::Ok)
}

fn migrate(file: &PathBuf, dry_run: bool) -> ExitCode {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            errln!("error: cannot read {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    match crate::contract::migrate(&text, file) {
        Ok(Migrated::Current) => {
            outln!(
                "{}: already format {FORMAT_VERSION}; nothing to do",
                file.display()
            );
            ExitCode::SUCCESS
        }
        Ok(Migrated::Rewritten { text, changes }) => {
            if dry_run {
                outln!("{text}");
                return ExitCode::SUCCESS;
            }
            if let Err(e) = crate::durable::write_atomic(file, text.as_bytes()) {
                errln!("error: cannot write {}: {e}", file.display());
                return ExitCode::from(1);
            }
            for c in &changes {
                outln!("{}: {c}", file.display());
            }
            outln!(
                "{}: now format {FORMAT_VERSION}; its contract version changed (intents recorded under the old one need --accept-contract-change)",
                file.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn check(file: &PathBuf, json: bool) -> ExitCode {
    match Contract::load(file) {
        Ok(c) => {
            if json {
                outln!(
                    "{}",
                    serde_json::json!({"ok": true, "file": file, "platform": c.platform, "contract_hash": c.hash(), "problems": []})
                );
            } else {
                outln!(
                    "{}: ok (platform {}, contract version {})",
                    file.display(),
                    c.platform,
                    c.hash()
                );
            }
            ExitCode::SUCCESS
        }
        Err(ContractError::Invalid { file, problems }) => {
            if json {
                outln!(
                    "{}",
                    serde_json::json!({"ok": false, "file": file, "problems": problems})
                );
            } else {
                errln!(
                    "{}",
                    ContractError::Invalid {
                        file: file.clone(),
                        problems: problems.clone()
                    }
                );
                errln!("{} problem(s) in {}", problems.len(), file.display());
            }
            ExitCode::from(2)
        }
        Err(e @ ContractError::Io { .. }) => {
            if json {
                outln!(
                    "{}",
                    serde_json::json!({"ok": false, "file": file, "error": e.to_string()})
                );
            } else {
                errln!("error: {e}");
            }
            ExitCode::from(2)
        }
    }
}
