"""Coarsening: objects that one event touches together become one object
(union-find over the program), so every event touches one object; the
TruSt-style model is exact for that coarser dependence. How many more
traces than the true Mazurkiewicz count does it explore?"""
import sys, random, trust
from proto import rand_prog, all_traces
def coarsen(prog):
    parent = {}
    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x: x = parent[x]
        return x
    for th in prog:
        for ev in th:
            objs = [o for _, o in ev]
            for o in objs[1:]: parent[find(o)] = find(objs[0])
    out = []
    for th in prog:
        t = []
        for ev in th:
            k = 'L' if all(k == 'L' for k, _ in ev) else 'U'
            t.append([(k, find(ev[0][1]))])
        out.append(t)
    return out
rng = random.Random(int(sys.argv[2])); fine = coarse_n = 0; bad = 0
for n in range(int(sys.argv[1])):
    prog = rand_prog(rng, rng.randint(2, 4), 3, 3, True)
    if sum(map(len, prog)) > 9: continue
    truth = len(all_traces(prog))
    c = coarsen(prog)
    t, e, miss, dup = trust.check(c, 'strictP')
    if miss or dup: bad += 1
    fine += truth; coarse_n += e
print('programs with 1-2 of 3 objects per event: true traces', fine, 'coarse traces explored', coarse_n, 'ratio %.2f' % (coarse_n / fine), 'inexact on coarse', bad)
