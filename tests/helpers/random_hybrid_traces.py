"""Random valid hybrid MPI + OpenMP traces built with TraceBuilder, for comparing
the fast replay with the reference one.  Every location's clock only moves
forward; messages, collectives, teams and locks are generated consistently
(each message is sent and received, every rank of a comm joins each collective)."""

from __future__ import annotations

import random

import tracefmt
from tracefmt.layout import LockKind


def random_trace(seed: int, n_ranks: int = 3, n_threads: int = 2, steps: int = 25):
    return random_builder(seed, n_ranks, n_threads, steps).build()


def random_builder(seed: int, n_ranks: int = 3, n_threads: int = 2, steps: int = 25) -> tracefmt.TraceBuilder:
    """The TraceBuilder of :func:`random_trace` (call ``.write(path)`` for a file)."""
    rng = random.Random(seed)
    b = tracefmt.TraceBuilder()
    locs = {(r, t): b.location(rank=r, thread=t) for r in range(n_ranks) for t in range(n_threads)}
    clock = {k: 0.0 for k in locs}
    # distinct times everywhere (ties in first-visit order would make the tree order arbitrary)
    tick = iter(range(1, 10**9))

    def now(key, spread=1.0):
        clock[key] += rng.random() * spread + next(tick) * 1e-9
        return clock[key]

    sub = b.comm(list(range(0, n_ranks, 2)), name="even") if n_ranks > 2 else None
    funcs = ["solve", "exchange", "compute", "io"]
    crit = b.lock("crit_a", LockKind.OMP_CRITICAL)
    omp_lock = b.lock("lock_b", LockKind.OMP_LOCK)
    for r in range(n_ranks):
        b.enter(locs[(r, 0)], now((r, 0)), "main")
    team_no = {r: 0 for r in range(n_ranks)}
    req_no = {k: 0 for k in locs}
    for _ in range(steps):
        kind = rng.choice(["msg", "msg", "nbmsg", "coll", "subcoll", "omp", "nest"])
        if kind in ("msg", "nbmsg"):
            src, dst = rng.sample(range(n_ranks), 2)
            tag = rng.randint(0, 1)
            nbytes = rng.choice([0, 8, 1024])
            s, d = locs[(src, 0)], locs[(dst, 0)]
            f = rng.choice(funcs)
            b.enter(s, now((src, 0)), f)
            b.enter(d, now((dst, 0)), f)
            if kind == "msg":
                t = now((src, 0))
                b.enter(s, t, "MPI_Send"); b.send(s, t, dest=dst, tag=tag, nbytes=nbytes); b.exit(s, now((src, 0)))
                t = now((dst, 0))
                b.enter(d, t, "MPI_Recv"); b.recv(d, now((dst, 0)), source=src, tag=tag, nbytes=nbytes)
                b.exit(d, now((dst, 0)))
            else:
                req_no[(src, 0)] += 1
                rs = req_no[(src, 0)]
                t = now((src, 0))
                b.enter(s, t, "MPI_Isend"); b.send(s, t, dest=dst, tag=tag, nbytes=nbytes, request=rs)
                b.exit(s, now((src, 0)))
                req_no[(dst, 0)] += 1
                rr = req_no[(dst, 0)]
                b.enter(d, now((dst, 0)), "MPI_Irecv"); b.recv_request(d, now((dst, 0)), rr, source=src, tag=tag)
                b.exit(d, now((dst, 0)))
                b.enter(s, now((src, 0)), "MPI_Wait"); b.send_complete(s, now((src, 0)), rs); b.exit(s, now((src, 0)))
                b.enter(d, now((dst, 0)), "MPI_Waitall"); b.recv(d, now((dst, 0)), source=src, tag=tag,
                                                                  nbytes=nbytes, request=rr)
                b.exit(d, now((dst, 0)))
            b.exit(s, now((src, 0)))
            b.exit(d, now((dst, 0)))
        elif kind in ("coll", "subcoll"):
            if kind == "subcoll" and sub is None:
                continue
            ranks = range(n_ranks) if kind == "coll" else range(0, n_ranks, 2)
            op = rng.choice(["MPI_Barrier", "MPI_Allreduce", "MPI_Bcast", "MPI_Reduce"])
            root = None if op in ("MPI_Barrier", "MPI_Allreduce") else min(ranks)
            for r in ranks:
                key = (r, 0)
                t0 = now(key)
                b.collective(locs[key], t0, now(key), op, comm=None if kind == "coll" else sub, root=root,
                             sent=0 if op == "MPI_Barrier" else 8, recvd=0 if op == "MPI_Barrier" else 8)
        else:
            r = rng.randrange(n_ranks)
            team_no[r] += 1
            team = team_no[r]
            m = (r, 0)
            f = rng.choice(funcs)
            b.enter(locs[m], now(m), f)
            tf = now(m)
            b.fork(locs[m], tf, team, n_threads)
            for t in range(n_threads):
                clock[(r, t)] = max(clock[(r, t)], tf)
            for t in range(n_threads):
                k = (r, t)
                b.enter(locs[k], now(k), "!$omp parallel @x.c:1", team=team, thread_num=t)
                if kind == "nest":
                    b.enter(locs[k], now(k), "kernel")
                if rng.random() < 0.7:
                    b.enter(locs[k], now(k), "!$omp critical")
                    b.acquire(locs[k], now(k), crit)
                    b.enter(locs[k], now(k), "!$omp critical sblock"); b.exit(locs[k], now(k))
                    b.release(locs[k], now(k), crit)
                    b.exit(locs[k], now(k))
                if rng.random() < 0.5:
                    b.enter(locs[k], now(k), "omp_set_lock"); b.acquire(locs[k], now(k), omp_lock)
                    b.exit(locs[k], now(k))
                    b.enter(locs[k], now(k), "omp_unset_lock"); b.release(locs[k], now(k), omp_lock)
                    b.exit(locs[k], now(k))
                if kind == "nest":
                    b.exit(locs[k], now(k))
                b.barrier(locs[k], now(k), now(k))
                b.barrier(locs[k], now(k), now(k), implicit=True)
                b.exit(locs[k], now(k))
            tj = max(clock[(r, t)] for t in range(n_threads)) + 0.01
            clock[m] = tj
            b.join(locs[m], tj, team, n_threads)
            b.exit(locs[m], now(m))
    for r in range(n_ranks):
        b.exit(locs[(r, 0)], now((r, 0)))
    return b
