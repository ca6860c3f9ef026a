//! `wasmrace test`: cargo's runner for `wasm32-wasip1-threads`, so that
//! plain `cargo test --target wasm32-wasip1-threads` checks every test of
//! a std crate under wasmrace. Cargo hands the runner the test binary (a
//! libtest harness, or a `bin`) and libtest's own arguments; they keep
//! their meaning (name filters, `--exact`, `--skip`, `--ignored`,
//! `--include-ignored`, `--list`), and wasmrace's own `check` options come
//! from `$WASMRACE_CHECK_ARGS`, since cargo passes only libtest's.

use super::check::CheckCommand;
use crate::output;
use crate::report;
use crate::verdict::Verdict;
use anyhow::{bail, Context, Result};
use clap::Parser;
use std::path::PathBuf;
use std::time::Instant;

/// The environment variable holding `check` options for `wasmrace test`.
pub const CHECK_ARGS_ENV: &str = "WASMRACE_CHECK_ARGS";

const AFTER_HELP: &str = "\
Set it as cargo's runner for the target, in .cargo/config.toml:

  [target.wasm32-wasip1-threads]
  runner = \"wasmrace test\"

(or CARGO_TARGET_WASM32_WASIP1_THREADS_RUNNER=\"wasmrace test\"), then
`cargo test --target wasm32-wasip1-threads` checks every test. libtest's
arguments after `--` keep their meaning; wasmrace's own `check` options
come from $WASMRACE_CHECK_ARGS (split at white space). Ignored tests are
skipped unless --ignored or --include-ignored says otherwise. The closing
line is libtest's, and the exit status is 0 when no test has a bug.

Examples:
  cargo test --target wasm32-wasip1-threads
  cargo test --target wasm32-wasip1-threads -- lost_update --exact
  WASMRACE_CHECK_ARGS=\"--strategy dpor --max-executions 20000\" cargo test --target wasm32-wasip1-threads
  wasmrace test target/wasm32-wasip1-threads/debug/deps/mycrate-0123abcd.wasm --list";

/// Check a std test binary as cargo's runner (libtest's arguments)
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct TestCommand {
    /// The test binary cargo built (a libtest harness or a `bin`)
    #[arg(value_name = "MODULE")]
    module: PathBuf,
    /// libtest's arguments: filters, --exact, --skip NAME, --ignored,
    /// --include-ignored, --list (others, such as --nocapture, are accepted
    /// and have no effect)
    #[arg(
        value_name = "LIBTEST_ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    args: Vec<String>,
}

/// libtest's arguments, as far as they choose tests.
#[derive(Debug, Default, PartialEq, Eq)]
struct Selection {
    filters: Vec<String>,
    skip: Vec<String>,
    exact: bool,
    ignored: bool,
    include_ignored: bool,
    list: bool,
}

/// libtest flags that take a value and change nothing here.
const VALUED: &[&str] = &["--test-threads", "--format", "--color", "--logfile", "-Z"];
/// libtest flags without a value that change nothing here.
const INERT: &[&str] = &[
    "--nocapture",
    "--no-capture",
    "--show-output",
    "-q",
    "--quiet",
    "--test",
    "--bench",
    "--report-time",
    "--ensure-time",
    "--shuffle",
    "--force-run-in-process",
];

impl Selection {
    fn parse(args: &[String]) -> Result<Selection> {
        let mut s = Selection::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (a.as_str(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| it.next().cloned())
                    .with_context(|| format!("libtest's `{flag}` needs a value"))
            };
            match flag {
                "--exact" => s.exact = true,
                "--ignored" => s.ignored = true,
                "--include-ignored" => s.include_ignored = true,
                "--list" => s.list = true,
                "--skip" => s.skip.push(value()?),
                f if VALUED.contains(&f) => {
                    value()?;
                }
                f if INERT.contains(&f) => {}
                f if f.starts_with('-') => bail!(
                    "`wasmrace test` does not know libtest's `{}`",
                    report::shown(f)
                ),
                _ => s.filters.push(a.clone()),
            }
        }
        Ok(s)
    }

    /// Whether `name` passes the filters and skips, as libtest matches:
    /// substrings, or whole names with `--exact`.
    fn matches(&self, name: &str) -> bool {
        let hit = |f: &String| {
            if self.exact {
                name == f
            } else {
                name.contains(f.as_str())
            }
        };
        (self.filters.is_empty() || self.filters.iter().any(hit)) && !self.skip.iter().any(hit)
    }

    /// Whether an ignored (`ignored`) test runs.
    fn runs(&self, ignored: bool) -> bool {
        self.include_ignored || ignored == self.ignored
    }
}

/// `check`'s options from `$WASMRACE_CHECK_ARGS`, for `module`.
#[derive(Parser)]
#[command(name = "WASMRACE_CHECK_ARGS", no_binary_name = true)]
struct CheckArgs {
    #[command(flatten)]
    check: CheckCommand,
}

impl TestCommand {
    pub fn run(self) -> Result<Verdict> {
        let started = Instant::now();
        let sel = Selection::parse(&self.args)?;
        let mut argv = vec![self.module.display().to_string()];
        if let Ok(extra) = std::env::var(CHECK_ARGS_ENV) {
            argv.extend(extra.split_whitespace().map(String::from));
        }
        let mut check = CheckArgs::try_parse_from(&argv)
            .map_err(|e| anyhow::anyhow!("${CHECK_ARGS_ENV}: {}", first_line(&e.to_string())))?
            .check;
        let (guest, settled) = match check.load() {
            Ok(loaded) => loaded,
            // A test binary without tests (a lib with no unit tests), as
            // libtest says it, not an error: cargo runs every target's.
            Err(e) if is_empty_harness(&e) => {
                if !sel.list {
                    output::print("\nrunning 0 tests under wasmrace\n")?;
                    output::print(&closing_line(0, &[], 0, 0, started))?;
                }
                return Ok(Verdict::NoBug);
            }
            Err(e) => return Err(e),
        };
        let ignored = guest.ignored_tests();
        let chosen: Vec<&String> = guest.tests().iter().filter(|t| sel.matches(t)).collect();
        if sel.list {
            let mut text = String::new();
            for t in chosen
                .iter()
                .filter(|t| !sel.ignored || ignored.contains(t))
            {
                text.push_str(&format!("{}: test\n", report::shown(t)));
            }
            output::print(&text)?;
            return Ok(Verdict::NoBug);
        }
        let run: Vec<String> = (chosen.iter())
            .filter(|t| sel.runs(ignored.contains(t)))
            .map(|t| t.to_string())
            .collect();
        let skipped = chosen.len() - run.len();
        let filtered = guest.tests().len() - chosen.len();
        output::print(&format!(
            "\nrunning {} test{} under wasmrace\n",
            run.len(),
            if run.len() == 1 { "" } else { "s" }
        ))?;
        let (verdict, failed) = if run.is_empty() {
            (Verdict::NoBug, Vec::new())
        } else {
            check.only = Some(run.clone());
            check.run_on(&guest, &settled)?
        };
        output::print(&closing_line(
            run.len(),
            &failed,
            skipped,
            filtered,
            started,
        ))?;
        Ok(verdict)
    }
}

/// Whether loading failed because a std test binary has no test.
fn is_empty_harness(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<wasmrace_host::HostError>(),
        Some(wasmrace_host::HostError::NoHarnessTests { .. })
    )
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}

/// libtest's closing line (cargo and CI read it): `test result: ok. 2
/// passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in
/// 0.52s`, a test with a bug counting as failed.
fn closing_line(
    run: usize,
    failed: &[String],
    ignored: usize,
    filtered: usize,
    started: Instant,
) -> String {
    let mut text = String::new();
    if !failed.is_empty() {
        text.push_str("\nfailures (a bug found by wasmrace):\n");
        for t in failed {
            text.push_str(&format!("    {}\n", report::shown(t)));
        }
    }
    text.push_str(&format!(
        "\ntest result: {}. {} passed; {} failed; {ignored} ignored; 0 measured; {filtered} filtered out; finished in {:.2}s\n\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        run - failed.len(),
        failed.len(),
        started.elapsed().as_secs_f64()
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn libtest_arguments_keep_their_meaning() {
        let s = Selection::parse(&args("lost --skip slow --nocapture --test-threads 1")).unwrap();
        assert!(s.matches("tests::lost_update"));
        assert!(!s.matches("tests::fetch_add"), "filtered out");
        assert!(!s.matches("tests::lost_slow"), "skipped");
        let s = Selection::parse(&args("tests::lost --exact")).unwrap();
        assert!(
            !s.matches("tests::lost_update"),
            "--exact wants the whole name"
        );
        assert!(s.matches("tests::lost"));
        let s = Selection::parse(&args("--format=terse --list")).unwrap();
        assert!(s.list && s.matches("anything"));
        assert!(Selection::parse(&args("--frobnicate")).is_err());
        assert!(
            Selection::parse(&args("--skip")).is_err(),
            "a value is missing"
        );
    }

    #[test]
    fn ignored_tests_run_only_when_asked() {
        let plain = Selection::default();
        assert!(plain.runs(false) && !plain.runs(true));
        let only = Selection::parse(&args("--ignored")).unwrap();
        assert!(!only.runs(false) && only.runs(true));
        let all = Selection::parse(&args("--include-ignored")).unwrap();
        assert!(all.runs(false) && all.runs(true));
    }
}
