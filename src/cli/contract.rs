//! `oncepost contract check FILE [--json]`: validate a platform contract and print its version (hash).
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use super::output::{errln, outln};
use crate::contract::{Contract, ContractError};

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
}

/// Run a contract subcommand.
pub fn run(cmd: &ContractCommand) -> ExitCode {
    match cmd {
        ContractCommand::Check { file, json } => check(file, *json),
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
