//! The schedule file: a versioned JSON record of every decision of one
//! execution, tied to the module (blake3) and test it was found on, so that
//! `wasmrace replay` reproduces it exactly or refuses it clearly.

use crate::failure::Failure;
use crate::ids::{ThreadPath, Tid};
use crate::ops::Decision;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `format` field every schedule file carries.
pub const SCHEDULE_FORMAT: &str = "wasmrace-schedule";
/// The format version this build writes and reads.
pub const SCHEDULE_VERSION: u32 = 1;

/// One decision of a schedule: the thread that ran and which alternative of
/// its pending operation it took.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ScheduleStep {
    /// Display form of the thread path (`main.1.2`).
    pub thread: String,
    /// Alternative of the pending operation; omitted when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub alt: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// A schedule file: every decision of one execution of one test of one
/// module, with what found it and the failure it led to.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Schedule {
    /// Always [`SCHEDULE_FORMAT`].
    pub format: String,
    /// [`SCHEDULE_VERSION`] when written by this build.
    pub version: u32,
    /// blake3 of the original (uninstrumented) module bytes, hex.
    pub module_blake3: String,
    /// The test (export name without the `wasmrace_test_` prefix).
    pub test: String,
    /// The strategy that found the schedule (`dfs`, `portfolio`).
    pub strategy: String,
    /// The strategy's seed.
    pub seed: u64,
    /// Options that shaped the exploration, for the record (not replayed).
    #[serde(default)]
    pub options: serde_json::Value,
    /// The failure this schedule led to when it was written, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// The decisions, in order.
    pub steps: Vec<ScheduleStep>,
}

/// Why a schedule file could not be used. Every variant names the file
/// (`path`) as the caller gave it.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)] // the fields are the message's values
pub enum ScheduleError {
    /// The file could not be read.
    #[error("cannot read schedule file `{path}`: {cause}")]
    Io { path: String, cause: std::io::Error },
    /// Not JSON of a schedule's shape.
    #[error("schedule file `{path}` is not valid JSON for a wasmrace schedule: {cause}")]
    Parse {
        path: String,
        cause: serde_json::Error,
    },
    /// JSON, but not a wasmrace schedule.
    // Values read from the file are escaped: one line, no terminal escapes.
    #[error("`{path}` is not a wasmrace schedule file (format `{}`)", .found.escape_debug())]
    Format { path: String, found: String },
    /// A schedule of another format version.
    #[error("schedule file `{path}` has format version `{found}`; this wasmrace reads version `{SCHEDULE_VERSION}`")]
    Version { path: String, found: u32 },
    /// A step names no thread path.
    #[error("schedule file `{path}`, step {step}: `{}` is not a thread name (expected `main`, `main.1`, ...)", .thread.escape_debug())]
    BadThread {
        path: String,
        step: usize,
        thread: String,
    },
}

impl Schedule {
    /// A schedule of the current format and version.
    pub fn new(
        module_blake3: String,
        test: String,
        strategy: String,
        seed: u64,
        options: serde_json::Value,
        failure: Option<Failure>,
        steps: Vec<ScheduleStep>,
    ) -> Self {
        Schedule {
            format: SCHEDULE_FORMAT.into(),
            version: SCHEDULE_VERSION,
            module_blake3,
            test,
            strategy,
            seed,
            options,
            failure,
            steps,
        }
    }

    /// The file's text: pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("schedule serializes");
        s.push('\n');
        s
    }

    /// Parses and validates a schedule file's text; `path` is only used in
    /// error messages.
    pub fn parse(text: &str, path: &str) -> Result<Schedule, ScheduleError> {
        // Check the header before the whole shape, so that a foreign JSON
        // file is called foreign rather than malformed.
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
            let found = v.get("format").and_then(|f| f.as_str()).unwrap_or("<none>");
            if found != SCHEDULE_FORMAT {
                return Err(ScheduleError::Format {
                    path: path.into(),
                    found: found.into(),
                });
            }
            if let Some(ver) = v.get("version").and_then(|f| f.as_u64()) {
                if ver != u64::from(SCHEDULE_VERSION) {
                    return Err(ScheduleError::Version {
                        path: path.into(),
                        found: ver as u32,
                    });
                }
            }
        }
        let s: Schedule = serde_json::from_str(text).map_err(|source| ScheduleError::Parse {
            path: path.into(),
            cause: source,
        })?;
        for (i, st) in s.steps.iter().enumerate() {
            if ThreadPath::parse(&st.thread).is_none() {
                return Err(ScheduleError::BadThread {
                    path: path.into(),
                    step: i + 1,
                    thread: st.thread.clone(),
                });
            }
        }
        Ok(s)
    }

    /// Reads and parses a schedule file.
    pub fn read(path: &Path) -> Result<Schedule, ScheduleError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScheduleError::Io {
            path: p.clone(),
            cause: source,
        })?;
        Schedule::parse(&text, &p)
    }

    /// The decisions, with thread names turned back into stable ids.
    pub fn decisions(&self) -> Vec<Decision> {
        self.steps
            .iter()
            .map(|s| {
                let tid = ThreadPath::parse(&s.thread)
                    .map(|p| p.tid())
                    .unwrap_or(Tid(0));
                Decision::new(tid, s.alt)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzz harness (`wasmrace-fuzz --kind schedules`): a
    /// format or thread name with a newline or an ANSI escape broke the
    /// one-line error and reached the terminal raw.
    #[test]
    fn values_read_from_the_file_are_escaped_in_errors() {
        let odd = "\u{1b}[31m\nx";
        let format = serde_json::json!({"format": odd}).to_string();
        let mut bad_thread = serde_json::to_value(sample()).unwrap();
        bad_thread["steps"][0]["thread"] = serde_json::json!(odd);
        for text in [format, bad_thread.to_string()] {
            let e = Schedule::parse(&text, "f").unwrap_err().to_string();
            assert!(!e.contains('\n') && !e.contains('\u{1b}'), "{e:?}");
            assert!(e.contains("\\u{1b}[31m\\nx"), "{e:?}");
        }
    }

    fn sample() -> Schedule {
        Schedule::new(
            "ab".repeat(32),
            "lost_update".into(),
            "dfs".into(),
            7,
            serde_json::json!({"preemption_bound": 2}),
            None,
            vec![
                ScheduleStep {
                    thread: "main".into(),
                    alt: 0,
                },
                ScheduleStep {
                    thread: "main.1".into(),
                    alt: 2,
                },
            ],
        )
    }

    #[test]
    fn round_trips() {
        let s = sample();
        let back = Schedule::parse(&s.to_json(), "x.json").unwrap();
        assert_eq!(back, s);
        let d = back.decisions();
        assert_eq!(d[1], Decision::new(ThreadPath::main().child(1).tid(), 2));
    }

    #[test]
    fn refuses_foreign_and_corrupt_files() {
        assert!(matches!(
            Schedule::parse("{\"a\":1}", "f"),
            Err(ScheduleError::Format { .. })
        ));
        assert!(matches!(
            Schedule::parse("not json", "f"),
            Err(ScheduleError::Parse { .. })
        ));
        let mut s = sample();
        s.version = 99;
        assert!(matches!(
            Schedule::parse(&s.to_json(), "f"),
            Err(ScheduleError::Version { .. })
        ));
        let mut s = sample();
        s.steps[0].thread = "worker".into();
        let e = Schedule::parse(&s.to_json(), "f").unwrap_err();
        assert!(e.to_string().contains("`worker`"), "{e}");
        let truncated = &sample().to_json()[..40];
        assert!(Schedule::parse(truncated, "f").is_err());
    }
}
