//! Why `check` refuses a strategy option: a knob the chosen strategy does
//! not take (the message generated from what the registry's descriptors
//! declare), a value no strategy runs with, or one a strategy cannot run
//! with yet.

use wasmrace_explore::strategies::descriptor::{Knob, StrategyOptions};
use wasmrace_explore::strategies::registry::{self, REGISTRY};

/// Why `knob` given to a strategy that does not take it is refused, from
/// what the registry's descriptors declare: e.g. "`--explorer` only applies
/// to `--strategy ses` and `ss`".
pub fn refusal(knob: Knob) -> String {
    let mut names: Vec<&str> = REGISTRY
        .iter()
        .filter(|d| {
            d.takes
                .iter()
                .any(|t| t.knob == knob && t.only_with.is_none())
        })
        .map(|d| d.name)
        .collect();
    names.sort_unstable();
    let strategies: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, name)| match i {
            0 => format!("`--strategy {name}`"),
            _ => format!("`{name}`"),
        })
        .collect();
    // Strategies that take the knob only with another one set (DFS takes
    // `--cache-mb` with `--state-cache`) are named by that other knob.
    let mut with: Vec<Knob> = REGISTRY
        .iter()
        .flat_map(|d| d.takes)
        .filter(|t| t.knob == knob)
        .filter_map(|t| t.only_with)
        .collect();
    with.sort_unstable();
    with.dedup();
    let mut targets: Vec<String> = Vec::new();
    if !strategies.is_empty() {
        targets.push(and_list(&strategies));
    }
    for k in with {
        let to = if targets.is_empty() { "" } else { "to " };
        targets.push(format!("{to}`{}`", k.flags()[0]));
    }
    let flags: Vec<String> = knob.flags().iter().map(|f| format!("`{f}`")).collect();
    let verb = if flags.len() > 1 { "apply" } else { "applies" };
    let notes: String = REGISTRY
        .iter()
        .flat_map(|d| d.always.iter().map(move |a| (d.name, a)))
        .filter(|(_, (k, _))| *k == knob)
        .map(|(name, (_, words))| format!(" (`{name}` {words})"))
        .collect();
    format!(
        "{} only {verb} to {}{notes}",
        and_list(&flags),
        targets.join(" and ")
    )
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Largest `--depth` of `pct`: its change points are steps of one
/// execution, which `--max-steps` (10000 by default) bounds.
pub const MAX_DEPTH: u32 = 10_000;

/// The complaint about a value of `knob` no strategy can run with.
pub fn out_of_range(knob: Knob, given: &StrategyOptions) -> Option<&'static str> {
    match knob {
        Knob::Depth if given.depth == Some(0) => Some("`--depth` must be at least 1"),
        // PCT draws `depth - 1` change points per execution: 4294967295 of
        // them was a 34 GB allocation and an abort.
        Knob::Depth if given.depth.is_some_and(|d| d > MAX_DEPTH) => {
            Some("`--depth` is at most 10000 (MAX_DEPTH: change points past the steps of an execution change nothing)")
        }
        Knob::Samples if given.c1 == Some(0) || given.c2 == Some(0) => {
            Some("`--c1` and `--c2` must be at least 1")
        }
        Knob::FrontierMb if given.frontier_mb == Some(0) => {
            Some("`--frontier-mb` must be at least 1")
        }
        _ => None,
    }
}

/// The complaint about a value of `knob` that the strategy `name` takes
/// the flag for but cannot run with, as its descriptor declares
/// ([`Descriptor::refuses`](wasmrace_explore::strategies::Descriptor::refuses):
/// `dpor` refuses an explicit `--dpor optimal` with a bound).
pub fn unsupported(name: &str, knob: Knob, given: &StrategyOptions) -> Option<&'static str> {
    registry::find(name)?.refusal(knob, given)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmrace_explore::strategies::DporMode;

    /// The refusals come from what the descriptors declare; these are the
    /// messages users have always seen.
    #[test]
    fn refusals_are_generated_from_the_registry() {
        let all: Vec<String> = Knob::ALL.into_iter().map(refusal).collect();
        assert_eq!(
            all,
            [
                "`--preemption-bound` and `--unbounded` only apply to `--strategy dfs`, `dpor` and `portfolio`",
                "`--depth` only applies to `--strategy pct`",
                "`--state-cache` only applies to `--strategy dfs` (`ses` always caches states)",
                "`--delay-bound` only applies to `--strategy ses`",
                "`--explorer` only applies to `--strategy ses` and `ss`",
                "`--cache-mb` only applies to `--strategy ses` and to `--state-cache`",
                "`--c1` and `--c2` only apply to `--strategy ss`",
                "`--dpor` only applies to `--strategy dpor`",
                "`--frontier-mb` only applies to `--strategy dpor`",
            ]
        );
    }

    /// `--frontier-mb` bounds `--dpor trust`'s jobs, and is refused in one
    /// line with the modes that hold one path (bounded dpor runs source),
    /// and when 0.
    #[test]
    fn frontier_mb_applies_to_trust_only() {
        let with = |dpor, bound, mb| StrategyOptions {
            frontier_mb: Some(mb),
            dpor,
            preemption_bound: bound,
            ..StrategyOptions::NONE
        };
        let trust = Some(DporMode::Trust);
        let knob = Knob::FrontierMb;
        assert_eq!(unsupported("dpor", knob, &with(trust, None, 8)), None);
        for (dpor, bound) in [
            (None, None),
            (Some(DporMode::Optimal), None),
            (Some(DporMode::Source), None),
            (trust, Some(Some(2))),
        ] {
            assert_eq!(
                unsupported("dpor", knob, &with(dpor, bound, 8)),
                Some("`--frontier-mb` only applies to `--dpor trust` (unbounded)"),
                "{dpor:?} {bound:?}"
            );
        }
        assert_eq!(
            out_of_range(knob, &with(trust, None, 0)),
            Some("`--frontier-mb` must be at least 1")
        );
        assert_eq!(out_of_range(knob, &with(trust, None, 1)), None);
    }

    /// `dpor` takes a bound (bounded source-DPOR) but refuses an explicit
    /// `--dpor optimal` with one, in one line naming both flags.
    #[test]
    fn dpor_refuses_optimal_with_a_preemption_bound() {
        let with = |bound, dpor| StrategyOptions {
            preemption_bound: Some(bound),
            dpor,
            ..StrategyOptions::NONE
        };
        let optimal = with(Some(2), Some(DporMode::Optimal));
        let message = unsupported("dpor", Knob::Dpor, &optimal).unwrap();
        assert!(message.starts_with("`--dpor optimal` does not take `--preemption-bound`"));
        assert!(!message.contains('\n'));
        let ok = [
            with(Some(2), None),
            with(Some(2), Some(DporMode::Source)),
            with(None, Some(DporMode::Optimal)),
        ];
        for knob in Knob::ALL {
            for o in &ok {
                assert_eq!(unsupported("dpor", knob, o), None, "{o:?}");
            }
            if knob != Knob::Dpor {
                assert_eq!(unsupported("dpor", knob, &optimal), None);
            }
        }
        assert_eq!(unsupported("dfs", Knob::Dpor, &optimal), None);
    }
}
