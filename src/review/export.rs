//! `oncepost review --export DIR`: the same content as the live page, as static HTML that opens from disk.
//!
//! Layout: `DIR/index.html` (the list), `DIR/intent-<key>.html` (one per intent), `DIR/evidence/<sha256>.<ext>`
//! (verified, redacted copies of the linked files: `.png` screenshots, `.json` logs and reports, `.txt` for DOM
//! excerpts and anything else, so no page's markup is ever written as a file a browser would render) and
//! `DIR/thumbs/<sha256>.png`. No forms, no actions.
//!
//! The report holds unpublished text and evidence, so it is written only into a NEW folder (or an existing
//! empty one): a non-empty folder, a symbolic link or a file in its place is refused. Nothing is ever
//! followed or overwritten: the folder is opened `O_NOFOLLOW | O_DIRECTORY`, everything inside is created
//! relative to that handle with `mkdirat` / `openat(O_CREAT | O_EXCL | O_NOFOLLOW)`, folders 0700 and files
//! 0600 (set with `fchmod`, whatever the umask).
use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode as FileMode, OFlags};
use rustix::io::Errno;

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

fn refuse(path: &Path, why: &str) -> ReviewError {
    ReviewError::Export {
        path: path.display().to_string(),
        message: format!(
            "{why}; the report is written only into a new (or empty) folder: name one"
        ),
    }
}

/// A folder of the report, held open: everything in it is created new, relative to this handle.
struct NewDir {
    dir: File,
    path: PathBuf,
}

/// Open flags of a folder handle: a folder or nothing, never through a symbolic link.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

fn open_dir_nofollow(path: &Path) -> Result<File, Errno> {
    rustix::fs::open(path, DIR_FLAGS, FileMode::empty()).map(File::from)
}

/// `name` when it names an entry of the folder itself (no slash, not `.` or `..`, no NUL).
fn plain_name(name: &str) -> std::io::Result<&str> {
    if name.is_empty() || name.contains(['/', '\0']) || name == "." || name == ".." {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{name:?} is not a plain file name"),
        ));
    }
    Ok(name)
}

impl NewDir {
    /// The report folder: created now (0700), or an existing empty real folder (made 0700). A symbolic link,
    /// a file or a non-empty folder is refused.
    fn root(path: &Path) -> Result<NewDir, ReviewError> {
        let checked = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(refuse(path, "it is a symbolic link"));
            }
            Ok(m) if !m.is_dir() => return Err(refuse(path, "it exists and is not a folder")),
            Ok(m) => {
                let mut entries = std::fs::read_dir(path).map_err(io_err(path))?;
                if entries.next().is_some() {
                    return Err(refuse(path, "the folder is not empty"));
                }
                Some(m)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Not recursive: a missing parent is the person's typo, not something to create.
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(path)
                    .map_err(io_err(path))?;
                None
            }
            Err(e) => return Err(io_err(path)(e)),
        };
        let dir = open_dir_nofollow(path).map_err(|e| {
            if e == Errno::LOOP {
                refuse(path, "it is a symbolic link")
            } else {
                io_err(path)(e.into())
            }
        })?;
        let meta = dir.metadata().map_err(io_err(path))?;
        if let Some(m) = checked
            && (m.dev(), m.ino()) != (meta.dev(), meta.ino())
        {
            return Err(refuse(path, "the folder was replaced while it was checked"));
        }
        dir.set_permissions(std::fs::Permissions::from_mode(0o700))
            .map_err(io_err(path))?;
        Ok(NewDir {
            dir,
            path: path.to_path_buf(),
        })
    }

    /// A new subfolder (0700); an existing entry of that name is refused, never entered.
    fn subdir(&self, name: &str) -> Result<NewDir, ReviewError> {
        let path = self.path.join(name);
        let err = io_err(&path);
        let name = plain_name(name).map_err(&err)?;
        rustix::fs::mkdirat(&self.dir, name, FileMode::RWXU).map_err(|e| err(e.into()))?;
        let dir = rustix::fs::openat(&self.dir, name, DIR_FLAGS, FileMode::empty())
            .map(File::from)
            .map_err(|e| err(e.into()))?;
        dir.set_permissions(std::fs::Permissions::from_mode(0o700))
            .map_err(&err)?;
        drop(err);
        Ok(NewDir { dir, path })
    }

    /// A new file (0600) with `bytes`; an existing entry of that name (a file, a planted symbolic link) is
    /// refused, never followed or overwritten.
    fn create(&self, name: &str, bytes: &[u8]) -> Result<(), ReviewError> {
        let path = self.path.join(name);
        let err = io_err(&path);
        let name = plain_name(name).map_err(&err)?;
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut f = rustix::fs::openat(&self.dir, name, flags, FileMode::RUSR | FileMode::WUSR)
            .map(File::from)
            .map_err(|e| err(e.into()))?;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(&err)?;
        f.write_all(bytes).map_err(&err)
    }
}

/// Write the report of every parked and indeterminate intent into `dir`, a new folder (or an existing empty
/// one): see the module docs.
pub async fn export(
    store: &Store,
    data_dir: &Path,
    dir: &Path,
) -> Result<ExportSummary, ReviewError> {
    // Read everything first: a store error leaves no half-written folder behind.
    let now = Timestamp::now();
    let list = view::list(store, data_dir, Filter::default(), now).await?;
    let mut details = Vec::with_capacity(list.cards.len());
    for card in &list.cards {
        details.push(view::detail(store, data_dir, &card.intent.key, now).await?);
    }
    let root = NewDir::root(dir)?;
    let ev_dir = root.subdir("evidence")?;
    let thumb_dir = root.subdir("thumbs")?;
    let mut summary = ExportSummary {
        index: dir.join("index.html"),
        ..ExportSummary::default()
    };
    // One screenshot linked from two intents is one file.
    let mut written: HashSet<String> = HashSet::new();
    for d in &details {
        let links = evidence::EvidenceLinks::of(&d.timeline);
        for item in &links.items {
            if item.kind == evidence::EvidenceKind::Unknown {
                continue;
            }
            let name = format!("{}.{}", item.sha256, item.kind.export_ext());
            if written.contains(&name) {
                continue;
            }
            match evidence::read_verified(data_dir, item) {
                Ok(bytes) => {
                    ev_dir.create(&name, &evidence::shown_bytes(item.kind, &bytes))?;
                    summary.files += 1;
                    if item.kind.is_screenshot() {
                        let t = thumbs::thumbnail(data_dir, item, &bytes)?;
                        thumb_dir.create(&format!("{}.png", item.sha256), &t)?;
                    }
                    written.insert(name);
                }
                Err(_) => summary.problems += 1,
            }
        }
        let html = pages::intent_page(&Mode::Export, d, None);
        root.create(
            &format!("intent-{}.html", d.timeline.intent.key.as_str()),
            html.as_bytes(),
        )?;
        summary.intents += 1;
    }
    root.create(
        "index.html",
        pages::list_page(&Mode::Export, &list, None).as_bytes(),
    )?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_inside_the_report_is_followed_or_overwritten() {
        let d = tempfile::tempdir().unwrap();
        let outside = d.path().join("outside.txt");
        std::fs::write(&outside, b"keep").unwrap();
        let root = NewDir::root(&d.path().join("report")).unwrap();
        // A link planted after the folder was checked (a race): the open refuses it, the target is untouched.
        std::os::unix::fs::symlink(&outside, d.path().join("report/index.html")).unwrap();
        assert!(root.create("index.html", b"report").is_err());
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        // A dangling link: not created through.
        std::os::unix::fs::symlink(d.path().join("nowhere"), d.path().join("report/x.html"))
            .unwrap();
        assert!(root.create("x.html", b"report").is_err());
        assert!(!d.path().join("nowhere").exists());
        // A planted folder link in place of a subfolder.
        std::fs::create_dir(d.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(d.path().join("elsewhere"), d.path().join("report/evidence"))
            .unwrap();
        assert!(root.subdir("evidence").is_err());
        // An existing file of the same name is never overwritten; names with a slash are refused.
        root.create("a.txt", b"one").unwrap();
        assert!(root.create("a.txt", b"two").is_err());
        assert_eq!(
            std::fs::read(d.path().join("report/a.txt")).unwrap(),
            b"one"
        );
        assert!(root.create("../b.txt", b"x").is_err());
        assert_eq!(
            std::fs::metadata(d.path().join("report/a.txt"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
    }
}
