import random, sys
import proto
from proto import *
proto.pop_blocked = lambda v, maps: False
multi = sys.argv[1]=='multi'; N=int(sys.argv[2]); seed=int(sys.argv[3])
rng = random.Random(seed); bad=0; miss_tot=0; dup_tot=0; tot=0; ex=None
for n in range(N):
    prog = rand_prog(rng, rng.randint(2,4), 3, 2, multi)
    if sum(map(len,prog)) > 9: continue
    t,e,miss,dup = check(prog, proto.explore_pop, True)
    tot+=t; miss_tot+=miss; dup_tot+=dup
    if miss and (ex is None or sum(map(len,prog)) < sum(map(len,ex))): ex = prog
print('noblock', sys.argv[1], 'traces', tot, 'missing', miss_tot, 'dups', dup_tot, 'smallest-missing', ex)
