//! A std guest's threads as a process: what each thread wrote to standard
//! error, read for std's panic message (a std panic is `panic = abort`, so
//! the message is all the host gets), and the end of the process, which
//! stops every thread (`main` returned, or `proc_exit`).

use super::{World, NAME_BYTES};
use crate::ops::Op;

/// The most bytes of a thread's standard error kept for reading a std
/// guest's panic message (`World::note_stderr`): its last lines.
const STDERR_TAIL: usize = 4096;

impl World {
    /// Keeps what thread `i` wrote to standard error, its last
    /// `STDERR_TAIL` bytes, and reads a std panic message from it: std's
    /// panic hook writes `thread '<name>' panicked at <file:line:col>:`,
    /// then the message, then (not kept) a `note:` line.
    pub fn note_stderr(&mut self, i: usize, bytes: &[u8]) {
        let t = &mut self.threads[i];
        t.stderr.extend_from_slice(bytes);
        if t.stderr.len() > STDERR_TAIL {
            let cut = t.stderr.len() - STDERR_TAIL;
            t.stderr.drain(..cut);
        }
        if let Some(p) = parse_std_panic(&t.stderr) {
            t.panic = Some(p);
        }
    }

    /// Ends the process: every thread stops (a std guest's main thread
    /// returned, or `proc_exit`).
    pub fn end_process(&mut self) {
        for t in &mut self.threads {
            t.exited = true;
            t.pending = Op::Start;
        }
        self.futex.clear();
        for (n, _) in std::mem::take(&mut self.names) {
            self.held = self.held.saturating_sub(NAME_BYTES + n.len() as u64);
        }
    }
}

/// The last panic in a std guest's standard error: its message (the lines
/// after the header, up to a `note:` line) and its location. The header
/// is `thread '<name>' panicked at <location>:`, with the thread's id in
/// parentheses after its name since Rust 1.88.
fn parse_std_panic(err: &[u8]) -> Option<(String, String)> {
    const AT: &str = " panicked at ";
    let text = String::from_utf8_lossy(err);
    let start = text.rfind("thread '")?;
    let rest = &text[start..];
    let at = rest.find(AT)? + AT.len();
    let header_end = at + rest[at..].find(":\n")?;
    let location = rest[at..header_end].to_string();
    let body = &rest[header_end + 2..];
    let message = match body.find("\nnote: ") {
        Some(k) => &body[..k],
        None => body.strip_suffix('\n').unwrap_or(body),
    };
    Some((message.to_string(), location))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn a_std_panic_is_read_from_standard_error_written_in_pieces() {
        let mut w = world2();
        for piece in [
            "\nthread '",
            "<unnamed>' (2) panicked at src/lib.rs:14:9:\nassertion failed\n  left: 1",
            "\nnote: run with `RUST_BACKTRACE=1`\n",
        ] {
            w.note_stderr(1, piece.as_bytes());
        }
        let (message, location) = w.threads[1].panic.clone().expect("a panic");
        assert_eq!(location, "src/lib.rs:14:9");
        assert_eq!(message, "assertion failed\n  left: 1");
        assert!(w.threads[0].panic.is_none(), "only the writer's");
        // Older std: no thread id.
        let mut w = world2();
        w.note_stderr(0, b"thread 'main' panicked at src/main.rs:2:5:\nboom\n");
        assert_eq!(
            w.threads[0].panic,
            Some(("boom".into(), "src/main.rs:2:5".into()))
        );
        // Bounded, whatever a thread writes.
        w.note_stderr(0, &vec![b'x'; 3 * STDERR_TAIL]);
        assert_eq!(w.threads[0].stderr.len(), STDERR_TAIL);
    }
}
