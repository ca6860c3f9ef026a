"""Throwaway model of nidhugg's POP (simplified-dpor branch) on straight-line
programs: threads = lists of events, each event = list of symbolic accesses
('L',x) load, ('S',x) store, ('U',x) read+write (RMW).  No blocking, all threads
exist from the start, free run = lowest-index thread with events left."""
import copy, itertools, random, sys

CONT, CLEAR, BLOCK = 'CONTINUE', 'CLEAR', 'BLOCK'

def does_load(s): return s[0] in ('L', 'U')
def does_store(s): return s[0] in ('S', 'U')
def is_pure_load(s): return s[0] == 'L'
def symevs_conflict(a, b):
    if is_pure_load(a) and is_pure_load(b): return False
    return a[1] == b[1]
def events_conflict(pa, sa, pb, sb):
    if pa == pb: return True
    return any(symevs_conflict(a, b) for a in sa for b in sb)

def join(a, b):
    c = dict(a)
    for k, v in b.items():
        if c.get(k, 0) < v: c[k] = v
    return c
def leq(a, b): return all(v <= b.get(k, 0) for k, v in a.items() if v > 0)
def lt(a, b):
    if not leq(a, b): return False
    return any(b.get(k, 0) > a.get(k, 0) for k in set(a) | set(b))

class Ev:
    def __init__(s, tid, idx, sym):
        s.tid, s.idx, s.sym = tid, idx, sym
        s.clock = {}
        s.schedule = s.schedule_head = False
        s.reversed_races = []
        s.lcm = []          # local conflict map (POP)
        s.doneseqs = []     # EPOP
    def key(s): return (s.tid, s.idx)

def hb(a, c):  # a happens-before-or-equal c (by clocks)
    return c.clock.get(a.tid, 0) >= a.idx

def free_run(prog, E):
    pos = [0] * len(prog)
    for e in E: pos[e.tid] = max(pos[e.tid], e.idx)
    while True:
        t = next((t for t in range(len(prog)) if pos[t] < len(prog[t])), None)
        if t is None: return E
        pos[t] += 1
        E.append(Ev(t, pos[t], prog[t][pos[t] - 1]))

def compute_clocks_and_races(E, end_of_ws):
    last = {}
    for j, b in enumerate(E):
        base = dict(E[last[b.tid]].clock) if b.tid in last else {}
        base[b.tid] = b.idx
        preds = [a for a in range(j) if E[a].tid != b.tid
                 and events_conflict(E[a].tid, E[a].sym, b.tid, b.sym)]
        cl = dict(base)
        for a in preds: cl = join(cl, E[a].clock)
        b.clock = cl
        last[b.tid] = j
        imm = [a for a in preds if not (base.get(E[a].tid, 0) >= E[a].idx)
               and not any(c != a and hb(E[a], E[c]) for c in preds)]
        keep = []
        for a in imm:
            if j < end_of_ws or E[a].schedule: continue
            if any(E[h].schedule_head and not lt(E[h].clock, b.clock)
                   for h in range(a + 1, j)): continue
            keep.append(a)
        b.races = keep

def clock_for_second(E, i, j):
    b = E[j]
    cl = {}
    for k in range(j - 1, -1, -1):
        if E[k].tid == b.tid: cl = dict(E[k].clock); break
    cl[b.tid] = b.idx
    for k in range(j):
        if k != i and E[k].tid != b.tid and events_conflict(E[k].tid, E[k].sym, b.tid, b.sym):
            cl = join(cl, E[k].clock)
    return cl

def wakeup_sequence(E, i, j):
    v = []
    for k in range(i + 1, j):
        if lt(E[k].clock, E[j].clock) and not leq(E[i].clock, E[k].clock):
            n = Ev(E[k].tid, E[k].idx, E[k].sym); n.clock = dict(E[k].clock); n.schedule = True
            v.append(n)
    n = Ev(E[j].tid, E[j].idx, E[j].sym); n.clock = clock_for_second(E, i, j)
    n.schedule = True; v.append(n)
    v[-1].schedule_head = True
    return v

# ---------------- POP conflict maps (transcription) ----------------
class Det:
    def __init__(s, sc, H, C): s.schedules_clock, s.H, s.C = sc, H, C
class Slp:
    def __init__(s, pid, sym, sleeping): s.pid, s.sym, s.sleeping = pid, sym, sleeping
class LNode:
    def __init__(s, addr, det, inherited): s.addr, s.det, s.inherited, s.second_read_clock = addr, det, inherited, None
class CNode:
    def __init__(s, ln):
        s.addr = ln.addr; s.det = copy.deepcopy(ln.det); s.inherited = []
        s.slp_ev_clks = []; s.same_var_load_clks = [ln.second_read_clock] if ln.second_read_clock else []

def add_conflict_map(maps, lcm):
    icm = []
    for node in lcm:
        if node.inherited is None and not node.det.H: return
        icm.append(CNode(node))
        if node.inherited is None: continue
        stack = [(node.inherited, 0)]; mstack = [icm[-1].inherited]
        while stack:
            lst, idx = stack.pop(); tgt = mstack.pop()
            if lst is None or len(lst) <= idx: continue
            cur = lst[idx]
            if cur.inherited is None and not cur.det.H: continue
            tgt.append(CNode(cur))
            stack.append((lst, idx + 1)); mstack.append(tgt)
            if cur.inherited is not None:
                stack.append((cur.inherited, 0)); mstack.append(tgt[-1].inherited)
    if icm: maps.append(icm)

def update_detector(p, sym, clock, det, svlc):
    conflict = CONT
    for i in range(len(det.H)):
        for clk in det.C[i]:
            if lt(clk, clock): conflict = BLOCK; break
        if conflict != BLOCK:
            if det.H[i].pid == p:
                if det.H[i].sleeping and lt(det.schedules_clock, clock): return BLOCK
                del det.H[i]; del det.C[i]; conflict = CLEAR; break
            if any(symevs_conflict(fe, se) for fe in sym for se in det.H[i].sym):
                det.C[i].append(join(clock, det.schedules_clock)); conflict = BLOCK; break
    if conflict == BLOCK:
        if any(lt(c, clock) for c in svlc): conflict = CLEAR
    return conflict

def update_conflict_map(maps, p, sym, clock):
    all_clear = True; queue = []; stacks = []
    for cmap in maps:
        if not cmap: continue
        base = cmap[0].addr
        queue.append((cmap, -1))
        while queue:
            cur, sn = queue.pop()
            ao = lo = so = False
            is_base = cur[0].addr == base
            for s in sym:
                if s[1] == cur[0].addr:
                    ao = True
                    if does_store(s): so = True; break
                    elif does_load(s): lo = True
            if so: cur.clear(); break
            res = CONT
            for index in range(len(cur)):
                node = cur[index]; svlc = cur[0].same_var_load_clks
                if node.det.H or node.det.C:
                    res = update_detector(p, sym, clock, node.det, svlc)
                    if res == BLOCK and ao and lt(node.det.schedules_clock, clock):
                        if not is_base: cur[0].slp_ev_clks.append(clock)
                        elif sn == -1: return BLOCK
                        if sn != -1:
                            while stacks[sn]:
                                svlc2 = list(stacks[sn][0][0][0].same_var_load_clks)
                                bmap, bidx = stacks[sn].pop()
                                if lt(bmap[bidx].det.schedules_clock, clock):
                                    if is_base:
                                        if not stacks[sn]:
                                            if not any(lt(c, clock) for c in svlc2): return BLOCK
                                    else: bmap[0].slp_ev_clks.append(clock)
                                else: break
                if lo and index == 0: node.same_var_load_clks.append(clock)
                if res != CONT: break
                if node.inherited:
                    isn = -1
                    if lo and node.addr == node.inherited[0].addr:
                        isn = sn
                        if isn == -1: isn = len(stacks); stacks.append([])
                        stacks[isn].append((cur, index))
                    queue.append((node.inherited, isn))
                if lo and node.inherited:
                    for iclk in node.inherited[0].slp_ev_clks:
                        if lt(iclk, clock) and lt(node.det.schedules_clock, clock):
                            if any(lt(c, clock) for c in svlc): res = CLEAR
                            if res == CLEAR: break
                            if is_base: return BLOCK
                            cur[0].slp_ev_clks.append(clock); res = BLOCK
        if cmap: all_clear = False
    return CLEAR if all_clear else CONT

def pop_blocked(v, maps):
    m = copy.deepcopy(maps); st = CONT
    for e in v:
        if st != CONT: break
        st = update_conflict_map(m, e.tid, e.sym, e.clock)
    return st == BLOCK

def build_lcm(E, i, j, v, load_only=True):
    if load_only and not any(is_pure_load(s) for s in E[j].sym): return []
    h = []; sc = {}; lcm = []; l = 0
    for k in range(i + 1, j + 1):
        if E[k].tid == v[l].tid:
            if E[k].schedule_head or k == j:
                if h or E[k].lcm:
                    inh = E[k].lcm if E[k].lcm else None
                    lcm.append(LNode(E[j].sym[0][1], Det(dict(sc), h, [[] for _ in h]), inh))
                    h = []
                    if len(lcm) == 1: lcm[0].second_read_clock = v[-1].clock
                sc = join(sc, E[k].clock)
            l += 1
        else:
            h.append(Slp(E[k].tid, E[k].sym, i in E[k].reversed_races))
    return lcm

def child_prefix(E, i, v):
    pre = []
    for e in E[:i]:
        n = Ev(e.tid, e.idx, e.sym); n.clock = dict(e.clock)
        n.schedule, n.schedule_head = e.schedule, e.schedule_head
        n.reversed_races = list(e.reversed_races); n.lcm = e.lcm; n.doneseqs = e.doneseqs
        pre.append(n)
    return pre + v

def explore_pop(prog, pre, end_of_ws, out, load_only=True, stats=None):
    E = free_run(prog, pre)
    compute_clocks_and_races(E, end_of_ws)
    out.append(E)
    maps = [[]]; add_conflict_map(maps[0], E[0].lcm)
    for j in range(len(E)):
        for i in sorted(E[j].races, reverse=True):
            v = wakeup_sequence(E, i, j)
            for k in range(len(maps), i + 1):
                m = copy.deepcopy(maps[k - 1])
                update_conflict_map(m, E[k - 1].tid, E[k - 1].sym, E[k - 1].clock)
                add_conflict_map(m, E[k].lcm)
                maps.append(m)
            if pop_blocked(v, maps[i]):
                if stats is not None: stats['killed'] += 1
                continue
            E[j].reversed_races.append(i)
            v[-1].lcm = build_lcm(E, i, j, v, load_only)
            explore_pop(prog, child_prefix(E, i, v), i + len(v) - 1, out, load_only, stats)

# ---------------- EPOP sleep sequences (transcription) ----------------
def sleep_wake(seqs, p, sym):
    out = []; 
    for s in seqs:
        s = list(s); conflict = False
        for k, n in enumerate(s):
            if n[0] == p:
                if len(s) == 1: return BLOCK, None
                del s[k]; break
            elif events_conflict(p, sym, n[0], n[1]): conflict = True; break
        if not conflict: out.append(s)
    return (CLEAR if not out else CONT), out

def explore_epop(prog, pre, end_of_ws, out, load_only=True, stats=None):
    E = free_run(prog, pre)
    compute_clocks_and_races(E, end_of_ws)
    out.append(E)
    byfirst = {}
    for j in range(len(E)):
        for i in E[j].races: byfirst.setdefault(i, []).append(j)
    seqs = []; idx = 0
    for i in range(len(E)):
        for j in sorted(byfirst.get(i, []), reverse=True):
            v = wakeup_sequence(E, i, j)
            while idx < i:
                if E[idx].schedule: seqs = seqs + E[idx].doneseqs
                _, seqs = sleep_wake(seqs, E[idx].tid, E[idx].sym); seqs = seqs or []
                idx += 1
            st, s2 = CONT, seqs
            for e in v:
                if st != CONT: break
                st, s2 = sleep_wake(s2, e.tid, e.sym); s2 = s2 or []
            if st == BLOCK:
                if stats is not None: stats['killed'] += 1
                continue
            child = child_prefix(E, i, v)
            child[i].doneseqs = E[i].doneseqs
            explore_epop(prog, child, i + len(v) - 1, out, load_only, stats)
            if (not load_only) or any(is_pure_load(s) for s in v[-1].sym):
                E[i].doneseqs = E[i].doneseqs + [[(e.tid, e.sym) for e in v]]

# ---------------- ground truth ----------------
def trace_key(prog, order):
    evs = []; pos = [0] * len(prog)
    for t in order:
        pos[t] += 1; evs.append((t, pos[t], prog[t][pos[t] - 1]))
    key = set()
    for a in range(len(evs)):
        for b in range(a + 1, len(evs)):
            if evs[a][0] != evs[b][0] and events_conflict(evs[a][0], evs[a][2], evs[b][0], evs[b][2]):
                key.add(((evs[a][0], evs[a][1]), (evs[b][0], evs[b][1])))
    return frozenset(key)

def all_traces(prog):
    multiset = [t for t in range(len(prog)) for _ in prog[t]]
    keys = set()
    def rec(order, rem):
        if not any(rem): keys.add(trace_key(prog, order)); return
        for t in range(len(prog)):
            if rem[t]:
                rem[t] -= 1; order.append(t); rec(order, rem); order.pop(); rem[t] += 1
    rec([], [len(th) for th in prog])
    return keys

def check(prog, algo, load_only=True):
    truth = all_traces(prog)
    out = []; stats = {'killed': 0}
    algo(prog, [], -1, out, load_only, stats)
    keys = [trace_key(prog, [e.tid for e in E]) for E in out]
    missing = truth - set(keys); dup = len(keys) - len(set(keys))
    return len(truth), len(keys), len(missing), dup

def rand_prog(rng, nthreads, nev, nvars, multi):
    prog = []
    for t in range(nthreads):
        th = []
        for _ in range(rng.randint(1, nev)):
            if multi:
                k = rng.randint(1, 2)
                xs = rng.sample(range(nvars), k)
                th.append([(rng.choice('LLS'), x) for x in xs])
            else:
                th.append([(rng.choice('LS'), rng.randrange(nvars))])
        prog.append(th)
    return prog

if __name__ == '__main__':
    mode = sys.argv[1]; multi = sys.argv[2] == 'multi'; load_only = sys.argv[3] == 'loadonly'
    N = int(sys.argv[4]); seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    algo = explore_pop if mode == 'pop' else explore_epop
    rng = random.Random(seed); bad = 0; tot = [0, 0]
    for n in range(N):
        prog = rand_prog(rng, rng.randint(2, 4), 3, 2, multi)
        if sum(map(len, prog)) > 9: continue
        t, e, miss, dup = check(prog, algo, load_only)
        tot[0] += t; tot[1] += e
        if miss or dup:
            bad += 1
            if bad <= 3: print('BAD', prog, 'traces', t, 'explored', e, 'missing', miss, 'dup', dup)
    print(mode, 'multi' if multi else 'single', 'loadonly' if load_only else 'all', 'bad', bad, 'of', N, 'traces', tot[0], 'explored', tot[1])
