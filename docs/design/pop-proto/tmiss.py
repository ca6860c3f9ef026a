import sys, itertools
from trust import *
from proto import trace_key
prog = eval(sys.argv[1]); mode = sys.argv[2] if len(sys.argv) > 2 else 'strictP'
out = []; visit(prog, G(prog, [], set()), out, mode)
got = {}
for g in out:
    k = trace_key(prog, [e[0] for e in topo(g)]); got[k] = g
# all linearizations grouped by key
ms = [t for t in range(len(prog)) for _ in prog[t]]
lin = {}
for perm in set(itertools.permutations(ms)):
    k = trace_key(prog, list(perm)); lin.setdefault(k, perm)
for k, perm in lin.items():
    if k not in got:
        print('MISSING', perm, sorted(k))
print(len(lin), 'traces', len(out), 'explored')
for g in out: print('  got', g.evs, sorted(g.before))
