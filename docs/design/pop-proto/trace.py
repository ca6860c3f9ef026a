import sys
from proto import *
def show(E): return ' '.join(f"T{e.tid}.{e.idx}{''.join(s[0]+str(s[1]) for s in e.sym)}{'*' if e.schedule else ''}{'^' if e.schedule_head else ''}" for e in E)
if __name__=="__main__":
  prog = eval(sys.argv[2]); algo = explore_pop if sys.argv[1]=='pop' else explore_epop
  out=[]; algo(prog, [], -1, out, True, {'killed':0})
  seen={}
  for E in out:
      k=trace_key(prog,[e.tid for e in E]); seen[k]=seen.get(k,0)+1
      print(show(E), 'DUP' if seen[k]>1 else '')
