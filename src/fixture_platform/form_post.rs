//! The fields of a classic HTML form's POST (`/hostile/multipart-form`'s `POST /forum/posts`): the body as the
//! browser encodes a form, `application/x-www-form-urlencoded` or `multipart/form-data` (what a form with a
//! file input must use, as forum and wiki edit forms do). A file part is skipped (its name kept out of the
//! fields); a repeated name keeps its first value.
use std::collections::BTreeMap;

/// The text fields of a form body whose `Content-Type` is `content_type`.
pub(crate) fn fields(
    content_type: Option<&str>,
    body: &[u8],
) -> Result<BTreeMap<String, String>, String> {
    let ct = content_type.unwrap_or("");
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "application/x-www-form-urlencoded" => {
            let mut out = BTreeMap::new();
            for (k, v) in url::form_urlencoded::parse(body) {
                out.entry(k.into_owned()).or_insert_with(|| v.into_owned());
            }
            Ok(out)
        }
        "multipart/form-data" => multipart(boundary(ct)?.as_bytes(), body),
        _ => Err(format!(
            "a form body must be application/x-www-form-urlencoded or multipart/form-data, not {ct:?}"
        )),
    }
}

/// The `boundary` parameter of a multipart `Content-Type` (quoted or not).
fn boundary(content_type: &str) -> Result<String, String> {
    content_type
        .split(';')
        .skip(1)
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
        .filter(|b| !b.is_empty() && b.len() <= 70)
        .ok_or_else(|| format!("multipart/form-data without a boundary: {content_type:?}"))
}

/// RFC 7578: parts between `--boundary` lines, each its headers, a blank line and its content; the last
/// delimiter is `--boundary--`.
fn multipart(boundary: &[u8], body: &[u8]) -> Result<BTreeMap<String, String>, String> {
    let mut delimiter = b"--".to_vec();
    delimiter.extend_from_slice(boundary);
    let mut out = BTreeMap::new();
    let mut rest = after(body, &delimiter).ok_or("multipart body without its first boundary")?;
    loop {
        if rest.starts_with(b"--") {
            return Ok(out);
        }
        let part_start = rest
            .strip_prefix(b"\r\n")
            .ok_or("a boundary line not ended by CRLF")?;
        let mut next = b"\r\n".to_vec();
        next.extend_from_slice(&delimiter);
        let end = find(part_start, &next).ok_or("a part not closed by a boundary")?;
        let part = &part_start[..end];
        rest = &part_start[end + next.len()..];
        let split =
            find(part, b"\r\n\r\n").ok_or("a part without the blank line after its headers")?;
        let headers = String::from_utf8_lossy(&part[..split]);
        let content = &part[split + 4..];
        let disposition = headers
            .split("\r\n")
            .find_map(|h| {
                h.split_once(':')
                    .filter(|(k, _)| k.trim().eq_ignore_ascii_case("content-disposition"))
                    .map(|(_, v)| v.to_string())
            })
            .ok_or("a part without Content-Disposition")?;
        let params: Vec<(String, String)> = disposition
            .split(';')
            .skip(1)
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| {
                (
                    k.trim().to_ascii_lowercase(),
                    v.trim().trim_matches('"').to_string(),
                )
            })
            .collect();
        if params.iter().any(|(k, _)| k == "filename") {
            continue;
        }
        let name = params
            .into_iter()
            .find(|(k, _)| k == "name")
            .map(|(_, v)| v)
            .ok_or("a part without a name")?;
        let value = String::from_utf8(content.to_vec())
            .map_err(|_| format!("field {name:?} is not UTF-8"))?;
        out.entry(name).or_insert(value);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn after<'a>(hay: &'a [u8], needle: &[u8]) -> Option<&'a [u8]> {
    find(hay, needle).map(|i| &hay[i + needle.len()..])
}

#[cfg(test)]
mod tests {
    use super::fields;

    /// What Chromium sent for a form with a text, an empty file input and a hidden token (measured).
    const CHROMIUM: &[u8] = b"------WebKitFormBoundaryUGatOo0slqDzPvSd\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nhello\r\nmultipart \xc3\xa9\r\n------WebKitFormBoundaryUGatOo0slqDzPvSd\r\nContent-Disposition: form-data; name=\"attachment\"; filename=\"\"\r\nContent-Type: application/octet-stream\r\n\r\n\r\n------WebKitFormBoundaryUGatOo0slqDzPvSd\r\nContent-Disposition: form-data; name=\"tok\"\r\n\r\nabc\r\n------WebKitFormBoundaryUGatOo0slqDzPvSd--\r\n";

    #[test]
    fn a_multipart_form_gives_its_text_fields_and_skips_its_files() {
        let f = fields(
            Some("multipart/form-data; boundary=----WebKitFormBoundaryUGatOo0slqDzPvSd"),
            CHROMIUM,
        )
        .unwrap();
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(f["text"], "hello\r\nmultipart é");
        assert_eq!(f["tok"], "abc");
    }

    #[test]
    fn an_urlencoded_form_gives_its_fields() {
        let f = fields(
            Some("application/x-www-form-urlencoded"),
            b"text=a+b%26c&_csrf=t&text=second",
        )
        .unwrap();
        assert_eq!(f["text"], "a b&c");
        assert_eq!(f["_csrf"], "t");
    }

    #[test]
    fn a_body_that_is_no_form_is_refused_with_why() {
        assert!(fields(Some("application/json"), b"{}").is_err());
        assert!(fields(Some("multipart/form-data"), CHROMIUM).is_err());
        assert!(fields(Some("multipart/form-data; boundary=other"), CHROMIUM).is_err());
        let cut = &CHROMIUM[..CHROMIUM.len() - 60];
        assert!(
            fields(
                Some("multipart/form-data; boundary=----WebKitFormBoundaryUGatOo0slqDzPvSd"),
                cut
            )
            .is_err()
        );
    }
}
