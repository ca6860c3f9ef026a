//! Text shared by the subcommands' reports: failures, interleavings, bound
//! summaries, timing and copy-pasteable commands. Everything here except
//! [`timing_line`] is a pure function of the run's deterministic results, so
//! that two identical runs print identical text.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use wasmrace_explore::{BoundHit, Report};
use wasmrace_host::StrategyChoice;
use wasmrace_trace::{render_trace, Failure, TraceEvent};

/// The strategy and the option that shapes it, e.g. `dfs, preemption bound 2`
/// (the strategy's descriptor says it).
pub fn strategy_description(strategy: &StrategyChoice, seed: u64) -> String {
    strategy.describe(seed)
}

/// The real races RaceFuzzer created, one per line, or nothing.
pub fn races_block(races: &[wasmrace_host::RaceReport]) -> String {
    let mut out = String::new();
    if races.is_empty() {
        return out;
    }
    let _ = writeln!(out, "real races ({}):", races.len());
    for r in races {
        let _ = writeln!(
            out,
            "  {} <-> {} on {}  (created {} times in {} executions, first in execution {})",
            r.sites.0, r.sites.1, r.object, r.count, r.executions, r.first_execution
        );
    }
    out
}

/// The distinct data races of `--data-races report`, each with its
/// location and its report; nothing when there are none.
pub fn data_races_block(races: &wasmrace_host::ReportedRaces) -> String {
    let mut out = String::new();
    if races.races.is_empty() {
        return out;
    }
    let n = races.races.len();
    let _ = writeln!(
        out,
        "data races: {n} distinct (--data-races report: each listed once, by its pair of sites; exploration went on past them)"
    );
    for (i, f) in races.races.iter().enumerate() {
        let at = f.location.as_deref().unwrap_or("?");
        let _ = writeln!(out, "  {}. at {}", i + 1, shown(at));
        let _ = writeln!(out, "     {}", shown(&f.message));
    }
    if let Some(limit) = races.cut_at {
        let _ = writeln!(
            out,
            "  (more were met: the list keeps the {limit} with the least locations, HostConfig::max_data_race_reports)"
        );
    }
    out
}

/// The line saying a bug's schedule is the shrunk form of the strategy's
/// (`shrunk:   from 3 preemptions / 14 steps ...`), or nothing.
pub fn shrunk_line(from: Option<&wasmrace_host::ScheduleStats>) -> String {
    match from {
        Some(s) => format!(
            "shrunk:   from {} preemption{} / {} steps (--no-shrink shows the strategy's own)\n",
            s.preemptions,
            if s.preemptions == 1 { "" } else { "s" },
            s.steps
        ),
        None => String::new(),
    }
}

/// A failure, one labelled field per line; continuation lines of a
/// multi-line message (`assert_eq!`'s left/right) stay aligned under it.
pub fn failure_block(failure: &Failure) -> String {
    let mut out = String::new();
    let _ = write!(out, "failure:  {}", failure.kind.name());
    if let Some(t) = &failure.thread {
        let _ = write!(out, " in thread `{}`", shown(t));
    }
    out.push('\n');
    if !failure.message.is_empty() {
        for (i, line) in failure.message.lines().enumerate() {
            let label = if i == 0 { "message:  " } else { "          " };
            let _ = writeln!(out, "{label}{}", shown(line));
        }
    }
    if let Some(l) = &failure.location {
        let _ = writeln!(out, "location: {}", shown(l));
    }
    if let Some(h) = &failure.hint {
        let _ = writeln!(out, "hint:     {}", shown(h));
    }
    if !failure.waiting.is_empty() {
        out.push_str("waiting:\n");
        let width = failure
            .waiting
            .iter()
            .map(|w| w.thread.len())
            .max()
            .unwrap_or(0);
        for w in &failure.waiting {
            let _ = writeln!(
                out,
                "  {:<width$}  waits for {}",
                shown(&w.thread),
                shown(&w.waits_for)
            );
        }
    }
    out
}

/// A failure on one line: kind, thread, the first line of the message and
/// the location, for verdict lines such as `reproduced: ...` and errors;
/// the file's values escaped and clipped (a schedule's message may be
/// anything).
pub fn failure_line(failure: &Failure) -> String {
    let mut out = failure.kind.name().to_string();
    if let Some(t) = &failure.thread {
        let _ = write!(out, " in thread `{}`", shown(t));
    }
    if let Some(first) = failure.message.lines().next().filter(|l| !l.is_empty()) {
        let _ = write!(out, ": {}", clipped(first));
        if failure.message.lines().nth(1).is_some() {
            out.push_str(" ...");
        }
    }
    if let Some(l) = &failure.location {
        let _ = write!(out, " at {}", clipped(l));
    }
    out
}

/// A value from a schedule or a guest quoted on one line: escaped, at most
/// 200 characters.
fn clipped(s: &str) -> String {
    wasmrace_trace::text::clipped(s, 200)
}

/// The header line of an interleaving; it doubles as the legend for the
/// `*` that `render_trace` puts before preempting steps.
pub fn trace_header(events: &[TraceEvent]) -> String {
    let n = events.len();
    format!(
        "interleaving, {n} step{} (`*` marks a preemption: a switch away from a thread that could have continued):\n",
        if n == 1 { "" } else { "s" }
    )
}

/// The interleaving with its header, as both `check` and `replay` print it:
/// repeated steps folded unless `full` (`--full-trace`).
pub fn trace_block(events: &[TraceEvent], full: bool) -> String {
    if events.is_empty() {
        // A failure inside the very first step (a runaway loop before any
        // hook call): a legend over nothing would only confuse.
        return "interleaving, 0 steps: it failed before its first scheduling point\n".into();
    }
    let mut out = trace_header(events);
    if full {
        out.push_str(&render_trace(events));
    } else {
        out.push_str(&crate::fold::fold_trace(events));
    }
    out
}

/// Why an exploration without a bug ended, naming the flag that would let
/// it go further when a bound cut it short.
pub fn no_bug_summary(report: &Report) -> String {
    let n = report.executions;
    let mut out = format!("no bug in {n} execution{}", if n == 1 { "" } else { "s" });
    // A state cache prunes interleavings that reach explored states.
    let cached = stat(report, wasmrace_explore::state_cache::CACHE_HITS).is_some_and(|n| n > 0);
    // Partial-order reduction (dpor, which counts sleep-set-blocked
    // executions) runs one interleaving per trace.
    let reduced = stat(report, "sleep-set-blocked executions").is_some();
    let reason = if report.exhausted {
        match &report.strategy_bound {
            None if cached => "space exhausted: every reachable state was explored".to_string(),
            None if reduced => match stat(report, "traces") {
                Some(1) => "space exhausted: its one trace (partial order) was explored".into(),
                Some(t) => {
                    format!("space exhausted: all {t} traces (partial orders) were explored")
                }
                None => "space exhausted: every trace (partial order) was explored".to_string(),
            },
            None => "space exhausted: every interleaving was explored".to_string(),
            Some(b) => format!("space exhausted within {}", bound_phrase(b)),
        }
    } else {
        let mut r = match &report.stopped_by {
            Some(b) => format!(
                "not exhausted: stopped by {} {}; raise it to explore further",
                b.knob, b.value
            ),
            // The strategy ended its own plan (RaceFuzzer with no racing
            // pair to direct, say); its counters, printed below, say how
            // far it went.
            None => "not exhausted: the strategy ended its own plan".to_string(),
        };
        if let Some(b) = &report.strategy_bound {
            let _ = write!(r, "; also pruned by {}", bound_phrase(b));
        }
        r
    };
    let _ = write!(out, " ({reason})");
    out
}

/// The strategy's counter named `name`, if it keeps one.
fn stat(report: &Report, name: &str) -> Option<u64> {
    report
        .strategy_stats
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.value)
}

/// What "exhausted" covers, said after every exhausted run of an SDK
/// guest with data races detected (the default).
pub const EXHAUSTED_COVERS: &str = "every interleaving of the SDK operations, and data races \
    on plain memory (docs/data-races.md, \"What a pass covers\")";

/// What "exhausted" covers for an SDK guest with `--data-races off`.
pub const EXHAUSTED_COVERS_NO_RACES: &str = "every interleaving of the SDK operations; plain \
    memory (statics, the heap, `Arc`, std's atomics) is not seen: --data-races off (docs/ABI.md, \
    \"What exploration covers\")";

/// What "exhausted" covers for a std guest (docs/std-guests.md).
pub const EXHAUSTED_COVERS_STD: &str = "every interleaving of the atomic operations of the \
    program and of Rust's std (wasi-libc's run in place), and data races on plain memory \
    outside wasi-libc (docs/data-races.md, \"What a pass covers\")";

/// What "exhausted" covers for a std guest with `--data-races off`.
pub const EXHAUSTED_COVERS_STD_NO_RACES: &str = "every interleaving of the atomic operations \
    of the program and of Rust's std (wasi-libc's run in place); plain memory is not seen: \
    --data-races off (docs/std-guests.md, \"What exploration covers\")";

/// What "exhausted" covers for a kind of guest (`std`) and whether data
/// races were detected.
pub fn covers(std: bool, races: wasmrace_trace::DataRaces) -> &'static str {
    let on = races != wasmrace_trace::DataRaces::Off;
    match (std, on) {
        (false, true) => EXHAUSTED_COVERS,
        (false, false) => EXHAUSTED_COVERS_NO_RACES,
        (true, true) => EXHAUSTED_COVERS_STD,
        (true, false) => EXHAUSTED_COVERS_STD_NO_RACES,
    }
}

/// What "exhausted" covers for `guest`'s kind of guest and settings.
pub fn exhausted_covers(guest: &wasmrace_host::Guest) -> &'static str {
    covers(guest.is_std(), guest.config().data_races)
}

/// What "exhausted" covers in a merged report, from a part's `settings`
/// (which say whether races were detected; not whether the guest was a
/// std guest, so the SDK's wording).
pub fn merged_covers(settings: &serde_json::Value) -> &'static str {
    let races = match settings["data_races"].as_str() {
        Some("off") => wasmrace_trace::DataRaces::Off,
        Some("report") => wasmrace_trace::DataRaces::Report,
        _ => wasmrace_trace::DataRaces::Fail,
    };
    covers(false, races)
}

/// The lines under a run without a bug that say how much its pass means:
/// that the test had nothing to interleave, and what an exhausted space
/// (of `covers`, [`exhausted_covers`]) covers.
pub fn pass_notes(
    report: &Report,
    nothing: Option<wasmrace_host::NothingToInterleave>,
    covers: &str,
) -> String {
    let mut out = String::new();
    if let Some(n) = nothing {
        let _ = writeln!(out, "nothing to interleave: {}", n.reason());
    }
    if report.exhausted {
        let _ = writeln!(out, "exhausted covers {covers}");
    }
    out
}

/// `preemption bound 2; raise it with --preemption-bound or use --unbounded`,
/// or the same built from any other bound.
fn bound_phrase(b: &BoundHit) -> String {
    if b.knob == "--fairness-bound" {
        // DPOR's planned reversals whose thread fair scheduling hid: not a
        // bound the flag raises away, a limit of the reduction.
        // `dpor --dpor trust` drops jobs rather than reversals, and its
        // counters say how many (threads count their own).
        let dropped = if b.bound == "dropped jobs" {
            "jobs dropped because fairness hid their thread (counted below)".to_string()
        } else {
            let s = if b.value == 1 { "" } else { "s" };
            // A std guest's reversals can also find their thread blocked:
            // wasi-libc's atomics run in place, out of DPOR's sight.
            format!(
                "{} planned reversal{s} dropped because their thread was not enabled \
                 (fair scheduling hid it, or it was blocked)",
                b.value
            )
        };
        format!(
            "the reach of dpor under fair scheduling: {dropped}; `--strategy dfs \
             --unbounded` reaches every fair trace"
        )
    } else if b.knob == "--preemption-bound" {
        format!(
            "preemption bound {}; raise it with --preemption-bound or use --unbounded",
            b.value
        )
    } else {
        format!("{} bound {}; raise it with {}", b.bound, b.value, b.knob)
    }
}

/// One bound as JSON (`stopped_by`, `pruned_by`), or null.
fn bound_json(b: Option<&BoundHit>) -> serde_json::Value {
    b.map_or(
        serde_json::Value::Null,
        |b| serde_json::json!({ "bound": b.bound, "value": b.value, "flag": b.knob }),
    )
}

/// What `check --json` says of a test's search besides its executions:
/// the distinct traces (partial orders) run and the sleep-set-blocked
/// executions, for a strategy that counts them (dpor; null otherwise), and
/// the bound that stopped the run and the one that pruned the strategy's
/// space (null when none did).
pub fn search_json(report: &Report) -> serde_json::Map<String, serde_json::Value> {
    let mut json = serde_json::Map::new();
    json.insert("traces".into(), stat(report, "traces").into());
    json.insert(
        "sleep_set_blocked".into(),
        stat(report, "sleep-set-blocked executions").into(),
    );
    json.insert("stopped_by".into(), bound_json(report.stopped_by.as_ref()));
    json.insert(
        "pruned_by".into(),
        bound_json(report.strategy_bound.as_ref()),
    );
    json
}

/// Bound hits as JSON: which bound, its value, the flag that raises it, and
/// whether it pruned the strategy's space or stopped the whole run.
pub fn bound_hits_json(report: &Report) -> serde_json::Value {
    let mut hits = Vec::new();
    let mut push = |b: &BoundHit, effect: &str| {
        let mut hit = bound_json(Some(b));
        hit["effect"] = effect.into();
        hits.push(hit)
    };
    if let Some(b) = &report.stopped_by {
        push(b, "stopped the run");
    }
    if let Some(b) = &report.strategy_bound {
        push(b, "pruned the space");
    }
    serde_json::Value::Array(hits)
}

/// The strategy's own counters on one line (`states explored: 508, cache
/// hits: 2045, ...`), and where saved states were kept (SES's frontier:
/// snapshots, or prefixes to replay), or nothing.
pub fn strategy_stats_block(report: &Report) -> String {
    let mut out = String::new();
    if !report.strategy_stats.is_empty() {
        let stats: Vec<String> = report
            .strategy_stats
            .iter()
            .map(|s| format!("{}: {}", s.name, s.value))
            .collect();
        let _ = writeln!(out, "{}", stats.join(", "));
    }
    let saved = report.saved_with_snapshot + report.saved_as_prefix;
    if saved > 0 {
        let _ = write!(
            out,
            "saved states: {saved} ({} as snapshots, {} as prefixes to replay), {} started from a \
             snapshot, {} by replay",
            report.saved_with_snapshot,
            report.saved_as_prefix,
            report.saved_restored,
            report.saved_replayed
        );
        if report.saved_as_prefix > 0 {
            out.push_str(
                "; raise --max-saved-snapshots or --saved-snapshots-mb to keep more snapshots",
            );
        }
        out.push('\n');
    }
    out
}

/// [`strategy_stats_block`] for JSON.
pub fn strategy_stats_json(report: &Report) -> serde_json::Value {
    let stats: serde_json::Map<String, serde_json::Value> = report
        .strategy_stats
        .iter()
        .map(|s| (s.name.to_string(), serde_json::json!(s.value)))
        .collect();
    // Which counters are peaks, not counts: `wasmrace merge` takes their
    // largest value over the partitions instead of adding them up.
    let peaks: Vec<&str> = report
        .strategy_stats
        .iter()
        .filter(|s| s.kind == wasmrace_explore::StatKind::Peak)
        .map(|s| s.name)
        .collect();
    serde_json::json!({
        "stats": stats,
        "peaks": peaks,
        "saved_states": {
            "with_snapshot": report.saved_with_snapshot,
            "as_prefix": report.saved_as_prefix,
            "restored": report.saved_restored,
            "replayed": report.saved_replayed,
        },
    })
}

/// The one line with wall-clock figures. It always starts with `time:` so
/// that comparisons of runs can drop it (`grep -v '^time:'`); nothing else
/// printed on stdout depends on timing. `ran` is what the threads of a run
/// sharing its tree ran in all ([`Report::executions_run`]), said when it
/// is more than the run reports.
pub fn timing_line(executions: u64, ran: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let mut line = format!("time: {secs:.2} s");
    if secs > 0.0 {
        line.push_str(&format!(", {:.0} executions/s", executions as f64 / secs));
    }
    if ran > executions {
        line.push_str(&format!(" (the threads ran {ran} executions in all)"));
    }
    line.push('\n');
    line
}

/// Milliseconds for JSON, whole numbers so the field is easy to drop or
/// compare.
pub fn elapsed_ms(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

/// Where the schedule of a bug in `test` goes: `--schedule-out` as given
/// for one test, with the test's name added before the extension for
/// several; by default `<module stem>.<test>.<tag>.schedule.json` (a file
/// name, which the caller puts in its schedule folder), where `tag` is
/// [`schedule_tag`] of the file's contents. The test's part is
/// [`file_safe`], so a test export name can neither leave the directory
/// nor make an unusable file name.
pub fn schedule_path(
    module: &Path,
    test: &str,
    schedule_out: Option<&Path>,
    several_tests: bool,
    tag: &str,
) -> PathBuf {
    let test = file_safe(test);
    match schedule_out {
        Some(p) if !several_tests => p.to_path_buf(),
        Some(p) => {
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = match p.extension() {
                Some(ext) => format!("{stem}.{test}.{}", ext.to_string_lossy()),
                None => format!("{stem}.{test}"),
            };
            p.with_file_name(name)
        }
        None => {
            let stem = module
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "module".into());
            PathBuf::from(format!("{stem}.{test}.{tag}.schedule.json"))
        }
    }
}

/// The part of a default schedule file's name that comes from its
/// contents: 8 hex digits of their blake3. Runs share a schedule folder
/// (the partitions of one run, concurrent checks), and a name that is a
/// function of the contents means two runs write one name only with the
/// same schedule: the file a report names always holds that report's bug,
/// whoever wrote it last, and the same run still prints the same name.
pub fn schedule_tag(json: &str) -> String {
    blake3::hash(json.as_bytes()).to_hex()[..8].to_string()
}

/// Longest test-name part of a schedule file name, in bytes.
const FILE_NAME_TEST_MAX: usize = 64;

/// `test` as part of a file name: only `[A-Za-z0-9_.-]` (anything else
/// becomes `_`), at most 64 bytes, and when that changed the name, a short
/// hash of the original after a `-`, so that two tests never share a file.
/// Test names come from the module's exports, which may hold `/`, `..`,
/// control characters or 300 bytes.
pub fn file_safe(test: &str) -> String {
    let mut out: String = test
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    out.truncate(FILE_NAME_TEST_MAX);
    if out != test {
        // FNV-1a: stable across runs and platforms, and enough to tell
        // apart the few tests of one module.
        let h = test.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        out.push_str(&format!("-{:08x}", h as u32));
    }
    out
}

/// `name` (a test or thread name from the module) as it may be printed to
/// a terminal: control characters, escape sequences and newlines included,
/// are shown escaped (`\n`, `\u{1b}`) instead of acting on the terminal.
pub fn shown(name: &str) -> String {
    wasmrace_trace::text::shown(name).into_owned()
}

/// Quotes `arg` for a POSIX shell when it needs it, so that printed commands
/// can be pasted as they are.
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// How printed commands name this program: `wasmrace` when that name on
/// `PATH` is this very binary, else the path of the running binary (quoted
/// by `command_line` when it needs it), so that the command runs as
/// printed.
pub fn program_word() -> String {
    const NAME: &str = "wasmrace";
    let Ok(exe) = std::env::current_exe() else {
        return NAME.into();
    };
    let file = format!("{NAME}{}", std::env::consts::EXE_SUFFIX);
    let first_on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join(&file))
        .find(|candidate| candidate.is_file());
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    match first_on_path {
        Some(found) if same(&found, &exe) => NAME.into(),
        _ => exe.display().to_string(),
    }
}

/// A command line, each word quoted as needed.
pub fn command_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test export named `/../../../tmp/x` once wrote
    /// `/tmp/x.schedule.json`, outside the working directory; a `/` or a
    /// 300-byte name lost the report.
    #[test]
    fn schedule_paths_stay_where_they_are_put_whatever_the_test_name() {
        let long = "t".repeat(300);
        let hostile = [
            "/../../../tmp/x",
            "..",
            "a/b",
            "x\u{1b}[31m\ny",
            long.as_str(),
            "",
        ];
        let mut seen = std::collections::BTreeSet::new();
        for t in hostile {
            for (out, several) in [(None, false), (Some(Path::new("out/s.json")), true)] {
                let p = schedule_path(Path::new("m.wasm"), t, out, several, "0123abcd");
                let name = p.file_name().unwrap().to_str().unwrap();
                assert!(name.len() <= 120, "{name}");
                assert!(
                    name.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)),
                    "{name}"
                );
                let dir = p.parent().unwrap_or(Path::new(""));
                assert_eq!(
                    dir,
                    out.map_or(Path::new(""), |o| o.parent().unwrap()),
                    "{t:?}"
                );
            }
            assert!(
                seen.insert(file_safe(t)),
                "two tests share {}",
                file_safe(t)
            );
        }
        assert_eq!(
            file_safe("lost_update"),
            "lost_update",
            "plain names are kept"
        );
        assert_ne!(
            file_safe("a/b"),
            file_safe("a_b"),
            "a changed name gets a hash"
        );
    }

    #[test]
    fn names_printed_to_a_terminal_are_escaped() {
        assert_eq!(shown("lost_update"), "lost_update");
        assert_eq!(shown("a\u{1b}[31mb\nc"), "a\\u{1b}[31mb\\nc");
    }
    use wasmrace_host::strategies::StrategyOptions;
    use wasmrace_trace::{FailureKind, Waiting};

    #[test]
    fn describes_strategies() {
        let dfs = |b| {
            StrategyChoice::named("dfs").with(&StrategyOptions {
                preemption_bound: Some(b),
                ..StrategyOptions::NONE
            })
        };
        assert_eq!(
            strategy_description(&dfs(Some(2)), 9),
            "dfs, preemption bound 2"
        );
        assert_eq!(strategy_description(&dfs(None), 9), "dfs, unbounded");
        assert_eq!(
            strategy_description(&StrategyChoice::named("random"), 9),
            "random, seed 9"
        );
    }

    #[test]
    fn failure_block_aligns_multi_line_messages_and_waiters() {
        let mut f = Failure::new(
            FailureKind::Panic,
            Some("main".into()),
            "assertion failed\n  left: 1\n right: 2",
        );
        f.location = Some("src/lib.rs:3:5".into());
        assert_eq!(
            failure_block(&f),
            "\
failure:  panic in thread `main`
message:  assertion failed
            left: 1
           right: 2
location: src/lib.rs:3:5
"
        );
        let mut d = Failure::new(FailureKind::Deadlock, None, "every live thread is blocked");
        d.waiting = vec![
            Waiting {
                thread: "main".into(),
                waits_for: "thread `main.1` to exit (join)".into(),
            },
            Waiting {
                thread: "main.1".into(),
                waits_for: "`mutex main#1` held by `main.2`".into(),
            },
        ];
        assert_eq!(
            failure_block(&d),
            "\
failure:  deadlock
message:  every live thread is blocked
waiting:
  main    waits for thread `main.1` to exit (join)
  main.1  waits for `mutex main#1` held by `main.2`
"
        );
    }

    #[test]
    fn failure_line_keeps_the_first_message_line() {
        let mut f = Failure::new(FailureKind::Panic, Some("main".into()), "boom\n  left: 1");
        f.location = Some("src/lib.rs:3:5".into());
        assert_eq!(
            failure_line(&f),
            "panic in thread `main`: boom ... at src/lib.rs:3:5"
        );
        let d = Failure::new(FailureKind::Deadlock, None, "every live thread is blocked");
        assert_eq!(failure_line(&d), "deadlock: every live thread is blocked");
    }

    fn report(exhausted: bool, stopped: Option<BoundHit>, pruned: Option<BoundHit>) -> Report {
        Report {
            executions: 7,
            exhausted,
            stopped_by: stopped,
            strategy_bound: pruned,
            ..Report::default()
        }
    }

    fn preemptions() -> BoundHit {
        BoundHit {
            bound: "preemptions",
            value: 2,
            knob: "--preemption-bound",
        }
    }

    fn executions() -> BoundHit {
        BoundHit {
            bound: "executions",
            value: 7,
            knob: "--max-executions",
        }
    }

    #[test]
    fn no_bug_summary_names_the_bound_and_its_flag() {
        assert_eq!(
            no_bug_summary(&report(true, None, None)),
            "no bug in 7 executions (space exhausted: every interleaving was explored)"
        );
        let mut dpor = report(true, None, None);
        dpor.strategy_stats = vec![wasmrace_host::Stat::new("sleep-set-blocked executions", 0)];
        assert_eq!(
            no_bug_summary(&dpor),
            "no bug in 7 executions (space exhausted: every trace (partial order) was explored)"
        );
        dpor.strategy_stats
            .push(wasmrace_host::Stat::new("traces", 7));
        assert_eq!(
            no_bug_summary(&dpor),
            "no bug in 7 executions (space exhausted: all 7 traces (partial orders) were explored)"
        );
        let search = search_json(&dpor);
        assert_eq!(search["traces"], 7);
        assert_eq!(search["sleep_set_blocked"], 0);
        assert!(search["stopped_by"].is_null());
        let search = search_json(&report(false, Some(executions()), None));
        assert!(search["traces"].is_null());
        assert_eq!(search["stopped_by"]["flag"], "--max-executions");
        assert_eq!(
            no_bug_summary(&report(true, None, Some(preemptions()))),
            "no bug in 7 executions (space exhausted within preemption bound 2; \
             raise it with --preemption-bound or use --unbounded)"
        );
        assert_eq!(
            no_bug_summary(&report(false, Some(executions()), Some(preemptions()))),
            "no bug in 7 executions (not exhausted: stopped by --max-executions 7; \
             raise it to explore further; also pruned by preemption bound 2; \
             raise it with --preemption-bound or use --unbounded)"
        );
        let hits = bound_hits_json(&report(false, Some(executions()), Some(preemptions())));
        assert_eq!(hits[0]["flag"], "--max-executions");
        assert_eq!(hits[1]["effect"], "pruned the space");
    }

    #[test]
    fn races_are_listed_one_per_line_or_not_at_all() {
        assert_eq!(races_block(&[]), "");
        let r = wasmrace_host::RaceReport {
            sites: ("src/lib.rs:3:5".into(), "src/lib.rs:9:7".into()),
            object: "cell main#0".into(),
            count: 4,
            executions: 2,
            first_execution: 11,
            key: (3, 9, 1),
        };
        assert_eq!(
            races_block(&[r]),
            "real races (1):\n  src/lib.rs:3:5 <-> src/lib.rs:9:7 on cell main#0  \
             (created 4 times in 2 executions, first in execution 11)\n"
        );
    }

    #[test]
    fn timing_is_one_line_starting_with_time() {
        let t = timing_line(300, 0, Duration::from_millis(1500));
        assert_eq!(t, "time: 1.50 s, 200 executions/s\n");
        assert_eq!(timing_line(0, 0, Duration::ZERO), "time: 0.00 s\n");
        assert_eq!(
            timing_line(300, 450, Duration::from_millis(1500)),
            "time: 1.50 s, 200 executions/s (the threads ran 450 executions in all)\n"
        );
    }

    #[test]
    fn schedule_paths() {
        let m = Path::new("build/app.wasm");
        assert_eq!(
            schedule_path(m, "t", None, true, "0123abcd"),
            PathBuf::from("app.t.0123abcd.schedule.json")
        );
        assert_eq!(schedule_tag("{}"), schedule_tag("{}"));
        assert_ne!(schedule_tag("{\"a\":1}"), schedule_tag("{\"a\":2}"));
        assert_eq!(schedule_tag("{}").len(), 8);
        let out = Path::new("bugs/s.json");
        assert_eq!(schedule_path(m, "t", Some(out), false, ""), out);
        assert_eq!(
            schedule_path(m, "t", Some(out), true, ""),
            PathBuf::from("bugs/s.t.json")
        );
        assert_eq!(
            schedule_path(m, "t", Some(Path::new("s")), true, ""),
            PathBuf::from("s.t")
        );
    }

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_quote("dir/app.wasm"), "dir/app.wasm");
        assert_eq!(shell_quote("my app.wasm"), "'my app.wasm'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(
            command_line(&["wasmrace".into(), "replay".into(), "a b".into()]),
            "wasmrace replay 'a b'"
        );
    }
}
