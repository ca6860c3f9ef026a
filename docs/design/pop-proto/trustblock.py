"""trust.py (strictP) with blocking operations. Locks: ('A', m) acquires mutex m (an
exclusive access that needs m free), ('R', m) releases it. A thread whose
next event is an acquire of a held mutex is disabled; when no thread is
enabled and some have events left, the graph is a deadlock (a terminal
trace of its own). A placement must leave every mutex's chain alternating
acquire/release of one thread; a revisit that leaves the revisited event
an acquire of a held mutex deletes it too (it runs again once enabled).
Mailboxes: ('Q', q) sends to queue q, ('V', q) receives (blocks while q
is empty). Threads: ('X', l) is a thread's exit (writes its liveness l),
('J', l) joins it (reads l; blocks while the thread lives). A blocked
receive or join is a blocked attempt as a blocked acquire is.
Ground truth: every linearization under these semantics."""
import itertools, random, sys
import proto, trust
# Joins only read a thread's liveness.
proto.is_pure_load = lambda s: s[0] in ('L', 'J')
trust.changes = lambda sym, obj: any(o == obj and k not in ('L', 'J') for k, o in sym)
from proto import events_conflict
from trust import G, touches, common, maximal, add, porf, topo
changes = trust.changes

MUTEXES = (10, 11)
LIMIT = 10
ITEMS = 2

def sym(prog, e): return prog[e[0]][e[1] - 1]

def chain(g):
    """Walks the graph's order: returns the blocked attempts (an acquire of
    a held mutex, a receive from an empty queue, a join of a live thread),
    or None if the graph is not feasible (a release by a thread that does
    not hold the mutex, or events of a thread after its blocked attempt)."""
    order = topo(g)
    if order is None: return None
    blocked = set(); holder = {}; queued = {}; dead = set()
    for e in order:
        for k, o in g.sym(e):
            if k == 'A':
                if holder.get(o) is not None: blocked.add(e)
                else: holder[o] = e[0]
            elif k == 'R':
                if holder.get(o) != e[0]: return None
                holder[o] = None
            elif k == 'Q': queued[o] = queued.get(o, 0) + 1
            elif k == 'V':
                if queued.get(o, 0) == 0: blocked.add(e)
                else: queued[o] -= 1
            elif k == 'X': dead.add(o)
            elif k == 'J':
                if o not in dead: blocked.add(e)
    for e in blocked:
        if any(x[0] == e[0] and x[1] > e[1] for x in g.evs): return None
    return blocked

ENABLES = {'A': 'R', 'V': 'Q', 'J': 'X'}

def wasted(g, blocked):
    """A blocked attempt with an event after it that enables it: the real
    execution would have gone on (that event's revisit explores it)."""
    order = topo(g); pos = {e: i for i, e in enumerate(order)}
    for e in blocked:
        k0, m = g.sym(e)[0]
        if any(pos[x] > pos[e] and any(k == ENABLES[k0] and o == m for k, o in g.sym(x)) for x in g.evs): return True
    return False

def next_event(prog, g, blocked):
    done = {}
    for t, i in g.evs: done[t] = max(done.get(t, 0), i)
    for t in range(len(prog)):
        i = done.get(t, 0)
        if i < len(prog[t]) and (t, i) not in blocked: return (t, i + 1)
    return None

STATS = {'wasted': 0}
DEADLOCK_ORDER = False
def blocked_in_stamp_order(g, blocked):
    """Two blocked acquires of one mutex only read it, so their order is
    not part of the trace: keep the graph that has them in stamp order."""
    stamp = {e: k for k, e in enumerate(g.evs)}
    for (x, y) in g.before:
        if x in blocked and y in blocked and stamp[x] > stamp[y]: return False
    return True
def visit(prog, g, out):
    blocked = chain(g)
    a = next_event(prog, g, blocked)
    if a is None:
        if wasted(g, blocked): STATS['wasted'] += 1
        elif DEADLOCK_ORDER and not blocked_in_stamp_order(g, blocked): STATS['wasted'] += 1
        else: out.append((g, bool(blocked)))
        return
    sym_a = prog[a[0]][a[1] - 1]
    cp = g.past([(a[0], a[1] - 1)]) if a[1] > 1 else set()
    conf = g.conflicting(a, sym_a)
    stamp = {e: k for k, e in enumerate(g.evs)}
    seen = set()
    for r in range(len(conf) + 1):
        for S in itertools.combinations(conf, r):
            P = g.past(cp | set(S))
            if any(c in P for c in conf if c not in S): continue
            R = [c for c in conf if c not in P and any(changes(sym_a, o) and touches(g.sym(c), o) for o in common(sym_a, g.sym(c)))]
            D = []
            if R:
                b = min(R, key=lambda c: stamp[c])
                kept = porf(g, a, sym_a, P, conf)
                D = [e for e in g.evs if stamp[e] > stamp[b] and e not in kept]
                if not all(maximal(g, e, [c for c in g.evs if stamp[c] < stamp[e]]) for e in [b] + D): continue
            if any(e in P for e in D): continue
            keep = set(e for e in g.evs if e not in D)
            g2 = add(g, a, P, conf, keep)
            if chain(g2) is None: continue
            key = (frozenset(keep), frozenset(c for c in conf if c in P and c in keep))
            if key in seen: continue
            seen.add(key)
            visit(prog, g2, out)

def key_of(prog, order):
    evs = []; pos = [0] * len(prog)
    for t in order:
        pos[t] += 1; evs.append((t, pos[t], prog[t][pos[t] - 1]))
    key = set()
    for x in range(len(evs)):
        for y in range(x + 1, len(evs)):
            if evs[x][0] != evs[y][0] and events_conflict(evs[x][0], evs[x][2], evs[y][0], evs[y][2]):
                key.add(((evs[x][0], evs[x][1]), (evs[y][0], evs[y][1])))
    return (frozenset((e[0], e[1]) for e in evs), frozenset(key))

def all_traces(prog):
    keys = set()
    def rec(order, pos, holder, queued, dead):
        moved = False
        for t in range(len(prog)):
            if pos[t] >= len(prog[t]): continue
            ev = prog[t][pos[t]]
            if any((k == 'A' and holder.get(o) is not None) or (k == 'V' and queued.get(o, 0) == 0)
                   or (k == 'J' and o not in dead) for k, o in ev): continue
            h, q, d = dict(holder), dict(queued), set(dead)
            for k, o in ev:
                if k == 'A': h[o] = t
                if k == 'R': h[o] = None
                if k == 'Q': q[o] = q.get(o, 0) + 1
                if k == 'V': q[o] -= 1
                if k == 'X': d.add(o)
            pos[t] += 1; order.append(t); moved = True
            rec(order, pos, h, q, d)
            pos[t] -= 1; order.pop()
        if not moved: keys.add(key_of(prog, order))
    rec([], [0] * len(prog), {}, {}, set())
    return keys

def check(prog):
    truth = all_traces(prog)
    out = []
    visit(prog, G(prog, [], set()), out)
    keys = []
    for g, _ in out:
        blocked = chain(g)
        keys.append(key_of(prog, [e[0] for e in topo(g) if e not in blocked]))
    return len(truth), len(keys), len(truth - set(keys)), len(keys) - len(set(keys)), sum(1 for _, d in out if d)

def rand_prog(rng, nthreads):
    prog = [[] for _ in range(nthreads)]
    joined = set()
    for t in range(nthreads):
        th = prog[t]
        for _ in range(rng.randint(1, ITEMS)):
            r = rng.random()
            if r < 0.2:
                th.append([(rng.choice('LS'), rng.randrange(2))])
            elif r < 0.45:
                m = rng.choice(MUTEXES)
                th.append([('A', m)])
                if rng.random() < 0.5: th.append([(rng.choice('LS'), rng.randrange(2))])
                th.append([('R', m)])
            elif r < 0.55:
                m1, m2 = rng.sample(MUTEXES, 2)
                th += [[('A', m1)], [('A', m2)], [('R', m2)], [('R', m1)]]
            elif r < 0.75:
                th.append([('Q', rng.choice((20, 21)))])
            elif r < 0.9:
                th.append([('V', rng.choice((20, 21)))])
            else:
                u = rng.choice([u for u in range(nthreads) if u != t])
                th.append([('J', 30 + u)]); joined.add(u)
    for u in joined: prog[u].append([('X', 30 + u)])
    return prog

if __name__ == '__main__':
    N = int(sys.argv[1]); seed = int(sys.argv[2])
    if len(sys.argv) > 3: LIMIT = int(sys.argv[3]); ITEMS = int(sys.argv[4])
    DEADLOCK_ORDER = len(sys.argv) > 5 and sys.argv[5] == 'order'
    rng = random.Random(seed); bad = 0; tot = [0, 0, 0, 0, 0]; ex = None; n_ok = 0
    for n in range(N):
        prog = rand_prog(rng, rng.randint(2, 3))
        if sum(map(len, prog)) > LIMIT: continue
        n_ok += 1
        r = check(prog)
        for i in range(5): tot[i] += r[i]
        if r[2] or r[3]:
            bad += 1
            if ex is None or sum(map(len, prog)) < sum(map(len, ex[0])): ex = (prog, r)
    print('wasted (blocked, not deadlocked) executions', STATS['wasted'])
    print(sys.argv[0].split('/')[-1][:-3], 'programs', n_ok, 'bad', bad, 'traces', tot[0], 'explored', tot[1], 'missing', tot[2], 'dups', tot[3], 'deadlocks explored', tot[4])
    if ex: print('smallest bad', ex)
