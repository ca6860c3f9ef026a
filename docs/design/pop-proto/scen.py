import proto, joins
from proto import *
from trace import show
prog = [[[('J',2)],[('L',0)]], [[('S',0)]], [[('S',1)]], [[('L',1)],[('L',0)]]]
out=[]; proto.explore_pop(prog, [], -1, out, True, {'killed':0})
seen={}
for E in out:
    k=trace_key(prog,[e.tid for e in E]); seen[k]=seen.get(k,0)+1
    print(show(E), 'DUP' if seen[k]>1 else '')
print(len(proto.all_traces(prog)), 'traces;', len(out), 'explored')
