//! `--partition K/N`: parsing the 1-based partition of the command line
//! (as cargo-nextest's `--partition count:K/N`), which strategies split a
//! test's exploration into partitions, and how the others deal out a
//! module's tests instead.

use serde_json::Value;
use wasmrace_explore::strategies::registry::REGISTRY;
use wasmrace_explore::{Partition, Report, Split};
use wasmrace_host::CheckOptions;

/// Partition `k` of `n`, both 1-based as the user writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionArg {
    /// Which partition, `1..=n`.
    pub k: u32,
    /// How many partitions.
    pub n: u32,
}

impl PartitionArg {
    /// The explorer's 0-based partition.
    pub fn partition(self) -> Partition {
        Partition {
            index: self.k - 1,
            count: self.n,
        }
    }
}

impl std::fmt::Display for PartitionArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// `K/N` or `count:K/N`, with `1 <= K <= N` (clap's value parser: its
/// message ends up on the one `error:` line).
pub fn parse_partition(s: &str) -> Result<PartitionArg, String> {
    let body = s.strip_prefix("count:").unwrap_or(s);
    let bad = || {
        format!(
            "`{s}` is not a partition `K/N` (1 <= K <= N <= {}, e.g. `2/4`)",
            u32::MAX
        )
    };
    let (k, n) = body.split_once('/').ok_or_else(bad)?;
    let k: u32 = k.parse().map_err(|_| bad())?;
    let n: u32 = n.parse().map_err(|_| bad())?;
    if n == 0 || k == 0 || k > n {
        return Err(bad());
    }
    Ok(PartitionArg { k, n })
}

/// The strategies that split their work (into partitions, or with `jobs`
/// between threads, which phased strategies also do), as a sentence
/// fragment for the error naming them: built from the registry, each with
/// its defaults.
pub fn splitting_strategies(jobs: bool) -> String {
    let mut splitting: Vec<&str> = REGISTRY
        .iter()
        .filter(|d| {
            let strategy = (d.build)(&d.defaults, 0);
            match strategy.profile().split {
                Split::None => false,
                Split::Phases | Split::ByExecution => jobs || !threads_only(&*strategy),
                Split::ByPrefix | Split::Jobs => true,
                Split::Shared | Split::Rounds => jobs,
            }
        })
        .map(|d| d.name)
        .collect();
    splitting.sort_unstable();
    let names: Vec<String> = splitting
        .into_iter()
        .map(|name| match name {
            "dfs" if !jobs => "`dfs` (without `--state-cache`)".to_string(),
            name => format!("`{name}`"),
        })
        .collect();
    match names.split_last() {
        Some((last, init)) if !init.is_empty() => format!("{} and {last}", init.join(", ")),
        _ => names.concat(),
    }
}

/// Refuses to split `strategy`'s work as asked (`--partition`, or `--jobs`
/// above 1) when it cannot, in one line naming the strategies that can;
/// `with_cache` says `--state-cache` was given. With `all_tests` (no
/// `--test`), a strategy that cannot split one test's exploration deals
/// the module's tests out to the partitions instead ([`deals_tests`]), and
/// `--jobs` above 1 on one that cannot split at all runs them side by side
/// (`lanes.rs`); a module of one test is refused after loading, by a second
/// call with `all_tests` false.
pub fn check_split(
    strategy: &dyn wasmrace_explore::Strategy,
    partition: Option<PartitionArg>,
    jobs: u32,
    with_cache: bool,
    all_tests: bool,
) -> anyhow::Result<()> {
    let split = strategy.profile().split;
    let flag = match (partition, jobs) {
        (Some(_), _) if !deals_tests(strategy) => return Ok(()),
        (Some(p), _) if !all_tests => format!("--partition {p}"),
        (_, 1) => return Ok(()),
        (_, _) if all_tests || split != Split::None => return Ok(()),
        (_, jobs) => format!("--jobs {jobs}"),
    };
    anyhow::bail!(
        "`{flag}` does not apply to `--strategy {}` with {}one test: only {} split one \
         test's work{}",
        strategy.name(),
        if with_cache {
            "`--state-cache` and "
        } else {
            ""
        },
        splitting_strategies(partition.is_none()),
        if partition.is_some() {
            " (partitions of a module of several tests take whole tests)"
        } else {
            " (threads take whole tests of a module of several)"
        }
    )
}

/// Whether `--partition` deals out a module's tests, whole, rather than
/// splitting each test's exploration: the strategy cannot split one test
/// into partitions (dpor, ses, procrastination, dfs with a state cache).
pub fn deals_tests(strategy: &dyn wasmrace_explore::Strategy) -> bool {
    strategy.profile().split == Split::None || threads_only(strategy)
}

/// The partition (1-based) that runs test `index` (0-based, in the
/// module's order) of a run dealt out to `n` partitions: the one rule,
/// which `merge` checks the parts by, is `wasmrace_merge`'s.
pub use wasmrace_merge::dealt_to;

/// Threads for a run without `--jobs`: every core for the strategies
/// that split by execution, the portfolio, dfs (whose report is the same
/// on any number of threads, and which takes about one thread's time on
/// two where a budget cuts the run, docs/performance.md, "Threads"), ses (the same
/// report but for the saved states, which its threads do not use), and a
/// strategy that cannot split when it explores `all_tests` of the module
/// (side by side, `lanes.rs`); one for the others. dfs with a state cache
/// stays on one: a cache the threads share cannot evict, so a full one
/// stops the run where one thread's goes on.
pub fn default_jobs(split: Split, all_tests: bool) -> u32 {
    let cores = || {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        n.min(crate::files::MAX_JOBS)
    };
    match split {
        Split::ByExecution | Split::Phases | Split::ByPrefix | Split::Rounds | Split::Jobs => {
            cores()
        }
        Split::None if all_tests => cores(),
        Split::None | Split::Shared => 1,
    }
}

/// Whether a strategy splits only between the threads of one run
/// (`--jobs`), not into partitions: its blocks' sizes (procrastination's
/// families) are learnt as they run, in memory the threads share, or its
/// phases have no prologue each partition could run.
pub fn threads_only(strategy: &dyn wasmrace_explore::Strategy) -> bool {
    let profile = strategy.profile();
    match profile.split {
        // Phases partition only with a prologue every partition runs.
        Split::Phases => profile.blocks.prologue() == 0,
        // Partitions cannot share a state cache.
        Split::Shared | Split::Rounds => true,
        _ => profile.blocks == wasmrace_explore::Blocks::Open,
    }
}

/// How a strategy splits, in the words of the JSON output (`execution`,
/// `prefix`), or `None`.
pub fn split_name(split: Split) -> Option<&'static str> {
    match split {
        Split::None => None,
        Split::Phases => Some("phases"),
        Split::ByExecution => Some("execution"),
        Split::ByPrefix => Some("prefix"),
        Split::Shared => Some("shared"),
        Split::Rounds => Some("rounds"),
        Split::Jobs => Some("jobs"),
    }
}

/// With whole tests dealt out to partition `deal`: the partition that runs
/// test `index` when it is not `deal` itself; `None` for a test `deal`
/// runs, and for every test when tests are not dealt out (`deal` is
/// `None`).
pub fn elsewhere(deal: Option<PartitionArg>, index: usize) -> Option<u32> {
    let p = deal?;
    Some(dealt_to(index, p.n)).filter(|&m| m != p.k)
}

/// How a partitioned run shares its work, as the JSON output names it:
/// `test` when whole tests are dealt out ([`deals_tests`]), else the
/// strategy's split ([`split_name`]).
pub fn sharing_name(strategy: &dyn wasmrace_explore::Strategy) -> Option<&'static str> {
    if deals_tests(strategy) {
        Some("test")
    } else {
        split_name(strategy.profile().split)
    }
}

/// What `wasmrace merge` needs of a partition beyond the usual report:
/// which partition, how the work is shared (`sharing`, which says how bugs
/// merge), the split depth, the executions of other partitions it skipped,
/// the order key of its bug (dfs: where one run would have found it), and,
/// when tests are dealt out, which partition runs this one.
pub fn partition_json(
    p: PartitionArg,
    sharing: Option<&str>,
    dealt_to: Option<u32>,
    opts: &CheckOptions,
    report: Option<&Report>,
) -> Value {
    let mut json = serde_json::json!({
        "k": p.k,
        "n": p.n,
        "split": sharing,
        "split_depth": opts.explore.split_depth,
        "skipped": report.map_or(0, |r| r.partition_skipped),
        "description": crate::report::strategy_description(&opts.strategy, opts.seed),
        "bug_order_key": report.and_then(|r| r.first_bug()).and_then(|b| b.order_key.clone()),
    });
    if let (Some(m), Some(j)) = (dealt_to, json.as_object_mut()) {
        j.insert("dealt_to".into(), m.into());
    }
    json
}

/// The entry of a `--json` part for a test dealt to another partition:
/// what `wasmrace merge` checks all parts agree on, no executions, and
/// which partition runs it.
pub fn not_run_json(p: PartitionArg, test: &str, dealt_to: u32, opts: &CheckOptions) -> Value {
    serde_json::json!({
        "test": test,
        "strategy": opts.strategy.name(),
        "seed": opts.seed,
        "options": opts.to_json(),
        "executions": 0,
        "ran": false,
        "partition": partition_json(p, Some("test"), Some(dealt_to), opts, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_k_of_n_and_refuses_the_rest_in_one_line() {
        assert_eq!(parse_partition("2/3"), Ok(PartitionArg { k: 2, n: 3 }));
        assert_eq!(
            parse_partition("count:1/1"),
            Ok(PartitionArg { k: 1, n: 1 })
        );
        for bad in [
            "0/3", "4/3", "x/y", "3/0", "3", "", "1/2/3", "-1/2", "hash:1/2",
        ] {
            let e = parse_partition(bad).unwrap_err();
            assert!(e.contains(&format!("`{bad}` is not a partition")), "{e}");
            assert!(!e.contains('\n'));
        }
        assert_eq!(
            PartitionArg { k: 2, n: 7 }.partition(),
            Partition::new(1, 7).unwrap()
        );
        assert_eq!(PartitionArg { k: 2, n: 7 }.to_string(), "2/7");
    }

    #[test]
    fn tests_are_dealt_in_turn_by_strategies_that_cannot_split_one() {
        let dealt: Vec<u32> = (0..7).map(|i| dealt_to(i, 3)).collect();
        assert_eq!(dealt, [1, 2, 3, 1, 2, 3, 1]);
        assert!((0..5).all(|i| dealt_to(i, 1) == 1));
        let deals = |name: &str| {
            let d = wasmrace_explore::strategies::registry::find(name).unwrap();
            deals_tests(&*(d.build)(&d.defaults, 0))
        };
        for name in ["dpor", "ses", "procrastination"] {
            assert!(deals(name), "{name}");
        }
        for name in ["dfs", "random", "pct", "portfolio", "ss"] {
            assert!(!deals(name), "{name}");
        }
    }

    #[test]
    fn the_splitting_strategies_are_named() {
        assert_eq!(
            splitting_strategies(false),
            "`basic-pos`, `dfs` (without `--state-cache`), `pct`, `portfolio`, `pos`, \
             `pos-star`, `racefuzzer`, `random` and `ss`"
        );
        // Threads share a state cache: `dfs` splits between them with one,
        // and `ses` runs its rounds on them.
        assert_eq!(
            splitting_strategies(true),
            "`basic-pos`, `dfs`, `pct`, `portfolio`, `pos`, `pos-star`, `procrastination`, \
             `racefuzzer`, `random`, `ses` and `ss`"
        );
    }
}
