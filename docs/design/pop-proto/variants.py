import random, sys
from proto import *
import proto

def explore_pop_upfront(prog, pre, end_of_ws, out, load_only=True, stats=None, rng=None):
    """Decide every reversal of E first (same order as nidhugg), then explore the
    children in a random order: models parallel/any-order sibling exploration."""
    E = free_run(prog, pre)
    compute_clocks_and_races(E, end_of_ws)
    out.append(E)
    maps = [[]]; add_conflict_map(maps[0], E[0].lcm)
    children = []
    for j in range(len(E)):
        for i in sorted(E[j].races, reverse=True):
            v = wakeup_sequence(E, i, j)
            for k in range(len(maps), i + 1):
                m = copy.deepcopy(maps[k - 1])
                update_conflict_map(m, E[k - 1].tid, E[k - 1].sym, E[k - 1].clock)
                add_conflict_map(m, E[k].lcm)
                maps.append(m)
            if pop_blocked(v, maps[i]): continue
            E[j].reversed_races.append(i)
            v[-1].lcm = build_lcm(E, i, j, v, load_only)
            children.append((child_prefix(E, i, v), i + len(v) - 1))
    rng.shuffle(children)
    for c, eow in children:
        explore_pop_upfront(prog, c, eow, out, load_only, stats, rng)

def explore_epop_shared(prog, pre, end_of_ws, out, load_only=True, stats=None):
    """EPOP with C++-like sharing: positions < i are the SAME objects as the parent's."""
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
            if st == BLOCK: continue
            child = E[:i] + v          # shared objects, like HistoryStep sharing
            child[i].doneseqs = E[i].doneseqs
            saved = [(e.races) for e in E[:i]]
            explore_epop_shared(prog, child, i + len(v) - 1, out, load_only, stats)
            E[i].doneseqs = child[i].doneseqs + ([[(e.tid, e.sym) for e in v]]
                              if (not load_only) or any(is_pure_load(s) for s in v[-1].sym) else [])

if __name__ == '__main__':
    which = sys.argv[1]; multi = sys.argv[2]=='multi'; load_only = sys.argv[3]=='loadonly'; N=int(sys.argv[4]); seed=int(sys.argv[5])
    rng = random.Random(seed); bad=0; miss_tot=0; dup_tot=0; tot=0
    for n in range(N):
        prog = rand_prog(rng, rng.randint(2,4), 3, 2, multi)
        if sum(map(len,prog)) > 9: continue
        if which == 'upfront':
            r2 = random.Random(n)
            algo = lambda p, pre, eow, out, lo, st: explore_pop_upfront(p, pre, eow, out, lo, st, r2)
        elif which == 'epopshared': algo = explore_epop_shared
        else: algo = explore_pop
        t,e,miss,dup = check(prog, algo, load_only)
        tot += t; miss_tot += miss; dup_tot += dup
        if miss or dup: bad += 1
    print(which, 'multi' if multi else 'single', 'loadonly' if load_only else 'all', 'bad', bad, 'of', N, 'traces', tot, 'missing', miss_tot, 'dups', dup_tot)
