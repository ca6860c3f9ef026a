//! The detector on hand-written executions: each test is a sequence of
//! steps, spawns and plain accesses as the host would feed them.

use super::*;
use wasmrace_trace::{Access, Oid, Tid};

fn lock() -> Oid {
    Oid::object(Tid::MAIN, 1)
}

/// Main (0) spawns threads 1 and 2.
fn three() -> Detector {
    let mut d = Detector::new();
    d.fork(0, 1);
    d.fork(0, 2);
    d
}

#[test]
fn unordered_writes_of_one_byte_race_and_name_both_accesses() {
    let mut d = three();
    d.step(1, &[]);
    d.access(1, 0x100, 8, true, 11).unwrap();
    d.step(2, &[]);
    let race = d.access(2, 0x104, 1, false, 22).unwrap_err();
    assert_eq!(
        race.earlier,
        RaceAccess {
            thread: 1,
            write: true,
            addr: 0x100,
            len: 8,
            site: 11,
            step: 1
        }
    );
    assert_eq!(
        race.later,
        RaceAccess {
            thread: 2,
            write: false,
            addr: 0x104,
            len: 1,
            site: 22,
            step: 2
        }
    );
}

#[test]
fn reads_never_race_with_reads() {
    let mut d = three();
    d.access(1, 0x100, 8, false, 1).unwrap();
    d.access(2, 0x100, 8, false, 2).unwrap();
    d.access(0, 0x100, 8, false, 3).unwrap();
}

#[test]
fn disjoint_bytes_of_one_granule_do_not_race() {
    let mut d = three();
    d.access(1, 0x100, 4, true, 1).unwrap();
    d.access(2, 0x104, 4, true, 2).unwrap();
    d.access(1, 0x100, 4, false, 3).unwrap();
    assert!(d.access(2, 0x103, 2, false, 4).is_err());
}

#[test]
fn a_spawn_orders_the_parents_past_before_the_child() {
    let mut d = Detector::new();
    d.access(0, 0x40, 8, true, 1).unwrap();
    d.fork(0, 1);
    d.access(1, 0x40, 8, true, 2).unwrap();
    // But the parent's accesses after the spawn are not ordered.
    assert!(d.access(0, 0x40, 8, false, 3).is_err());
}

#[test]
fn a_lock_orders_its_critical_sections() {
    let mut d = three();
    d.step(1, &[Access::sync(lock())]);
    d.access(1, 0x200, 8, true, 1).unwrap();
    d.step(1, &[Access::sync(lock())]);
    d.step(2, &[Access::sync(lock())]);
    d.access(2, 0x200, 8, true, 2).unwrap();
    d.access(2, 0x200, 8, false, 3).unwrap();
}

#[test]
fn a_flag_orders_the_data_only_for_the_thread_that_reads_it() {
    let flag = Oid::memory(0x10);
    let mut d = three();
    d.access(1, 0x300, 8, true, 1).unwrap();
    d.step(1, &[Access::write(flag)]);
    // Thread 2 reads the data before it loads the flag: a race.
    let mut early = d.clone();
    early.step(2, &[]);
    assert!(early.access(2, 0x300, 8, false, 2).is_err());
    // After loading the flag it is ordered.
    d.step(2, &[Access::read(flag)]);
    d.access(2, 0x300, 8, false, 2).unwrap();
}

#[test]
fn two_loads_of_one_atomic_do_not_order_their_threads() {
    let flag = Oid::memory(0x10);
    let mut d = three();
    d.step(1, &[Access::read(flag)]);
    d.access(1, 0x300, 8, true, 1).unwrap();
    d.step(1, &[Access::read(flag)]);
    d.step(2, &[Access::read(flag)]);
    assert!(d.access(2, 0x300, 8, true, 2).is_err());
}

#[test]
fn every_concurrent_read_is_kept_for_a_later_write() {
    let mut d = three();
    d.access(1, 0x80, 8, false, 1).unwrap();
    d.access(2, 0x80, 8, false, 2).unwrap();
    // Main learns of thread 1's past, not thread 2's.
    d.step(1, &[Access::sync(lock())]);
    d.step(0, &[Access::sync(lock())]);
    let race = d.access(0, 0x80, 8, true, 3).unwrap_err();
    assert_eq!((race.earlier.thread, race.earlier.site), (2, 2));
}

#[test]
fn a_block_handed_out_again_has_no_past_but_its_neighbours_keep_theirs() {
    let mut d = three();
    d.access(1, 0x500, 24, true, 1).unwrap();
    // The allocator hands [0x500, 0x510) to thread 2.
    d.forget(0x500, 16);
    d.access(2, 0x500, 16, true, 2).unwrap();
    assert!(d.access(2, 0x510, 8, false, 3).is_err());
}

#[test]
fn forgotten_memory_has_no_past() {
    let mut d = three();
    d.access(1, 0x600, 8, true, 1).unwrap();
    d.forget(0x600, 8);
    d.access(2, 0x600, 8, true, 2).unwrap();
}

#[test]
fn an_access_in_the_same_epoch_changes_nothing() {
    let mut d = three();
    d.access(1, 0x700, 8, true, 1).unwrap();
    let before = d.clone();
    d.access(1, 0x700, 4, false, 9).unwrap();
    d.access(1, 0x702, 2, true, 9).unwrap();
    assert_eq!(d, before);
}

#[test]
fn an_access_spanning_granules_is_checked_in_each() {
    let mut d = three();
    d.access(1, 0x808, 1, true, 1).unwrap();
    let race = d.access(2, 0x800, 32, false, 2).unwrap_err();
    assert_eq!((race.earlier.addr, race.earlier.len), (0x808, 1));
    assert_eq!((race.later.addr, race.later.len), (0x800, 32));
}

#[test]
fn a_join_orders_the_exited_threads_past() {
    let live = Oid::object(Tid::MAIN, 9);
    let mut d = three();
    d.access(1, 0x900, 8, true, 1).unwrap();
    d.step(1, &[Access::sync(live)]);
    d.step(0, &[Access::sync(live)]);
    d.access(0, 0x900, 8, true, 2).unwrap();
}

#[test]
fn state_caches_see_the_state_not_its_history() {
    use std::hash::{Hash, Hasher};
    fn h(d: &Detector) -> u64 {
        let mut s = std::collections::hash_map::DefaultHasher::new();
        d.hash(&mut s);
        s.finish()
    }
    let mut a = three();
    let b = three();
    a.step(1, &[Access::sync(lock())]);
    a.access(2, 0x40, 8, true, 1).unwrap();
    assert_eq!(h(&a), h(&b));
    assert_ne!(a, b);
}

#[test]
fn many_threads_reading_keep_a_bounded_cell() {
    let mut d = Detector::new();
    for t in 1..20 {
        d.fork(0, t);
        d.access(t, 0xa00, 8, false, t as u32).unwrap();
    }
    // Reads beyond the cell's records may be forgotten, but a write
    // unordered with the latest reads is still found.
    assert!(d.access(0, 0xa00, 8, true, 99).is_err());
}

#[test]
fn a_covered_access_is_recognised_only_within_its_granule() {
    let mut d = three();
    d.access(1, 0x100, 8, true, 1).unwrap();
    // Covered (the inline check): nothing to see, nothing changes.
    let before = d.clone();
    d.access(1, 0x104, 4, false, 2).unwrap();
    assert_eq!(d, before);
    // An offset plus a length past the granule, or a length that would
    // wrap a 32-bit sum, is no covered access: each granule is checked.
    d.access(2, 0x10f, 2, false, 3).unwrap();
    let race = d.access(2, 0x101, u32::MAX - 0x101, false, 4).unwrap_err();
    assert_eq!((race.earlier.site, race.later.site), (1, 4));
}

#[test]
fn forgetting_whole_pages_and_directories_drops_them() {
    let mut d = three();
    // Granules in three pages of the first directory and one of the second.
    for addr in [0x0, 0x200, 0x3f8, 0x8000] {
        d.access(1, addr, 8, true, 1).unwrap();
    }
    let held = d.heap_bytes();
    // Bytes 8..0x8008: page 0 but its first granule, pages 1 and up
    // whole, the first granule of the second directory.
    d.forget(8, 0x8000);
    assert!(d.heap_bytes() < held);
    // Every forgotten byte is fresh for thread 2; granule 0 still races.
    for addr in [0x8, 0x200, 0x3f8, 0x8000] {
        d.access(2, addr, 4, true, 2).unwrap();
    }
    assert!(d.access(2, 0, 4, true, 3).is_err());
}
