//! Folding one test's entries of the parts into one run's: counts added
//! (refused past `u64`), counters by name, real races by sites and object,
//! the first bug by the rule `--jobs` uses ([`BugRank`]).

use crate::{at, test_name, MergeError, MergeErrorKind};
use serde_json::{json, Map, Value};
use wasmrace_explore::explorer::partition::{merge_race, BugRank};
use wasmrace_explore::RealRace;

/// The entries of one test that explored it (at least one), merged:
/// counts added, exhausted if every part exhausted its share, bounds of
/// any part, and the bug by the rule.
pub(crate) fn merge_test(tests: &[&Value]) -> Result<Value, MergeError> {
    let executions = checked_sum(tests, &["executions"])?;
    let skipped = checked_sum(tests, &["partition", "skipped"])?;
    let mut bound_hits: Vec<Value> = Vec::new();
    for hit in tests
        .iter()
        .filter_map(|t| t["bound_hits"].as_array())
        .flatten()
    {
        if !bound_hits.contains(hit) {
            bound_hits.push(hit.clone());
        }
    }
    let stats = merge_stats(tests);
    let t0 = tests[0];
    let exhausted = tests.iter().all(|t| t["exhausted"] == true);
    // As `check --json` has them (`report::search_json`): counters from
    // the merged statistics, bounds from any part they stopped or pruned.
    let counter = |name: &str| stats["stats"].get(name).cloned().unwrap_or(Value::Null);
    let any = |key: &str| {
        (tests.iter().map(|t| &t[key]))
            .find(|v| !v.is_null())
            .cloned()
            .unwrap_or(Value::Null)
    };
    Ok(json!({
        "test": t0["test"],
        "strategy": t0["strategy"],
        "seed": t0["seed"],
        "options": t0["options"],
        "description": t0["partition"]["description"],
        "partitions": t0["partition"]["n"],
        "split": t0["partition"]["split"],
        "split_depth": t0["partition"]["split_depth"],
        "settings": t0["partition"]["settings"],
        "executions": executions,
        "partition_skipped": skipped,
        "exhausted": exhausted,
        "bound_hits": bound_hits,
        "strategy_stats": stats,
        "traces": counter("traces"),
        "sleep_set_blocked": counter("sleep-set-blocked executions"),
        "stopped_by": any("stopped_by"),
        "pruned_by": any("pruned_by"),
        "elapsed_ms": tests.iter().filter_map(|t| t["elapsed_ms"].as_u64()).fold(0u64, u64::saturating_add),
        "nothing_to_interleave": t0["nothing_to_interleave"],
        "bug": first_bug(tests),
        "races": merge_races(tests)?,
        "data_races": merge_data_races(tests),
        "data_races_cut_at": any("data_races_cut_at"),
        "run_by": (t0["partition"]["split"] == "test").then(|| t0["partition"]["k"].clone()),
    }))
}

/// The sum over the parts of the count at `keys`, refused when it does
/// not fit: partitions of one run never count past `u64` together, so
/// such parts are forged or of different runs.
fn checked_sum(tests: &[&Value], keys: &[&str]) -> Result<u64, MergeError> {
    let mut total = 0u64;
    for t in tests {
        let n = at(t, keys).as_u64().unwrap_or(0);
        total = total
            .checked_add(n)
            .ok_or_else(|| MergeErrorKind::Overflow {
                count: keys.join("."),
                test: test_name(t),
            })?;
    }
    Ok(total)
}

/// The partitions' `strategy_stats` as one run's: counters added up, the
/// ones listed in `peaks` (largest wakeup tree, delay bound) the largest
/// value of any partition, as `merge_reports` does with `Stat::combine`.
/// Counters are for the record: a sum past `u64` stays at `u64::MAX`.
pub(crate) fn merge_stats(tests: &[&Value]) -> Value {
    let blocks: Vec<&Value> = tests.iter().map(|t| &t["strategy_stats"]).collect();
    let is_peak = |name: &str| {
        blocks
            .iter()
            .filter_map(|b| b["peaks"].as_array())
            .flatten()
            .any(|p| p == name)
    };
    let mut stats = Map::new();
    for (name, value) in blocks
        .iter()
        .filter_map(|b| b["stats"].as_object())
        .flatten()
    {
        let (old, new) = (
            stats.get(name).and_then(Value::as_u64),
            value.as_u64().unwrap_or(0),
        );
        let merged = match old {
            None => new,
            Some(old) if is_peak(name) => old.max(new),
            Some(old) => old.saturating_add(new),
        };
        stats.insert(name.clone(), json!(merged));
    }
    let mut saved = Map::new();
    for (name, value) in blocks
        .iter()
        .filter_map(|b| b["saved_states"].as_object())
        .flatten()
    {
        let total = saved.get(name).and_then(Value::as_u64).unwrap_or(0);
        saved.insert(
            name.clone(),
            json!(total.saturating_add(value.as_u64().unwrap_or(0))),
        );
    }
    let peaks = blocks.first().map_or(Value::Null, |b| b["peaks"].clone());
    json!({ "stats": stats, "peaks": peaks, "saved_states": saved })
}

/// The parts' listed data races (`--data-races report`), one per
/// location, the least message of each, in the order of their locations,
/// as one run lists them. (`check` refuses `--partition` with `report`,
/// so parts of one run list none; a forged part's list is kept as given.)
pub(crate) fn merge_data_races(tests: &[&Value]) -> Vec<Value> {
    let mut by_location: std::collections::BTreeMap<String, Value> = Default::default();
    for r in tests
        .iter()
        .flat_map(|t| t["data_races"].as_array().into_iter().flatten())
    {
        let location = r["location"].as_str().unwrap_or_default().to_string();
        let message = |v: &Value| v["message"].as_str().unwrap_or_default().to_string();
        match by_location.get(&location) {
            Some(old) if message(old) <= message(r) => {}
            _ => {
                by_location.insert(location, r.clone());
            }
        }
    }
    by_location.into_values().collect()
}

/// The parts' real races (RaceFuzzer) merged by the rule `--jobs` merges
/// them by ([`merge_race`]: one per sites and object, counts added, the
/// first execution the earliest, in one run's order), each with its part's
/// names for the sites and the object. Counts that would add up past
/// `u64` are refused before [`merge_race`] adds them.
pub(crate) fn merge_races(tests: &[&Value]) -> Result<Vec<Value>, MergeError> {
    let mut races: Vec<RealRace> = Vec::new();
    let mut entries: Vec<Value> = Vec::new();
    for (t, r) in tests
        .iter()
        .flat_map(|t| (t["races"].as_array().into_iter().flatten()).map(move |r| (t, r)))
    {
        let race = real_race(r);
        let key = |m: &RealRace| (m.sites, m.obj);
        if let Ok(i) = races.binary_search_by_key(&key(&race), key) {
            let m = &races[i];
            let past = [
                ("count", m.count, race.count),
                ("executions", m.executions, race.executions),
            ]
            .into_iter()
            .find(|(_, a, b)| a.checked_add(*b).is_none());
            if let Some((what, _, _)) = past {
                return Err(MergeErrorKind::Overflow {
                    count: format!("races.{what}"),
                    test: test_name(t),
                }
                .into());
            }
        }
        let before = races.len();
        let i = merge_race(&mut races, &race);
        if races.len() > before {
            entries.insert(i, r.clone());
        }
        let merged = &races[i];
        let e = &mut entries[i];
        e["count"] = merged.count.into();
        e["executions"] = merged.executions.into();
        e["first_execution"] = merged.first_execution.into();
    }
    Ok(entries)
}

/// A race's `key` in a part's JSON: its sites and object as the strategy
/// numbers them.
pub fn race_key(r: &Value) -> (u64, u64, u64) {
    let key = |i: usize| r["key"][i].as_u64().unwrap_or(0);
    (key(0), key(1), key(2))
}

/// A race of a part's JSON as the strategy counted it.
fn real_race(r: &Value) -> RealRace {
    let number = |v: &Value| v.as_u64().unwrap_or(0);
    let (a, b, obj) = race_key(r);
    RealRace {
        sites: (a, b),
        obj: wasmrace_explore::trace::Oid(obj),
        count: number(&r["count"]),
        executions: number(&r["executions"]),
        first_execution: r["first_execution"].as_u64().unwrap_or(u64::MAX),
    }
}

/// The bug one run reports first, with the partition that found it, by
/// the rule `--jobs` uses too ([`BugRank`]).
fn first_bug(tests: &[&Value]) -> Value {
    let rank = |t: &Value| {
        let order = t["partition"]["bug_order_key"].as_array().map(|k| {
            k.iter()
                .filter_map(|v| v.as_u64().and_then(|v| u32::try_from(v).ok()))
                .collect()
        });
        let execution = t["bug"]["execution"].as_u64().unwrap_or(u64::MAX);
        BugRank::new(order, execution)
    };
    let Some(t) = tests
        .iter()
        .filter(|t| !t["bug"].is_null())
        .min_by_key(|t| rank(t))
    else {
        return Value::Null;
    };
    let mut bug = t["bug"].clone();
    if let Some(b) = bug.as_object_mut() {
        b.insert("partition".into(), t["partition"]["k"].clone());
        b.insert("order_key".into(), t["partition"]["bug_order_key"].clone());
    }
    bug
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As `merge_reports` merges `Stat`s: counts add up, the counters the
    /// parts list as peaks keep their largest value, saved states add up.
    #[test]
    fn strategy_stats_add_counts_and_keep_peaks() {
        let part = |count: u64, peak: u64, restored: u64| {
            json!({ "strategy_stats": {
                "stats": { "samples": count, "delay bound reached": peak },
                "peaks": ["delay bound reached"],
                "saved_states": { "restored": restored },
            }})
        };
        let (a, b) = (part(40, 3, 1), part(2, 2, 5));
        let merged = merge_stats(&[&a, &b]);
        assert_eq!(merged["stats"]["samples"], 42);
        assert_eq!(merged["stats"]["delay bound reached"], 3);
        assert_eq!(merged["saved_states"]["restored"], 6);
        assert_eq!(merged["peaks"], json!(["delay bound reached"]));
    }

    fn race(a: u64, n: u64, first: u64) -> Value {
        json!({ "sites": [format!("s{a}"), "t"], "object": "cell", "count": n,
                "executions": n, "first_execution": first, "key": [a, 9, 1] })
    }

    /// Regression: races merged in the parts' order came out as
    /// `r2, r1, r3` for parts listing `r1, r3` and `r2, r3`; one run lists
    /// them by sites and object.
    #[test]
    fn races_merge_in_one_runs_order() {
        let a = json!({ "races": [race(1, 2, 5), race(3, 1, 7)] });
        let b = json!({ "races": [race(2, 1, 4), race(3, 4, 2)] });
        let merged = merge_races(&[&a, &b]).unwrap();
        let sites: Vec<_> = merged.iter().map(|r| r["sites"][0].clone()).collect();
        assert_eq!(sites, [json!("s1"), json!("s2"), json!("s3")]);
        assert_eq!(merged[2]["count"], 5);
        assert_eq!(merged[2]["executions"], 5);
        assert_eq!(merged[2]["first_execution"], 2);
    }

    /// Regression: one race counted `u64::MAX` times in one part and once
    /// in another overflowed in `merge_race` (a panic with overflow
    /// checks, a wrapped count without).
    #[test]
    fn race_counts_past_u64_are_refused() {
        let a = json!({ "test": "t", "races": [race(1, u64::MAX, 5)] });
        let b = json!({ "test": "t", "races": [race(1, 1, 4)] });
        let e = merge_races(&[&a, &b]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the parts' `races.count` of test `t` add up past 18446744073709551615: not \
             partitions of one run"
        );
    }

    #[test]
    fn data_races_merge_by_location_keeping_the_least_message() {
        let r = |loc: &str, msg: &str| json!({ "location": loc, "thread": "main", "message": msg });
        let a = json!({ "data_races": [r("x and y", "b"), r("a and b", "z")] });
        let b = json!({ "data_races": [r("x and y", "a")] });
        let merged = merge_data_races(&[&a, &b]);
        assert_eq!(merged, vec![r("a and b", "z"), r("x and y", "a")]);
        assert!(merge_data_races(&[&json!({})]).is_empty());
    }
}
