//! The race detector's plain hooks (`load/races.rs` calls them): each
//! plain access is checked against the execution's detector
//! (`World::races`, `wasmrace_explore::datarace`), libc's accesses
//! synchronise, a block the allocator hands out starts afresh, and a race
//! fails the execution with a failure naming both accesses, or, with
//! `--data-races report`, goes in the run's [`RaceLog`] and the execution
//! goes on.

use super::{GuestFault, HostState};
use crate::error::{runtime, HostError};
use std::collections::BTreeMap;
use wasmrace_explore::datarace::{Race, RaceAccess};
use wasmrace_trace::{Failure, FailureKind, Oid};
use wasmtime::{Caller, Linker};

/// The distinct data races a check met under `--data-races report`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportedRaces {
    /// One failure of kind `data race` per distinct race, in the order of
    /// their locations (the pair of sites); of a race's reports, the least
    /// (by message), so the list does not depend on exploration order.
    pub races: Vec<wasmrace_trace::Failure>,
    /// `Some(HostConfig::max_data_race_reports)` when more races than that
    /// were met and the list kept those with the least locations.
    pub cut_at: Option<usize>,
}

/// The distinct data races a run met under `--data-races report`, by
/// location (the pair of sites), each with the least of its reports
/// (message, then thread): which execution met a race first depends on the
/// exploration order, the least report does not. At most `limit` races are
/// kept, those with the least locations, so a guest racing at many sites
/// cannot make the host hold without bound
/// (`HostConfig::max_data_race_reports`).
#[derive(Clone, Debug, Default)]
pub(crate) struct RaceLog {
    races: BTreeMap<String, Failure>,
    limit: usize,
    cut: bool,
}

impl RaceLog {
    /// An empty log keeping at most `limit` races.
    pub(crate) fn new(limit: usize) -> Self {
        RaceLog {
            races: BTreeMap::new(),
            limit,
            cut: false,
        }
    }

    /// Adds one report of a race.
    pub(crate) fn add(&mut self, f: Failure) {
        let key = f.location.clone().unwrap_or_default();
        if let Some(old) = self.races.get_mut(&key) {
            if (&f.message, &f.thread) < (&old.message, &old.thread) {
                *old = f;
            }
            return;
        }
        self.races.insert(key, f);
        if self.races.len() > self.limit {
            self.races.pop_last();
            self.cut = true;
        }
    }

    /// Adds every race of `other`, leaving it empty.
    pub(crate) fn absorb(&mut self, other: &mut RaceLog) {
        for f in std::mem::take(&mut other.races).into_values() {
            self.add(f);
        }
        self.cut |= std::mem::take(&mut other.cut);
    }

    /// The races, by location, and the limit when some were left out.
    pub(crate) fn reported(&self) -> ReportedRaces {
        ReportedRaces {
            races: self.races.values().cloned().collect(),
            cut_at: self.cut.then_some(self.limit),
        }
    }
}

/// What a plain hook does with its access.
#[derive(Clone, Copy)]
enum Kind {
    Read,
    Write,
    Acquire,
    Release,
}

fn on_access(
    c: &mut Caller<'_, HostState>,
    kind: Kind,
    addr: i32,
    len: i32,
    site: i32,
) -> wasmtime::Result<()> {
    let (addr, len, site) = (addr as u32, len as u32, site as u32);
    match check_access(c.data_mut(), kind, addr, len, site) {
        Ok(()) => Ok(()),
        Err(race) => on_race(c, kind, (addr, len, site), race),
    }
}

/// An access that races: out of line, so that the common call (every
/// plain access of the guest) stays short.
#[cold]
#[inline(never)]
fn on_race(
    c: &mut Caller<'_, HostState>,
    kind: Kind,
    (addr, len, site): (u32, u32, u32),
    mut race: Race,
) -> wasmtime::Result<()> {
    loop {
        let st = c.data_mut();
        let failure = race_failure(st, &race);
        let Some(log) = st.race_log.as_mut() else {
            return Err(wasmtime::Error::new(GuestFault(failure)));
        };
        // Reported, the execution goes on: the accessed bytes start
        // afresh, as a block the allocator hands out does, and the access
        // is checked again, now racing with nothing, so that its record
        // is kept. Earlier records of these bytes are lost: a second race
        // on them in this execution may go unseen (docs/data-races.md).
        log.add(failure);
        if let Some(d) = st.world.races.as_mut() {
            d.forget(addr, len);
        }
        match check_access(st, kind, addr, len, site) {
            Ok(()) => return Ok(()),
            Err(r) => race = r,
        }
    }
}

/// The race `kind`'s access makes, if any, under the execution's detector.
/// Always inlined into the hook with the detector's covered check: called
/// apart, they cost a tenth of the race detector's instructions more.
#[inline(always)]
fn check_access(
    st: &mut HostState,
    kind: Kind,
    addr: u32,
    len: u32,
    site: u32,
) -> Result<(), Race> {
    let cur = st.cur;
    let Some(d) = st.world.races.as_mut() else {
        return Ok(());
    };
    match kind {
        Kind::Read => d.access(cur, addr, len, false, site),
        Kind::Write => d.access(cur, addr, len, true, site),
        Kind::Acquire => {
            d.acquire(cur, granule(addr));
            Ok(())
        }
        Kind::Release => {
            d.release(cur, granule(addr));
            Ok(())
        }
    }
}

/// The synchronising object of the 8-byte granule holding `addr`: the
/// same object the std guest's atomics at that address touch
/// (`world/memory.rs`).
fn granule(addr: u32) -> Oid {
    Oid::memory(u64::from(addr & !7))
}

/// The failure of `race`: both accesses by thread, kind, bytes, site and
/// step; its location is the pair of sites, in a fixed order, so that a
/// shorter schedule that meets the same two accesses the other way round
/// is the same bug.
fn race_failure(st: &HostState, race: &Race) -> Failure {
    let say = |a: &RaceAccess| {
        let thread = st.world.thread_label(a.thread);
        let verb = if a.write { "wrote" } else { "read" };
        (thread, verb, describe(st, a.site))
    };
    let (t1, v1, at1) = say(&race.earlier);
    let (t2, v2, at2) = say(&race.later);
    let e = &race.earlier;
    let l = &race.later;
    let message = format!(
        "`{t1}` {v1} {} at {:#x} ({at1}, after step {}) and `{t2}` {v2} {} at {:#x} ({at2}, after step {}) with no happens-before between them",
        bytes(e.len),
        e.addr,
        e.step,
        bytes(l.len),
        l.addr,
        l.step,
    );
    let mut f = Failure::new(FailureKind::DataRace, Some(t2), message);
    let mut pair = [at1, at2];
    pair.sort();
    f.location = Some(format!("{} and {}", pair[0], pair[1]));
    if !st.std_guest {
        f.hint = Some(
            "if these are std's atomics (`AtomicU64`, an `Arc`'s counts) or a `static`: on wasm32-unknown-unknown they are plain memory; share values through the SDK's objects (`wasmrace::shared::Atomic`, `Mutex`), or build the test for wasm32-wasip1-threads as a std guest"
                .into(),
        );
    }
    f
}

fn bytes(n: u32) -> String {
    if n == 1 {
        "1 byte".into()
    } else {
        format!("{n} bytes")
    }
}

fn describe(st: &HostState, site: u32) -> String {
    match &st.race_sites {
        Some(s) => s.describe(site),
        None => format!("code offset {site:#x}"),
    }
}

pub(super) fn link(l: &mut Linker<HostState>) -> Result<(), HostError> {
    let m = crate::ops::HOOK_MODULE;
    let hooks = [
        ("race_read", Kind::Read),
        ("race_write", Kind::Write),
        ("race_acquire", Kind::Acquire),
        ("race_release", Kind::Release),
    ];
    for (name, kind) in hooks {
        l.func_wrap(
            m,
            name,
            move |mut c: Caller<'_, HostState>, addr: i32, len: i32, site: i32| {
                on_access(&mut c, kind, addr, len, site)
            },
        )
        .map_err(runtime)?;
    }
    l.func_wrap(
        m,
        "race_fresh",
        |mut c: Caller<'_, HostState>, addr: i32, len: i32| {
            if let Some(d) = c.data_mut().world.races.as_mut() {
                d.forget(addr as u32, len as u32);
            }
        },
    )
    .map_err(runtime)?;
    Ok(())
}
