//! Writing to stdout and stderr: reports go to stdout in whole blocks, errors
//! to stderr as exactly one `error: ` line, whatever the message contains.
//! Both are the last guard of "everything shown is escaped": a control
//! character that reached them unescaped (a terminal escape in a file
//! name, a schedule's message) is escaped here (`wasmrace_trace::text`).

use std::io::Write;

/// Writes a block of report text to stdout. A closed pipe (`wasmrace check
/// ... | head`) is not an error: the reader has seen what it wanted, and the
/// exit status must still say whether a bug was found.
pub fn print(text: &str) -> anyhow::Result<()> {
    let text = escaped(text);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(anyhow::anyhow!("cannot write to stdout: {e}")),
    }
}

/// Longest error line, in characters: an error quoting a huge input (a
/// part's forged field) stays one short line.
const MAX_ERROR_CHARS: usize = 2000;

/// Prints `error: <message>` on one line of stderr, escaped and clipped.
pub fn error_line(message: &str) {
    let line = wasmrace_trace::text::clipped(&one_line(message), MAX_ERROR_CHARS);
    eprintln!("error: {line}");
}

/// A report block with every control character but its line breaks and
/// tabs escaped; borrowed when there is none, the common case.
fn escaped(text: &str) -> std::borrow::Cow<'_, str> {
    let odd = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(odd) {
        return std::borrow::Cow::Borrowed(text);
    }
    let lines: Vec<String> = text
        .split('\n')
        .map(|l| {
            l.split('\t')
                .map(|p| wasmrace_trace::text::shown(p).into_owned())
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect();
    std::borrow::Cow::Owned(lines.join("\n"))
}

/// An error and its causes joined by `: `, like anyhow's `{:#}`, but
/// without repeating a cause the message already quotes: the host's errors
/// (`cannot read `x`: <io error>`) include their source in their own text.
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.is_empty() {
            out = text;
        } else if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

/// Folds a message onto one line: scripts read the first stderr line, and a
/// wrapped error chain (a tool's output, a multi-line panic message) must
/// not spill over.
pub fn one_line(message: &str) -> String {
    let parts: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_chain_skips_causes_already_quoted() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let host = wasmrace_host::HostError::Io {
            path: "a.wasm".into(),
            cause: io,
        };
        let e = anyhow::Error::from(host);
        assert_eq!(error_chain(&e), "cannot read `a.wasm`: gone");
        let e = anyhow::Error::from(std::io::Error::other("disk full"))
            .context("cannot write schedule file `s.json`");
        assert_eq!(
            error_chain(&e),
            "cannot write schedule file `s.json`: disk full"
        );
    }

    /// Regression (issue 42): a schedule's failure message, a forged
    /// `module_blake3` or an `-o` name holding `ESC]0;...BEL` reached the
    /// terminal raw.
    #[test]
    fn control_characters_never_reach_the_terminal_raw() {
        let raw = "a\u{1b}]0;title\u{7}b\u{1b}[2J\n\tc\n";
        let out = escaped(raw);
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
        assert_eq!(out, "a\\u{1b}]0;title\\u{7}b\\u{1b}[2J\n\tc\n");
        assert!(matches!(escaped("plain\n"), std::borrow::Cow::Borrowed(_)));
        let long = "x".repeat(1 << 20);
        let clipped = wasmrace_trace::text::clipped(&one_line(&long), MAX_ERROR_CHARS);
        assert!(clipped.len() < MAX_ERROR_CHARS + 4);
    }

    #[test]
    fn folds_multi_line_messages() {
        assert_eq!(one_line("a\n  b\n\nc"), "a; b; c");
        assert_eq!(one_line("plain"), "plain");
    }
}
