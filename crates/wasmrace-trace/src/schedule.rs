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
/// Largest schedule file read, in bytes. A schedule of the default 10,000
/// steps is about 400 KB; the limit keeps a huge or hostile file from
/// exhausting memory (a file's parsed form takes a few times its size).
pub const SCHEDULE_MAX_BYTES: u64 = 64 << 20;

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

/// The settings an execution's outcome depends on, beyond the module and
/// the decisions: `wasmrace replay` uses them unless a flag overrides them.
/// Each is `None` in files written before they were recorded (format
/// version 1 files without `settings`), which replay with the defaults.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct ScheduleSettings {
    /// Wasm instructions one step may run (`--fuel-per-step`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel_per_step: Option<u64>,
    /// Steps an execution may take (`--max-steps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u64>,
    /// Guest linear memory limit in bytes (`--max-memory-mb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory_bytes: Option<u64>,
    /// Shadow stack of each spawned thread in bytes (`--thread-stack-kib`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_stack_bytes: Option<u32>,
    /// Asyncify buffer of each thread in bytes (`--asyncify-buffer-kib`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asyncify_buffer_bytes: Option<u32>,
    /// What the guest may make the host hold, in bytes
    /// (`--max-host-memory-mb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_host_bytes: Option<u64>,
    /// Log bytes a traced execution keeps (`--max-log-kib`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_log_bytes: Option<u64>,
    /// Whether data races on plain memory were detected (`--data-races`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_races: Option<DataRaces>,
    /// A std command module's arguments after its name (`--arg`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// A std guest's environment, `KEY=VALUE` each (`--env`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
}

/// What to do about data races on plain memory (`--data-races`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataRaces {
    /// Detect them; a race fails the execution (kind `data-race`).
    #[default]
    Fail,
    /// Do not look: plain memory is not instrumented, as before
    /// wasmrace detected races.
    Off,
    /// Detect them, and go on: the execution continues after a race, and
    /// the run lists each distinct race (by its pair of sites) at its end.
    Report,
}

impl DataRaces {
    /// The flag value (`fail`, `off`).
    pub fn name(self) -> &'static str {
        match self {
            DataRaces::Fail => "fail",
            DataRaces::Off => "off",
            DataRaces::Report => "report",
        }
    }
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
    /// The host settings the schedule was found under, which replay uses.
    #[serde(default)]
    pub settings: ScheduleSettings,
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
    /// The file is larger than [`SCHEDULE_MAX_BYTES`].
    #[error("schedule file `{path}` is {size} bytes, over the limit of {SCHEDULE_MAX_BYTES} bytes for a schedule file (SCHEDULE_MAX_BYTES)")]
    TooLarge { path: String, size: u64 },
    /// A directory, a FIFO or a device: refused before it is opened.
    #[error("schedule file `{path}` is {kind}, not a regular file")]
    NotAFile { path: String, kind: &'static str },
    /// Not JSON of a schedule's shape.
    #[error("schedule file `{path}` is not valid JSON for a wasmrace schedule: {}", shortened(&.cause.to_string()))]
    Parse {
        path: String,
        cause: serde_json::Error,
    },
    /// JSON, but not a wasmrace schedule.
    // Values read from the file are escaped once, by `clipped`: one short
    // line, no terminal escapes.
    #[error("`{path}` is not a wasmrace schedule file (format `{found}`)")]
    Format { path: String, found: String },
    /// A schedule of another format version.
    #[error("schedule file `{path}` has format version `{found}`; this wasmrace reads version `{SCHEDULE_VERSION}`")]
    Version { path: String, found: u64 },
    /// A step names no thread path.
    #[error("schedule file `{path}`, step {step}: `{thread}` is not a thread name (expected `main`, `main.1`, ...)")]
    BadThread {
        path: String,
        step: usize,
        thread: String,
    },
}

/// A value from the file as an error message shows it: at most 64
/// characters, control characters escaped.
fn clipped(s: &str) -> String {
    crate::text::clipped(s, 64)
}

/// A parser's message, which quotes the offending value whole, kept to one
/// short line: its start and its end (where the position is).
fn shortened(message: &str) -> String {
    let one_line = crate::text::shown(message);
    let n = one_line.chars().count();
    if n <= 200 {
        return one_line.into_owned();
    }
    let head: String = one_line.chars().take(120).collect();
    let tail: String = one_line.chars().skip(n - 60).collect();
    format!("{head} ... {tail}")
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
            settings: ScheduleSettings::default(),
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
    /// error messages, which are one line whatever the text holds.
    pub fn parse(text: &str, path: &str) -> Result<Schedule, ScheduleError> {
        // Check the header before the whole shape, so that a foreign JSON
        // file is called foreign rather than malformed. Only the two header
        // fields are kept: the rest is skipped, not built as a tree.
        #[derive(Deserialize)]
        struct Header {
            format: Option<serde_json::Value>,
            version: Option<serde_json::Value>,
        }
        if let Ok(h) = serde_json::from_str::<Header>(text) {
            let found = h.format.as_ref().and_then(|f| f.as_str());
            if found != Some(SCHEDULE_FORMAT) {
                return Err(ScheduleError::Format {
                    path: path.into(),
                    found: clipped(found.unwrap_or("<none>")),
                });
            }
            if let Some(ver) = h.version.as_ref().and_then(|f| f.as_u64()) {
                if ver != u64::from(SCHEDULE_VERSION) {
                    return Err(ScheduleError::Version {
                        path: path.into(),
                        found: ver,
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
                    thread: clipped(&st.thread),
                });
            }
        }
        Ok(s)
    }

    /// Reads and parses a schedule file by the rule every input follows
    /// ([`crate::files::read_capped`]): a regular file, refused over
    /// [`SCHEDULE_MAX_BYTES`] before it is read.
    pub fn read(path: &Path) -> Result<Schedule, ScheduleError> {
        use crate::files::{read_capped, ReadError};
        let p = path.display().to_string();
        let bytes = read_capped(path, SCHEDULE_MAX_BYTES).map_err(|e| match e {
            ReadError::Io(cause) => ScheduleError::Io {
                path: p.clone(),
                cause,
            },
            ReadError::NotRegular { kind } => ScheduleError::NotAFile {
                path: p.clone(),
                kind,
            },
            ReadError::TooLarge { size, .. } => ScheduleError::TooLarge {
                path: p.clone(),
                size,
            },
        })?;
        let text = String::from_utf8(bytes).map_err(|e| ScheduleError::Io {
            path: p.clone(),
            cause: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
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

    /// Files written before the settings were recorded load, with none.
    #[test]
    fn files_without_settings_load_with_none() {
        let mut v: serde_json::Value = serde_json::from_str(&sample().to_json()).unwrap();
        v.as_object_mut().unwrap().remove("settings");
        let s = Schedule::parse(&v.to_string(), "old.json").unwrap();
        assert_eq!(s.settings, ScheduleSettings::default());
        let mut with = sample();
        with.settings.fuel_per_step = Some(1_000_000);
        let back = Schedule::parse(&with.to_json(), "new.json").unwrap();
        assert_eq!(back.settings.fuel_per_step, Some(1_000_000));
        assert_eq!(back.settings.max_steps, None);
    }

    /// Hostile files: one-line errors that do not repeat huge values.
    #[test]
    fn hostile_files_get_short_one_line_errors() {
        let base: serde_json::Value = serde_json::from_str(&sample().to_json()).unwrap();
        let with = |key: &str, value: serde_json::Value| {
            let mut v = base.clone();
            v[key] = value;
            v.to_string()
        };
        let huge_name = "x".repeat(1 << 20);
        let cases = [
            with("seed", serde_json::json!(1e300)),
            with("version", serde_json::json!(u64::MAX)),
            with(
                "steps",
                serde_json::json!([{"thread": "main", "alt": 1u64 << 40}]),
            ),
            with("steps", serde_json::json!("main")),
            with("settings", serde_json::json!({"fuel_per_step": -1})),
            with(
                "settings",
                serde_json::json!({"thread_stack_bytes": 1u64 << 40}),
            ),
            with("steps", serde_json::json!([{"thread": huge_name}])),
            with("format", serde_json::json!(huge_name)),
            with("test", serde_json::json!(7)),
            with("steps", serde_json::json!(huge_name)),
            with("test", serde_json::json!([huge_name])),
        ];
        for text in cases {
            let e = Schedule::parse(&text, "f").unwrap_err().to_string();
            assert!(
                !e.contains('\n') && e.len() < 400,
                "{}",
                &e[..e.len().min(400)]
            );
        }
    }
}
