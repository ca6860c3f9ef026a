"""Straight-line programs with blocking operations, explored by trustcf.py's
model (which runs any program of its instructions): locks ('locks': critical
sections, nested pairs in either order, plain accesses) or locks, mailboxes
and joins mixed ('all'). A blocked acquire, receive or join is a blocked
attempt: an event that only reads, revisited by the release, send or exit
that enables it. `noorder` drops the rule that keeps two blocked attempts of
one object in stamp order (their order is no part of the trace).

  python3 trustblock.py locks|all N seed max-events items [noorder]"""
import random, sys
import trustcf

def rand_prog(rng, nthreads, items, locks_only):
    prog = [[] for _ in range(nthreads)]
    joined = set()
    for t in range(nthreads):
        th = prog[t]
        for _ in range(rng.randint(1, items)):
            r = rng.random(); x = rng.randrange(2)
            if locks_only: r = r * 0.55
            if r < 0.2:
                th.append(rng.choice([('L', x, 0), ('S', x, 1)]))
            elif r < 0.45:
                m = rng.choice((10, 11))
                th.append(('A', m))
                if rng.random() < 0.5: th.append(rng.choice([('L', x, 0), ('S', x, 1)]))
                th.append(('R', m))
            elif r < 0.55:
                m1, m2 = rng.sample((10, 11), 2)
                th += [('A', m1), ('A', m2), ('R', m2), ('R', m1)]
            elif r < 0.75: th.append(('Q', rng.choice((20, 21)), 0))
            elif r < 0.9: th.append(('V', rng.choice((20, 21)), 0))
            else:
                u = rng.choice([u for u in range(nthreads) if u != t])
                th.append(('J', 30 + u)); joined.add(u)
    for u in joined: prog[u].append(('X', 30 + u))
    return prog

if __name__ == '__main__':
    mode, N, seed, limit, items = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    trustcf.STAMP_ORDER = 'noorder' not in sys.argv[6:]
    trustcf.SKIP_DISABLED = 'skip' in sys.argv[6:]
    trustcf.SKIP_JOINS = 'skipjoins' in sys.argv[6:]
    trustcf.SKIP_RECEIVES = 'skiprecv' in sys.argv[6:]
    make = lambda rng: rand_prog(rng, rng.randint(2, 3), items, mode == 'locks')
    trustcf.run_many(make, N, seed, limit, 'trustblock ' + mode)
