//! Side-by-side benchmark of wasmrace against loom and shuttle on the same
//! three algorithms (lost-update counter, mutex-protected counter, two-lock
//! transfer): executions per second of exhaustive exploration (wasmrace's
//! unbounded DFS, loom, shuttle's DFS), time to exhaust with partial-order
//! reduction (wasmrace's optimal DPOR against loom's DPOR), of random sampling (wasmrace's
//! random walk, shuttle's random scheduler), and executions to the first
//! bug. Prints a markdown report; `--results RESULTS.md` also rewrites the
//! generated part of that file.
//!
//! Run from this directory, so that .cargo/config.toml shares the
//! repository's target dir: `cargo run --release -- --results RESULTS.md`.

mod native;
mod wasm;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// One of the benchmark programs; `name()` is the guest's test export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    /// Load, then store the loaded value + 1: BUG (a lost increment).
    LostUpdate(u64),
    /// `fetch_add(1)`: the lost update's fix, no bug.
    FetchAdd(u64),
    /// Load and store under a mutex: no bug.
    MutexCounter(u64),
    /// Two accounts behind a mutex each, two transfers in opposite
    /// directions. Ordered locking: no bug; source-then-destination: BUG
    /// (ABBA deadlock).
    Transfer { ordered: bool },
}

impl Test {
    pub fn name(self) -> String {
        match self {
            Test::LostUpdate(n) => format!("lost_update_{n}"),
            Test::FetchAdd(n) => format!("fetch_add_{n}"),
            Test::MutexCounter(n) => format!("mutex_counter_{n}"),
            Test::Transfer { ordered: true } => "transfer_ordered".into(),
            Test::Transfer { ordered: false } => "transfer_abba".into(),
        }
    }

    pub fn buggy(self) -> bool {
        matches!(
            self,
            Test::LostUpdate(_) | Test::Transfer { ordered: false }
        )
    }
}

/// Bug-free variants: exhaustive exploration and random sampling run to
/// their end on these.
const CORRECT: &[Test] = &[
    Test::FetchAdd(2),
    Test::FetchAdd(3),
    Test::MutexCounter(2),
    Test::MutexCounter(3),
    Test::Transfer { ordered: true },
];

/// Buggy variants: executions to the first bug.
const BUGGY: &[Test] = &[
    Test::LostUpdate(2),
    Test::LostUpdate(3),
    Test::Transfer { ordered: false },
];

struct Options {
    repeats: usize,
    iterations: u64,
    seeds: u64,
    cap: u64,
    results: Option<String>,
    /// `--only TOOL TEST`: one measurement alone, for profilers.
    only: Option<(String, String)>,
}

impl Options {
    fn parse() -> Result<Options, String> {
        let mut o = Options {
            repeats: 5,
            iterations: 10_000,
            seeds: 20,
            cap: 100_000,
            results: None,
            only: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            let mut value =
                |name: &str| args.next().ok_or_else(|| format!("`{name}` needs a value"));
            let number = |s: String, name: &str| {
                s.parse::<u64>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("`{name}` takes a positive integer, not `{s}`"))
            };
            match a.as_str() {
                "--repeats" => o.repeats = number(value(&a)?, &a)? as usize,
                "--iterations" => o.iterations = number(value(&a)?, &a)?,
                "--seeds" => o.seeds = number(value(&a)?, &a)?,
                "--cap" => o.cap = number(value(&a)?, &a)?,
                "--results" => o.results = Some(value(&a)?),
                "--only" => {
                    let tool = value(&a)?;
                    o.only = Some((tool, value(&a)?));
                }
                "--quick" => {
                    o.repeats = 1;
                    o.iterations = 1_000;
                    o.seeds = 5;
                }
                "-h" | "--help" => {
                    println!(
                        "usage: wasmrace-peers [--repeats R] [--iterations N] [--seeds K] \
                         [--cap C] [--quick] [--results RESULTS.md]\n\
                         \n  --repeats R     timed runs per measurement; the median is reported (5)\
                         \n  --iterations N  random-sampling executions per run (10000)\
                         \n  --seeds K       seeds for random executions to the first bug (20)\
                         \n  --cap C         executions per seed at most when hunting a bug (100000)\
                         \n  --quick         --repeats 1 --iterations 1000 --seeds 5\
                         \n  --results PATH  rewrite the generated part of PATH with the report\
                         \n  --only TOOL TEST  run one measurement alone (for a profiler); TOOL is one of\
                         \n                  wasmrace-dfs, wasmrace-dpor, wasmrace-random, loom, shuttle-dfs,\
                         \n                  shuttle-random, wasmrace-dfs-pregrown, wasmrace-random-pregrown"
                    );
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument `{other}` (see --help)")),
            }
        }
        Ok(o)
    }
}

fn main() {
    let opts = match Options::parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let result = match &opts.only {
        Some((tool, test)) => only(&opts, tool, test),
        None => run(&opts),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

/// Median of the durations (the mean of the two middle ones for an even
/// count).
fn median(mut d: Vec<Duration>) -> Duration {
    d.sort();
    let n = d.len();
    if n % 2 == 1 {
        d[n / 2]
    } else {
        (d[n / 2 - 1] + d[n / 2]) / 2
    }
}

fn median_u64(mut v: Vec<u64>) -> f64 {
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0
    }
}

fn per_second(executions: u64, d: Duration) -> f64 {
    executions as f64 / d.as_secs_f64()
}

/// Silences fd 2 while alive: loom and shuttle print every bug they find
/// (panic messages, schedules, seeds), and these bugs are expected.
struct Quiet(libc::c_int);

impl Quiet {
    fn new() -> Quiet {
        // SAFETY: plain fd calls; a failure leaves stderr as it was.
        unsafe {
            let saved = libc::dup(2);
            let null = if saved >= 0 {
                libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY)
            } else {
                -1
            };
            if null >= 0 {
                libc::dup2(null, 2);
                libc::close(null);
            }
            Quiet(saved)
        }
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: restores the descriptor saved in `new`.
            unsafe {
                libc::dup2(self.0, 2);
                libc::close(self.0);
            }
        }
    }
}

/// The columns of the exhaustive table: wasmrace's DFS, loom, shuttle's
/// DFS, wasmrace's DFS on the `_pregrown` guest variant, and wasmrace's
/// optimal DPOR.
const EXHAUSTIVE_TOOLS: usize = 5;
/// The exhaustive column of wasmrace's optimal DPOR.
const DPOR: usize = 4;
/// The columns of the sampling table: wasmrace's random walk, shuttle's
/// random scheduler, and the walk on the `_pregrown` variant.
const SAMPLING_TOOLS: usize = 3;

struct Exhaustive {
    test: Test,
    executions: [u64; EXHAUSTIVE_TOOLS],
    /// Explorations per timed sample.
    runs: [u32; EXHAUSTIVE_TOOLS],
    /// Time per exploration, one entry per round.
    times: [Vec<Duration>; EXHAUSTIVE_TOOLS],
}

/// The least time a sample of exhaustive exploration should take.
const SAMPLE_SECONDS: f64 = 0.2;

struct Sampling {
    test: Test,
    times: [Vec<Duration>; SAMPLING_TOOLS],
}

/// Executions to the first bug per seed (`None`: not found within the cap).
struct Hunt {
    executions: Vec<Option<u64>>,
}

struct FirstBug {
    test: Test,
    wasm_dfs: u64,
    wasm_dfs_pb2: u64,
    loom: u64,
    shuttle_dfs: u64,
    wasm_random: Hunt,
    shuttle_random: Hunt,
}

/// Runs one measurement alone and prints its executions and time: what
/// `valgrind --tool=callgrind` profiles. TOOL `wasmrace-dfs-pregrown` and
/// `wasmrace-random-pregrown` run the guest's `_pregrown` variant.
fn only(opts: &Options, tool: &str, name: &str) -> Result<(), String> {
    let test = *CORRECT
        .iter()
        .chain(BUGGY)
        .find(|t| t.name() == name)
        .ok_or_else(|| format!("no test `{name}`"))?;
    let host = |e: wasmrace_host::HostError| e.to_string();
    let (base, heap) = match tool.strip_suffix("-pregrown") {
        Some(base) if CORRECT.contains(&test) => (base, wasm::Heap::Pregrown),
        Some(_) => return Err(format!("`{name}` has no `_pregrown` variant")),
        None => (tool, wasm::Heap::AsWritten),
    };
    let unknown = || format!("unknown tool `{tool}` (see --help)");
    let quiet = Quiet::new();
    let (executions, bug, elapsed) = match base {
        "wasmrace-dfs" | "wasmrace-dpor" | "wasmrace-random" => {
            let wasm = wasm::Wasm::load().map_err(host)?;
            let r = match base {
                "wasmrace-dfs" => wasm.dfs(test, heap, None),
                "wasmrace-dpor" => wasm.dpor(test, heap),
                _ => wasm.random(test, heap, 0, opts.iterations),
            }
            .map_err(host)?;
            (r.executions, r.bug, r.elapsed)
        }
        _ if heap == wasm::Heap::Pregrown => return Err(unknown()),
        "loom" | "shuttle-dfs" | "shuttle-random" => {
            let (r, t) = timed(|| match base {
                "loom" => native::loom_exhaustive(test),
                "shuttle-dfs" => native::shuttle_dfs(test),
                _ => native::shuttle_random(test, 0, opts.iterations),
            });
            (r.executions, r.bug, t)
        }
        _ => return Err(unknown()),
    };
    drop(quiet);
    println!(
        "{tool} `{name}`: {executions} executions, bug: {bug}, {:.3} s, {} exec/s",
        elapsed.as_secs_f64(),
        thousands(per_second(executions, elapsed))
    );
    Ok(())
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

/// One run of every tool before measuring. Besides warming caches, it fixes
/// the order of the panic hooks: loom's coroutines (the `generator` crate)
/// end with internal panics that its hook filters out, and shuttle's hook
/// reports every panic it sees. Installed first, shuttle's hook ends up
/// inside loom's filter and stays quiet during loom's runs, as it would be
/// in a test suite that only uses loom.
fn warm_up(wasm: &wasm::Wasm) -> Result<(), String> {
    let test = Test::FetchAdd(2);
    native::shuttle_random(test, 0, 1);
    native::loom_exhaustive(test);
    wasm.dfs(test, wasm::Heap::AsWritten, None)
        .map_err(|e| e.to_string())?;
    wasm.dpor(test, wasm::Heap::AsWritten)
        .map_err(|e| e.to_string())?;
    Ok(())
}

fn run(opts: &Options) -> Result<(), String> {
    use wasm::Heap::{AsWritten, Pregrown};
    let load_before = load_average();
    let started = Instant::now();
    let wasm = wasm::Wasm::load().map_err(|e| e.to_string())?;
    let host = |e: wasmrace_host::HostError| e.to_string();
    warm_up(&wasm)?;

    // Exhaustive exploration of the bug-free variants. The tools take turns
    // within each round so that changes in load hit all of them alike. A
    // small space is explored several times in a row per sample (as many as
    // fill `SAMPLE_SECONDS`, counted once in the first round), so that short
    // explorations are not lost in timer and scheduler noise.
    eprintln!("exhaustive exploration, {} rounds", opts.repeats);
    let explore = |k: usize, test: Test| -> Result<(u64, bool, bool), String> {
        Ok(match k {
            0 | 3 => {
                let heap = if k == 0 { AsWritten } else { Pregrown };
                let r = wasm.dfs(test, heap, None).map_err(host)?;
                (r.executions, r.bug, r.exhausted)
            }
            1 => {
                let r = native::loom_exhaustive(test);
                (r.executions, r.bug, true)
            }
            DPOR => {
                let r = wasm.dpor(test, AsWritten).map_err(host)?;
                (r.executions, r.bug, r.exhausted)
            }
            _ => {
                let r = native::shuttle_dfs(test);
                (r.executions, r.bug, true)
            }
        })
    };
    let tool_names: [&str; EXHAUSTIVE_TOOLS] = [
        "wasmrace dfs",
        "loom",
        "shuttle dfs",
        "wasmrace dfs (pregrown)",
        "wasmrace dpor",
    ];
    let mut exhaustive: Vec<Exhaustive> = CORRECT
        .iter()
        .map(|&test| Exhaustive {
            test,
            executions: [0; EXHAUSTIVE_TOOLS],
            runs: [1; EXHAUSTIVE_TOOLS],
            times: Default::default(),
        })
        .collect();
    for rep in 0..opts.repeats {
        for e in exhaustive.iter_mut() {
            let test = e.test;
            for (k, &tool) in tool_names.iter().enumerate() {
                let start = Instant::now();
                for _ in 0..e.runs[k] {
                    let (executions, bug, exhausted) = explore(k, test)?;
                    check_outcome(tool, test, bug)?;
                    if !exhausted {
                        return Err(format!("{} did not exhaust `{}`", tool, test.name()));
                    }
                    if rep > 0 && executions != e.executions[k] {
                        return Err(format!(
                            "{} explored `{}` in {} executions, then {executions}",
                            tool,
                            test.name(),
                            e.executions[k],
                        ));
                    }
                    e.executions[k] = executions;
                }
                let took = start.elapsed();
                e.times[k].push(took / e.runs[k]);
                if rep == 0 {
                    e.runs[k] = (SAMPLE_SECONDS / took.as_secs_f64()).clamp(1.0, 1000.0) as u32;
                }
            }
            if e.executions[3] != e.executions[0] {
                return Err(format!(
                    "`{}` and its pregrown variant explored {} and {} executions",
                    test.name(),
                    e.executions[0],
                    e.executions[3]
                ));
            }
        }
        eprintln!("  round {} done", rep + 1);
    }

    // Random sampling of the same variants: the same number of executions,
    // from the same seed, on both sides.
    eprintln!(
        "random sampling, {} executions, {} rounds",
        opts.iterations, opts.repeats
    );
    let mut sampling: Vec<Sampling> = CORRECT
        .iter()
        .map(|&test| Sampling {
            test,
            times: Default::default(),
        })
        .collect();
    for _ in 0..opts.repeats {
        for s in sampling.iter_mut() {
            let test = s.test;
            let w = wasm
                .random(test, AsWritten, 0, opts.iterations)
                .map_err(host)?;
            check_outcome("wasmrace random", test, w.bug)?;
            let (n, shuttle_time) = timed(|| native::shuttle_random(test, 0, opts.iterations));
            check_outcome("shuttle random", test, n.bug)?;
            let p = wasm
                .random(test, Pregrown, 0, opts.iterations)
                .map_err(host)?;
            check_outcome("wasmrace random (pregrown)", test, p.bug)?;
            for (tool, n) in [
                ("wasmrace", w.executions),
                ("shuttle", n.executions),
                ("pregrown", p.executions),
            ] {
                if n != opts.iterations {
                    return Err(format!(
                        "random sampling of `{}` ran {n} executions on {tool}, not {}",
                        test.name(),
                        opts.iterations
                    ));
                }
            }
            s.times[0].push(w.elapsed);
            s.times[1].push(shuttle_time);
            s.times[2].push(p.elapsed);
        }
        eprintln!("  round done");
    }

    // Executions to the first bug: deterministic for the DFS tools, over
    // seeds 0..K for the random ones.
    eprintln!("executions to the first bug, {} seeds", opts.seeds);
    let mut first_bug = Vec::new();
    for &test in BUGGY {
        let quiet = Quiet::new();
        let w = wasm.dfs(test, AsWritten, None).map_err(host)?;
        let w2 = wasm.dfs(test, AsWritten, Some(2)).map_err(host)?;
        let l = native::loom_exhaustive(test);
        let s = native::shuttle_dfs(test);
        drop(quiet);
        for (tool, bug) in [
            ("wasmrace dfs", w.bug),
            ("wasmrace dfs (preemption bound 2)", w2.bug),
            ("loom", l.bug),
            ("shuttle dfs", s.bug),
        ] {
            check_outcome(tool, test, bug)?;
        }
        let mut wasm_random = Hunt {
            executions: Vec::new(),
        };
        let mut shuttle_random = Hunt {
            executions: Vec::new(),
        };
        for seed in 0..opts.seeds {
            let r = wasm.random(test, AsWritten, seed, opts.cap).map_err(host)?;
            wasm_random.executions.push(r.bug.then_some(r.executions));
            let quiet = Quiet::new();
            let r = native::shuttle_random(test, seed, opts.cap);
            drop(quiet);
            shuttle_random
                .executions
                .push(r.bug.then_some(r.executions));
        }
        first_bug.push(FirstBug {
            test,
            wasm_dfs: w.executions,
            wasm_dfs_pb2: w2.executions,
            loom: l.executions,
            shuttle_dfs: s.executions,
            wasm_random,
            shuttle_random,
        });
    }

    let report = render(
        opts,
        &wasm,
        &exhaustive,
        &sampling,
        &first_bug,
        &load_before,
        started.elapsed(),
    );
    print!("{report}");
    if let Some(path) = &opts.results {
        write_results(path, &report)?;
        eprintln!("rewrote the generated part of {path}");
    }
    Ok(())
}

const BEGIN: &str = "<!-- generated by the runner (src/main.rs): begin -->";
const END: &str = "<!-- generated by the runner: end -->";

/// Replaces the text between the markers in `path` (or writes the file
/// with just the report) and keeps everything else, the hand-written
/// analysis included.
fn write_results(path: &str, report: &str) -> Result<(), String> {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let new = match (old.find(BEGIN), old.find(END)) {
        (Some(b), Some(e)) if b < e => format!("{}{BEGIN}\n{report}{}", &old[..b], &old[e..]),
        _ => format!("{BEGIN}\n{report}{END}\n{old}"),
    };
    std::fs::write(path, new).map_err(|e| format!("cannot write `{path}`: {e}"))
}

/// 12345.6 -> "12,346".
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ratio(x: f64) -> String {
    if x < 0.01 {
        // DPOR's time ratios go below 1%: keep a significant digit.
        format!("{x:.3}×")
    } else if x >= 10.0 {
        format!("{x:.0}×")
    } else if x >= 1.0 {
        format!("{x:.1}×")
    } else {
        format!("{x:.2}×")
    }
}

fn geomean(xs: &[f64]) -> f64 {
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

fn hunt_cell(h: &Hunt, cap: u64) -> String {
    let found: Vec<u64> = h.executions.iter().flatten().copied().collect();
    let misses = h.executions.len() - found.len();
    if found.is_empty() {
        return format!("none in {cap}");
    }
    let mean = found.iter().sum::<u64>() as f64 / found.len() as f64;
    let mut s = format!("{mean:.1} ({})", median_u64(found));
    if misses > 0 {
        write!(s, ", {misses} seeds missed in {cap}").unwrap();
    }
    s
}

fn render(
    opts: &Options,
    wasm: &wasm::Wasm,
    exhaustive: &[Exhaustive],
    sampling: &[Sampling],
    first_bug: &[FirstBug],
    load_before: &str,
    took: Duration,
) -> String {
    let mut s = String::new();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = if args.is_empty() {
        "cargo run --release".to_string()
    } else {
        format!("cargo run --release -- {}", args.join(" "))
    };
    writeln!(
        s,
        "Measured {} with `{command}` in `benches/peers`.\n",
        today()
    )
    .unwrap();
    writeln!(
        s,
        "- machine: {}, {} cores; load average before {load_before}, after {}",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    )
    .unwrap();
    writeln!(
        s,
        "- {}; {}; release build (`debug = 1`)",
        env!("PEERS_VERSIONS"),
        env!("PEERS_RUSTC")
    )
    .unwrap();
    writeln!(
        s,
        "- timings are the median of {} rounds, the tools taking turns in each (an \
         exhaustive exploration shorter than {SAMPLE_SECONDS} s is repeated within its \
         sample until it fills that); the whole run took {:.0} s; loading the guest \
         (instrumentation and compilation, or the cache) took {:.1} ms once and is not \
         in the timings",
        opts.repeats,
        took.as_secs_f64(),
        wasm.load_time.as_secs_f64() * 1e3
    )
    .unwrap();

    writeln!(s, "\n### Exhaustive exploration (bug-free variants)\n").unwrap();
    writeln!(
        s,
        "wasmrace: DFS with no preemption bound (`--strategy dfs --unbounded`), \
         every interleaving. loom: `loom::model::Builder` with `preemption_bound = None` \
         (its default), which prunes with DPOR. shuttle: `DfsScheduler` (`check_dfs`), \
         every interleaving like wasmrace. Executions are counted in the model closure.\n"
    )
    .unwrap();
    writeln!(
        s,
        "| test | executions wasmrace / loom / shuttle | wasmrace exec/s | loom exec/s | \
         shuttle DFS exec/s | wasmrace ÷ loom (exec/s) | wasmrace ÷ shuttle (exec/s) | \
         time to exhaust, wasmrace ÷ loom |"
    )
    .unwrap();
    writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|").unwrap();
    let (mut vs_loom, mut vs_shuttle, mut time_vs_loom) = (Vec::new(), Vec::new(), Vec::new());
    let mut fewer = Vec::new();
    for e in exhaustive {
        let t: Vec<Duration> = e.times.iter().map(|t| median(t.clone())).collect();
        let rate: Vec<f64> = (0..EXHAUSTIVE_TOOLS)
            .map(|k| per_second(e.executions[k], t[k]))
            .collect();
        vs_loom.push(rate[0] / rate[1]);
        vs_shuttle.push(rate[0] / rate[2]);
        time_vs_loom.push(t[0].as_secs_f64() / t[1].as_secs_f64());
        fewer.push((
            e.test.name(),
            e.executions[0] as f64 / e.executions[1] as f64,
            time_vs_loom[time_vs_loom.len() - 1],
        ));
        writeln!(
            s,
            "| `{}` | {} / {} / {} | {} | {} | {} | {} | {} | {} |",
            e.test.name(),
            thousands(e.executions[0] as f64),
            thousands(e.executions[1] as f64),
            thousands(e.executions[2] as f64),
            thousands(rate[0]),
            thousands(rate[1]),
            thousands(rate[2]),
            ratio(vs_loom[vs_loom.len() - 1]),
            ratio(vs_shuttle[vs_shuttle.len() - 1]),
            ratio(time_vs_loom[time_vs_loom.len() - 1]),
        )
        .unwrap();
    }
    writeln!(
        s,
        "| geometric mean | | | | | **{}** | **{}** | {} |",
        ratio(geomean(&vs_loom)),
        ratio(geomean(&vs_shuttle)),
        ratio(geomean(&time_vs_loom))
    )
    .unwrap();

    let dpor_vs_loom = dpor_table(&mut s, exhaustive);

    writeln!(s, "\n### Random sampling (bug-free variants)\n").unwrap();
    writeln!(
        s,
        "{} executions from seed 0 on each side: wasmrace's random walk \
         (`--strategy random`), shuttle's `RandomScheduler` (`check_random`).\n",
        thousands(opts.iterations as f64)
    )
    .unwrap();
    writeln!(
        s,
        "| test | wasmrace random exec/s | shuttle random exec/s | wasmrace ÷ shuttle |"
    )
    .unwrap();
    writeln!(s, "|---|---:|---:|---:|").unwrap();
    let mut vs_random = Vec::new();
    for e in sampling {
        let w = per_second(opts.iterations, median(e.times[0].clone()));
        let n = per_second(opts.iterations, median(e.times[1].clone()));
        vs_random.push(w / n);
        writeln!(
            s,
            "| `{}` | {} | {} | {} |",
            e.test.name(),
            thousands(w),
            thousands(n),
            ratio(w / n)
        )
        .unwrap();
    }
    writeln!(
        s,
        "| geometric mean | | | **{}** |",
        ratio(geomean(&vs_random))
    )
    .unwrap();

    writeln!(
        s,
        "\n### wasmrace with the guest's heap grown before its first operation\n"
    )
    .unwrap();
    writeln!(
        s,
        "The same tests with one allocation before the first operation (the guest's \
         `_pregrown` variants): the allocator's first `memory.grow` then happens before \
         the host's start snapshot, and `reset` restores that snapshot instead of \
         instantiating the module again. Same explorations, same executions; only the \
         cost of starting an execution differs (see below).\n"
    )
    .unwrap();
    writeln!(
        s,
        "| test | DFS exec/s as written | DFS exec/s pregrown | pregrown ÷ loom | \
         pregrown ÷ shuttle DFS | random exec/s as written | random exec/s pregrown | \
         pregrown ÷ shuttle random |"
    )
    .unwrap();
    writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|").unwrap();
    let (mut pg_loom, mut pg_shuttle, mut pg_random) = (Vec::new(), Vec::new(), Vec::new());
    for (e, r) in exhaustive.iter().zip(sampling) {
        let rate = |k: usize| per_second(e.executions[k], median(e.times[k].clone()));
        let sample = |k: usize| per_second(opts.iterations, median(r.times[k].clone()));
        pg_loom.push(rate(3) / rate(1));
        pg_shuttle.push(rate(3) / rate(2));
        pg_random.push(sample(2) / sample(1));
        writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            e.test.name(),
            thousands(rate(0)),
            thousands(rate(3)),
            ratio(rate(3) / rate(1)),
            ratio(rate(3) / rate(2)),
            thousands(sample(0)),
            thousands(sample(2)),
            ratio(sample(2) / sample(1)),
        )
        .unwrap();
    }
    writeln!(
        s,
        "| geometric mean | | | **{}** | **{}** | | | **{}** |",
        ratio(geomean(&pg_loom)),
        ratio(geomean(&pg_shuttle)),
        ratio(geomean(&pg_random))
    )
    .unwrap();

    writeln!(s, "\n### Executions to the first bug (buggy variants)\n").unwrap();
    writeln!(
        s,
        "Executions up to and including the first failing one. DFS columns are \
         deterministic (wasmrace's default DFS, with iterative preemption bounding up to \
         2, for reference). Random columns: mean (median) over seeds 0..{} with at most \
         {} executions each.\n",
        opts.seeds,
        thousands(opts.cap as f64)
    )
    .unwrap();
    writeln!(
        s,
        "| test | wasmrace DFS | wasmrace DFS, preemption bound 2 | loom | shuttle DFS | \
         wasmrace random | shuttle random |"
    )
    .unwrap();
    writeln!(s, "|---|---:|---:|---:|---:|---:|---:|").unwrap();
    for b in first_bug {
        writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            b.test.name(),
            b.wasm_dfs,
            b.wasm_dfs_pb2,
            b.loom,
            b.shuttle_dfs,
            hunt_cell(&b.wasm_random, opts.cap),
            hunt_cell(&b.shuttle_random, opts.cap),
        )
        .unwrap();
    }
    s.push_str(&summary(
        &vs_loom,
        &vs_shuttle,
        &vs_random,
        &fewer,
        &dpor_vs_loom,
    ));
    s
}

/// The table of wasmrace's optimal DPOR against loom's DPOR: executions
/// and time to exhaust. Returns the time ratio per test (wasmrace ÷ loom).
fn dpor_table(s: &mut String, exhaustive: &[Exhaustive]) -> Vec<f64> {
    writeln!(
        s,
        "\n### Exhaustive exploration with partial-order reduction (bug-free variants)\n"
    )
    .unwrap();
    writeln!(
        s,
        "wasmrace: optimal DPOR (`--strategy dpor --unbounded`: wakeup trees and sleep \
         sets, each Mazurkiewicz trace once; Abdulla et al., POPL 2014), timed in the same \
         rounds as the table above. loom: the same runs as above (its DPOR, no preemption \
         bound). Issue #12's target: wasmrace's time to exhaust at most 0.25× loom's on \
         every test.\n"
    )
    .unwrap();
    writeln!(
        s,
        "| test | executions wasmrace dpor / loom | wasmrace dpor exec/s | time to exhaust, \
         wasmrace dpor | time to exhaust, loom | time to exhaust, wasmrace dpor ÷ loom |"
    )
    .unwrap();
    writeln!(s, "|---|---|---:|---:|---:|---:|").unwrap();
    let mut ratios = Vec::new();
    for e in exhaustive {
        let (d, l) = (median(e.times[DPOR].clone()), median(e.times[1].clone()));
        let r = d.as_secs_f64() / l.as_secs_f64();
        ratios.push(r);
        writeln!(
            s,
            "| `{}` | {} / {} | {} | {} | {} | {} |",
            e.test.name(),
            thousands(e.executions[DPOR] as f64),
            thousands(e.executions[1] as f64),
            thousands(per_second(e.executions[DPOR], d)),
            millis(d),
            millis(l),
            ratio(r),
        )
        .unwrap();
    }
    writeln!(
        s,
        "| geometric mean | | | | | **{}** |",
        ratio(geomean(&ratios))
    )
    .unwrap();
    ratios
}

/// A duration in milliseconds with three significant digits or so.
fn millis(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

/// The summary, computed from the tables' numbers so that it cannot drift
/// from them: the geometric means of the rate ratios (wasmrace ÷ loom,
/// ÷ shuttle's DFS, ÷ shuttle's random scheduler), and per test how many
/// times more executions wasmrace's DFS runs than loom's DPOR and the time
/// to exhaust, wasmrace ÷ loom; and the time to exhaust of wasmrace's
/// optimal DPOR ÷ loom's (`dpor_vs_loom`, per test).
fn summary(
    vs_loom: &[f64],
    vs_shuttle: &[f64],
    vs_random: &[f64],
    fewer: &[(String, f64, f64)],
    dpor_vs_loom: &[f64],
) -> String {
    let range = |xs: &mut dyn Iterator<Item = f64>| {
        let xs: Vec<f64> = xs.collect();
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().copied().fold(0.0, f64::max);
        (lo, hi)
    };
    let span = |(lo, hi): (f64, f64)| {
        let (lo, hi) = (ratio(lo), ratio(hi));
        if lo == hi {
            lo
        } else {
            format!("{}–{hi}", lo.trim_end_matches('×'))
        }
    };
    let names = |v: &[&(String, f64, f64)]| {
        let n: Vec<String> = v.iter().map(|(t, _, _)| format!("`{t}`")).collect();
        n.join(", ")
    };
    let mut s = String::new();
    writeln!(
        s,
        "\n### Summary (computed by the runner from the tables above)\n"
    )
    .unwrap();
    writeln!(
        s,
        "- wasmrace's unbounded DFS runs {} loom's executions per second and {} \
         shuttle's DFS (geometric means); its random walk {} shuttle's random scheduler.",
        ratio(geomean(vs_loom)),
        ratio(geomean(vs_shuttle)),
        ratio(geomean(vs_random))
    )
    .unwrap();
    writeln!(
        s,
        "- loom's DPOR runs {} fewer executions than wasmrace's DFS (per test: wasmrace's \
         executions ÷ loom's).",
        span(range(&mut fewer.iter().map(|f| f.1)))
    )
    .unwrap();
    let (slower, faster): (Vec<_>, Vec<_>) = fewer.iter().partition(|f| f.2 > 1.0);
    if !slower.is_empty() {
        writeln!(
            s,
            "- loom exhausts {} sooner ({} less time).",
            names(&slower),
            span(range(&mut slower.iter().map(|f| f.2)))
        )
        .unwrap();
    }
    if !faster.is_empty() {
        writeln!(
            s,
            "- wasmrace exhausts {} sooner ({} less time).",
            names(&faster),
            span(range(&mut faster.iter().map(|f| 1.0 / f.2)))
        )
        .unwrap();
    }
    writeln!(
        s,
        "- wasmrace's optimal DPOR exhausts each test in {} of loom's time (geometric \
         mean {}).",
        span(range(&mut dpor_vs_loom.iter().copied())),
        ratio(geomean(dpor_vs_loom))
    )
    .unwrap();
    s
}

fn check_outcome(tool: &str, test: Test, bug: bool) -> Result<(), String> {
    if bug != test.buggy() {
        return Err(format!(
            "{tool} found {} in `{}`, expected {}: the versions disagree or a test is wrong",
            if bug { "a bug" } else { "no bug" },
            test.name(),
            if test.buggy() { "a bug" } else { "none" },
        ));
    }
    Ok(())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".into())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

/// Today's UTC date from the system clock (H. Hinnant's days-to-civil).
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0) as i64;
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three versions of every program must agree on its outcome, or
    /// the comparison compares different programs.
    #[test]
    fn every_tool_finds_exactly_the_expected_bugs() {
        let wasm = wasm::Wasm::load().unwrap();
        for &test in CORRECT.iter().chain(BUGGY) {
            let _quiet = Quiet::new();
            let w = wasm.dfs(test, wasm::Heap::AsWritten, None).unwrap();
            assert_eq!(w.bug, test.buggy(), "wasmrace dfs on {}", test.name());
            assert!(w.bug || w.exhausted, "wasmrace dfs on {}", test.name());
            let d = wasm.dpor(test, wasm::Heap::AsWritten).unwrap();
            assert_eq!(d.bug, test.buggy(), "wasmrace dpor on {}", test.name());
            assert!(d.bug || d.exhausted, "wasmrace dpor on {}", test.name());
            let l = native::loom_exhaustive(test);
            assert_eq!(l.bug, test.buggy(), "loom on {}", test.name());
            let s = native::shuttle_dfs(test);
            assert_eq!(s.bug, test.buggy(), "shuttle dfs on {}", test.name());
            let r = native::shuttle_random(test, 1, 10_000);
            assert_eq!(r.bug, test.buggy(), "shuttle random on {}", test.name());
            let r = wasm.random(test, wasm::Heap::AsWritten, 1, 10_000).unwrap();
            assert_eq!(r.bug, test.buggy(), "wasmrace random on {}", test.name());
        }
    }

    /// Without mutexes (whose blocked attempts shuttle explores and
    /// wasmrace's blocking avoidance skips) the two DFS explore exactly the
    /// same interleavings: evidence that the guest and the native versions
    /// have the same scheduling points. The `_pregrown` variant adds none.
    #[test]
    fn wasmrace_and_shuttle_dfs_count_the_same_interleavings_without_locks() {
        let wasm = wasm::Wasm::load().unwrap();
        for test in [Test::FetchAdd(2), Test::FetchAdd(3)] {
            let w = wasm.dfs(test, wasm::Heap::AsWritten, None).unwrap();
            let p = wasm.dfs(test, wasm::Heap::Pregrown, None).unwrap();
            let s = native::shuttle_dfs(test);
            assert!(w.exhausted && !w.bug && !s.bug, "{}", test.name());
            assert_eq!(w.executions, s.executions, "{}", test.name());
            assert_eq!(p.executions, w.executions, "{}", test.name());
        }
    }

    #[test]
    fn results_file_keeps_the_hand_written_part() {
        let path = std::env::temp_dir().join(format!("peers-results-{}.md", std::process::id()));
        let path = path.to_str().unwrap().to_string();
        std::fs::write(&path, "# title\n\nintro\n").unwrap();
        write_results(&path, "first\n").unwrap();
        let once = std::fs::read_to_string(&path).unwrap();
        assert_eq!(once, format!("{BEGIN}\nfirst\n{END}\n# title\n\nintro\n"));
        std::fs::write(&path, format!("# title\n{BEGIN}\nold\n{END}\n\nanalysis\n")).unwrap();
        write_results(&path, "new\n").unwrap();
        let twice = std::fs::read_to_string(&path).unwrap();
        assert_eq!(twice, format!("# title\n{BEGIN}\nnew\n{END}\n\nanalysis\n"));
        std::fs::remove_file(&path).unwrap();
    }

    /// The summary of RESULTS.md's current tables (measured 2026-11-21):
    /// what the runner writes under them.
    #[test]
    fn the_summary_reads_the_tables() {
        let rows = [
            ("fetch_add_2", 19.0 / 9.0, 0.54),
            ("fetch_add_3", 1121.0 / 414.0, 0.41),
            ("mutex_counter_2", 118.0 / 12.0, 2.2),
            ("mutex_counter_3", 53715.0 / 920.0, 9.4),
            ("transfer_ordered", 516.0 / 15.0, 7.8),
        ];
        let fewer: Vec<(String, f64, f64)> = rows
            .iter()
            .map(|&(t, e, x)| (t.to_string(), e, x))
            .collect();
        let got = summary(
            &[3.9, 6.6, 4.4, 6.2, 4.4],
            &[0.55, 0.73, 0.68, 0.92, 0.76],
            &[0.68, 0.81, 0.81, 1.0, 0.78],
            &fewer,
            &[0.12, 0.2, 0.05, 0.1, 0.08],
        );
        assert_eq!(
            got,
            "\n### Summary (computed by the runner from the tables above)\n\n\
             - wasmrace's unbounded DFS runs 5.0× loom's executions per second and 0.72× \
             shuttle's DFS (geometric means); its random walk 0.81× shuttle's random scheduler.\n\
             - loom's DPOR runs 2.1–58× fewer executions than wasmrace's DFS (per test: \
             wasmrace's executions ÷ loom's).\n\
             - loom exhausts `mutex_counter_2`, `mutex_counter_3`, `transfer_ordered` sooner \
             (2.2–9.4× less time).\n\
             - wasmrace exhausts `fetch_add_2`, `fetch_add_3` sooner (1.9–2.4× less time).\n\
             - wasmrace's optimal DPOR exhausts each test in 0.05–0.20× of loom's time \
             (geometric mean 0.10×).\n"
        );
    }

    #[test]
    fn numbers_render_readably() {
        assert_eq!(thousands(1_234_567.4), "1,234,567");
        assert_eq!(thousands(999.6), "1,000");
        assert_eq!(thousands(12.0), "12");
        assert_eq!(ratio(0.123), "0.12×");
        assert_eq!(ratio(0.0042), "0.004×");
        assert_eq!(ratio(2.34), "2.3×");
        assert_eq!(ratio(123.4), "123×");
        assert_eq!(millis(Duration::from_micros(1234)), "1.23 ms");
        assert_eq!(millis(Duration::from_micros(123_456)), "123 ms");
        assert_eq!(median_u64(vec![5, 1, 3]), 3.0);
        assert_eq!(median_u64(vec![4, 1, 3, 2]), 2.5);
        assert!((geomean(&[2.0, 8.0]) - 4.0).abs() < 1e-9);
        assert_eq!(
            median(vec![
                Duration::from_millis(3),
                Duration::from_millis(1),
                Duration::from_millis(2)
            ]),
            Duration::from_millis(2)
        );
    }
}
