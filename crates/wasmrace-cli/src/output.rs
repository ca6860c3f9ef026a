//! Writing to stdout and stderr: reports go to stdout in whole blocks, errors
//! to stderr as exactly one `error: ` line, whatever the message contains.

use std::io::Write;

/// Writes a block of report text to stdout. A closed pipe (`wasmrace check
/// ... | head`) is not an error: the reader has seen what it wanted, and the
/// exit status must still say whether a bug was found.
pub fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(anyhow::anyhow!("cannot write to stdout: {e}")),
    }
}

/// Prints `error: <message>` on one line of stderr.
pub fn error_line(message: &str) {
    eprintln!("error: {}", one_line(message));
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

    #[test]
    fn folds_multi_line_messages() {
        assert_eq!(one_line("a\n  b\n\nc"), "a; b; c");
        assert_eq!(one_line("plain"), "plain");
    }
}
