//! Values from a guest or a file made safe to print: one function for every
//! crate, so a test name, a thread name or a schedule value is escaped the
//! same way in errors, reports and the terminal.
//!
//! Only control characters are escaped (`\n`, `\u{1b}`): they are what can
//! break a one-line message or act on a terminal. Other characters, non-ASCII
//! included, stay as they are so that names read as written.

use std::borrow::Cow;

/// `s` with its control characters escaped (`\n`, `\u{1b}`); borrowed when
/// there is nothing to escape, which is the common case.
pub fn shown(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` shown (see [`shown`]) and cut to its first `max` characters, with
/// `...` when something was cut: for values quoted inside an error message.
pub fn clipped(s: &str, max: usize) -> String {
    let head: String = s.chars().take(max).collect();
    let mut out = shown(&head).into_owned();
    if s.chars().nth(max).is_some() {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert!(matches!(shown("lost_update"), Cow::Borrowed("lost_update")));
        assert_eq!(shown("a\u{1b}[31mb\nc"), "a\\u{1b}[31mb\\nc");
        assert_eq!(shown("café \"x\""), "café \"x\"");
    }

    #[test]
    fn clipping_counts_characters_not_bytes() {
        assert_eq!(clipped("ééé", 2), "éé...");
        assert_eq!(clipped("ab", 2), "ab");
        assert_eq!(clipped("\n\nx", 2), "\\n\\n...");
    }
}
