//! Screenshot thumbnails, made with the image crate and cached content-addressed next to the evidence:
//! `<data-dir>/evidence/thumbs/<hh>/<source sha256>-w<WIDTH>.png` (dirs 0700, files 0600). The name is the
//! hash of the screenshot it was made from, so a cached thumbnail can never belong to other bytes.
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::error::ReviewError;
use super::evidence::EvidenceItem;

/// Thumbnail bounds in pixels: wide enough to read a status line, small enough for a row of three.
pub const THUMB_WIDTH: u32 = 360;
/// Tall full-page screenshots are cut off at this height (before scaling) rather than squashed.
pub const THUMB_MAX_HEIGHT: u32 = 270;

/// Where the thumbnail of `item` is cached.
pub fn cache_path(data_dir: &Path, item: &EvidenceItem) -> PathBuf {
    data_dir
        .join("evidence")
        .join("thumbs")
        .join(&item.sha256[..2])
        .join(format!("{}-w{THUMB_WIDTH}.png", item.sha256))
}

/// The thumbnail PNG of a verified screenshot: from the cache, or made now and cached.
pub fn thumbnail(data_dir: &Path, item: &EvidenceItem, png: &[u8]) -> Result<Vec<u8>, ReviewError> {
    let path = cache_path(data_dir, item);
    if let Ok(bytes) = std::fs::read(&path)
        && bytes.starts_with(b"\x89PNG")
    {
        return Ok(bytes);
    }
    let bytes = render(png)?;
    // A cache that cannot be written costs a re-render next time, nothing more.
    if let Err(e) = write_cache(&path, &bytes) {
        tracing::warn!(path = %path.display(), error = %e, "cannot cache thumbnail");
    }
    Ok(bytes)
}

/// Scale a PNG to [`THUMB_WIDTH`] wide, keeping the top of the page when it is very tall.
pub fn render(png: &[u8]) -> Result<Vec<u8>, ReviewError> {
    let img = image::load_from_memory_with_format(png, image::ImageFormat::Png)
        .map_err(|e| ReviewError::BadInput(format!("the screenshot is not a readable PNG: {e}")))?;
    let (w, h) = (img.width().max(1), img.height().max(1));
    // Crop to the thumbnail's aspect ratio from the top: the compose form and status are at the top.
    let crop_h = h.min(((w as u64 * THUMB_MAX_HEIGHT as u64) / THUMB_WIDTH as u64).max(1) as u32);
    let cropped = img.crop_imm(0, 0, w, crop_h);
    // Never scale up: a small screenshot is its own thumbnail.
    let thumb = if cropped.width() <= THUMB_WIDTH && cropped.height() <= THUMB_MAX_HEIGHT {
        cropped
    } else {
        cropped.thumbnail(THUMB_WIDTH, THUMB_MAX_HEIGHT)
    };
    let mut out = std::io::Cursor::new(Vec::new());
    thumb
        .write_to(&mut out, image::ImageFormat::Png)
        .map_err(|e| ReviewError::Internal(format!("cannot encode thumbnail: {e}")))?;
    Ok(out.into_inner())
}

fn write_cache(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(path);
    for d in [dir.parent().unwrap_or(dir), dir] {
        crate::browser::private_dir(d)?;
    }
    // Write to a private temp name and rename: concurrent requests never see half a file.
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("thumb"),
        std::process::id()
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = image::RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 90])
        });
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn thumbnails_are_small_pngs_keeping_the_top() {
        let t = image::load_from_memory(&render(&png(1280, 4000)).unwrap()).unwrap();
        assert_eq!(t.width(), THUMB_WIDTH);
        assert!(t.height() <= THUMB_MAX_HEIGHT);
        let small = image::load_from_memory(&render(&png(200, 100)).unwrap()).unwrap();
        assert!(small.width() <= 200, "never scaled up");
    }

    #[test]
    fn garbage_is_a_clear_error() {
        assert!(matches!(
            render(b"not a png"),
            Err(ReviewError::BadInput(_))
        ));
    }
}
