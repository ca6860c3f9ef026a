"""Variant: consult the POP conflict maps during the free run (skip a thread whose
next event would BLOCK).  Tests whether that removes the join-related duplicates."""
import random, sys, copy
LIMIT = 10
import proto, joins
from proto import *

BLOCKED = []
def clock_of(E, ev):
    cl = {}
    for k in range(len(E) - 1, -1, -1):
        if E[k].tid == ev.tid: cl = dict(E[k].clock); break
    cl[ev.tid] = ev.idx
    for a in E:
        if a.tid != ev.tid and proto.events_conflict(a.tid, a.sym, ev.tid, ev.sym): cl = join(cl, a.clock)
    return cl

def guided_free_run(prog, E):
    # clocks of the replayed prefix
    tmp = list(E); proto.compute_clocks_and_races(tmp, 10**9)
    maps = [];
    for k, e in enumerate(E):
        if k > 0: update_conflict_map(maps, E[k-1].tid, E[k-1].sym, E[k-1].clock)
        add_conflict_map(maps, e.lcm)
    if E: update_conflict_map(maps, E[-1].tid, E[-1].sym, E[-1].clock)
    pos = [0] * len(prog)
    for e in E: pos[e.tid] = max(pos[e.tid], e.idx)
    while True:
        cands = [t for t in range(len(prog)) if joins.enabled(prog, pos, t)]
        if not cands: return E
        chosen = None
        for t in cands:
            ev = Ev(t, pos[t] + 1, prog[t][pos[t]]); ev.clock = clock_of(E, ev)
            m = copy.deepcopy(maps)
            if update_conflict_map(m, t, ev.sym, ev.clock) == BLOCK: continue
            chosen = (t, ev, m); break
        if chosen is None:
            BLOCKED.append(True); E.blocked = True; return E
        t, ev, maps = chosen
        pos[t] += 1; E.append(ev)

class L(list): blocked = False
def explore(prog, pre, eow, out, lo=True, st=None):
    pre = L(pre)
    proto.free_run = lambda p, E: guided_free_run(p, E)
    E = guided_free_run(prog, pre)
    proto.free_run = lambda p, E: E
    try:
        proto.explore_pop(prog, E, eow, out, lo, st)   # free_run is identity now
    finally:
        proto.free_run = joins.free_run
_orig_explore = proto.explore_pop
def explore_pop(prog, pre, eow, out, lo=True, st=None):
    E = guided_free_run(prog, L(pre))
    proto.compute_clocks_and_races(E, eow)
    out.append(E)
    maps = [[]]; add_conflict_map(maps[0], E[0].lcm)
    for j in range(len(E)):
        for i in sorted(E[j].races, reverse=True):
            v = wakeup_sequence(E, i, j)
            for k in range(len(maps), i + 1):
                m = copy.deepcopy(maps[k - 1])
                update_conflict_map(m, E[k - 1].tid, E[k - 1].sym, E[k - 1].clock)
                add_conflict_map(m, E[k].lcm); maps.append(m)
            if pop_blocked(v, maps[i]): continue
            E[j].reversed_races.append(i)
            v[-1].lcm = build_lcm(E, i, j, v, lo)
            explore_pop(prog, child_prefix(E, i, v), i + len(v) - 1, out, lo, st)

def check2(prog):
    truth = proto.all_traces(prog); out = []
    explore_pop(prog, [], -1, out)
    full = [E for E in out if not getattr(E, 'blocked', False)]
    keys = [trace_key(prog, [e.tid for e in E]) for E in full]
    return len(truth), len(keys), len(truth - set(keys)), len(keys) - len(set(keys)), len(out) - len(full)

if __name__ == '__main__':
    print('scenario', check2([[[('J',2)],[('L',0)]], [[('S',0)]], [[('S',1)]], [[('L',1)],[('L',0)]]]))
    N = int(sys.argv[1]); rng = random.Random(int(sys.argv[2])); agg = [0]*5; bad = 0
    for n in range(N):
        prog = joins.rand_prog(rng, rng.randint(2, 4), 3, 2)
        if sum(map(len, prog)) > LIMIT: continue
        r = check2(prog); agg = [a+b for a, b in zip(agg, r)]
        if r[2] or r[3]: bad += 1
    print('guided joins: bad', bad, 'traces/explored/missing/dups/blocked', agg)
