"""Add join-style blocking to the model: ('J', t) waits until thread t finished;
dependent with every event of t, never reversible (nidhugg: happens_after)."""
import random, sys
LIMIT = 10
import proto
from proto import *

def is_join_of(a, b):  # a is a join on b's thread
    return any(s[0] == 'J' and s[1] == b.tid for s in a.sym)

def symevs_conflict(a, b):
    if a[0] == 'J' or b[0] == 'J': return False
    if is_pure_load(a) and is_pure_load(b): return False
    return a[1] == b[1]
def events_conflict(pa, sa, pb, sb):
    if pa == pb: return True
    if any(s[0] == 'J' and s[1] == pb for s in sa): return True
    if any(s[0] == 'J' and s[1] == pa for s in sb): return True
    return any(symevs_conflict(a, b) for a in sa for b in sb)
proto.symevs_conflict = symevs_conflict
proto.events_conflict = events_conflict

def enabled(prog, pos, t):
    if pos[t] >= len(prog[t]): return False
    for s in prog[t][pos[t]]:
        if s[0] == 'J' and pos[s[1]] < len(prog[s[1]]): return False
    return True

def free_run(prog, E):
    pos = [0] * len(prog)
    for e in E: pos[e.tid] = max(pos[e.tid], e.idx)
    while True:
        t = next((t for t in range(len(prog)) if enabled(prog, pos, t)), None)
        if t is None: return E
        pos[t] += 1
        E.append(Ev(t, pos[t], prog[t][pos[t] - 1]))
proto.free_run = free_run

_orig = proto.compute_clocks_and_races
def compute_clocks_and_races(E, end_of_ws):
    _orig(E, end_of_ws)
    for j, b in enumerate(E):   # joins are non-reversible
        b.races = [a for a in b.races if not (is_join_of(b, E[a]) or is_join_of(E[a], b))]
proto.compute_clocks_and_races = compute_clocks_and_races

def all_traces(prog):
    keys = set()
    def rec(order, pos):
        if all(pos[t] == len(prog[t]) for t in range(len(prog))):
            keys.add(trace_key(prog, order)); return
        for t in range(len(prog)):
            if enabled(prog, pos, t):
                pos[t] += 1; order.append(t); rec(order, pos); order.pop(); pos[t] -= 1
    rec([], [0] * len(prog))
    return keys
proto.all_traces = all_traces

def rand_prog(rng, n, nev, nvars):
    prog = [[[(rng.choice('LS'), rng.randrange(nvars))] for _ in range(rng.randint(1, nev))] for t in range(n)]
    for t in range(n):       # maybe prepend a join on a higher-index thread (no cycles)
        if t + 1 < n and rng.random() < 0.5:
            prog[t].insert(rng.randint(0, len(prog[t])), [('J', rng.randrange(t + 1, n))])
    return prog

if __name__ == '__main__':
    N = int(sys.argv[1]); seed = int(sys.argv[2]); rng = random.Random(seed)
    bad = mt = dt = tot = 0; ex = None
    for n in range(N):
        prog = rand_prog(rng, rng.randint(2, 4), 3, 2)
        if sum(map(len, prog)) > LIMIT: continue
        t, e, miss, dup = check(prog, proto.explore_pop, True)
        tot += t; mt += miss; dt += dup
        if miss or dup:
            bad += 1
            if ex is None or sum(map(len, prog)) < sum(map(len, ex[0])): ex = (prog, t, e, miss, dup)
    print('joins: bad', bad, 'traces', tot, 'missing', mt, 'dups', dt); print('smallest', ex)
