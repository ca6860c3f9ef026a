import random, proto, copy
from proto import *
maxd = [0]
def explore(prog, pre, eow, out, d=0):
    maxd[0] = max(maxd[0], d)
    E = free_run(prog, pre); compute_clocks_and_races(E, eow); out.append(E)
    maps = [[]]; add_conflict_map(maps[0], E[0].lcm)
    for j in range(len(E)):
        for i in sorted(E[j].races, reverse=True):
            v = wakeup_sequence(E, i, j)
            for k in range(len(maps), i + 1):
                m = copy.deepcopy(maps[k-1]); update_conflict_map(m, E[k-1].tid, E[k-1].sym, E[k-1].clock)
                add_conflict_map(m, E[k].lcm); maps.append(m)
            if pop_blocked(v, maps[i]): continue
            E[j].reversed_races.append(i); v[-1].lcm = build_lcm(E, i, j, v)
            explore(prog, child_prefix(E, i, v), i + len(v) - 1, out, d+1)
rng = random.Random(4)
for n in [6, 8, 10, 12]:
    worst = (0, 0)
    for _ in range(40):
        prog = [[[(rng.choice('LS'), rng.randrange(2))] for _ in range(n//3)] for t in range(3)]
        maxd[0] = 0; out = []; explore(prog, [], -1, out)
        worst = max(worst, (maxd[0], len(out)))
    print('events', 3*(n//3), 'max recursion depth', worst[0], 'executions', worst[1])
