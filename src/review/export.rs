//! `oncepost review --export DIR`: the same content as the live page, as static HTML that opens from disk.
//!
//! Layout: `DIR/index.html` (the list), `DIR/intent-<key>.html` (one per intent), `DIR/evidence/<sha256>.<ext>`
//! (verified copies of the linked files) and `DIR/thumbs/<sha256>.png`. No forms, no actions. The report
//! holds unpublished text and evidence, so the folder and its files are private to the owner (0700/0600).
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::error::ReviewError;
use super::evidence;
use super::pages::{self, Mode};
use super::thumbs;
use super::view::{self, Filter};
use crate::store::{Store, Timestamp};

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// The report's entry page.
    pub index: PathBuf,
    /// Intents written.
    pub intents: usize,
    /// Evidence files copied.
    pub files: usize,
    /// Linked files that could not be copied (missing, changed): named on their intent's page.
    pub problems: usize,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> ReviewError + '_ {
    move |e| ReviewError::Export {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), ReviewError> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(io_err(path))?;
    f.write_all(bytes).map_err(io_err(path))
}

/// Write the report of every parked and indeterminate intent into `dir` (created if needed).
pub async fn export(
    store: &Store,
    data_dir: &Path,
    dir: &Path,
) -> Result<ExportSummary, ReviewError> {
    // A new report folder is private; an existing folder the person chose keeps its permissions (its new
    // subfolders and files are private either way).
    if !dir.is_dir() {
        crate::browser::private_dir(dir).map_err(io_err(dir))?;
    }
    for d in [dir.join("evidence"), dir.join("thumbs")] {
        crate::browser::private_dir(&d).map_err(io_err(&d))?;
    }
    let now = Timestamp::now();
    let list = view::list(store, data_dir, Filter::default(), now).await?;
    let mut summary = ExportSummary {
        index: dir.join("index.html"),
        ..ExportSummary::default()
    };
    for card in &list.cards {
        let d = view::detail(store, data_dir, &card.intent.key, now).await?;
        let links = evidence::EvidenceLinks::of(&d.timeline);
        for item in &links.items {
            if item.kind == evidence::EvidenceKind::Unknown {
                continue;
            }
            match evidence::read_verified(data_dir, item) {
                Ok(bytes) => {
                    let to = dir
                        .join("evidence")
                        .join(format!("{}.{}", item.sha256, item.ext));
                    write_private(&to, &bytes)?;
                    summary.files += 1;
                    if item.kind.is_screenshot() {
                        let t = thumbs::thumbnail(data_dir, item, &bytes)?;
                        let to = dir.join("thumbs").join(format!("{}.png", item.sha256));
                        write_private(&to, &t)?;
                    }
                }
                Err(_) => summary.problems += 1,
            }
        }
        let html = pages::intent_page(&Mode::Export, &d, None);
        let to = dir.join(format!("intent-{}.html", card.intent.key.as_str()));
        write_private(&to, html.as_bytes())?;
        summary.intents += 1;
    }
    write_private(
        &summary.index,
        pages::list_page(&Mode::Export, &list, None).as_bytes(),
    )?;
    Ok(summary)
}
