//! The model language's own tests.

use super::*;

fn run(m: &mut Model, tid: Tid) -> StepInfo {
    m.step(Decision::new(tid, 0)).unwrap().clone()
}

fn pending(m: &Model, tid: Tid) -> Pending {
    m.threads()
        .iter()
        .find(|t| t.tid == tid)
        .unwrap()
        .pending
        .clone()
}

fn main_tid() -> Tid {
    ThreadPath::main().tid()
}

#[test]
fn threads_are_named_by_spawn_path_like_the_host() {
    let mut b = ModelBuilder::new();
    let leaf = b.thread("leaf", |_| {});
    let mid = b.thread("mid", |t| {
        t.spawn(leaf, 0);
    });
    b.main(|t| {
        t.spawn(mid, 0).spawn(mid, 1);
    });
    let mut m = b.build().unwrap();
    let main = ThreadPath::main();
    let s1 = run(&mut m, main.tid());
    assert_eq!(s1.spawned, vec![main.child(1).tid()]);
    assert_eq!(s1.op, Some(OpKind::Spawn));
    assert_eq!(
        s1.accesses,
        vec![Access::write(Oid::liveness(main.child(1).tid()))]
    );
    assert_eq!(s1.cost, 1);
    run(&mut m, main.tid());
    let s3 = run(&mut m, main.child(2).tid());
    assert_eq!(s3.spawned, vec![main.child(2).child(1).tid()]);
    let tids: Vec<Tid> = m.threads().iter().map(|t| t.tid).collect();
    let expected = [
        main.clone(),
        main.child(1),
        main.child(2),
        main.child(2).child(1),
    ];
    assert_eq!(tids, expected.iter().map(|p| p.tid()).collect::<Vec<_>>());
    assert_eq!(m.thread_name(main.child(2).child(1).tid()), "main.2.1");
    // Spawned ids land in the parent's registers.
    assert_eq!(
        m.registers(main.tid()).unwrap()[1],
        main.child(2).tid().0 as i64
    );
}

#[test]
fn pending_operations_show_their_accesses_before_running() {
    let mut b = ModelBuilder::new();
    let x = b.var("x", 5);
    let mx = b.mutex("m");
    let child = b.thread("child", |t| {
        t.recv(3);
    });
    b.main(|t| {
        t.read(x, 0)
            .set(1, reg(0) + 1)
            .write(x, reg(1))
            .lock(mx)
            .unlock(mx)
            .spawn(child, 2)
            .send(reg(2), 9)
            .join(reg(2));
    });
    let mut m = b.build().unwrap();
    let main = main_tid();
    let x_oid = Oid::object(main, 0);
    let m_oid = Oid::object(main, 1);
    let p = pending(&m, main);
    assert_eq!((p.op, p.enabled, p.alts), (OpKind::CellGet, true, 1));
    assert_eq!(p.accesses, vec![Access::read(x_oid)]);
    assert_ne!(p.site, 0);
    run(&mut m, main);
    // The local `set` ran as part of the read's step.
    assert_eq!(m.registers(main).unwrap()[..2], [5, 6]);
    assert_eq!(pending(&m, main).accesses, vec![Access::write(x_oid)]);
    run(&mut m, main);
    assert_eq!(m.value(x), 6);
    assert_eq!(pending(&m, main).accesses, vec![Access::sync(m_oid)]);
    run(&mut m, main);
    assert_eq!(pending(&m, main).op, OpKind::MutexUnlock);
    run(&mut m, main);
    run(&mut m, main); // spawn
    let c = ThreadPath::main().child(1).tid();
    let pc = pending(&m, c);
    assert_eq!((pc.op, pc.enabled), (OpKind::Recv, false));
    assert_eq!(pc.accesses, vec![Access::write(Oid::mailbox(c))]);
    assert_eq!(
        pending(&m, main).accesses,
        vec![Access::write(Oid::mailbox(c))]
    );
    run(&mut m, main); // send
    assert!(pending(&m, c).enabled);
    let pj = pending(&m, main);
    assert_eq!((pj.op, pj.enabled), (OpKind::Join, false));
    assert_eq!(pj.accesses, vec![Access::sync(Oid::liveness(c))]);
    run(&mut m, c);
    assert_eq!(m.registers(c).unwrap()[3], 9);
    let pe = pending(&m, c);
    assert_eq!((pe.op, pe.enabled), (OpKind::Exit, true));
    assert_eq!(pe.accesses, vec![Access::write(Oid::liveness(c))]);
    run(&mut m, c);
    assert!(pending(&m, main).enabled);
    run(&mut m, main);
    run(&mut m, main);
    assert_eq!(*m.status(), Status::Finished);
    assert!(m.threads().is_empty());
    assert_eq!(m.step(Decision::new(main, 0)), Err(ModelError::NotRunning));
}

#[test]
fn locks_block_and_misuse_fails() {
    let mut b = ModelBuilder::new();
    let mx = b.mutex("m");
    let other = b.thread("other", |t| {
        t.lock(mx).unlock(mx);
    });
    b.main(|t| {
        t.lock(mx).spawn(other, 0).unlock(mx).unlock(mx);
    });
    let mut m = b.build().unwrap();
    let main = main_tid();
    let o = ThreadPath::main().child(1).tid();
    run(&mut m, main);
    run(&mut m, main);
    assert!(!pending(&m, o).enabled, "held by main");
    let err = m.step(Decision::new(o, 0)).unwrap_err();
    assert!(err.to_string().contains("`main.1` is not enabled"), "{err}");
    run(&mut m, main);
    assert!(pending(&m, o).enabled);
    run(&mut m, o);
    // main unlocks a mutex main.1 holds.
    run(&mut m, main);
    let Status::Failed(f) = m.status() else {
        panic!("{:?}", m.status())
    };
    assert_eq!(f.kind, FailureKind::Misuse);
    assert_eq!(f.thread.as_deref(), Some("main"));
    assert!(f.message.contains("`m`"), "{}", f.message);
}

#[test]
fn deadlocks_list_every_waiting_thread() {
    let mut b = ModelBuilder::new();
    let a = b.mutex("a");
    let c = b.mutex("b");
    let t = b.thread("t", |t| {
        t.lock(c).lock(a);
    });
    b.main(|m| {
        m.lock(a).spawn(t, 0).lock(c);
    });
    let mut m = b.build().unwrap();
    let main = main_tid();
    let t1 = ThreadPath::main().child(1).tid();
    run(&mut m, main);
    run(&mut m, main);
    run(&mut m, t1);
    let f = m.status_failure();
    assert_eq!(f.kind, FailureKind::Deadlock);
    assert_eq!(
        f.waiting,
        vec![
            Waiting {
                thread: "main".into(),
                waits_for: "mutex `b` held by `main.1`".into()
            },
            Waiting {
                thread: "main.1".into(),
                waits_for: "mutex `a` held by `main`".into()
            },
        ]
    );
}

impl Model {
    fn status_failure(&self) -> &Failure {
        match &self.state.status {
            Status::Failed(f) => f,
            s => panic!("not failed: {s:?}"),
        }
    }
}

#[test]
fn a_write_seen_by_a_reader_fails_its_assert() {
    // x = 0; T1: x = 1; T2: if x == 1 { assert false }
    let mut b = ModelBuilder::new();
    let x = b.var("x", 0);
    let t1 = b.thread("t1", |t| {
        t.write(x, 1);
    });
    let t2 = b.thread("t2", |t| {
        t.read(x, 0).when(reg(0).equals(1), |t| {
            t.fail("saw x == 1");
        });
    });
    b.main(|t| {
        t.spawn(t1, 0).spawn(t2, 1);
    });
    let model = b.build().unwrap();
    let main = main_tid();
    let (p1, p2) = (
        ThreadPath::main().child(1).tid(),
        ThreadPath::main().child(2).tid(),
    );
    // T2 reads first: no failure.
    let mut m = model.clone();
    for t in [main, main, p2, p1, p2, p1, main] {
        run(&mut m, t);
    }
    assert_eq!(*m.status(), Status::Finished);
    // T1 writes first: T2's read step fails.
    let mut m = model.clone();
    for t in [main, main, p1, p2] {
        run(&mut m, t);
    }
    let f = m.status_failure();
    assert_eq!(
        (f.kind, f.thread.as_deref(), f.message.as_str()),
        (FailureKind::Panic, Some("main.2"), "saw x == 1")
    );
    assert_eq!(f.location.as_deref(), Some("t2#2"));
    // The failed thread has no pending operation any more.
    assert!(m.threads().iter().all(|t| t.tid != p2));
}

#[test]
fn loops_without_operations_run_out_of_fuel() {
    let mut b = ModelBuilder::new();
    b.main(|t| {
        t.label("top").set(0, reg(0) + 1).jump("top");
    });
    let m = b.build().unwrap();
    let Status::Failed(f) = m.status() else {
        panic!()
    };
    assert_eq!(f.kind, FailureKind::FuelExhausted);
}

#[test]
fn labels_and_loops() {
    // Count to 3 in a loop of writes: 3 writes, then exit.
    let mut b = ModelBuilder::new();
    let x = b.var("x", 0);
    b.main(|t| {
        t.label("top")
            .set(0, reg(0) + 1)
            .write(x, reg(0))
            .jump_if(reg(0).lt(3), "top");
    });
    let mut m = b.build().unwrap();
    let mut steps = 0;
    while *m.status() == Status::Running {
        run(&mut m, main_tid());
        steps += 1;
    }
    assert_eq!((steps, m.value(x)), (4, 3));
}

#[test]
fn build_errors_are_reported() {
    let err = |f: fn(&mut ModelBuilder)| {
        let mut b = ModelBuilder::new();
        f(&mut b);
        b.build().unwrap_err()
    };
    assert_eq!(err(|_| {}), BuildError::NoMain);
    assert!(matches!(
        err(|b| {
            b.main(|t| {
                t.jump("nowhere");
            });
        }),
        BuildError::UnknownLabel { label, .. } if label == "nowhere"
    ));
    assert!(matches!(
        err(|b| {
            b.main(|t| {
                t.label("a").label("a");
            });
        }),
        BuildError::DuplicateLabel { .. }
    ));
    assert!(matches!(
        err(|b| {
            b.main(|t| {
                t.set(16, 0);
            });
        }),
        BuildError::BadRegister { reg: 16, .. }
    ));
    assert!(matches!(
        err(|b| {
            b.main(|t| {
                t.choose(0, 0);
            });
        }),
        BuildError::ChooseZero { .. }
    ));
    let e = err(|b| {
        let d = b.declare("later");
        b.main(|t| {
            t.spawn(d, 0);
        });
    });
    assert_eq!(
        e.to_string(),
        "thread definition `later` was declared but never defined"
    );
}

#[test]
fn messages_to_exited_threads_are_dropped_and_unknown_ids_are_misuse() {
    let mut b = ModelBuilder::new();
    let quiet = b.thread("quiet", |_| {});
    b.main(|t| {
        t.spawn(quiet, 0)
            .join(reg(0))
            .send(reg(0), 1)
            .send(lit(12345), 1);
    });
    let mut m = b.build().unwrap();
    let main = main_tid();
    let q = ThreadPath::main().child(1).tid();
    run(&mut m, main);
    run(&mut m, q);
    run(&mut m, main);
    run(&mut m, main);
    assert_eq!(*m.status(), Status::Running);
    run(&mut m, main);
    assert_eq!(m.status_failure().kind, FailureKind::Misuse);
}

#[test]
fn choose_offers_its_alternatives() {
    let mut b = ModelBuilder::new();
    b.main(|t| {
        t.choose(4, 7);
    });
    let mut m = b.build().unwrap();
    assert_eq!(pending(&m, main_tid()).alts, 4);
    let err = m.step(Decision::new(main_tid(), 4)).unwrap_err();
    assert!(matches!(
        err,
        ModelError::NoSuchAlternative {
            alt: 4,
            alts: 4,
            ..
        }
    ));
    m.step(Decision::new(main_tid(), 3)).unwrap();
    assert_eq!(m.registers(main_tid()).unwrap()[7], 3);
}

#[test]
fn snapshots_restore_the_exact_future() {
    let mut b = ModelBuilder::new();
    let x = b.var("x", 0);
    let w = b.thread("w", |t| {
        t.fetch_add(x, 1, 0).send(parent_id(), reg(0));
    });
    b.main(|t| {
        t.spawn(w, 0).spawn(w, 1).recv(2).recv(3);
    });
    let mut m = b.build().unwrap();
    let main = main_tid();
    run(&mut m, main);
    run(&mut m, main);
    let snap = m.snapshot().unwrap().unwrap();
    let hash = m.state_hash();
    let order = [
        ThreadPath::main().child(2).tid(),
        ThreadPath::main().child(1).tid(),
    ];
    let play = |m: &mut Model| {
        let mut infos = Vec::new();
        for _ in 0..2 {
            for t in order {
                infos.push(run(m, t));
            }
        }
        while *m.status() == Status::Running {
            let t = m.threads().iter().find(|t| t.pending.enabled).unwrap().tid;
            infos.push(run(m, t));
        }
        (infos, m.state_hash(), m.value(x))
    };
    let first = play(&mut m);
    assert_eq!(first.2, 2);
    m.restore(&snap).unwrap();
    assert_eq!(m.state_hash(), hash);
    assert_eq!(play(&mut m), first);
    assert_eq!(
        m.registers(main).unwrap()[2..4],
        [0, 1],
        "main.2 incremented first"
    );
}

#[test]
fn state_hash_identifies_states_not_paths() {
    let mut b = ModelBuilder::new();
    let x = b.var("x", 0);
    let y = b.var("y", 0);
    let tx = b.thread("tx", |t| {
        t.write(x, 1);
    });
    let ty = b.thread("ty", |t| {
        t.write(y, 1);
    });
    b.main(|t| {
        t.spawn(tx, 0).spawn(ty, 1);
    });
    let model = b.build().unwrap();
    let main = main_tid();
    let (a, c) = (
        ThreadPath::main().child(1).tid(),
        ThreadPath::main().child(2).tid(),
    );
    let reach = |order: &[Tid]| {
        let mut m = model.clone();
        for &t in order {
            run(&mut m, t);
        }
        m.state_hash().unwrap()
    };
    // Independent writes commute: same state, same hash.
    assert_eq!(reach(&[main, main, a, c]), reach(&[main, main, c, a]));
    assert_ne!(reach(&[main, main, a]), reach(&[main, main, c]));
    assert_ne!(reach(&[main, main]), reach(&[main, main, a]));
    let mut m = model.clone();
    assert_eq!(m.state_hash(), m.clone().state_hash());
    m.reset().unwrap();
    assert_eq!(m.state_hash().unwrap(), reach(&[]));
}
