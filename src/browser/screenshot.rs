//! Annotated screenshots: each checked locator's box and verdict drawn on the PNG, mask regions blacked out.
//!
//! Boxes are green (ok), red (required and failing) or amber (optional and failing), each tagged with the
//! locator's index in the report (a small built-in digit font: no font files needed). Masked regions are
//! filled black before anything else is drawn, so the evidence never shows what the contract masks.
use base64::Engine;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams,
};
use image::{ImageFormat, Rgba, RgbaImage};

use super::BrowserError;
use super::checks::{BoxRect, evaluate_json};
use super::session::Liveness;

/// Measures the device pixel ratio and the boxes of every element the mask selectors match, in the document
/// and in its open shadow roots (a mask the page renders inside a web component is still blacked out).
const MASK_JS: &str = concat!(
    "(sels) => {",
    shadow_js!(),
    r#"
  return {
    dpr: window.devicePixelRatio || 1,
    boxes: sels.flatMap(s => { try { return deepAll(document, s); } catch (e) { return []; } })
      .map(e => { const r = e.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; })
  };
}
"#
);

/// A raw capture: Chromium's PNG, the device pixel ratio, and the boxes the contract masks (CSS pixels).
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Capture {
    /// Chromium's PNG, untouched.
    #[serde(skip)]
    pub png: Vec<u8>,
    /// Device pixel ratio.
    pub dpr: f64,
    /// Boxes matched by the mask selectors.
    pub boxes: Vec<BoxRect>,
}

/// Measure the mask regions (one evaluation), then capture the page as PNG (one bounded call each).
pub(crate) async fn capture(
    page: &Page,
    live: &Liveness,
    masks: &[String],
) -> Result<Capture, BrowserError> {
    let v = evaluate_json(
        page,
        live,
        "measure mask regions",
        MASK_JS,
        &serde_json::json!(masks),
    )
    .await?;
    let mut c: Capture =
        serde_json::from_value(v).map_err(|e| BrowserError::Script(format!("mask result: {e}")))?;
    let shot = live
        .call("take a screenshot", page.execute(png_params()))
        .await?;
    let data: &str = shot.result.data.as_ref();
    c.png = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| BrowserError::Script(format!("screenshot is not base64: {e}")))?;
    Ok(c)
}

/// A PNG of the viewport. (Encoding is not where a capture's time goes: measured on Fixturebook's compose
/// page, headless shell, 8 captures each: PNG 50 ms median, PNG with `optimizeForSpeed` 43-44 ms for a file
/// half again as large, JPEG 80 44-48 ms; the rest is Chromium producing a fresh frame.)
pub(crate) fn png_params() -> CaptureScreenshotParams {
    CaptureScreenshotParams::builder()
        .format(CaptureScreenshotFormat::Png)
        .build()
}

/// One box to draw.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    /// Where, in CSS pixels.
    pub rect: BoxRect,
    /// Index shown in the tag.
    pub index: usize,
    /// Verdict colour.
    pub verdict: MarkVerdict,
}

/// Colour of a mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkVerdict {
    /// Passed.
    Ok,
    /// Required and failed.
    Failed,
    /// Optional and failed.
    Warning,
}

const GREEN: Rgba<u8> = Rgba([0, 170, 60, 255]);
const RED: Rgba<u8> = Rgba([220, 20, 20, 255]);
const AMBER: Rgba<u8> = Rgba([230, 150, 0, 255]);
const BLACK: Rgba<u8> = Rgba([0, 0, 0, 255]);
const WHITE: Rgba<u8> = Rgba([255, 255, 255, 255]);

/// 3x5 digit glyphs, one row per 3 bits.
const DIGITS: [[u8; 5]; 10] = [
    [7, 5, 5, 5, 7],
    [2, 6, 2, 2, 7],
    [7, 1, 7, 4, 7],
    [7, 1, 7, 1, 7],
    [5, 5, 7, 1, 1],
    [7, 4, 7, 1, 7],
    [7, 4, 7, 5, 7],
    [7, 1, 1, 1, 1],
    [7, 5, 7, 5, 7],
    [7, 5, 7, 1, 7],
];

/// Decode `png`, black out `masks`, draw `marks` (CSS pixels scaled by `scale` = device pixel ratio), and
/// encode the result as PNG.
pub fn annotate(
    png: &[u8],
    scale: f64,
    masks: &[BoxRect],
    marks: &[Mark],
) -> Result<Vec<u8>, BrowserError> {
    let img = image::load_from_memory_with_format(png, ImageFormat::Png)
        .map_err(|e| BrowserError::Script(format!("screenshot is not a PNG: {e}")))?;
    let mut img = img.to_rgba8();
    for m in masks {
        fill(&mut img, scaled(m, scale), BLACK);
    }
    for m in marks {
        let colour = match m.verdict {
            MarkVerdict::Ok => GREEN,
            MarkVerdict::Failed => RED,
            MarkVerdict::Warning => AMBER,
        };
        let (x, y, w, h) = scaled(&m.rect, scale);
        for t in 0..3 {
            outline(&mut img, (x - t, y - t, w + 2 * t, h + 2 * t), colour);
        }
        tag(&mut img, x - 2, y - 2, m.index, colour);
    }
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, ImageFormat::Png)
        .map_err(|e| BrowserError::Script(format!("cannot encode PNG: {e}")))?;
    Ok(out.into_inner())
}

fn scaled(r: &BoxRect, s: f64) -> (i64, i64, i64, i64) {
    (
        (r.x * s).round() as i64,
        (r.y * s).round() as i64,
        (r.w * s).round() as i64,
        (r.h * s).round() as i64,
    )
}

fn put(img: &mut RgbaImage, x: i64, y: i64, c: Rgba<u8>) {
    if x >= 0 && y >= 0 && (x as u64) < img.width() as u64 && (y as u64) < img.height() as u64 {
        img.put_pixel(x as u32, y as u32, c);
    }
}

fn fill(img: &mut RgbaImage, (x, y, w, h): (i64, i64, i64, i64), c: Rgba<u8>) {
    let (x0, y0) = (x.max(0), y.max(0));
    let x1 = (x + w).min(img.width() as i64);
    let y1 = (y + h).min(img.height() as i64);
    for yy in y0..y1 {
        for xx in x0..x1 {
            put(img, xx, yy, c);
        }
    }
}

fn outline(img: &mut RgbaImage, (x, y, w, h): (i64, i64, i64, i64), c: Rgba<u8>) {
    for xx in x..=x + w {
        put(img, xx, y, c);
        put(img, xx, y + h, c);
    }
    for yy in y..=y + h {
        put(img, x, yy, c);
        put(img, x + w, yy, c);
    }
}

/// A filled tag with the index in white digits (each glyph pixel drawn 2x2), placed above the box.
fn tag(img: &mut RgbaImage, x: i64, y: i64, index: usize, c: Rgba<u8>) {
    let text = index.to_string();
    let (px, pad) = (2i64, 2i64);
    let w = text.len() as i64 * 4 * px + pad * 2 - px;
    let h = 5 * px + pad * 2;
    let top = if y - h >= 0 { y - h } else { y };
    fill(img, (x, top, w, h), c);
    for (i, ch) in text.chars().enumerate() {
        let Some(d) = ch.to_digit(10) else { continue };
        for (row, bits) in DIGITS[d as usize].iter().enumerate() {
            for col in 0..3 {
                if bits & (4 >> col) != 0 {
                    let gx = x + pad + i as i64 * 4 * px + col * px;
                    let gy = top + pad + row as i64 * px;
                    fill(img, (gx, gy, px, px), WHITE);
                }
            }
        }
    }
}
