"""trustblock.py with control flow: threads are small programs whose next
operation depends on the values they read, as a guest's do. A graph keeps
each event's access (it is no longer fixed by the thread and index), and
the next event of a thread is found by replaying a linearization of the
graph, as the host replays a schedule. Instructions:
  ('L', x, r) read register x into local r      ('S', x, v) write v (an int, or 'r': local 0 + 1)
  ('U', x, r) fetch-add x, old value into r      ('IF0', r, n) skip the next n if local r == 0
  ('A', m) / ('R', m) lock / unlock              ('Q', q, v) send v   ('V', q, r) receive into r
  ('X', l) exit (writes liveness l)              ('J', l) join (reads l; blocks while it lives)
  ('C', n, r) choose a value below n into r (an event of its own per value, touching nothing shared)
Ground truth: every execution under these semantics, keyed by its events
(thread, index, access) and the order of its conflicting pairs."""
import itertools, random, sys
import proto, trust
proto.is_pure_load = lambda s: s[0] in ('L', 'J')
trust.changes = lambda sym, obj: any(o == obj and k not in ('L', 'J') for k, o in sym)
from proto import events_conflict
from trust import touches, common, placements_of, topo
changes = trust.changes

HOOKS = {'L', 'S', 'U', 'A', 'R', 'Q', 'V', 'X', 'J', 'C'}

class State:
    def __init__(s, prog):
        s.prog = prog; s.mem = {}; s.holder = {}; s.queue = {}; s.dead = set()
        s.pc = [0] * len(prog); s.regs = [dict() for _ in prog]; s.count = [0] * len(prog)
    def copy(s):
        n = State.__new__(State)
        n.prog = s.prog; n.mem = dict(s.mem); n.holder = dict(s.holder)
        n.queue = {k: list(v) for k, v in s.queue.items()}; n.dead = set(s.dead)
        n.pc = list(s.pc); n.regs = [dict(r) for r in s.regs]; n.count = list(s.count)
        return n
    def next_ins(s, t):
        """Skips local instructions; the next hook instruction of t, or None."""
        code = s.prog[t]
        while s.pc[t] < len(code) and code[s.pc[t]][0] == 'IF0':
            _, r, n = code[s.pc[t]]
            s.pc[t] += 1 + (n if s.regs[t].get(r, 0) == 0 else 0)
        return code[s.pc[t]] if s.pc[t] < len(code) else None
    def sym(s, t):
        ins = s.next_ins(t)
        return None if ins is None else [(ins[0], ins[1])]
    def enabled(s, t):
        ins = s.next_ins(t)
        if ins is None: return False
        k, o = ins[0], ins[1]
        if k == 'A': return s.holder.get(o) is None
        if k == 'V': return bool(s.queue.get(o))
        if k == 'J': return o in s.dead
        return True
    def run(s, t, value=None):
        ins = s.next_ins(t); k, o = ins[0], ins[1]; regs = s.regs[t]
        if k == 'C': regs[ins[2]] = value
        elif k == 'L': regs[ins[2]] = s.mem.get(o, 0)
        elif k == 'S': s.mem[o] = regs.get(0, 0) + 1 if ins[2] == 'r' else ins[2]
        elif k == 'U': regs[ins[2]] = s.mem.get(o, 0); s.mem[o] = regs[ins[2]] + 1
        elif k == 'A': s.holder[o] = t
        elif k == 'R': s.holder[o] = None
        elif k == 'Q': s.queue.setdefault(o, []).append(ins[2])
        elif k == 'V': regs[ins[2]] = s.queue[o].pop(0)
        elif k == 'X': s.dead.add(o)
        s.pc[t] += 1; s.count[t] += 1
        return (t, s.count[t])

class G(trust.G):
    def __init__(s, prog, evs, before, syms):
        super().__init__(prog, evs, before); s.syms = syms
    def sym(s, e): return s.syms[e]

def add(g, a, sym_a, chosen, conf, keep):
    evs = [e for e in g.evs if e in keep] + [a]
    before = {(x, y) for (x, y) in g.before if x in keep and y in keep}
    for c in conf:
        if c in keep: before.add((c, a) if c in chosen else (a, c))
    syms = {e: g.syms[e] for e in evs if e != a}; syms[a] = sym_a
    return G(g.prog, evs, before, syms)

def chain(g):
    """The blocked attempts of the graph's order, or None if it is not
    feasible (as trustblock.chain)."""
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
    order = topo(g); pos = {e: i for i, e in enumerate(order)}
    for e in blocked:
        k0, m = g.sym(e)[0]
        if any(pos[x] > pos[e] and any(k == ENABLES[k0] and o == m for k, o in g.sym(x)) for x in g.evs): return True
    return False

def choice_sym(v):
    """A choose's event with value v: a read of an object nothing writes."""
    return [('L', ('choice', v))]

def choice_of(sym):
    k, o = sym[0]
    return o[1] if isinstance(o, tuple) and o[0] == 'choice' else None

def replay(prog, g, blocked):
    """Runs a linearization of the graph (blocked attempts do not run) and
    checks that every event is the access the graph recorded."""
    st = State(prog)
    for e in topo(g):
        if e in blocked: continue
        v = choice_of(g.sym(e))
        if v is not None:
            assert st.next_ins(e[0])[0] == 'C', ('replay diverged', e)
        else:
            assert st.sym(e[0]) == g.sym(e) and st.enabled(e[0]), ('replay diverged', e, g.sym(e), st.sym(e[0]))
        st.run(e[0], v)
    return st

def next_event(prog, g, blocked):
    st = replay(prog, g, blocked)
    done = {}
    for t, i in g.evs: done[t] = max(done.get(t, 0), i)
    for t in range(len(prog)):
        i = done.get(t, 0)
        if (t, i) in blocked: continue
        s = st.sym(t)
        if s is not None and not st.enabled(t) and (SKIP_DISABLED or (SKIP_JOINS and s[0][0] == 'J')
                                                    or (SKIP_RECEIVES and s[0][0] == 'V')): continue
        if s is not None:
            ins = st.next_ins(t)
            if ins[0] == 'C': return (t, i + 1), [choice_sym(v) for v in range(ins[1])]
            return (t, i + 1), [s]
    return None, None

STATS = {'wasted': 0}
# Pass over a thread that cannot run (add no blocked attempt for it).
SKIP_DISABLED = False
# Pass over a join of a live thread only (it can only ever follow the exit).
SKIP_JOINS = False
# Pass over a receive from an empty queue too.
SKIP_RECEIVES = False

STAMP_ORDER = True

def blocked_in_stamp_order(g, blocked):
    """Two blocked attempts on one object only read it, so their order is
    no part of the trace: only the graph with them in stamp order counts."""
    if not STAMP_ORDER: return True
    stamp = {e: k for k, e in enumerate(g.evs)}
    return not any(x in blocked and y in blocked and stamp[x] > stamp[y] for (x, y) in g.before)

def visit(prog, g, out):
    blocked = chain(g)
    a, syms = next_event(prog, g, blocked)
    if a is None:
        if wasted(g, blocked) or not blocked_in_stamp_order(g, blocked): STATS['wasted'] += 1
        else: out.append((g, bool(blocked)))
        return
    for sym_a in syms:          # one, or a choose's values
        place(prog, g, a, sym_a, out)

def place(prog, g, a, sym_a, out):
    # A choose is maximal with its first value only (the others are its
    # forward alternatives), as TruSt's reads with the co-latest write.
    for P, conf, keep in placements_of(g, a, sym_a, 'strictP', lambda e: not choice_of(g.sym(e))):
        g2 = add(g, a, sym_a, P, conf, keep)
        if chain(g2) is not None:
            visit(prog, g2, out)

def key_of_events(evs):
    """evs: (tid, idx, sym) in an order of execution."""
    pairs = set()
    for x in range(len(evs)):
        for y in range(x + 1, len(evs)):
            if evs[x][0] != evs[y][0] and events_conflict(evs[x][0], evs[x][2], evs[y][0], evs[y][2]):
                pairs.add(((evs[x][0], evs[x][1]), (evs[y][0], evs[y][1])))
    return (frozenset((t, i, tuple(s)) for t, i, s in evs), frozenset(pairs))

def all_traces(prog):
    keys = set()
    def rec(st, evs):
        moved = False
        for t in range(len(prog)):
            if not st.enabled(t): continue
            ins = st.next_ins(t)
            for v in (range(ins[1]) if ins[0] == 'C' else [None]):
                n = st.copy(); s = choice_sym(v) if v is not None else n.sym(t); e = n.run(t, v)
                moved = True
                rec(n, evs + [(e[0], e[1], s)])
        if not moved: keys.add(key_of_events(evs))
    rec(State(prog), [])
    return keys

def check(prog):
    truth = all_traces(prog)
    out = []
    visit(prog, G(prog, [], set(), {}), out)
    keys = []
    for g, _ in out:
        blocked = chain(g)
        keys.append(key_of_events([(e[0], e[1], g.sym(e)) for e in topo(g) if e not in blocked]))
    return len(truth), len(keys), len(truth - set(keys)), len(keys) - len(set(keys)), sum(1 for _, d in out if d)

def rand_prog(rng, nthreads, items):
    prog = [[] for _ in range(nthreads)]
    joined = set()
    for t in range(nthreads):
        th = prog[t]
        for _ in range(rng.randint(1, items)):
            r = rng.random(); x = rng.randrange(2)
            if r < 0.35:
                th.append(('L', x, 0))
                th.append(('IF0', 0, 1))
                th.append(rng.choice([('S', 1 - x, 'r'), ('U', x, 1), ('L', 1 - x, 0)]))
            elif r < 0.5: th.append(('S', x, rng.choice([1, 2, 'r'])))
            elif r < 0.6: th.append(('U', x, 0))
            elif r < 0.75:
                m = rng.choice((10, 11))
                th += [('A', m), ('U', x, 0), ('R', m)]
            elif r < 0.85: th.append(('Q', 20, rng.randrange(2)))
            elif r < 0.92:
                th.append(('V', 20, 0)); th.append(('IF0', 0, 1)); th.append(('S', x, 2))
            elif r < 0.97:
                th += [('C', 2, 0), ('IF0', 0, 1), ('S', x, 'r')]
            else:
                u = rng.choice([u for u in range(nthreads) if u != t])
                th.append(('J', 30 + u)); joined.add(u)
    for u in joined: prog[u].append(('X', 30 + u))
    return prog

def run_many(make, N, seed, limit, label):
    """Checks N programs from make(rng) with at most `limit` events against
    brute force and prints the totals."""
    rng = random.Random(seed); bad = 0; tot = [0, 0, 0, 0, 0]; n_ok = 0; ex = None
    for n in range(N):
        prog = make(rng)
        if sum(1 for th in prog for i in th if i[0] in HOOKS) > limit: continue
        n_ok += 1
        r = check(prog)
        for i in range(5): tot[i] += r[i]
        if r[2] or r[3]:
            bad += 1
            if ex is None or sum(map(len, prog)) < sum(map(len, ex[0])): ex = (prog, r)
    print(label, 'programs', n_ok, 'bad', bad, 'traces', tot[0], 'explored', tot[1], 'missing', tot[2],
          'dups', tot[3], 'deadlocks', tot[4], 'wasted', STATS['wasted'])
    if ex: print('smallest bad', ex)

if __name__ == '__main__':
    N, seed, limit, items = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    SKIP_DISABLED = 'skip' in sys.argv[5:]
    SKIP_JOINS = 'skipjoins' in sys.argv[5:]
    run_many(lambda rng: rand_prog(rng, rng.randint(2, 3), items), N, seed, limit, 'trustcf')
