//! A custom delaying explorer for the `chain_replication` fixture, after the
//! FSE'15 paper's `custExplorer` (Desai, Qadeer & Seshia, §7): a priority
//! list of threads that the program's own events reorder.
//!
//! The paper's idea: bugs during initialization are easy; the interesting
//! ones come after the system has set itself up. So while the chain
//! initializes, the servers come first, then the master and the fault
//! injector (the paper's order); when the guest announces
//! `wasmrace::phase("init-done")`, the order changes: the master (to
//! reconfigure promptly), the client, the servers, and the fault injector
//! last, except that the moment a server acknowledges an update to the
//! client, the injector jumps to the front. That trigger is the tester's
//! domain knowledge: an acknowledgement promises that the update survives
//! failures, so the failures right after it are the ones to test.
//!
//! Without the switch at `init-done` (`ignoring_phase`, for comparison) the
//! injector, which the initialization order puts before the client, fails
//! its servers as soon as it is started, before any update exists, and the
//! default execution tests nothing.
//!
//! It is an ordinary [`DelayingExplorer`]: `next` is the first enabled
//! thread of the list and `delay` moves that thread to the back, so
//! repeated delays name every enabled thread once (the soundness rule, which
//! the fixture test checks along executions) and SES or SS can run it like
//! the built-in explorers. Roles are known by spawn path, as the guest
//! creates its threads: servers `main.1` to `main.3`, injector `main.4`,
//! client `main.5`, master `main.6`.

use std::collections::VecDeque;
use wasmrace_host::strategies::{first_enabled, send_target, DelayingExplorer};
use wasmrace_host::{StepInfo, ThreadPath, ThreadView, Tid};

/// The phase name the chain's master announces.
pub const INIT_DONE: &str = "init-done";

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    Harness,
    Server,
    Injector,
    Client,
    Master,
}

fn role(t: Tid) -> Role {
    let path = |i: u32| ThreadPath(vec![i]).tid();
    match (1..=6).find(|&i| path(i) == t) {
        Some(1..=3) => Role::Server,
        Some(4) => Role::Injector,
        Some(5) => Role::Client,
        Some(6) => Role::Master,
        _ => Role::Harness,
    }
}

/// Rank of a role in the default order, lower first.
fn rank(r: Role, initialized: bool) -> u8 {
    match (initialized, r) {
        (_, Role::Harness) => 0,
        // Initialization: the servers, then the master and the injector.
        (false, Role::Server) => 1,
        (false, Role::Master) => 2,
        (false, Role::Injector) => 3,
        (false, Role::Client) => 4,
        // After it: the master reconfigures promptly, the client's updates
        // flow through the chain, failures come last (or on the trigger).
        (true, Role::Master) => 1,
        (true, Role::Client) => 2,
        (true, Role::Server) => 3,
        (true, Role::Injector) => 4,
    }
}

#[derive(Clone, Debug)]
pub struct ChainExplorer {
    order: VecDeque<Tid>,
    initialized: bool,
    use_phase: bool,
}

impl ChainExplorer {
    pub fn new() -> Self {
        ChainExplorer {
            order: VecDeque::new(),
            initialized: false,
            use_phase: true,
        }
    }

    /// The same explorer deaf to `init-done`: it keeps the initialization
    /// order (and so never arms the trigger).
    pub fn ignoring_phase() -> Self {
        ChainExplorer {
            use_phase: false,
            ..ChainExplorer::new()
        }
    }

    /// Stable re-sort by the rank of the current phase: threads of one role
    /// keep their relative order (creation order, or what delays made it).
    fn resort(&mut self) {
        let init = self.initialized;
        let mut v: Vec<Tid> = self.order.drain(..).collect();
        v.sort_by_key(|t| rank(role(*t), init));
        self.order = v.into();
    }

    /// Moves `t` to the front of the order.
    fn move_to_front(&mut self, t: Tid) {
        if let Some(i) = self.order.iter().position(|q| *q == t) {
            self.order.remove(i);
            self.order.push_front(t);
        }
    }
}

impl Default for ChainExplorer {
    fn default() -> Self {
        ChainExplorer::new()
    }
}

impl DelayingExplorer for ChainExplorer {
    fn name(&self) -> &str {
        if self.use_phase {
            "chain"
        } else {
            "chain-no-phase"
        }
    }

    /// A new thread goes after every thread of its rank or a lower one.
    fn start(&mut self, thread: Tid) {
        if self.order.contains(&thread) {
            return;
        }
        let r = rank(role(thread), self.initialized);
        let at = self
            .order
            .iter()
            .position(|t| rank(role(*t), self.initialized) > r)
            .unwrap_or(self.order.len());
        self.order.insert(at, thread);
    }

    fn finish(&mut self, thread: Tid) {
        self.order.retain(|t| *t != thread);
    }

    fn step(&mut self, event: &StepInfo, _threads: &[ThreadView]) {
        if self.use_phase && event.phase.as_deref() == Some(INIT_DONE) && !self.initialized {
            self.initialized = true;
            self.resort();
        }
        if self.initialized
            && role(event.tid) == Role::Server
            && send_target(event, self.order.iter().copied()).map(role) == Some(Role::Client)
        {
            if let Some(&f) = self.order.iter().find(|t| role(**t) == Role::Injector) {
                self.move_to_front(f);
            }
        }
    }

    fn next(&self, threads: &[ThreadView]) -> Tid {
        first_enabled(&self.order, threads)
    }

    fn delay(&mut self, threads: &[ThreadView]) {
        let head = self.next(threads);
        if let Some(i) = self.order.iter().position(|q| *q == head) {
            self.order.remove(i);
            self.order.push_back(head);
        }
    }
}
