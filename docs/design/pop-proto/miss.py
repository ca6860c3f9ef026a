import proto
from proto import *
from trace import show
prog = [[[('L', 0)], [('S', 1)], [('L', 1)]], [[('S', 0)], [('L', 1)]], [[('L', 0)], [('L', 1)]], [[('S', 1)], [('L', 0)], [('L', 1)]]]
print('with check', check(prog, explore_pop))
orig = proto.pop_blocked
proto.pop_blocked = lambda v, m: False
print('no check', check(prog, explore_pop))
proto.pop_blocked = orig
truth = all_traces(prog); out=[]; explore_pop(prog, [], -1, out)
got = {trace_key(prog,[e.tid for e in E]) for E in out}
for k in truth - got:
    # print one linearization of the missing trace
    import itertools
    def rec(order, pos):
        if all(pos[t]==len(prog[t]) for t in range(len(prog))):
            return order if trace_key(prog, order)==k else None
        for t in range(len(prog)):
            if pos[t] < len(prog[t]):
                pos[t]+=1; r=rec(order+[t], pos); pos[t]-=1
                if r: return r
    o = rec([], [0]*4); pos=[0]*4; s=[]
    for t in o: pos[t]+=1; s.append(f"T{t}.{pos[t]}{prog[t][pos[t]-1][0][0]}{prog[t][pos[t]-1][0][1]}")
    print('MISSING', ' '.join(s))
