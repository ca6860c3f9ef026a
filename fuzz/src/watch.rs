//! The per-input watchdog (an input that runs past its time aborts the
//! process, naming itself: in-process code cannot be cancelled) and the
//! process's resident set, read from `/proc/self/status`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The armed inputs (several campaigns may run at once, as tests do): a
/// token each, with its deadline and its name.
static ARMED: Mutex<BTreeMap<u64, (Instant, String)>> = Mutex::new(BTreeMap::new());

/// Disarms its input when dropped.
pub(crate) struct Armed(u64);

impl Drop for Armed {
    fn drop(&mut self) {
        ARMED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.0);
    }
}

/// Arms the watchdog for the input called `label`, for `timeout`.
pub(crate) fn arm(label: &str, timeout: Duration) -> Armed {
    static THREAD: OnceLock<()> = OnceLock::new();
    THREAD.get_or_init(|| {
        std::thread::Builder::new()
            .name("wasmrace-fuzz-watchdog".into())
            .spawn(watch)
            .expect("the watchdog thread starts");
    });
    static TOKENS: AtomicU64 = AtomicU64::new(0);
    let token = TOKENS.fetch_add(1, Ordering::Relaxed);
    ARMED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(token, (Instant::now() + timeout, label.to_string()));
    Armed(token)
}

/// The watchdog's loop: a hang is a defect no later input can report, so
/// it ends the process with a message naming the input.
fn watch() {
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let armed = ARMED.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if let Some((_, label)) = armed.values().find(|(deadline, _)| now > *deadline) {
            eprintln!("wasmrace-fuzz: defect: {label} hangs (ran past its time limit)");
            std::process::abort();
        }
    }
}

/// The process's resident set now, in bytes (0 without `/proc`).
pub fn rss_bytes() -> u64 {
    status_kib("VmRSS:") << 10
}

/// The process's peak resident set so far, in bytes (0 without `/proc`).
pub fn peak_rss_bytes() -> u64 {
    status_kib("VmHWM:") << 10
}

fn status_kib(field: &str) -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
