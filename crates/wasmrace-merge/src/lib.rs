//! The partitions of one run as one: what `wasmrace merge` does to the
//! `--json` outputs of `wasmrace check --partition K/N`, without a
//! terminal. A part is parsed from its bytes ([`parse`], [`Part::new`]),
//! the parts are checked to be the N partitions of one run (same module,
//! tests, strategy, options, seed, host settings and N; each K once; dealt
//! tests where the rule deals them) and folded ([`merge`]): counts added,
//! refused when they do not fit; exhausted only if every part exhausted
//! its share; the bounds of any part; real races by the rule `--jobs`
//! merges them by; the bug one run would report first.
//!
//! The rule for bugs: with a strategy that splits by execution (random, the
//! pos family, pct, racefuzzer, ss, the portfolio), the bug of the lowest
//! global execution index, which is the whole run's bug (its execution
//! index too); with one that splits by prefix (dfs), the bug with the
//! smallest order key, the one a single run reaches first; with whole
//! tests dealt out, each test's own partition's.
//!
//! Reading the files (under a cap) and printing are the CLI's; every
//! refusal here is a [`MergeError`] of one line, whatever the input.

#![deny(missing_docs)]

mod error;
mod fold;

pub use error::{MergeError, MergeErrorKind};
pub use fold::race_key;

use serde_json::Value;

/// The partition (1-based) that runs test `index` (0-based, in the
/// module's order) of a run dealt out to `n` partitions: the tests are
/// dealt in turn, as cards, so that each partition's share is fixed by the
/// module alone and the shares differ in size by at most one test. The one
/// rule `check --partition` deals by and [`merge`] checks.
pub fn dealt_to(index: usize, n: u32) -> u32 {
    (index % n as usize) as u32 + 1
}

/// The JSON document in a part's bytes, named `name` in errors (the CLI
/// gives the path as it shows paths).
pub fn parse(name: &str, bytes: &[u8]) -> Result<Value, MergeError> {
    let text = std::str::from_utf8(bytes).map_err(|_| MergeErrorKind::NotUtf8 {
        part: name.to_string(),
    })?;
    let doc = serde_json::from_str(text).map_err(|cause| MergeErrorKind::NotJson {
        part: name.to_string(),
        cause,
    })?;
    Ok(doc)
}

/// Whether a document is the `--format json` output of `wasmrace bench`
/// (its `settings` and `cells`) rather than a `check` part: those merge by
/// `wasmrace_host::bench::merge`.
pub fn is_bench(doc: &Value) -> bool {
    doc.get("settings").is_some() && doc.get("cells").is_some()
}

/// One part: its name, its document and its `K`, checked to be a
/// `check --partition --json` output.
#[derive(Clone, Debug)]
pub struct Part {
    name: String,
    doc: Value,
    k: u64,
}

impl Part {
    /// Checks that `doc` is the `--json` output of `check --partition`
    /// (its module's hash; tests, each with its name, one `K`, an `N` and
    /// its executions; every real race with its numeric `key`) and finds
    /// its `K`. `name` names it in errors.
    pub fn new(name: &str, doc: Value) -> Result<Part, MergeError> {
        let not_a_part = || {
            MergeError::from(MergeErrorKind::NotAPart {
                part: name.to_string(),
            })
        };
        let tests = doc["tests"].as_array().ok_or_else(not_a_part)?;
        let k = tests.first().and_then(|t| t["partition"]["k"].as_u64());
        let k = k.ok_or_else(not_a_part)?;
        let well_formed = doc["module_blake3"].is_string()
            && tests.iter().all(|t| {
                t["test"].is_string()
                    && t["partition"]["k"].as_u64() == Some(k)
                    && t["partition"]["n"].is_u64()
                    && t["executions"].is_u64()
            });
        if !well_formed {
            return Err(not_a_part());
        }
        // Races merge by their numeric key (`fold::merge_races`); a part
        // without it (an older wasmrace's) would merge every race into one.
        let keyed = |r: &Value| {
            let key = r["key"].as_array();
            key.is_some_and(|k| k.len() == 3 && k.iter().all(Value::is_u64))
        };
        let mut races = tests
            .iter()
            .flat_map(|t| t["races"].as_array().into_iter().flatten());
        if !races.all(keyed) {
            return Err(MergeErrorKind::RacesWithoutKey {
                part: name.to_string(),
            }
            .into());
        }
        Ok(Part {
            name: name.to_string(),
            doc,
            k,
        })
    }

    /// The name errors give it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its document.
    pub fn doc(&self) -> &Value {
        &self.doc
    }

    /// Its partition's `K`.
    pub fn k(&self) -> u64 {
        self.k
    }

    fn tests(&self) -> &[Value] {
        self.doc["tests"].as_array().map_or(&[], Vec::as_slice)
    }
}

/// The parts merged: the module, the order of the parts, and each test as
/// one run's.
#[derive(Clone, Debug)]
pub struct Merged {
    /// The module's path, as the first part reports it.
    pub module: Value,
    /// The module's hash (the same in every part).
    pub module_blake3: Value,
    /// The given parts' indices in `K` order.
    pub order: Vec<usize>,
    /// Each test merged, in the module's order: the fields of a test of
    /// `check --json` (counts added, the bug by the rule, real races
    /// merged) and the partitioning (`partitions`, `split`, `run_by`). All
    /// but `exhausted_covers`, what an exhausted space covers, which is
    /// the caller's wording.
    pub tests: Vec<Value>,
}

/// Checks that `parts` are the N partitions of one run and merges them
/// into the one run's results.
pub fn merge(parts: Vec<Part>) -> Result<Merged, MergeError> {
    if parts.is_empty() {
        return Err(MergeErrorKind::NoParts.into());
    }
    let first = &parts[0];
    let (module, module_blake3) = (
        first.doc["module"].clone(),
        first.doc["module_blake3"].clone(),
    );
    let mut parts: Vec<(usize, Part)> = parts.into_iter().enumerate().collect();
    check_together(&mut parts)?;
    let order = parts.iter().map(|(i, _)| *i).collect();
    let parts: Vec<Part> = parts.into_iter().map(|(_, p)| p).collect();
    let tests = (0..parts[0].tests().len())
        .map(|i| fold::merge_test(&runs_of(&parts, i)?))
        .collect::<Result<_, _>>()?;
    Ok(Merged {
        module,
        module_blake3,
        order,
        tests,
    })
}

/// The fields of a test that must be equal in every part, and how errors
/// name them.
const SAME: [(&str, &[&str]); 6] = [
    ("strategy", &["strategy"]),
    ("seed", &["seed"]),
    ("options", &["options"]),
    ("partition count", &["partition", "n"]),
    ("split depth", &["partition", "split_depth"]),
    ("split", &["partition", "split"]),
];

/// The most characters of a test's name a message quotes: a forged
/// part's name may be megabytes long, and a refusal stays one short line.
const TEST_NAME_CHARS: usize = 200;

/// A test's name in a message, escaped and clipped.
fn test_name(t: &Value) -> String {
    wasmrace_trace::text::clipped(t["test"].as_str().unwrap_or_default(), TEST_NAME_CHARS)
}

/// Checks that two parts' entries of one test ran under the same settings
/// (`check`'s `run_settings`: the host's bounds, fairness, shrinking),
/// naming the first that differs; a part without them (an older
/// wasmrace's) cannot be checked, and is refused.
fn same_settings(first: &Part, p: &Part, a: &Value, b: &Value) -> Result<(), MergeError> {
    let test = test_name(a);
    let (x, y) = (&a["partition"]["settings"], &b["partition"]["settings"]);
    let (Some(xs), Some(ys)) = (x.as_object(), y.as_object()) else {
        return Err(MergeErrorKind::NoSettings {
            first: first.name.clone(),
            other: p.name.clone(),
            test,
        }
        .into());
    };
    let keys = xs.keys().chain(ys.keys());
    if let Some(key) = keys.into_iter().find(|k| xs.get(*k) != ys.get(*k)) {
        let show = |v: Option<&Value>| plain(v.unwrap_or(&Value::Null));
        return Err(MergeErrorKind::SettingDiffers {
            first: first.name.clone(),
            other: p.name.clone(),
            test,
            setting: wasmrace_trace::text::clipped(key, 80),
            a: show(xs.get(key)),
            b: show(ys.get(key)),
        }
        .into());
    }
    Ok(())
}

/// Checks that the parts are the N partitions of one run (same module,
/// tests, strategy, options, seed and N; each K once) and puts them in K
/// order.
fn check_together(parts: &mut [(usize, Part)]) -> Result<(), MergeError> {
    let first = &parts[0].1;
    let names = |p: &Part| -> Vec<Value> { p.tests().iter().map(|t| t["test"].clone()).collect() };
    for (_, p) in &parts[1..] {
        if p.doc["module_blake3"] != first.doc["module_blake3"] {
            return Err(MergeErrorKind::DifferentModules {
                first: first.name.clone(),
                other: p.name.clone(),
                a: plain(&first.doc["module_blake3"]),
                b: plain(&p.doc["module_blake3"]),
            }
            .into());
        }
        if names(p) != names(first) {
            return Err(MergeErrorKind::DifferentTests {
                first: first.name.clone(),
                other: p.name.clone(),
                a: plain(&Value::from(names(first))),
                b: plain(&Value::from(names(p))),
            }
            .into());
        }
        for (a, b) in first.tests().iter().zip(p.tests()) {
            for (what, keys) in SAME {
                let (x, y) = (at(a, keys), at(b, keys));
                if x != y {
                    return Err(MergeErrorKind::Differ {
                        first: first.name.clone(),
                        other: p.name.clone(),
                        what,
                        test: test_name(a),
                        a: plain(x),
                        b: plain(y),
                    }
                    .into());
                }
            }
            same_settings(first, p, a, b)?;
        }
    }
    let n = first.tests()[0]["partition"]["n"].as_u64().unwrap_or(0);
    if let Some((_, p)) = parts
        .iter()
        .find(|(_, p)| p.k == 0 || p.k > n || n > u64::from(u32::MAX))
    {
        return Err(MergeErrorKind::NotAPartition {
            part: p.name.clone(),
            k: p.k,
            n,
        }
        .into());
    }
    check_dealing(parts, n)?;
    parts.sort_by_key(|(_, p)| p.k);
    for pair in parts.windows(2) {
        if pair[0].1.k == pair[1].1.k {
            return Err(MergeErrorKind::GivenTwice {
                k: pair[0].1.k,
                n,
                first: pair[0].1.name.clone(),
                other: pair[1].1.name.clone(),
            }
            .into());
        }
    }
    let given: Vec<u64> = parts.iter().map(|(_, p)| p.k).collect();
    if let Some(missing) = (1..=n).find(|k| !given.contains(k)) {
        return Err(MergeErrorKind::Missing {
            k: missing,
            n,
            given: parts.len(),
        }
        .into());
    }
    Ok(())
}

/// A value as errors quote it: a string as itself, anything else as
/// compact JSON; escaped, and clipped to 80 characters (a part is any file,
/// and its values may be huge or hold terminal escapes).
fn plain(v: &Value) -> String {
    let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
    wasmrace_trace::text::clipped(&text, 80)
}

/// The value at a path of keys.
fn at<'a>(v: &'a Value, keys: &[&str]) -> &'a Value {
    keys.iter().fold(v, |v, k| &v[*k])
}

/// The parts' entries for test `i` that explored it: every part's, or,
/// when whole tests were dealt out, the one part's that ran it
/// (`check_dealing` made sure there is exactly one). None is an error:
/// forged parts may all say they did not run a test.
fn runs_of(parts: &[Part], i: usize) -> Result<Vec<&Value>, MergeError> {
    let runs: Vec<&Value> = (parts.iter().map(|p| &p.tests()[i]))
        .filter(|t| t["ran"] != false)
        .collect();
    if runs.is_empty() {
        return Err(MergeErrorKind::NotRun {
            test: test_name(&parts[0].tests()[i]),
        }
        .into());
    }
    Ok(runs)
}

/// With whole tests dealt out (`split` is `test`), checks that each test
/// went where the rule deals it ([`dealt_to`]) and that exactly the part
/// it went to ran it.
fn check_dealing(parts: &[(usize, Part)], n: u64) -> Result<(), MergeError> {
    for (_, p) in parts {
        for (i, t) in p.tests().iter().enumerate() {
            if t["partition"]["split"] != "test" {
                continue;
            }
            let due = u64::from(dealt_to(i, n as u32));
            let ran = t["ran"] != false;
            if t["partition"]["dealt_to"].as_u64() != Some(due) || ran != (due == p.k) {
                return Err(MergeErrorKind::Dealing {
                    part: p.name.clone(),
                    test: test_name(t),
                    due,
                    n,
                }
                .into());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A part of a one-test run with `k` of `n`, that ran the test or not.
    fn part(k: u64, n: u64, test: &str, ran: bool) -> Part {
        let doc = json!({
            "module_blake3": "h",
            "tests": [{
                "test": test, "executions": 3, "ran": ran,
                "partition": { "k": k, "n": n, "split": "prefix", "settings": {} },
            }],
        });
        Part::new(&format!("p{k}"), doc).unwrap()
    }

    /// Regression: parts that all say they did not run a test made the
    /// merge index an empty list (a panic; `wasmrace-fuzz --kind parts`
    /// finds it without the check).
    #[test]
    fn a_test_no_part_ran_is_refused() {
        let e = merge(vec![part(1, 2, "t", false), part(2, 2, "t", false)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no part ran test `t`: not partitions of one run"
        );
        let m = merge(vec![part(2, 2, "t", true), part(1, 2, "t", true)]).unwrap();
        assert_eq!(
            (m.order, m.tests[0]["executions"].clone()),
            (vec![1, 0], json!(6))
        );
    }

    /// Regression (found by `wasmrace-fuzz --kind parts`): a forged test
    /// name of 10,000 characters made a refusal of 10,000 characters.
    #[test]
    fn refusals_quote_a_huge_test_name_clipped() {
        let name = format!("\u{1b}[2J{}", "y".repeat(10_000));
        let e = merge(vec![part(1, 2, &name, false), part(2, 2, &name, false)]).unwrap_err();
        let text = e.to_string();
        assert!(text.len() < 300 && text.contains("\\u{1b}[2Jyyy"), "{text}");
        assert!(text.contains("yyy...`"), "{text}");
    }
}
