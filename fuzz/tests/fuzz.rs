//! The bounded fuzz campaign `cargo test --workspace` runs: a fixed, small
//! number of deterministic inputs of every kind (the longer campaign is
//! `wasmrace-fuzz`, docs/guarantees.md, "Fuzzing"), each of which must
//! keep every property; plus checks that the harness reaches deep enough
//! to mean something.

use std::path::PathBuf;
use wasmrace_fuzz::{run, Campaign, Kind, Limits, Tally};

fn campaign(kind: Kind, inputs: u64) -> Tally {
    let c = Campaign {
        kind,
        seed: 11,
        start: 0,
        inputs,
        limits: Limits::default(),
        scratch: PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("fuzz")
            .join(kind.name()),
    };
    let tally = run(&c).expect("the campaign starts");
    let defects: Vec<String> = tally.defects.iter().map(|d| d.to_string()).collect();
    assert!(defects.is_empty(), "defects:\n{}", defects.join("\n"));
    assert_eq!(tally.inputs, inputs);
    tally
}

/// Generated modules load, and some of them run and find bugs that replay.
#[test]
fn generated_modules_keep_every_property() {
    let t = campaign(Kind::Modules, 24);
    assert!(t.count("load: ok") > 0, "{:?}", t.outcomes);
    assert!(t.count("generate: imports hooks") > 0, "{:?}", t.outcomes);
    assert!(t.count_prefix("check: ") > 0, "{:?}", t.outcomes);
}

/// Mutated guests are refused in words or run.
#[test]
fn mutated_guests_keep_every_property() {
    let t = campaign(Kind::Guests, 10);
    assert!(t.count_prefix("load: ") > 0, "{:?}", t.outcomes);
}

/// Mutated schedule files are refused in words or replayed; some parse.
#[test]
fn mutated_schedules_keep_every_property() {
    let t = campaign(Kind::Schedules, 60);
    assert!(t.count("parse: ok") > 0, "{:?}", t.outcomes);
    assert!(t.count("parse: error") > 0, "{:?}", t.outcomes);
    // A FIFO, a folder, a device or a file past the cap, refused.
    assert!(t.count_prefix("odd file: ") > 0, "{:?}", t.outcomes);
}

/// Damaged cache entries never change a load's result or verdict.
#[test]
fn damaged_cache_entries_keep_every_property() {
    let t = campaign(Kind::Cache, 8);
    assert_eq!(t.count("verdict: same"), 8, "{:?}", t.outcomes);
}

/// Forged parts are refused in one short line or merge with exact sums;
/// untouched parts of a run merge; each kind of refusal is reached.
#[test]
fn mutated_parts_keep_every_property() {
    let t = campaign(Kind::Parts, 3000);
    assert!(t.count("merge: ok (untouched)") > 0, "{:?}", t.outcomes);
    assert!(t.count("merge: ok") > 0, "{:?}", t.outcomes);
    for refusal in [
        "part: NotJson",
        "part: NotUtf8",
        "part: NotAPart",
        "merge: Overflow",
        "merge: SettingDiffers",
        "merge: Missing",
        "merge: GivenTwice",
    ] {
        assert!(t.count(refusal) > 0, "no `{refusal}`: {:?}", t.outcomes);
    }
}

/// The hook list given to wasm-smith is the host's, with the signatures
/// the host links: a module importing every hook loads.
#[test]
fn the_hook_imports_link_against_the_host() {
    let config = wasmrace_host::HostConfig {
        cache_dir: None,
        ..Default::default()
    };
    let module = wasmrace_fuzz::every_hook_module();
    let guest = wasmrace_host::Guest::from_bytes("every_hook.wasm", &module, config)
        .expect("a module importing every hook loads");
    assert_eq!(guest.tests(), ["every_hook"]);
    let imports = wasmparser::Parser::new(0)
        .parse_all(&wasmrace_fuzz::hook_imports())
        .filter_map(Result::ok)
        .filter_map(|p| match p {
            wasmparser::Payload::ImportSection(r) => Some(r.into_imports().count()),
            _ => None,
        })
        .sum::<usize>();
    let hooks =
        wasmrace_host::load::SUSPENDING_HOOKS.len() + wasmrace_host::load::PLAIN_HOOKS.len();
    assert_eq!(imports, hooks);
}
