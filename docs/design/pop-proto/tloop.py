import sys, random
import trust
from proto import rand_prog
trust.TM = True
sys.setrecursionlimit(120)
rng = random.Random(1); best = None
for n in range(300):
    prog = rand_prog(rng, rng.randint(2, 4), 3, 2, False)
    if sum(map(len, prog)) > 9: continue
    try:
        out = []; trust.visit(prog, trust.G(prog, [], set()), out, 'strictP-vporf')
    except RecursionError:
        if best is None or sum(map(len, prog)) < sum(map(len, best)): best = prog
print(best)
