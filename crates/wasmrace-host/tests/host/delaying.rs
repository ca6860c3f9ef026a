//! Delaying explorers through the host API: a custom explorer written only
//! against what `wasmrace_host` re-exports runs with SES and SS through
//! `check_with_strategy`, and what it finds replays; the SES, SS and
//! state-cached DFS choices of `check` agree on the states of a fixture.

use super::config;
use wasmrace_host::strategies::{
    is_sound_at, DelayCursor, DelayingExplorer, ExplorerKind, Ses, SesOptions, Ss, SsOptions,
    StrategyOptions,
};
use wasmrace_host::{
    check, check_with_strategy, replay, CheckOptions, Guest, StepInfo, StrategyChoice, ThreadView,
};
use wasmrace_trace::Tid;

/// The newest thread first: a stack of threads in creation order, the top
/// runs; a delay moves the top to the bottom. Sound: `k - 1` delays bring
/// each of `k` enabled threads to the top.
#[derive(Clone, Default)]
struct NewestFirst {
    stack: Vec<Tid>,
    steps: u64,
}

impl DelayingExplorer for NewestFirst {
    fn name(&self) -> &str {
        "newest-first"
    }
    fn start(&mut self, thread: Tid) {
        self.stack.push(thread);
    }
    fn finish(&mut self, thread: Tid) {
        self.stack.retain(|t| *t != thread);
    }
    fn step(&mut self, _event: &StepInfo, _threads: &[ThreadView]) {
        self.steps += 1;
    }
    fn next(&self, threads: &[ThreadView]) -> Tid {
        wasmrace_host::strategies::first_enabled(self.stack.iter().rev(), threads)
    }
    fn delay(&mut self, threads: &[ThreadView]) {
        let top = self.next(threads);
        self.stack.retain(|t| *t != top);
        self.stack.insert(0, top);
    }
}

fn guest(name: &str) -> Guest {
    Guest::load(&wasmrace_fixtures::path(name), config(name)).unwrap()
}

#[test]
fn a_custom_explorer_runs_through_the_host_and_its_bug_replays() {
    let g = guest("lost_update");
    let opts = CheckOptions::default();
    let mut ses = Ses::new(NewestFirst::default(), 0, SesOptions::default());
    let out = check_with_strategy(&g, "lost_update", &opts, &mut ses, &mut |_| {}).unwrap();
    let bug = out.bug.expect("the lost update is found");
    assert_eq!(out.strategy, "ses");
    assert_eq!(bug.schedule.strategy, "ses");
    assert!(ses.states_explored() > 0);
    assert!(out.report.state_hashes > 0, "SES hashes wasm states");
    let again = replay(&g, &bug.schedule, 10_000).unwrap();
    assert!(again.reproduces(&bug.schedule), "{:?}", again.divergence);
    // SS with the same explorer finds it too.
    let mut ss = Ss::new(NewestFirst::default(), 1, SsOptions::default());
    let out = check_with_strategy(&g, "lost_update", &opts, &mut ss, &mut |_| {}).unwrap();
    assert!(out.bug.is_some());
    // The explorer is sound on the wasm program's initial state.
    let mut p = g.program("lost_update").unwrap();
    wasmrace_explore::Program::reset(&mut p).unwrap();
    let threads = wasmrace_explore::Program::threads(&p).to_vec();
    assert!(is_sound_at(
        &DelayCursor::new(NewestFirst::default(), &threads),
        &threads
    ));
}

#[test]
fn ses_and_dfs_with_a_state_cache_explore_the_same_states_of_mutex_counter() {
    let g = guest("mutex_counter");
    let run = |strategy| {
        let opts = CheckOptions {
            strategy,
            ..CheckOptions::default()
        };
        let out = check(&g, "mutex_counter_3", &opts).unwrap();
        assert!(out.bug.is_none());
        assert!(out.report.exhausted, "{:?}", out.report);
        let stat = |n: &str| {
            out.report
                .strategy_stats
                .iter()
                .find(|s| s.name == n)
                .map(|s| s.value)
        };
        (stat("states explored").unwrap(), out.report.executions)
    };
    let dfs = run(StrategyChoice::named("dfs").with(&StrategyOptions {
        preemption_bound: Some(None),
        state_cache: Some(true),
        cache_mb: Some(16),
        ..StrategyOptions::NONE
    }));
    for explorer in ExplorerKind::ALL {
        let ses = run(StrategyChoice::named("ses").with(&StrategyOptions {
            explorer: Some(explorer),
            delay_bound: Some(None),
            cache_mb: Some(16),
            ..StrategyOptions::NONE
        }));
        assert_eq!(ses.0, dfs.0, "{explorer:?}: the same reachable states");
    }
    assert!(dfs.0 > 100, "{dfs:?}");
    // The options are recorded for schedule files.
    let opts = CheckOptions {
        strategy: StrategyChoice::default_ss(),
        ..CheckOptions::default()
    };
    let json = opts.to_json();
    assert_eq!(
        (json["explorer"].as_str(), json["c1"].as_u64()),
        (Some("rtc"), Some(10))
    );
}
