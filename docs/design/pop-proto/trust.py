"""TruSt-style exploration (Kokologiannakis et al., POPL'22) transcribed to
Mazurkiewicz traces with access sets: events are lists of (kind, obj), kind
'L' shared (observes), 'S'/'U' exclusive (observes and changes). A graph is
(events in the order they were added = stamp, `before` = the order of every
conflicting pair of different threads). Each graph's children are computed
from the graph alone (no sleep sets, nothing flows between subtrees):

  a = next(G): the next event of the lowest thread with one left.
  forward: a placed so that no event already in G observes differently:
           after every conflicting event on an object a changes; before or
           after (free) every event that changes an object a only reads.
  backward (a changes an object that b in G accesses, b not in a's causal
           past): D = events added after b not in a's causal past, deleted;
           a placed before b (b observes a now); allowed only if b and every
           event of D were "maximally added" (each after every conflicting
           event of its view), so that the deleted part is the one the
           canonical forward steps re-create.
Checked against brute-force enumeration (proto.all_traces). This script
keeps the variants tried (flags); trustcf.py holds the algorithm as it
stands, with blocking, control flow and choose."""
import itertools, random, sys
from proto import events_conflict, does_store, all_traces, trace_key, rand_prog

def changes(sym, obj):            # the access set changes obj
    return any(o == obj and k != 'L' for k, o in sym)

def touches(sym, obj):
    return any(o == obj for k, o in sym)

def common(sa, sb):
    return {o for _, o in sa} & {o for _, o in sb}

class G:
    def __init__(s, prog, evs, before):
        s.prog, s.evs, s.before = prog, evs, before   # evs: list of (tid, idx); before: set of (x, y)
    def sym(s, e): return s.prog[e[0]][e[1] - 1]
    def preds(s, e):               # immediate predecessors: po and conflict order
        out = [y for (y, x) in s.before if x == e]
        if e[1] > 1: out.append((e[0], e[1] - 1))
        return out
    def past(s, es):               # causal past (down-closure) of a set of events, inclusive
        seen = set(); stack = list(es)
        while stack:
            e = stack.pop()
            if e in seen: continue
            seen.add(e); stack.extend(s.preds(e))
        return seen
    def conflicting(s, a, sym_a):
        return [e for e in s.evs if e[0] != a[0] and events_conflict(e[0], s.sym(e), a[0], sym_a)]

def next_event(prog, g):
    done = {}
    for t, i in g.evs: done[t] = max(done.get(t, 0), i)
    for t in range(len(prog)):
        if done.get(t, 0) < len(prog[t]): return (t, done.get(t, 0) + 1)
    return None

def placements(g, a, sym_a, P0, banned):
    """Every set P of events before a: down-closed, containing P0, and every
    conflicting event on an object a changes except `banned` (events that
    must come after a), free for events a only reads next to; yields the
    conflicting events before a."""
    conf = g.conflicting(a, sym_a)
    must = [c for c in conf if any(changes(sym_a, o) for o in common(sym_a, g.sym(c))) and c not in banned]
    free = [c for c in conf if c not in must and c not in banned]
    seen = set()
    for r in range(len(free) + 1):
        for S in itertools.combinations(free, r):
            P = g.past(set(P0) | set(must) | set(S))
            if P & set(banned): continue
            chosen = frozenset(c for c in conf if c in P)
            if any(c in P for c in free if c not in S): continue   # closure pulled in another free one: that set is enumerated itself
            if chosen in seen: continue
            seen.add(chosen)
            yield chosen, conf

TM = False
def maximal(g, e, view):
    """e is after every conflicting event of its view (TM: after every
    event of its view whose effect it could see, as TruSt's reads read the
    co-maximal write and writes are co-maximal)."""
    for c in view:
        if c != e and c[0] != e[0] and events_conflict(c[0], g.sym(c), e[0], g.sym(e)) and (c, e) not in g.before:
            if TM and not observes(g, c, g.sym(e)): continue
            return False
    if TM or OBS:
        # and it sees nothing from outside its view (TruSt: a read's rf is in Previous)
        vs = set(view)
        for (x, y) in g.before:
            if y == e and x not in vs and observes(g, x, g.sym(e)):
                return False
    return True
OBS = False

def add(g, a, chosen, conf, keep=None):
    evs = [e for e in g.evs if keep is None or e in keep] + [a]
    before = {(x, y) for (x, y) in g.before if keep is None or (x in keep and y in keep)}
    for c in conf:
        if keep is not None and c not in keep: continue
        before.add((c, a) if c in chosen else (a, c))
    return G(g.prog, evs, before)

def observes(g, x, y_sym):
    """An event with access set y_sym placed after x sees x's effect: x
    changes an object y touches."""
    xs = g.sym(x)
    return any(changes(xs, o) for o in common(xs, y_sym))

def observed_closure(g, stack):
    """The events of `stack`, their threads' earlier events and, transitively,
    the events before them whose effect they see."""
    seen = set()
    while stack:
        e = stack.pop()
        if e in seen: continue
        seen.add(e)
        if e[1] > 1: stack.append((e[0], e[1] - 1))
        stack += [x for (x, y) in g.before if y == e and observes(g, x, g.sym(e))]
    return seen

def porf(g, a, sym_a, P, conf):
    """a's po-and-observation prefix: its thread's earlier events, the
    events before it whose effect it sees, and, transitively, theirs (not
    reads that a merely follows: TruSt's porf, without fr)."""
    stack = [(a[0], a[1] - 1)] if a[1] > 1 else []
    return observed_closure(g, stack + [c for c in conf if c in P and observes(g, c, sym_a)])

def seen_by(g, b, sym_a):
    """What b goes on seeing when a is placed before it: the events before
    b whose effect b sees on objects a does not change, and their porf."""
    sb = g.sym(b)
    return observed_closure(g, [x for (x, y) in g.before if y == b and any(
        changes(g.sym(x), o) and not changes(sym_a, o) for o in common(g.sym(x), sb))])

def placements_of(g, a, sym_a, mode='strictP', also_maximal=lambda e: True):
    """Every placement of the new event a allowed in `mode` (the variants'
    flags): yields (P, conf, keep), the events before a, the events that
    conflict with it and the events the placement keeps (a revisit deletes
    the others)."""
    cp = g.past([(a[0], a[1] - 1)]) if a[1] > 1 else set()
    conf = g.conflicting(a, sym_a)
    stamp = {e: k for k, e in enumerate(g.evs)}
    seen = set()
    for r in range(len(conf) + 1):
        for S in itertools.combinations(conf, r):
            P = g.past(cp | set(S))
            if any(c in P for c in conf if c not in S): continue
            # events that observe a differently: after a, touching what a changes
            R = [c for c in conf if c not in P and any(changes(sym_a, o) and touches(g.sym(c), o) for o in common(sym_a, g.sym(c)))]
            D = []
            if R:
                b = min(R, key=lambda c: stamp[c])
                kept = porf(g, a, sym_a, P, conf)
                if 'keepb' in mode:
                    kept |= seen_by(g, b, sym_a)
                D = [e for e in g.evs if stamp[e] > stamp[b] and e not in kept]
                ok = True
                for e in [b] + D:
                    view = [c for c in g.evs if stamp[c] < stamp[e]]
                    if 'nob' in mode and e != b: view = [c for c in view if c != b]
                    if 'vporf' in mode: view += [c for c in kept if stamp[c] > stamp[e]]
                    if not (maximal(g, e, view) and also_maximal(e)): ok = False; break
                if not ok: continue
            keep = set(e for e in g.evs if e not in D)
            if 'strictP' in mode and any(e in P for e in D): continue
            key = (frozenset(keep), frozenset(c for c in conf if c in P and c in keep))
            if key in seen: continue
            seen.add(key)
            yield P, conf, keep

def visit(prog, g, out, view_mode):
    a = next_event(prog, g)
    if a is None:
        out.append(g); return
    sym_a = prog[a[0]][a[1] - 1]
    for P, conf, keep in placements_of(g, a, sym_a, view_mode):
        visit(prog, add(g, a, P, conf, keep), out, view_mode)

def keys_of(prog, out):
    keys = []
    for g in out:
        # a linearization must exist; the key is the order of conflicting pairs
        order = topo(g)
        assert order is not None, ('cycle', g.evs, g.before)
        keys.append(trace_key(prog, [e[0] for e in order]))
    return keys

def topo(g):
    evs = list(g.evs); order = []; placed = set()
    while len(order) < len(evs):
        ready = [e for e in evs if e not in placed and all(p in placed for p in g.preds(e))]
        if not ready: return None
        order.append(ready[0]); placed.add(ready[0])
    return order

def check(prog, view_mode):
    truth = all_traces(prog)
    out = []
    visit(prog, G(prog, [], set()), out, view_mode)
    keys = keys_of(prog, out)
    return len(truth), len(keys), len(truth - set(keys)), len(keys) - len(set(keys))

if __name__ == '__main__':
    multi = sys.argv[1] == 'multi'; N = int(sys.argv[2]); seed = int(sys.argv[3]); view_mode = sys.argv[4] if len(sys.argv) > 4 else 'stamp'
    TM = 'tm' in view_mode; OBS = 'obs' in view_mode
    rng = random.Random(seed); bad = 0; tot = [0, 0, 0, 0]; ex = None
    for n in range(N):
        prog = rand_prog(rng, rng.randint(2, 4), 3, 2, multi)
        if sum(map(len, prog)) > 9: continue
        t, e, miss, dup = check(prog, view_mode)
        tot[0] += t; tot[1] += e; tot[2] += miss; tot[3] += dup
        if miss or dup:
            bad += 1
            if ex is None or sum(map(len, prog)) < sum(map(len, ex[0])): ex = (prog, t, e, miss, dup)
    print('trust', sys.argv[1], view_mode, 'bad', bad, 'traces', tot[0], 'explored', tot[1], 'missing', tot[2], 'dups', tot[3])
    if ex: print('smallest bad', ex)
