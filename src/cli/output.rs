//! Everything the command line prints goes through here: writes that never panic, and one escaping rule for
//! text a person reads.
//!
//! `println!`/`eprintln!` panic when their stream is a closed pipe (`oncepost publish 2>&1 | head`): Rust
//! ignores SIGPIPE, the write fails with EPIPE, the macro panics and the process exits 101, possibly after
//! the create request left, leaving the intent authorized until a sweep. Nothing oncepost prints decides an
//! outcome (the store and the exit code do), so these writes drop their errors. `cli` denies the printing
//! macros (clippy `print_stdout`/`print_stderr`) so a new `println!` cannot creep back.
//!
//! Text that came from a page, a platform, the store or the caller (platform ids, permalinks, notes,
//! account and field names, errors that echo input) can carry terminal escapes: [`clean`] shows every
//! control character as an escape, and every human printer passes such text through it.
use std::borrow::Cow;
use std::fmt;
use std::io::Write;

/// Write `args` and a newline to stdout; a failed write is dropped (see the module docs).
pub(crate) fn out_line(args: fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_fmt(args).and_then(|_| o.write_all(b"\n"));
}

/// Write `args` and a newline to stderr; a failed write is dropped.
pub(crate) fn err_line(args: fmt::Arguments<'_>) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_fmt(args).and_then(|_| e.write_all(b"\n"));
}

/// Write `args` to stderr with no newline (progress rewritten in place); a failed write is dropped.
pub(crate) fn err_part(args: fmt::Arguments<'_>) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_fmt(args).and_then(|_| e.flush());
}

/// `println!` that never panics.
macro_rules! outln {
    () => {
        $crate::cli::output::out_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::output::out_line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// `eprintln!` that never panics.
macro_rules! errln {
    () => {
        $crate::cli::output::err_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::output::err_line(format_args!($($arg)*))
    };
}
pub(crate) use errln;

/// `eprint!` that never panics.
macro_rules! errpart {
    ($($arg:tt)*) => {
        $crate::cli::output::err_part(format_args!($($arg)*))
    };
}
pub(crate) use errpart;

/// The writer of the tracing subscriber: stderr, with write errors dropped. (tracing-subscriber reports a
/// failed write with `eprintln!`, which would panic on the same closed pipe.)
#[derive(Debug, Clone, Copy, Default)]
pub struct QuietStderr;

impl Write for QuietStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

/// Whether `c` must not reach a terminal as is: C0 and C1 controls, DEL, and the invisible bidirectional
/// controls that reorder what a person sees (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069).
fn must_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` for a terminal: every control character written as an escape (`\n`, `\t`, `\r`, else `\u{1b}`), the
/// rest unchanged. The one rule every human printer uses.
pub fn clean(s: &str) -> Cow<'_, str> {
    if !s.chars().any(must_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if must_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`clean`] of an optional value, `-` when absent.
pub fn clean_or_dash(s: Option<&str>) -> Cow<'_, str> {
    s.map(clean).unwrap_or(Cow::Borrowed("-"))
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn controls_are_escaped_and_plain_text_is_kept() {
        assert_eq!(clean("plain ü 漢字"), "plain ü 漢字");
        assert_eq!(clean("a\x1b[2Jb\x07"), "a\\u{1b}[2Jb\\u{7}");
        assert_eq!(clean("x\ny\tz\r"), "x\\ny\\tz\\r");
        assert_eq!(clean("\u{9b}31m\u{7f}"), "\\u{9b}31m\\u{7f}");
        assert_eq!(clean("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert!(!clean("\x1b]0;title\x07").contains('\x1b'));
    }
}
