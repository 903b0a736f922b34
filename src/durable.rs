//! Files that survive a crash whole, in folders only their owner can read.
//!
//! [`write_atomic`] is the one way a file that must never be seen half-written is replaced (evidence, the
//! fixture platform's state): a temp file in the same folder, written, fsynced, renamed over the target,
//! then the folder fsynced so the rename itself survives a power cut. [`private_dir`] creates folders with
//! their mode (0700) from the start, so no folder is ever briefly readable by others.
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// Replace `path` with `bytes` atomically and durably: a crash leaves the old file or the new one, never
/// half of one, and a completed call survives a power cut. The new file is 0600; a failed write leaves no
/// temp file behind.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    // Same folder: the rename never crosses a file system. Dot-named so listings skip it.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// fsync a folder, making the entries renamed into it durable. A file system that cannot sync folders says
/// EINVAL: nothing more can be done there, so that is not an error.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::File::open(dir).and_then(|d| d.sync_all()) {
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Ok(()),
        other => other,
    }
}

/// Create `dir` and its missing parents, each born 0700. A folder that already exists and is not 0700 is
/// restricted to 0700 (the data dir of an older install, a profile folder someone loosened).
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    if std::fs::metadata(dir)?.permissions().mode() & 0o7777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_atomic_replaces_whole_files_and_leaves_no_temp_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("state.json")]);
        // A folder in the way: refused, and the temp file is gone.
        std::fs::create_dir(d.path().join("dir")).unwrap();
        assert!(write_atomic(&d.path().join("dir"), b"x").is_err());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }

    #[test]
    fn private_dirs_are_born_0700_and_existing_ones_are_restricted() {
        let d = tempfile::tempdir().unwrap();
        let deep = d.path().join("a/b/c");
        private_dir(&deep).unwrap();
        for p in [d.path().join("a"), d.path().join("a/b"), deep.clone()] {
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
            assert_eq!(mode, 0o700, "{}", p.display());
        }
        std::fs::set_permissions(&deep, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&deep).unwrap();
        let mode = std::fs::metadata(&deep).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o700);
    }
}
