"""``Pattern.scope`` of every built-in, checked against the serial analysis.

A share of whole processes (analyzer.distributed) computes the "location" patterns on a context that has
global location ids, only its own columns of the dense arrays and only the table rows that touch its
locations (plus the halo rows its wait states need).  Here such contexts are built the slow obvious way,
by restricting the serial context (:func:`share_context`), and every built-in with scope "location" must
give the serial values in its owned columns bit for bit, for 1 to 4 shares of 5 processes.  A "row"
pattern must give the serial values from the full results of its ``depends`` alone.  A built-in that
fails this stays "global" (the default): this test is what decides each built-in's scope.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest

import tracefmt
from tracefmt.layout import FileIoFlag, LockKind
from analyzer.distributed.share_patterns import compute_owned, scatter_owned, split_by_scope
from analyzer.replay import partition, replay
from patterns import Pattern, PatternError, Severity, load_patterns, validate_pattern
from patterns.api import compute_results
from patterns.instances import mpi_operations
from benchmarks.analysis import build_trace
from benchmarks.rma import rma_trace
from random_hybrid_traces import random_trace  # tests/helpers (pytest's pythonpath)
from tracefmt.dense import dense_view
from tracefmt.detect import open_any

#: the tables no share builds: only "global" patterns (delay, critical path, POP) read them
NOT_PER_SHARE = {"time_segments", "sync_points"}


def _renumber(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``values`` (ids among ``keys``, -1 = none) as positions in ``keys``; ids not in ``keys`` -> -1."""
    order = np.argsort(keys, kind="stable")
    pos = np.searchsorted(keys[order], values)
    pos = np.minimum(pos, max(len(keys) - 1, 0))
    found = (len(keys) > 0) & (values >= 0)
    if len(keys):
        found &= keys[order][pos] == values
    return np.where(found, order[pos] if len(keys) else -1, -1).astype(values.dtype)


def _collective_rows(t, owned: np.ndarray, scans: np.ndarray, comms: dict) -> np.ndarray:
    """The collectives rows a share holds: its own, and of each instance with an own member, per region
    called in it (mismatched calls stay apart), one row holding each extreme: the latest enter of all
    members and of the sending ones, the earliest exit of all and of those that send and receive, the
    earliest enter of a sending non-root; every root row; of an MPI_Scan/Exscan (``scans``: by region id)
    the members that transfer data and enter later than every such member before them in comm-local rank
    order (what Early Scan takes the maximum of)."""
    n = len(t["loc"])
    keep = np.isin(t["loc"], owned)
    inst = np.asarray(t["instance"])
    enter, exit_, region = np.asarray(t["enter"]), np.asarray(t["exit"]), np.asarray(t["region"])
    sent, recvd = np.asarray(t["sent"]) > 0, np.asarray(t["recvd"]) > 0
    root = np.asarray(t["rank"]) == np.asarray(t["root"])
    every = np.ones(n, bool)
    for i in np.unique(inst[keep]):
        for reg in np.unique(region[inst == i]):
            rows = np.flatnonzero((inst == i) & (region == reg))

            def extreme(values, sel, pick):  # one row holding it (of ties, the first) is enough
                cand = rows[sel[rows]]
                if len(cand):
                    keep[cand[pick(values[cand])]] = True

            extreme(enter, every, np.argmax)
            extreme(enter, sent, np.argmax)
            extreme(exit_, every, np.argmin)
            extreme(exit_, sent & recvd, np.argmin)
            extreme(enter, ~root & sent, np.argmin)
            keep[rows[root[rows]]] = True
            if reg >= 0 and scans[reg]:
                act = rows[sent[rows] | recvd[rows]]
                ranks = [comms[int(c)].ranks if int(c) in comms else () for c in t["comm"][act]]
                local = [rk.index(int(r)) if int(r) in rk else int(r) for rk, r in zip(ranks, t["rank"][act])]
                latest = -np.inf
                for row in act[np.lexsort((t["loc"][act], local))]:
                    if enter[row] > latest:
                        keep[row] = True
                    latest = max(latest, enter[row])
    return keep


def restrict_tables(tables: dict, owned: np.ndarray, scans: np.ndarray, comms: dict) -> dict:
    """The tables a share owning ``owned`` holds, from the serial ones (in the serial row order):

    * messages: rows with the sender or the receiver owned;
    * collectives: own rows, plus the rows holding an extreme of an instance with an owned member
      (:func:`_collective_rows`);
    * mpi_rma_ops: all rows;
    * every other table: rows whose ``*loc`` columns name an owned location; the dense keys of the
      process-local OpenMP tables (team, barrier instance) numbered again over the rows kept, as the
      share's own builders number them;
    * time_segments, sync_points: not built.
    """
    out = {}
    for name, t in tables.items():
        if name in NOT_PER_SHARE:
            continue
        n = len(next(iter(t.values()))) if len(t) else 0
        if name == "mpi_rma_ops":
            keep = np.ones(n, bool)
        elif name == "collectives":
            keep = _collective_rows(t, owned, scans, comms)
        else:
            keep = np.zeros(n, bool)
            for col in t:
                if col.endswith("loc"):
                    keep |= np.isin(t[col], owned)
        out[name] = type(t)({k: v[keep] for k, v in t.items()})
    if "omp_teams" in out:
        old = np.asarray(out["omp_teams"]["team"])
        for tname, col in (("omp_teams", "team"), ("omp_teams", "parent_team"), ("omp_team_members", "team"),
                           ("omp_barriers", "team")):
            if tname in out:
                out[tname][col] = _renumber(np.asarray(out[tname][col]), old)
    if "omp_barriers" in out and len(out["omp_barriers"]["instance"]):
        inst = out["omp_barriers"]["instance"]
        valid = inst >= 0
        dense = np.full(len(inst), -1, inst.dtype)
        dense[valid] = np.unique(inst[valid], return_inverse=True)[1]
        out["omp_barriers"]["instance"] = dense
    return out


def share_context(ctx, owned):
    """The context of the share owning the global locations ``owned``: built from the serial ``ctx``."""
    owned = np.asarray(sorted(owned), np.int64)
    foreign = np.setdiff1d(np.arange(ctx.n_locations), owned)
    scans = np.array([op in ("scan", "exscan") for op in mpi_operations(ctx)], bool)

    def cols(a):
        a = np.array(a, copy=True)
        a[:, foreign] = 0
        return a

    return dataclasses.replace(
        ctx, visits=cols(ctx.visits), excl_time=cols(ctx.excl_time), incl_time=cols(ctx.incl_time),
        counters={k: cols(v) for k, v in ctx.counters.items()},
        tables=restrict_tables(ctx.tables, owned, scans, ctx.trace.defs.comms),
        results={}, problems=[], derived={}, current_pattern=None, owned=owned)


def builtins():
    return load_patterns(None, plugins=False)


def mpi_mix(seed: int, n_ranks: int = 5, steps: int = 40):
    """MPI only: scans, broadcasts and reductions (of random roots) on two communicators (one in reversed
    rank order), zero-byte synchronous sends received late, pairs of messages from one source received in
    the other order, MPI file writes and collective reads, all at random times."""
    rng = random.Random(seed)
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(n_ranks)]
    clock = [0.0] * n_ranks
    odd = b.comm(list(range(n_ranks - 1, -1, -2)), name="odd_reversed")
    req = [0] * n_ranks

    def at(r, dt=None):
        clock[r] += (rng.random() if dt is None else dt) + 1e-6
        return clock[r]

    for r in range(n_ranks):
        b.enter(locs[r], at(r), "main")
    for _ in range(steps):
        kind = rng.choice(["coll", "coll", "ssend0", "pair", "pair", "file"])
        if kind == "coll":
            comm = rng.choice([None, odd])
            ranks = range(n_ranks) if comm is None else range(n_ranks - 1, -1, -2)
            op = rng.choice(["MPI_Scan", "MPI_Exscan", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce"])
            root = rng.choice(list(ranks)) if op in ("MPI_Bcast", "MPI_Reduce") else None
            enters = {r: at(r) for r in ranks}
            out = max(enters.values()) + rng.random()
            for r in ranks:
                clock[r] = out + rng.random() * 0.1
                if root is None:
                    sent, recvd = 8, 8 * rng.randint(0, 1)
                else:  # the root of a broadcast only sends, of a reduction only receives
                    sent = 0 if (r == root) == (op == "MPI_Reduce") else 8
                    recvd = 8 - sent
                b.collective(locs[r], enters[r], clock[r], op, comm=comm, root=root, sent=sent, recvd=recvd)
        elif kind == "file":  # one rank writes on its own, then all read together
            w = rng.randrange(n_ranks)
            b.enter(locs[w], at(w), "MPI_File_write_at")
            b.file_io(locs[w], at(w), rng.randrange(1, 1 << 16), FileIoFlag.WRITE)
            b.exit(locs[w], at(w))
            enters = {r: at(r) for r in range(n_ranks)}
            out = max(enters.values()) + rng.random()
            for r in range(n_ranks):
                b.enter(locs[r], enters[r], "MPI_File_read_all")
                b.file_io(locs[r], out, rng.randrange(1, 1 << 16), FileIoFlag.READ | FileIoFlag.COLLECTIVE)
                clock[r] = out + 0.01
                b.exit(locs[r], clock[r])
        elif kind == "ssend0":
            s, d = rng.sample(range(n_ranks), 2)
            ts = at(s)
            td = max(at(d), ts + rng.random())
            clock[d] = td
            b.enter(locs[s], ts, "MPI_Ssend"); b.send(locs[s], ts, dest=d, tag=5, nbytes=0)
            b.enter(locs[d], td, "MPI_Recv"); b.recv(locs[d], at(d), source=s, tag=5, nbytes=0)
            b.exit(locs[d], at(d))
            clock[s] = max(clock[s], clock[d])
            b.exit(locs[s], at(s))
        else:
            s, d = rng.sample(range(n_ranks), 2)
            nbytes = rng.choice([0, 16])
            t = max(clock[s], clock[d])
            clock[s] = clock[d] = t
            td = at(d, 0.1)  # the receiver posts both first, then waits before the sends
            req[d] += 2
            ra, rb = req[d] - 1, req[d]
            b.enter(locs[d], td, "MPI_Irecv"); b.recv_request(locs[d], at(d, 0.01), ra, source=s, tag=1)
            b.exit(locs[d], at(d, 0.01))
            b.enter(locs[d], at(d, 0.01), "MPI_Irecv"); b.recv_request(locs[d], at(d, 0.01), rb, source=s, tag=0)
            b.exit(locs[d], at(d, 0.01))
            wait_enter = at(d, 0.01)
            clock[s] = max(clock[s], wait_enter)
            req[s] += 2
            sa, sb = req[s] - 1, req[s]
            t0 = at(s)
            b.enter(locs[s], t0, "MPI_Isend"); b.send(locs[s], t0, dest=d, tag=0, nbytes=nbytes, request=sa)
            b.exit(locs[s], at(s, 0.01))
            t1 = at(s)
            b.enter(locs[s], t1, "MPI_Isend"); b.send(locs[s], t1, dest=d, tag=1, nbytes=nbytes, request=sb)
            b.exit(locs[s], at(s, 0.01))
            b.enter(locs[s], at(s, 0.01), "MPI_Waitall")
            b.send_complete(locs[s], at(s, 0.01), sa); b.send_complete(locs[s], at(s, 0.01), sb)
            b.exit(locs[s], at(s, 0.01))
            clock[d] = max(clock[d], t1)
            b.enter(locs[d], wait_enter, "MPI_Wait")
            b.recv(locs[d], at(d, 0.01), source=s, tag=1, nbytes=nbytes, request=ra)
            b.exit(locs[d], at(d, 0.01))
            b.enter(locs[d], at(d, 0.01), "MPI_Wait")
            b.recv(locs[d], at(d, 0.01), source=s, tag=0, nbytes=nbytes, request=rb)
            b.exit(locs[d], at(d, 0.01))
    for r in range(n_ranks):
        b.exit(locs[r], at(r))
    return b.build()


def rma_late_posts(seed: int, n_ranks: int = 5, epochs: int = 4):
    """General active target epochs on one window, every rank exposing to the previous one and accessing
    the next: the posts at random times, so transfers often begin before their target's post."""
    from tracefmt.layout import RmaSync

    rng = random.Random(seed)
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(n_ranks)]
    w = b.window()
    for loc in locs:
        b.enter(loc, 0.0, "main")
        b.rma_call(loc, 0.1, 0.2, "MPI_Win_create", w, RmaSync.CREATE)
    t = 1.0
    for _ in range(epochs):
        post = [t + rng.random() for _ in range(n_ranks)]
        ends = []
        for r in range(n_ranks):
            nxt, prv = (r + 1) % n_ranks, (r - 1) % n_ranks
            p = post[r]
            b.rma_call(locs[r], p, p + 0.01, "MPI_Win_post", w, RmaSync.POST, group=[prv])
            b.rma_call(locs[r], p + 0.02, p + 0.03, "MPI_Win_start", w, RmaSync.START, group=[nxt])
            e = p + 0.04
            x = max(e, post[nxt] + 0.01) + 0.1
            b.enter(locs[r], e, "MPI_Put")
            b.rma_put(locs[r], e + 0.001, w, nxt, 64)
            b.exit(locs[r], x)
            b.rma_call(locs[r], x + 0.01, x + 0.02, "MPI_Win_complete", w, RmaSync.COMPLETE, group=[nxt])
            ends.append(x + 0.03)
        t = max(ends) + 0.1
        for r in range(n_ranks):
            b.rma_call(locs[r], ends[r], t, "MPI_Win_wait", w, RmaSync.WAIT, group=[(r - 1) % n_ranks])
        t += 0.1
    for loc in locs:
        b.rma_call(loc, t, t + 0.5, "MPI_Win_free", w, RmaSync.FREE)
        b.exit(loc, t + 1.0)
    return b.build()


# OpenMP constructs the reason patterns (patterns/reasons.py) look at, as in tests/ats/test_reasons.py
R_PAR, R_PAR_BARRIER = "!$omp parallel @r.c:1", "!$omp ibarrier @r.c:1"
R_SEC, R_SEC_BARRIER = "!$omp sections @r.c:2", "!$omp ibarrier @r.c:2"
R_SINGLE, R_SINGLE_BODY, R_SINGLE_BARRIER = "!$omp single @r.c:3", "!$omp single sblock @r.c:3", "!$omp ibarrier @r.c:3"
R_LOOP, R_LOOP_BARRIER = "!$omp for @r.c:4", "!$omp ibarrier @r.c:4"
R_MASTER, R_BARRIER = "!$omp master @r.c:5", "!$omp barrier @r.c:6"
R_ORDERED_LOOP, R_ORDERED_LOOP_BARRIER = "!$omp for @r.c:7", "!$omp ibarrier @r.c:7"
R_ORDERED, R_ORDERED_BODY = "!$omp ordered @r.c:8", "!$omp ordered sblock @r.c:8"
R_CRIT_LOOP, R_CRIT_LOOP_BARRIER = "!$omp for @r.c:9", "!$omp ibarrier @r.c:9"
R_CRIT, R_CRIT_BODY = "!$omp critical (c)", "!$omp critical sblock (c)"
R_ATOMIC = "!$omp atomic @r.c:10"
R_NOWAIT_LOOP = "!$omp for @r.c:11"
R_FLUSH = "!$omp flush @r.c:12"


def omp_reasons_trace(seed: int, n_ranks: int = 5, n_threads: int = 3):
    """Every process runs one parallel region with a random sequence of sections, singles, loops, master
    blocks before a barrier, ordered and critical blocks in loops (serialized in some processes, not in
    others), atomics (frequent on some threads), lock rounds of all threads or of pairs, POSIX mutex and
    condition waits, flushes, and maybe a nowait loop right before the region's end, all of random lengths."""
    rng = random.Random(seed)
    b = tracefmt.TraceBuilder()
    crit = b.lock("c", LockKind.OMP_CRITICAL)
    api_lock = b.lock("l", LockKind.OMP_LOCK)
    p_mutex = b.lock("m", LockKind.PTHREAD_MUTEX)
    dur = (0.125, 0.25, 0.5, 1.0)

    def work(loc, t0, t1, name="do_work"):
        if t1 > t0:
            b.enter(loc, t0, name)
            b.exit(loc, t1, name)

    def barrier(locs, name, enters):
        leave = max(enters)
        for loc, t in zip(locs, enters):
            b.enter(loc, t, name)
            b.omp_coll_exit(loc, leave, name)
        return leave

    def sections(locs, t):
        mine = [[rng.choice(dur) for _ in range(rng.randint(0, 2))] for _ in locs]
        mine[0] = mine[0] or [1.0]
        ends = [t + sum(m) for m in mine]
        for loc, m in zip(locs, mine):
            b.enter(loc, t, R_SEC)
            now = t
            for d in m:
                work(loc, now, now + d)
                now += d
        leave = barrier(locs, R_SEC_BARRIER, ends)
        for loc in locs:
            b.exit(loc, leave, R_SEC)
        return leave

    def single(locs, t):
        enters = [t + rng.choice(dur) for _ in locs]
        who = rng.randrange(len(locs))
        arrive = list(enters)
        arrive[who] += rng.choice(dur)
        for i, loc in enumerate(locs):
            b.enter(loc, enters[i], R_SINGLE)
            if i == who:
                work(loc, enters[i], arrive[i], R_SINGLE_BODY)
        leave = barrier(locs, R_SINGLE_BARRIER, arrive)
        for loc in locs:
            b.exit(loc, leave, R_SINGLE)
        return leave

    def loop(locs, t):
        ends = [t + rng.choice(dur) for _ in locs]
        for loc, e in zip(locs, ends):
            b.enter(loc, t, R_LOOP)
            work(loc, t, e)
        leave = barrier(locs, R_LOOP_BARRIER, ends)
        for loc in locs:
            b.exit(loc, leave, R_LOOP)
        return leave

    def master(locs, t):
        ends = [t + rng.choice(dur) for _ in locs]
        b.enter(locs[0], t, R_MASTER)
        work(locs[0], t, ends[0])
        b.exit(locs[0], ends[0], R_MASTER)
        for loc, e in zip(locs[1:], ends[1:]):
            work(loc, t, e)
        return barrier(locs, R_BARRIER, ends)

    def ordered(locs, t):
        pre = [rng.choice((0.0, 0.0, 0.5, 2.0)) for _ in locs]
        body = rng.choice(dur)
        cur, released = [t] * len(locs), t
        for loc in locs:
            b.enter(loc, t, R_ORDERED_LOOP)
        for i in range(2 * len(locs)):
            k = i % len(locs)
            work(locs[k], cur[k], cur[k] + pre[k])
            ready = cur[k] + pre[k]
            start = max(ready, released)
            b.enter(locs[k], ready, R_ORDERED)
            work(locs[k], start, start + body, R_ORDERED_BODY)
            b.exit(locs[k], start + body, R_ORDERED)
            cur[k] = released = start + body
        leave = barrier(locs, R_ORDERED_LOOP_BARRIER, cur)
        for loc in locs:
            b.exit(loc, leave, R_ORDERED_LOOP)
        return leave

    def critical(locs, t):
        pre, body = rng.choice((0.0, 0.0, 2.0)), rng.choice(dur)
        cur, free = [t] * len(locs), t
        for loc in locs:
            b.enter(loc, t, R_CRIT_LOOP)
        for _ in range(2):
            for k, loc in enumerate(locs):
                work(loc, cur[k], cur[k] + pre)
                ready = cur[k] + pre
                got = max(ready, free)
                b.enter(loc, ready, R_CRIT)
                b.acquire(loc, got, crit)
                work(loc, got, got + body, R_CRIT_BODY)
                b.release(loc, got + body, crit)
                b.exit(loc, got + body, R_CRIT)
                cur[k] = free = got + body
        leave = barrier(locs, R_CRIT_LOOP_BARRIER, cur)
        for loc in locs:
            b.exit(loc, leave, R_CRIT_LOOP)
        return leave

    def atomics(locs, t):
        counts = [rng.choice((0, 2, 150, 250)) for _ in locs]
        span = max(counts) * 50e-6 + 1e-3
        for loc, n in zip(locs, counts):
            b.enter(loc, t, "update")
            for k in range(n):
                work(loc, t + k * 50e-6, t + k * 50e-6 + 25e-6, R_ATOMIC)
            b.exit(loc, t + span, "update")
        return barrier(locs, R_BARRIER, [t + span] * len(locs))

    def lock_round(locs, t):
        users = rng.sample(range(len(locs)), rng.choice((2, len(locs))))
        hold, free = rng.choice(dur), t
        ends = [t] * len(locs)
        for k in users:
            loc = locs[k]
            b.enter(loc, t, "omp_set_lock")
            b.acquire(loc, free, api_lock)
            b.exit(loc, free, "omp_set_lock")
            work(loc, free, free + hold)
            b.enter(loc, free + hold, "omp_unset_lock")
            b.release(loc, free + hold, api_lock)
            b.exit(loc, free + hold, "omp_unset_lock")
            free += hold
            ends[k] = free
        return barrier(locs, R_BARRIER, ends)

    def mutex(locs, t):  # POSIX mutex contention, and a condition wait taking the mutex back late
        hold = rng.choice(dur)
        b.enter(locs[0], t, "pthread_mutex_lock")
        b.acquire(locs[0], t, p_mutex)
        b.exit(locs[0], t, "pthread_mutex_lock")
        work(locs[0], t, t + hold)
        b.enter(locs[0], t + hold, "pthread_mutex_unlock")
        b.release(locs[0], t + hold, p_mutex)
        b.exit(locs[0], t + hold, "pthread_mutex_unlock")
        how = rng.choice(("pthread_mutex_lock", "pthread_cond_wait"))
        b.enter(locs[1], t, how)
        b.acquire(locs[1], t + hold, p_mutex)
        b.exit(locs[1], t + hold, how)
        b.enter(locs[1], t + 2 * hold, "pthread_mutex_unlock")
        b.release(locs[1], t + 2 * hold, p_mutex)
        b.exit(locs[1], t + 2 * hold, "pthread_mutex_unlock")
        return barrier(locs, R_BARRIER, [t + hold, t + 2 * hold] + [t] * (len(locs) - 2))

    def measurement(locs, t):  # flushes of memory and of trace buffers
        for loc in locs:
            work(loc, t, t + rng.choice(dur), R_FLUSH)
        work(locs[0], t + 1.0, t + 1.0 + rng.choice(dur), "TRACING")
        return barrier(locs, R_BARRIER, [t + 2.0] * len(locs))

    steps = (sections, single, loop, master, ordered, critical, atomics, lock_round, mutex, measurement)
    for r in range(n_ranks):
        locs = [b.location(rank=r, thread=i) for i in range(n_threads)]
        b.enter(locs[0], 0.0, "main")
        b.fork(locs[0], 0.0, team=1, size=n_threads)
        for i, loc in enumerate(locs):
            b.enter(loc, 0.0, R_PAR, team=1, thread_num=i)
        t = 0.0
        for _ in range(rng.randint(5, 9)):
            t = rng.choice(steps)(locs, t)
        ends = [t] * n_threads
        if rng.random() < 0.5:  # a nowait loop: its imbalance shows at the region's closing barrier
            ends = [t + rng.choice(dur) for _ in locs]
            for loc, e in zip(locs, ends):
                b.enter(loc, t, R_NOWAIT_LOOP)
                work(loc, t, e)
                b.exit(loc, e, R_NOWAIT_LOOP)
        leave = barrier(locs, R_PAR_BARRIER, ends)
        for loc in locs:
            b.omp_coll_exit(loc, leave, R_PAR)
        b.join(locs[0], leave, team=1, size=n_threads)
        b.exit(locs[0], leave, "main")
    return b.build()


def false_sharing_trace(seed: int, n_ranks: int = 5, n_threads: int = 2):
    """Cache-miss and store counters: every process runs ``kernel`` serially (or not), then in a parallel
    region on every thread, with random counts (so the miss rates differ between processes)."""
    rng = random.Random(seed)
    b = tracefmt.TraceBuilder()
    for r in range(n_ranks):
        locs = [b.location(rank=r, thread=i) for i in range(n_threads)]
        totals = [[0, 0] for _ in locs]

        def ev(kind, i, when, name, add=(0, 0), **kw):
            getattr(b, kind)(locs[i], when, name, **kw)
            totals[i][0] += add[0]
            totals[i][1] += add[1]
            b.counter(locs[i], when, "PAPI_L1_DCM", totals[i][0])
            b.counter(locs[i], when, "PAPI_SR_INS", totals[i][1])

        ev("enter", 0, 0.0, "main")
        if rng.random() < 0.6:
            ev("enter", 0, 0.0, "kernel")
            ev("exit", 0, 1.0, "kernel", (rng.randint(0, 50), 1000))
        b.fork(locs[0], 1.0, team=1, size=n_threads)
        for i in range(n_threads):
            ev("enter", i, 1.0, R_PAR, team=1, thread_num=i)
            ev("enter", i, 1.0, "kernel")
            ev("exit", i, 2.0, "kernel", (rng.randint(0, 100), 1000))
            ev("enter", i, 2.0, R_PAR_BARRIER)
            b.omp_coll_exit(locs[i], 2.0, R_PAR_BARRIER)
            b.counter(locs[i], 2.0, "PAPI_L1_DCM", totals[i][0])
            b.counter(locs[i], 2.0, "PAPI_SR_INS", totals[i][1])
            b.omp_coll_exit(locs[i], 2.0, R_PAR)
            b.counter(locs[i], 2.0, "PAPI_L1_DCM", totals[i][0])
            b.counter(locs[i], 2.0, "PAPI_SR_INS", totals[i][1])
        b.join(locs[0], 2.0, team=1, size=n_threads)
        ev("exit", 0, 2.0, "main")
    return b.build()


#: the recorded runtime traces (tests/data/scalasca_export): MPI, hybrid and OpenMP programs
RECORDED = sorted((Path(__file__).parent.parent / "data" / "scalasca_export").glob("*.elg"))


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """(name, trace): random hybrid traces of 5 processes (with tasks, dependences, one-sided), the MPI
    mixes and one-sided epochs below, the recorded traces, and the benchmarks' trace shapes."""
    out = []
    for seed in (1, 2, 3):
        out.append((f"hybrid{seed}", random_trace(seed, n_ranks=5, n_threads=2, steps=30)))
    for seed in (4, 5):
        out.append((f"tasks{seed}", random_trace(seed, n_ranks=5, n_threads=2, steps=30, tasks=True)))
        out.append((f"deps{seed}", random_trace(seed, n_ranks=5, n_threads=2, steps=30, tasks=True, deps=True)))
    for seed in (6, 7, 8):
        out.append((f"rma{seed}", random_trace(seed, n_ranks=5, n_threads=2, steps=40, tasks=True, deps=True,
                                               rma=True)))
    out += [(f"mpi_mix{seed}", mpi_mix(seed)) for seed in (1, 2, 3)]
    out += [(f"late_posts{seed}", rma_late_posts(seed)) for seed in (1, 2)]
    out += [(f"omp_reasons{seed}", omp_reasons_trace(seed)) for seed in (1, 2, 3, 4)]
    out += [(f"false_sharing{seed}", false_sharing_trace(seed)) for seed in (1, 2)]
    out += [(p.stem, dense_view(open_any(p))) for p in RECORDED]
    path = tmp_path_factory.mktemp("bench") / "analysis.trace"
    build_trace(str(path), 3000, n_ranks=5, n_threads=2)
    out.append(("benchmark_analysis", dense_view(open_any(path))))
    out += [(f"benchmark_rma_{kind}", rma_trace(kind, 5, 6)) for kind in ("fence", "gats", "lock")]
    return out


@pytest.fixture(scope="module")
def serial(traces):
    """(name, trace, serial context with the results of every location and row built-in), per trace."""
    loc, row, _ = split_by_scope(builtins())
    pats = load_patterns([p.name for p in loc + row], plugins=False)
    out = []
    for name, trace in traces:
        ctx = replay(trace)
        compute_results(ctx, pats)
        out.append((name, trace, ctx))
    return out


def test_the_scopes_of_the_builtins_are_what_the_analysis_per_share_can_compute():
    pats = builtins()
    for p in pats:
        validate_pattern(p)
    loc, row, glob = split_by_scope(pats)
    by_scope = {s: {p.name for p in pats if p.scope == s} for s in ("location", "row", "global")}
    # no built-in moves group because of a dependency: its own scope is where it is computed
    assert {p.name for p in loc} == by_scope["location"]
    assert {p.name for p in row} == by_scope["row"]
    assert {p.name for p in glob} == by_scope["global"]
    # the wait states and the time categories most runs are made of are computed per share
    assert {"time", "execution", "mpi_latesender", "mpi_latereceiver", "mpi_wait_nxn", "omp_ibarrier_wait",
            "omp_lock_contention_critical", "bytes_sent"} <= by_scope["location"]
    assert {"imbalance", "imbalance_above"} <= by_scope["row"]
    assert {"delay", "critical_path", "pop_resources"} <= by_scope["global"]


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_location_patterns_give_the_serial_values_in_their_own_columns(serial, k):
    loc = split_by_scope(builtins())[0]
    for name, trace, ctx in serial:
        shares = [np.asarray(sorted(s), np.int64) for s in partition(trace, k)]
        assert sum(len(s) for s in shares) == ctx.n_locations
        blocks = []
        for owned in shares:
            sctx = share_context(ctx, owned)
            got = compute_owned(sctx, loc)
            assert list(got) == [p.name for p in loc]
            for p in loc:
                want = ctx.results[p.name][:, owned]
                if not np.array_equal(got[p.name], want):
                    bad = np.argwhere(got[p.name] != want)[0]
                    pytest.fail(f"{name}, {k} shares, owned {owned.tolist()}: {p.name} differs at call path "
                                f"{int(bad[0])}, location {int(owned[bad[1]])}: {got[p.name][tuple(bad)]!r} "
                                f"!= {want[tuple(bad)]!r}")
            blocks.append(got)
        full = scatter_owned(blocks, shares, ctx.n_cnodes, ctx.n_locations)
        for p in loc:
            assert np.array_equal(full[p.name], ctx.results[p.name]), (name, k, p.name)


def test_the_traces_exercise_every_location_and_row_pattern(serial):
    """The comparisons can fail only where a value is not zero: every "location" and "row" built-in is
    non-zero in some trace of more than one process."""
    loc, row, _ = split_by_scope(builtins())
    multi = [ctx for name, trace, ctx in serial if len(set(ctx.location_process.tolist())) > 1]
    assert sorted(p.name for p in loc + row if not any(np.any(ctx.results[p.name]) for ctx in multi)) == []


def test_row_patterns_need_only_the_full_results_of_their_depends(serial):
    row = split_by_scope(builtins())[1]
    assert row
    for name, trace, ctx in serial:
        for p in row:
            assert p.requires == ()
            rctx = dataclasses.replace(ctx, tables={}, derived={}, problems=[], current_pattern=None,
                                       results={d: ctx.results[d] for d in p.depends})
            compute_results(rctx, [p])
            assert np.array_equal(rctx.results[p.name], ctx.results[p.name]), (name, p.name)


# --------------------------------------------------------------------------
# the API: scope values, defaults, the split
# --------------------------------------------------------------------------
def _pat(name, scope=None, requires=(), depends=(), optional_depends=()):
    attrs = {"name": name, "display_name": name, "description": "d", "diagnosis": "d", "requires": requires,
             "depends": depends, "optional_depends": optional_depends,
             "compute": lambda self, ctx: np.zeros((ctx.n_cnodes, ctx.n_locations))}
    if scope is not None:
        attrs["scope"] = scope
    return type(name.title(), (Pattern,), attrs)()


def test_a_pattern_without_scope_is_global_and_bad_scopes_are_refused():
    assert _pat("plain").scope == "global"
    validate_pattern(_pat("plain"))
    with pytest.raises(PatternError, match=r"pattern 'odd'.*scope must be one of .*'locations'"):
        validate_pattern(_pat("odd", scope="locations"))
    with pytest.raises(PatternError, match=r"pattern 'rowish'.*scope 'row'.*requires must be empty"):
        validate_pattern(_pat("rowish", scope="row", requires=("messages",)))
    validate_pattern(_pat("rowok", scope="row", depends=("execution",)))


def test_split_moves_a_pattern_after_what_it_reads():
    a = _pat("a", "location")
    g = _pat("g", "global")
    r = _pat("r", "row", depends=("a",))
    b = _pat("b", "location", depends=("r",))  # no tables: can run in the row step
    c = _pat("c", "location", requires=("messages",), depends=("r",))  # reads tables: global
    d = _pat("d", "location", optional_depends=("g",))
    e = _pat("e", "location", depends=("b",))
    f = _pat("f", "location", optional_depends=("absent",))
    loc, row, glob = split_by_scope([a, g, r, b, c, d, e, f])
    assert [p.name for p in loc] == ["a", "f"]
    assert [p.name for p in row] == ["r", "b", "e"]
    assert [p.name for p in glob] == ["g", "c", "d"]
    # the order of the input does not matter for the groups
    loc2, row2, glob2 = split_by_scope([e, b, r, a])
    assert [p.name for p in row2] == ["e", "b", "r"] and [p.name for p in loc2] == ["a"]


def test_compute_owned_keeps_the_errors_of_the_serial_loop():
    trace = random_trace(3, n_ranks=3, n_threads=1, steps=5)
    ctx = replay(trace, tables=())
    sctx = share_context(ctx, [0])
    bad = _pat("broken", "location")
    type(bad).compute = lambda self, ctx: np.zeros((1, 1))
    with pytest.raises(PatternError, match=r"pattern 'broken' returned shape \(1, 1\), expected"):
        compute_owned(sctx, [bad])
    # only the location group is computed: a global pattern is left to rank 0
    assert compute_owned(share_context(ctx, [1]), [_pat("glob", "global")]) == {}


def test_scatter_owned_takes_each_cell_from_its_one_share():
    C, L = 2, 5
    shares = [np.array([0, 3]), np.array([], np.int64), np.array([1, 2, 4])]
    blocks = [{"x": np.array([[1.0, 4.0], [5.0, 8.0]])}, {},
              {"x": np.array([[2.0, 3.0, 6.0], [6.0, 7.0, 9.0]])}]
    full = scatter_owned(blocks, shares, C, L)
    assert np.array_equal(full["x"], [[1, 2, 3, 4, 6], [5, 6, 7, 8, 9]])
    with pytest.raises(ValueError, match="location 3 is owned by 2 shares"):
        scatter_owned(blocks, [np.array([0, 3]), np.array([3]), np.array([1, 2, 4])], C, L)
    with pytest.raises(ValueError, match="location 4 is owned by 0 shares"):
        scatter_owned(blocks, [np.array([0, 3]), np.array([], np.int64), np.array([1, 2])], C, L)
    with pytest.raises(ValueError, match="share 2 owns 3 location"):
        scatter_owned([blocks[0], {}, {}], shares, C, L)


class EveryMessageEverywhere(Pattern):
    """A plugin without a scope whose value at every location depends on every process: the number of
    messages of the whole run plus the whole run's execution time, at the root call path."""

    name = "every_message_everywhere"
    display_name = "Every message everywhere"
    description = "Messages of the run plus its execution time, at every location."
    diagnosis = "A test pattern."
    unit = "occ"
    requires = ("messages",)
    depends = ("execution",)

    def compute(self, ctx):
        value = len(ctx.table("messages")) + float(ctx.results["execution"].sum())
        L = ctx.n_locations
        return Severity(np.zeros(L, np.int64), np.arange(L), np.full(L, value))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 7])
def test_a_plugin_without_scope_gives_the_serial_result_through_the_pipeline(k):
    from analyzer.analyze import required_tables
    from analyzer.distributed.network import MemoryNetwork
    from analyzer.distributed.pipeline import analyze_by_shares

    trace = random_trace(3, n_ranks=5, n_threads=2, steps=30, tasks=True)
    plugin = EveryMessageEverywhere()
    assert plugin.scope == "global"
    pats = load_patterns(["execution"], plugins=False) + [plugin]
    serial_ctx = replay(trace, tables=required_tables(pats))
    compute_results(serial_ctx, pats)
    want = serial_ctx.results[plugin.name]
    # computed on a share it would be wrong: only the fallback on share 0 can give the serial value
    first = np.asarray(sorted(partition(trace, 2)[0]), np.int64)
    on_share = share_context(serial_ctx, first)
    compute_results(on_share, load_patterns(["execution"], plugins=False) + [plugin])
    assert not np.array_equal(on_share.results[plugin.name][:, first], want[:, first])

    ctx = analyze_by_shares(trace, pats, MemoryNetwork(k))
    assert plugin.name not in ctx.results  # left to share 0, after the reduction
    compute_results(ctx, [p for p in pats if p.name not in ctx.results])
    for p in pats:
        assert np.array_equal(ctx.results[p.name], serial_ctx.results[p.name]), (k, p.name)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_nonzero_rows_gathered_equal_the_scattered_columns(seed):
    # what shares send share 0 (their blocks' nonzero call-path rows) puts together the same values as
    # the dense scatter, holding only the rows some share has nonzero
    from analyzer.distributed.share_patterns import gather_rows, nonzero_rows

    rng = np.random.default_rng(seed)
    C, L = 9, 11
    owned = np.array_split(rng.permutation(L), 3) + [np.zeros(0, np.int64)]
    blocks = []
    for o in owned:
        b = {}
        for name, density in (("sparse", 0.1), ("dense", 1.0), ("zero", 0.0)):
            v = rng.random((C, len(o)))
            v[rng.random(v.shape) >= density] = 0.0
            b[name] = v
        blocks.append(b)
    want = scatter_owned(blocks, owned, C, L)
    got = gather_rows([nonzero_rows(b) for b in blocks], owned, C, L)
    for name, full in want.items():
        rows, data = got[name]
        assert list(rows) == list(np.flatnonzero(full.any(axis=1))), name
        again = np.zeros((C, L))
        again[rows] = data
        np.testing.assert_array_equal(again, full)
    with pytest.raises(ValueError, match="owned by 2 shares"):
        gather_rows([nonzero_rows(b) for b in blocks], [owned[0], owned[0], owned[1], owned[2]], C, L)
