//! `wasmrace shrink` (and `check`'s shrinking) from the command line: exit
//! codes, the before/after report, the written schedule replaying, and the
//! refusal of a schedule that does not reproduce.

use super::{expect, expect_error, fixture, schedule_written, wasmrace, TempDir};

#[test]
fn shrink_writes_a_smaller_schedule_that_replays() {
    let dir = TempDir::new("shrink");
    let m = fixture(&dir, "lost_update");
    let args = [
        "check",
        &m,
        "--test",
        "lost_update_3",
        "--strategy",
        "random",
        "--seed",
        "3",
    ];
    let found = wasmrace(&dir, &[&args[..], &["--no-shrink"]].concat());
    expect(&found, 1);
    let schedule = schedule_written(&found.stdout);
    let run = wasmrace(
        &dir,
        &["shrink", &m, &schedule, "-o", "small.json", "--json"],
    );
    expect(&run, 1);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(json["schedule"], "small.json");
    assert_eq!(json["after"]["preemptions"], 1);
    assert!(json["before"]["preemptions"].as_u64().unwrap() > 1);
    assert_eq!(json["one_minimal"], true);
    let replayed = wasmrace(&dir, &["replay", &m, "small.json"]);
    expect(&replayed, 1);
    assert!(
        replayed.stdout.contains("\nreproduced: "),
        "{}",
        replayed.stdout
    );
    // The text report says before and after.
    let text = wasmrace(&dir, &["shrink", &m, &schedule]);
    expect(&text, 1);
    assert!(
        text.stdout.contains("\nafter:    1 preemption, "),
        "{}",
        text.stdout
    );
    let small = schedule.replace(".schedule.json", ".schedule.small.json");
    assert!(dir.join(small).is_file());
    // check shrinks by default, and says from what; the file it writes is
    // the shrunk schedule.
    let check = wasmrace(&dir, &args);
    expect(&check, 1);
    let from = format!(
        "shrunk:   from {} preemptions / ",
        json["before"]["preemptions"]
    );
    assert!(check.stdout.contains(&from), "{}", check.stdout);
    let shrunk = schedule_written(&check.stdout);
    let small = std::fs::read_to_string(dir.join("small.json")).unwrap();
    let written = std::fs::read_to_string(dir.join(&shrunk)).unwrap();
    let steps = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap()["steps"].clone();
    assert_eq!(steps(&small), steps(&written));
    expect(&wasmrace(&dir, &["replay", &m, &shrunk]), 1);
}

#[test]
fn shrink_refuses_a_schedule_that_does_not_reproduce() {
    let dir = TempDir::new("shrink-refuses");
    let m = fixture(&dir, "lost_update");
    let check = wasmrace(&dir, &["check", &m, "--test", "lost_update_3"]);
    expect(&check, 1);
    let schedule = schedule_written(&check.stdout);
    let path = dir.join(&schedule);
    let mut s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    s["steps"].as_array_mut().unwrap().truncate(4);
    std::fs::write(&path, s.to_string()).unwrap();
    let run = wasmrace(&dir, &["shrink", &m, &schedule]);
    expect_error(&run, "does not reproduce panic in thread `main`");
}

#[test]
fn bisect_reports_the_sealing_point_and_exits_1() {
    let dir = TempDir::new("bisect");
    let m = fixture(&dir, "lost_update");
    let check = wasmrace(&dir, &["check", &m, "--test", "lost_update"]);
    expect(&check, 1);
    let s = &schedule_written(&check.stdout);
    let run = wasmrace(&dir, &["bisect", &m, s, "--exact", "--json"]);
    expect(&run, 1);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let steps = json["steps"].as_array().unwrap();
    let last = steps.last().unwrap();
    assert_eq!(last["probability"], 1.0);
    assert_eq!(last["exact"], true);
    assert!(steps[0]["thread"].is_null());
    assert_eq!(steps[1]["thread"], "main");
    assert_eq!(json["sealed_proved"], true);
    assert!(json["sealed_at"].as_u64().unwrap() <= last["step"].as_u64().unwrap());
    let d = &json["decisive"][0];
    for field in [
        "step",
        "probability_before",
        "probability_after",
        "alternatives",
    ] {
        assert!(!d[field].is_null(), "{field} in {d}");
    }
    let text = wasmrace(&dir, &["bisect", &m, s, "--exact"]);
    expect(&text, 1);
    assert!(text.stdout.contains("\nsealed at step "), "{}", text.stdout);
    assert!(
        text.stdout.contains(" completions from there fail)\n")
            && text.stdout.contains("(proved: all "),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains(", sealing proved by enumeration (--exact)\n"),
        "--exact says so in text, not only in --json: {}",
        text.stdout
    );
    assert!(
        text.stdout.contains("\ndecisive steps:\n  step "),
        "{}",
        text.stdout
    );
    assert_eq!(
        text.stdout,
        wasmrace(&dir, &["bisect", &m, s, "--exact"]).stdout
    );
    // The fixture's first two steps are `main`'s alone (it creates the
    // cell, then spawns): they cannot change P, which a sampled run once
    // showed as noise (0.34 at the start, then ~0.38, ~0.34).
    let sampled = wasmrace(&dir, &["bisect", &m, s, "--json"]);
    let json: serde_json::Value = serde_json::from_str(&sampled.stdout).unwrap();
    let steps = json["steps"].as_array().unwrap();
    assert_eq!(steps[1]["probability"], steps[0]["probability"], "{json}");
    assert_eq!(steps[2]["probability"], steps[0]["probability"], "{json}");
    assert_ne!(steps[3]["probability"], steps[0]["probability"], "{json}");
    // A schedule that does not reproduce: exit 2, saying why.
    let path = dir.join(s);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["steps"].as_array_mut().unwrap().truncate(2);
    std::fs::write(&path, v.to_string()).unwrap();
    expect_error(&wasmrace(&dir, &["bisect", &m, s]), "does not reproduce");
}
