//! The part target: the `--json` parts of real partitioned runs
//! (`fuzz/seeds/parts/`: random, dfs by prefix, dpor dealing whole tests,
//! racefuzzer with a real race), reshaped (a part dropped, given twice, or
//! another run's) and mutated as JSON (types swapped, fields removed or
//! added, counts of `u64::MAX` or near it, odd `K/N`, control characters
//! in strings, deep nesting; in one part or the same way in every part) or
//! as bytes (flips, cuts, splices, invalid UTF-8, raw control bytes), then
//! parsed and merged by `wasmrace_merge`, as `wasmrace merge` does after
//! reading them. Every refusal must be one short line without a raw
//! control character; a merge that succeeds must have counts that are the sums of
//! the parts' (`executions`, `partition_skipped`, each race's), never
//! wrapped, and a size bounded by the parts'; the untouched parts of a run,
//! in any order, must merge.

use crate::mutate::mutate;
use crate::{Outcomes, Target};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use wasmrace_merge::{merge, parse, race_key, MergeError, Part};

/// The parts of each seed run, in `K` order, written by `wasmrace check
/// --json --partition K/N --schedule-dir sd` on the built fixtures
/// (paths made relative) with, after the module:
/// `--strategy random --seed 7 --max-executions 200` (lost_update, N = 2),
/// `--strategy dfs` (mutex_counter, N = 3), `--strategy dpor`
/// (lost_update, N = 3: two tests dealt out, one part runs none) and
/// `--strategy racefuzzer --seed 3 --test racefuzzer_fig2
/// --max-executions 50` (racefuzzer, N = 2). Write them again when the
/// part format changes: `Parts::new` refuses seeds that do not merge.
const RUNS: &[&[&[u8]]] = &[
    &[
        include_bytes!("../seeds/parts/random.1.json"),
        include_bytes!("../seeds/parts/random.2.json"),
    ],
    &[
        include_bytes!("../seeds/parts/dfs.1.json"),
        include_bytes!("../seeds/parts/dfs.2.json"),
        include_bytes!("../seeds/parts/dfs.3.json"),
    ],
    &[
        include_bytes!("../seeds/parts/dpor.1.json"),
        include_bytes!("../seeds/parts/dpor.2.json"),
        include_bytes!("../seeds/parts/dpor.3.json"),
    ],
    &[
        include_bytes!("../seeds/parts/race.1.json"),
        include_bytes!("../seeds/parts/race.2.json"),
    ],
];

/// Stands for a deeply nested value in a mutated document until it is
/// written out as text (a deep `Value` would be built and dropped
/// recursively by the harness itself).
const DEEP: &str = "@@wasmrace-fuzz-deep@@";

/// The longest refusal allowed, with the harness's short part names:
/// every value a refusal quotes is clipped, however large the part.
const MAX_REFUSAL_CHARS: usize = 1000;

pub(crate) struct Parts {
    /// Every seed part's document, by run.
    docs: Vec<Vec<Value>>,
}

impl Parts {
    /// Parses the seeds and checks that each run's parts merge: seeds of
    /// an older format would make every input a refusal.
    pub(crate) fn new() -> Result<Self, String> {
        let mut docs = Vec::new();
        for (r, run) in RUNS.iter().enumerate() {
            let parsed: Vec<Value> = (run.iter().enumerate())
                .map(|(k, b)| parse(&format!("seed {r}.{k}"), b).map_err(|e| e.to_string()))
                .collect::<Result<_, _>>()?;
            let parts: Vec<Part> = (parsed.iter().enumerate())
                .map(|(k, d)| Part::new(&format!("seed {r}.{k}"), d.clone()))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("a seed part is refused: {e}"))?;
            merge(parts).map_err(|e| format!("a seed run does not merge: {e}"))?;
            docs.push(parsed);
        }
        Ok(Parts { docs })
    }
}

impl Target for Parts {
    fn run(&mut self, rng: &mut ChaCha8Rng, out: &mut Outcomes) -> Result<(), String> {
        let run = &self.docs[rng.random_range(0..self.docs.len())];
        if rng.random_bool(0.1) {
            let mut docs = run.clone();
            docs.shuffle(rng);
            let texts: Vec<Vec<u8>> = docs.iter().map(|d| d.to_string().into_bytes()).collect();
            return feed(&texts, true, out);
        }
        let mut docs = run.clone();
        self.reshape(&mut docs, rng);
        // The same mutation in every part (a seed each replays), so that
        // odd values also reach the merge, or one part's own.
        let every = rng.random_bool(0.3);
        let shared = rng.random::<u64>();
        let one = rng.random_range(0..docs.len());
        let mut names = Vec::new();
        for (i, doc) in docs.iter_mut().enumerate() {
            if every {
                let mut same = ChaCha8Rng::seed_from_u64(shared);
                names.push(json_mutant(doc, &mut same));
            } else if i == one {
                names.push(json_mutant(doc, rng));
            }
        }
        let mut texts: Vec<Vec<u8>> = docs.iter().map(|d| text_of(d, rng)).collect();
        if rng.random_bool(0.35) {
            let i = rng.random_range(0..texts.len());
            let donors: Vec<Vec<u8>> = RUNS
                .iter()
                .flat_map(|r| r.iter().map(|b| b.to_vec()))
                .collect();
            let donors: Vec<&[u8]> = donors.iter().map(Vec::as_slice).collect();
            if rng.random_bool(0.5) {
                mutate(&mut texts[i], &donors, rng);
            } else {
                bytes_mutant(&mut texts[i], rng);
            }
        }
        if std::env::var_os("WASMRACE_FUZZ_VERBOSE").is_some() {
            eprintln!("wasmrace-fuzz: parts mutated by {}", names.join(", "));
        }
        feed(&texts, false, out)
    }
}

impl Parts {
    /// Drops a part, gives one twice, or puts another run's in, now and
    /// then; always shuffles.
    fn reshape(&self, docs: &mut Vec<Value>, rng: &mut ChaCha8Rng) {
        match rng.random_range(0..10) {
            0 if docs.len() > 1 => {
                docs.remove(rng.random_range(0..docs.len()));
            }
            1 => docs.push(docs[rng.random_range(0..docs.len())].clone()),
            2 => {
                let other = &self.docs[rng.random_range(0..self.docs.len())];
                let at = rng.random_range(0..docs.len());
                docs[at] = other[rng.random_range(0..other.len())].clone();
            }
            _ => {}
        }
        docs.shuffle(rng);
    }
}

/// Parses and merges `texts` as `wasmrace merge` does once it has read
/// them, checking every property; `must_merge` for a run's untouched parts.
fn feed(texts: &[Vec<u8>], must_merge: bool, out: &mut Outcomes) -> Result<(), String> {
    let mut parts = Vec::new();
    for (i, bytes) in texts.iter().enumerate() {
        let name = format!("part{}.json", i + 1);
        let part = parse(&name, bytes).and_then(|doc| Part::new(&name, doc));
        match part {
            Ok(p) => parts.push(p),
            Err(e) if must_merge => return Err(format!("an untouched part is refused: {e}")),
            Err(e) => {
                out.push(format!("part: {}", refusal(&e)?));
                return Ok(());
            }
        }
    }
    let docs: Vec<Value> = parts.iter().map(|p| p.doc().clone()).collect();
    match merge(parts) {
        Err(e) if must_merge => Err(format!("a run's untouched parts do not merge: {e}")),
        Err(e) => {
            out.push(format!("merge: {}", refusal(&e)?));
            Ok(())
        }
        Ok(merged) => {
            sums_hold(&docs, &merged.tests)?;
            let read: usize = texts.iter().map(Vec::len).sum();
            let written = serde_json::to_string(&merged.tests).map_or(0, |t| t.len());
            if written > 16 * read + (64 << 10) {
                return Err(format!(
                    "{read} bytes of parts merged into {written} bytes of tests"
                ));
            }
            out.push(
                if must_merge {
                    "merge: ok (untouched)"
                } else {
                    "merge: ok"
                }
                .into(),
            );
            Ok(())
        }
    }
}

/// The refusal's variant name, for the tally, after checking that it and
/// its causes are one line with no raw control character.
fn refusal(e: &MergeError) -> Result<String, String> {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    if text.chars().any(char::is_control) {
        return Err(format!("a refusal is not one plain line: {text:?}"));
    }
    if text.chars().count() > MAX_REFUSAL_CHARS {
        let head: String = text.chars().take(200).collect();
        return Err(format!(
            "a refusal of {} characters (over {MAX_REFUSAL_CHARS}): {head:?}...",
            text.chars().count()
        ));
    }
    if std::env::var_os("WASMRACE_FUZZ_VERBOSE").is_some() {
        eprintln!("wasmrace-fuzz: {text}");
    }
    let debug = format!("{:?}", e.kind());
    let end = debug
        .find(|c: char| !c.is_alphanumeric())
        .unwrap_or(debug.len());
    Ok(debug[..end].to_string())
}

/// The counts of a merge that succeeded are the sums of the parts' that
/// ran each test: `executions`, `partition_skipped` and each real race's
/// `count` and `executions` exactly (a sum past `u64` must have been
/// refused), the counters of `strategy_stats` never below a part's (they
/// add up or keep the peak, saturating).
fn sums_hold(docs: &[Value], merged: &[Value]) -> Result<(), String> {
    let number = |v: &Value| u128::from(v.as_u64().unwrap_or(0));
    for (i, m) in merged.iter().enumerate() {
        let runs: Vec<&Value> = (docs.iter().map(|d| &d["tests"][i]))
            .filter(|t| t["ran"] != false)
            .collect();
        let sum = |f: &dyn Fn(&Value) -> &Value| runs.iter().map(|t| number(f(t))).sum::<u128>();
        let expect = [
            ("executions", sum(&|t| &t["executions"])),
            ("partition_skipped", sum(&|t| &t["partition"]["skipped"])),
        ];
        for (key, total) in expect {
            if m[key].as_u64().map(u128::from) != Some(total) {
                return Err(format!("merged `{key}` is {}, not the sum {total}", m[key]));
            }
        }
        for r in m["races"].as_array().into_iter().flatten() {
            let key = race_key(r);
            let same = runs
                .iter()
                .flat_map(|t| t["races"].as_array().into_iter().flatten())
                .filter(|p| race_key(p) == key);
            let (count, execs) = same.fold((0u128, 0u128), |(c, e), p| {
                (c + number(&p["count"]), e + number(&p["executions"]))
            });
            if number(&r["count"]) != count || number(&r["executions"]) != execs {
                return Err(format!(
                    "merged race {key:?} counts {} in {} executions, not the sums {count} in {execs}",
                    r["count"], r["executions"]
                ));
            }
        }
        let stats = &m["strategy_stats"]["stats"];
        for t in &runs {
            for (name, v) in t["strategy_stats"]["stats"]
                .as_object()
                .into_iter()
                .flatten()
            {
                if number(&stats[name]) < number(v) {
                    return Err(format!(
                        "merged counter `{name}` is {}, below a part's {v}",
                        stats[name]
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The document as text: compact or pretty, the deep value written out.
fn text_of(doc: &Value, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let text = if rng.random_bool(0.5) {
        doc.to_string()
    } else {
        serde_json::to_string_pretty(doc).unwrap_or_default()
    };
    let marker = format!("\"{DEEP}\"");
    if !text.contains(&marker) {
        return text.into_bytes();
    }
    let depth = [64, 127, 128, 129, 1_000, 100_000][rng.random_range(0..6)];
    let (open, close) = if rng.random_bool(0.5) {
        ("[", "]")
    } else {
        ("{\"a\":", "}")
    };
    let deep = format!("{}0{}", open.repeat(depth), close.repeat(depth));
    text.replacen(&marker, &deep, 1).into_bytes()
}

/// Changes the document one to three times; returns what was done.
fn json_mutant(doc: &mut Value, rng: &mut ChaCha8Rng) -> String {
    let n = rng.random_range(1..=3);
    let names: Vec<&str> = (0..n).map(|_| json_mutate_once(doc, rng)).collect();
    names.join("+")
}

fn json_mutate_once(doc: &mut Value, rng: &mut ChaCha8Rng) -> &'static str {
    let tests = doc["tests"].as_array().map_or(0, Vec::len);
    let test = format!("/tests/{}", rng.random_range(0..tests.max(1)));
    match rng.random_range(0..12) {
        0 => {
            let v = odd_value(rng);
            if let Some(node) = random_node(doc, rng) {
                *node = v;
            }
            "type swap"
        }
        1 => {
            if let Some(Value::Object(o)) = random_node(doc, rng) {
                if !o.is_empty() {
                    let key = o.keys().nth(rng.random_range(0..o.len())).cloned();
                    key.map(|k| o.remove(&k));
                }
            }
            "field removed"
        }
        2 => {
            let key =
                ["version", "format", "tests", "k", "zz", "\u{1b}[2J"][rng.random_range(0..6)];
            let v = odd_value(rng);
            if let Some(Value::Object(o)) = random_node(doc, rng) {
                o.insert(key.into(), v);
            }
            "field added"
        }
        3 | 4 => {
            let field = [
                "/executions",
                "/partition/skipped",
                "/races/0/count",
                "/races/0/executions",
                "/elapsed_ms",
                "/bug/execution",
            ][rng.random_range(0..6)];
            let v = match rng.random_range(0..5) {
                0 => json!(u64::MAX),
                1 => json!(u64::MAX / 2 + rng.random_range(0..4)),
                2 => json!(rng.random::<u64>()),
                3 => json!(0),
                _ => json!(u64::MAX - rng.random_range(0..4)),
            };
            set(doc, &format!("{test}{field}"), v);
            if let Some(Value::Object(stats)) =
                doc.pointer_mut(&format!("{test}/strategy_stats/stats"))
            {
                for s in stats.values_mut() {
                    *s = json!(u64::MAX);
                }
            }
            "huge count"
        }
        5 => {
            let field =
                ["/partition/k", "/partition/n", "/partition/dealt_to"][rng.random_range(0..3)];
            let v = [
                json!(0),
                json!(1),
                json!(2),
                json!(4),
                json!(u32::MAX),
                json!(u64::from(u32::MAX) + 1),
                json!(u64::MAX),
                json!(-1),
            ][rng.random_range(0..8)]
            .clone();
            set(doc, &format!("{test}{field}"), v);
            "odd partition"
        }
        6 => {
            let field = [
                "/test",
                "/strategy",
                "/partition/description",
                "/partition/settings/fuel_per_step",
                "/races/0/sites/0",
                "/bug/failure/message",
            ][rng.random_range(0..6)];
            let mut text = control_text(rng);
            if rng.random_bool(0.3) {
                text.push_str(&"y".repeat(10_000));
            }
            let v = json!(text);
            if rng.random_bool(0.3) {
                set(doc, "/module_blake3", v);
            } else {
                set(doc, &format!("{test}{field}"), v);
            }
            "control characters"
        }
        7 => {
            if let Some(node) = random_node(doc, rng) {
                *node = json!(DEEP);
            }
            "deep"
        }
        8 => {
            let v =
                [json!(false), json!(true), json!(0), Value::Null][rng.random_range(0..4)].clone();
            set(doc, &format!("{test}/ran"), v);
            "ran"
        }
        9 => {
            // As an older wasmrace wrote them: no settings, races unkeyed.
            if rng.random_bool(0.5) {
                remove(doc, &format!("{test}/partition"), "settings");
            } else {
                remove(doc, &format!("{test}/races/0"), "key");
            }
            "old format"
        }
        10 => {
            let key = match rng.random_range(0..4) {
                0 => "zz_extra".to_string(),
                1 => "fuel_per_step".to_string(),
                2 => "fairness_bound".to_string(),
                _ => format!("{}{}", control_text(rng), "k".repeat(10_000)),
            };
            let v = odd_value(rng);
            if let Some(Value::Object(s)) = doc.pointer_mut(&format!("{test}/partition/settings")) {
                s.insert(key, v);
            }
            "setting"
        }
        _ => {
            // Another test's entry in place of this one's, or a copy
            // appended (tests differ in number or name).
            if let Some(ts) = doc["tests"].as_array_mut() {
                if !ts.is_empty() {
                    let t = ts[rng.random_range(0..ts.len())].clone();
                    if rng.random_bool(0.5) {
                        ts.push(t);
                    } else {
                        let at = rng.random_range(0..ts.len());
                        ts[at] = t;
                    }
                }
            }
            "tests reshaped"
        }
    }
}

/// Sets the value at a JSON pointer when its parent exists.
fn set(doc: &mut Value, pointer: &str, v: Value) {
    if let Some(slot) = doc.pointer_mut(pointer) {
        *slot = v;
        return;
    }
    let Some((parent, key)) = pointer.rsplit_once('/') else {
        return;
    };
    if let Some(Value::Object(o)) = doc.pointer_mut(parent) {
        o.insert(key.into(), v);
    }
}

/// Removes `key` from the object at a JSON pointer.
fn remove(doc: &mut Value, pointer: &str, key: &str) {
    if let Some(Value::Object(o)) = doc.pointer_mut(pointer) {
        o.remove(key);
    }
}

/// A node of the document, reached by walking down from the root and
/// stopping at random.
fn random_node<'a>(doc: &'a mut Value, rng: &mut ChaCha8Rng) -> Option<&'a mut Value> {
    let mut pointer = String::new();
    let mut node: &Value = doc;
    loop {
        let children: Vec<String> = match node {
            Value::Object(o) => o
                .keys()
                .map(|k| k.replace('~', "~0").replace('/', "~1"))
                .collect(),
            Value::Array(a) => (0..a.len()).map(|i| i.to_string()).collect(),
            _ => Vec::new(),
        };
        if children.is_empty() || (!pointer.is_empty() && rng.random_bool(0.25)) {
            break;
        }
        let child = &children[rng.random_range(0..children.len())];
        pointer.push('/');
        pointer.push_str(child);
        node = match doc.pointer(&pointer) {
            Some(n) => n,
            None => break,
        };
    }
    doc.pointer_mut(&pointer)
}

/// A value of some other type or range than a part holds.
fn odd_value(rng: &mut ChaCha8Rng) -> Value {
    match rng.random_range(0..12) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(-1),
        3 => json!(1.5),
        4 => json!(u64::MAX),
        5 => json!(1e300),
        6 => json!(""),
        7 => json!([]),
        8 => json!({}),
        9 => json!(control_text(rng)),
        10 => json!("x".repeat(rng.random_range(1..5_000))),
        _ => json!([1, "two", {"three": [3]}]),
    }
}

/// A string holding terminal escapes, newlines and other control
/// characters.
fn control_text(rng: &mut ChaCha8Rng) -> String {
    let pieces = [
        "\u{1b}]0;title\u{7}",
        "\u{1b}[2J",
        "\n",
        "\r",
        "\t",
        "\u{0}",
        "\u{9b}31m",
        "\u{7f}",
        "\u{2028}",
        "name",
        "`",
    ];
    (0..rng.random_range(1..6))
        .map(|_| pieces[rng.random_range(0..pieces.len())])
        .collect()
}

/// Byte changes JSON text does not survive, or only just: invalid UTF-8, a
/// raw control byte, a byte-order mark, trailing bytes, a cut, or the
/// whole part something else.
fn bytes_mutant(text: &mut Vec<u8>, rng: &mut ChaCha8Rng) {
    let at = rng.random_range(0..=text.len());
    let insert: &[u8] = match rng.random_range(0..9) {
        0 => b"\xff",
        1 => b"\xc0\x80",
        2 => b"\xed\xa0\x80",
        3 => b"\xe2\x82",
        4 => b"\x1b[2J\x07\n\x00",
        5 => b"\"\\ud800\"",
        6 => {
            text.truncate(at);
            return;
        }
        7 => {
            text.splice(0..0, *b"\xef\xbb\xbf");
            return;
        }
        _ => {
            let whole: [&[u8]; 6] = [b"", b"null", b"[]", b"{}", b"42", b"{\"tests\":[{}]}"];
            *text = whole[rng.random_range(0..whole.len())].to_vec();
            return;
        }
    };
    text.splice(at..at, insert.iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every seed run's parts are parts of one run that merge.
    #[test]
    fn the_seeds_merge() {
        assert_eq!(Parts::new().unwrap().docs.len(), RUNS.len());
    }

    /// The property catches a wrapped sum: a merge reporting less than
    /// the parts' executions is a defect.
    #[test]
    fn a_wrapped_sum_is_a_defect() {
        let part =
            |n: u64| json!({ "tests": [{ "executions": n, "partition": { "skipped": 0 } }] });
        let docs = [part(u64::MAX), part(2)];
        let wrapped = [json!({ "executions": 1, "partition_skipped": 0 })];
        assert!(sums_hold(&docs, &wrapped).is_err());
        let exact = [json!({ "executions": 2, "partition_skipped": 0 })];
        assert!(sums_hold(&[part(0), part(2)], &exact).is_ok());
    }
}
