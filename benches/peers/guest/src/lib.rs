//! The peers benchmark's algorithms against the wasmrace guest SDK. The same
//! algorithms are written for loom and shuttle in ../src/native.rs; keep
//! the three in step: the same shared objects, the same operations on them
//! in the same order, the same assertions.
//!
//! Every `Atomic`/`Mutex` operation is a host call and a scheduling point,
//! like an operation on loom's or shuttle's `AtomicU64`/`Mutex`. Handles are
//! plain ids (`Copy`), so sharing them costs no operation; the native
//! versions share through `std::sync::Arc`, whose clones are not scheduling
//! points either.

use wasmrace::shared::{Atomic, Mutex};
use wasmrace::thread;

/// BUG: each worker loads the counter and stores the loaded value plus one;
/// two loads before either store lose an increment.
fn lost_update(threads: u64) {
    let x = Atomic::new(0);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            thread::spawn(move || {
                let v = x.load();
                x.store(v + 1);
            })
        })
        .collect();
    for w in workers {
        w.join();
    }
    assert_eq!(x.load(), threads, "an increment was lost");
}

/// NO BUG: the lost update's fix with one atomic read-modify-write.
fn fetch_add(threads: u64) {
    let x = Atomic::new(0);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            thread::spawn(move || {
                x.fetch_add(1);
            })
        })
        .collect();
    for w in workers {
        w.join();
    }
    assert_eq!(x.load(), threads, "an increment was lost");
}

/// NO BUG: the lost update with the load and store under a mutex.
fn mutex_counter(threads: u64) {
    let x = Atomic::new(0);
    let m = Mutex::new();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            thread::spawn(move || {
                let _guard = m.lock();
                let v = x.load();
                x.store(v + 1);
            })
        })
        .collect();
    for w in workers {
        w.join();
    }
    assert_eq!(x.load(), threads, "an increment was lost despite the lock");
}

#[derive(Clone, Copy)]
struct Account {
    balance: Atomic,
    lock: Mutex,
}

/// Moves `amount` from `from` to `to` holding both accounts' locks. With
/// `ordered`, the locks are taken in account order (`first` is the account
/// every thread locks first); without, source then destination, which
/// deadlocks when two transfers in opposite directions each hold their
/// source. Guards drop in reverse order of locking.
fn transfer(from: Account, to: Account, amount: u64, ordered: bool, first: Account) {
    let (l1, l2) = if ordered && to.lock == first.lock {
        (to.lock, from.lock)
    } else {
        (from.lock, to.lock)
    };
    let _g1 = l1.lock();
    let _g2 = l2.lock();
    from.balance.store(from.balance.load() - amount);
    to.balance.store(to.balance.load() + amount);
}

/// Two accounts of 100; one thread moves 10 from `a` to `b`, the other 20
/// from `b` to `a`; both balances are checked after the joins.
fn two_lock_transfer(ordered: bool) {
    let a = Account {
        balance: Atomic::new(100),
        lock: Mutex::new(),
    };
    let b = Account {
        balance: Atomic::new(100),
        lock: Mutex::new(),
    };
    let t1 = thread::spawn(move || transfer(a, b, 10, ordered, a));
    let t2 = thread::spawn(move || transfer(b, a, 20, ordered, a));
    t1.join();
    t2.join();
    assert_eq!(a.balance.load(), 110, "account a");
    assert_eq!(b.balance.load(), 90, "account b");
}

#[wasmrace::test]
fn lost_update_2() {
    lost_update(2);
}

#[wasmrace::test]
fn lost_update_3() {
    lost_update(3);
}

#[wasmrace::test]
fn fetch_add_2() {
    fetch_add(2);
}

#[wasmrace::test]
fn fetch_add_3() {
    fetch_add(3);
}

#[wasmrace::test]
fn mutex_counter_2() {
    mutex_counter(2);
}

#[wasmrace::test]
fn mutex_counter_3() {
    mutex_counter(3);
}

/// NO BUG: both threads lock `a`'s mutex first.
#[wasmrace::test]
fn transfer_ordered() {
    two_lock_transfer(true);
}

/// BUG: ABBA deadlock, each thread holding its source account's lock and
/// waiting for the other's.
#[wasmrace::test]
fn transfer_abba() {
    two_lock_transfer(false);
}

/// Grows the guest's heap before the test's first operation: the first
/// allocation makes the allocator call `memory.grow`, and after that the
/// boxes of `thread::spawn` and the handles' `Vec` fit in what it got. The
/// `_pregrown` variants below are the tests above with this call first.
/// They show what the host's `reset` costs when memory grows after the
/// start state (it instantiates the module afresh) against when it does not
/// (it restores the start state); see RESULTS.md.
fn pregrow() {
    drop(std::hint::black_box(Vec::<u8>::with_capacity(1 << 10)));
}

#[wasmrace::test]
fn fetch_add_2_pregrown() {
    pregrow();
    fetch_add(2);
}

#[wasmrace::test]
fn fetch_add_3_pregrown() {
    pregrow();
    fetch_add(3);
}

#[wasmrace::test]
fn mutex_counter_2_pregrown() {
    pregrow();
    mutex_counter(2);
}

#[wasmrace::test]
fn mutex_counter_3_pregrown() {
    pregrow();
    mutex_counter(3);
}

#[wasmrace::test]
fn transfer_ordered_pregrown() {
    pregrow();
    two_lock_transfer(true);
}
