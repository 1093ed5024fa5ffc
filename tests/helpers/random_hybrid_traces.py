"""Random valid hybrid MPI + OpenMP traces built with TraceBuilder, for comparing
the fast replay with the reference one.  Every location's clock only moves
forward; messages, collectives, teams and locks are generated consistently
(each message is sent and received, every rank of a comm joins each collective).
With ``tasks=True`` they also hold OpenMP tasks (created in a single, run in the barrier by any thread,
nested ones run in a taskwait, untied ones suspended on one thread and resumed on another) and POSIX
threads (created and joined by a rank's master, running one after another on one extra location per
rank) and MPI file I/O (individual and collective reads and writes with MPI_FILE_IO records); without it the
traces, and the random sequence behind them, are those of earlier versions.  ``deps=True`` (with ``tasks``)
adds task dependences: some tasks depend on one or two tasks created before them in the same single and
start after those completed (the others' traces and random sequence stay as with ``tasks`` alone).
``rma=True`` (with ``tasks``) adds MPI one-sided communication (windows with fence, post/start/complete/wait
and lock epochs, format 2.3); without it the traces and random sequence stay as with ``tasks`` alone."""

from __future__ import annotations

import random

import tracefmt
from tracefmt.layout import FileIoFlag, LockKind, RmaAtomic, RmaSync, RmaSyncFlag, TaskFlag, TaskSwitch


def random_trace(seed: int, n_ranks: int = 3, n_threads: int = 2, steps: int = 25, tasks: bool = False,
                 deps: bool = False, rma: bool = False):
    return random_builder(seed, n_ranks, n_threads, steps, tasks, deps, rma).build()


def random_builder(seed: int, n_ranks: int = 3, n_threads: int = 2, steps: int = 25,
                   tasks: bool = False, deps: bool = False, rma: bool = False) -> tracefmt.TraceBuilder:
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
    kinds = ["msg", "msg", "nbmsg", "coll", "subcoll", "omp", "nest"]
    if tasks:
        kinds += ["tasks", "tasks", "pthreads", "file_io"] + (["rma"] if rma else [])
        for r in range(n_ranks):  # the pthreads' location of each rank
            locs[(r, n_threads)] = b.location(rank=r, thread=n_threads)
            clock[(r, n_threads)] = 0.0
        ids = {"task": {r: 0 for r in range(n_ranks)}, "thread": {r: 0 for r in range(n_ranks)}}
    for _ in range(steps):
        kind = rng.choice(kinds)
        if kind == "tasks":
            _task_step(b, rng, locs, clock, now, team_no, ids["task"], n_ranks, n_threads, deps)
            continue
        if kind == "pthreads":
            _thread_step(b, rng, locs, clock, now, ids["thread"], n_ranks, n_threads, crit)
            continue
        if kind == "file_io":
            _file_io_step(b, rng, locs, now, n_ranks)
            continue
        if kind == "rma":
            _rma_step(b, rng, locs, clock, now, n_ranks)
            continue
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


def _task_step(b, rng, locs, clock, now, team_no, task_no, n_ranks, n_threads, deps=False):
    """A parallel region of rank r whose master creates tasks in a single; the members run them in the
    closing barrier: some create a child and wait for it in a taskwait, untied ones are suspended on
    one member and resumed on another; with ``deps``, some depend on earlier ones."""
    r = rng.randrange(n_ranks)
    team_no[r] += 1
    team = team_no[r]
    m = (r, 0)
    members = [(r, t) for t in range(n_threads)]
    b.enter(locs[m], now(m), "compute")
    tf = now(m)
    b.fork(locs[m], tf, team, n_threads)
    for k in members:
        clock[k] = max(clock[k], tf)
        b.enter(locs[k], now(k), "!$omp parallel @x.c:1", team=team, thread_num=k[1])
    b.enter(locs[m], now(m), "!$omp single @x.c:2")
    made = []
    preds = {}
    for _ in range(rng.randint(1, 4)):
        task_no[r] += 1
        untied = rng.random() < 0.3
        before = [t for t, _ in made]
        mine = rng.sample(before, min(len(before), rng.randint(0, 2))) if deps else []
        t = now(m)
        b.task_create(locs[m], t, task_no[r], "!$omp task @x.c:3", flags=TaskFlag.UNTIED if untied else 0,
                      dependences=len(mine))
        for p in mine:
            b.task_dependence(locs[m], t, p, task_no[r])
        preds[task_no[r]] = mine
        made.append((task_no[r], untied))
    b.exit(locs[m], now(m))
    late = rng.choice(members[1:]) if len(members) > 1 and rng.random() < 0.5 else None  # arrives after the tasks
    runners = [k for k in members if k != late]
    for k in runners:
        b.enter(locs[k], now(k), "!$omp implicit barrier")
    t_ready = clock[m]
    done = {}
    for task, untied in made:
        k = rng.choice(runners)
        clock[k] = max([clock[k], t_ready] + [done[p] for p in preds[task]])
        b.task_begin(locs[k], now(k), task)
        if rng.random() < 0.5:  # a child, run in the task's taskwait by the same thread
            task_no[r] += 1
            child = task_no[r]
            b.task_create(locs[k], now(k), child, "!$omp task @x.c:4")
            b.enter(locs[k], now(k), "!$omp taskwait @x.c:5")
            b.task_run(locs[k], now(k), now(k), child)
            b.exit(locs[k], now(k))
        if untied and rng.random() < 0.7:  # suspended here, resumed by another member
            b.task_end(locs[k], now(k), task, status=TaskSwitch.SUSPEND)
            k2 = rng.choice(runners)
            clock[k2] = max(clock[k2], clock[k])
            b.task_begin(locs[k2], now(k2), task, resume=True)
            done[task] = now(k2)
            b.task_end(locs[k2], done[task], task)
        else:
            done[task] = now(k)
            b.task_end(locs[k], done[task], task)
    if late is not None:
        clock[late] = max(clock[late], t_ready + rng.random())
        b.enter(locs[late], now(late), "!$omp implicit barrier")
    t_end = max(clock[k] for k in members)
    for k in members:
        clock[k] = t_end
        b.omp_coll_exit(locs[k], now(k))
        b.exit(locs[k], now(k))
    tj = max(clock[k] for k in members) + 0.01
    clock[m] = tj
    b.join(locs[m], tj, team, n_threads)
    b.exit(locs[m], now(m))


def _file_io_step(b, rng, locs, now, n_ranks):
    """Every rank's master writes collectively (MPI_File_write_all), then one rank reads on its own."""
    for r in range(n_ranks):
        k = (r, 0)
        b.enter(locs[k], now(k), "MPI_File_write_all")
        b.file_io(locs[k], now(k), rng.randrange(1, 1 << 20), FileIoFlag.WRITE | FileIoFlag.COLLECTIVE)
        b.exit(locs[k], now(k))
    k = (rng.randrange(n_ranks), 0)
    b.enter(locs[k], now(k), "MPI_File_read_at")
    b.file_io(locs[k], now(k), rng.randrange(1, 1 << 20), FileIoFlag.READ)
    b.exit(locs[k], now(k))


def _rma_step(b, rng, locs, clock, now, n_ranks):
    """Every rank's master creates an MPI window, fences an epoch of random puts, gets and accumulates, one
    random pair makes a post/start/complete/wait epoch, some masters lock a random target (exclusive or
    shared) around a transfer, and all free the window (format 2.3 RMA events).  Collective calls end together
    after the last one began, a start after its post began, a wait after the complete began, as MPI makes them."""
    w = b.window()
    masters = [(r, 0) for r in range(n_ranks)]

    def call(k, region, kind, t0=None, t1=None, **kw):
        t0 = now(k) if t0 is None else t0
        t1 = now(k) if t1 is None else t1
        clock[k] = max(clock[k], t1)
        b.enter(locs[k], t0, region)
        b.rma_sync(locs[k], t1, w, kind, **kw)
        b.exit(locs[k], t1)

    def collective(region, kind):
        enters = {k: now(k) for k in masters}
        end = max(enters.values()) + rng.random() * 0.1
        for k in masters:
            call(k, region, kind, enters[k], end + next_tick())

    def next_tick():
        return rng.random() * 1e-3

    def transfer(k, target):
        which = rng.choice(("MPI_Put", "MPI_Get", "MPI_Accumulate"))
        b.enter(locs[k], now(k), which)
        n = rng.randrange(1, 1 << 16)
        if which == "MPI_Put":
            b.rma_put(locs[k], now(k), w, target, n)
        elif which == "MPI_Get":
            b.rma_get(locs[k], now(k), w, target, n)
        else:
            b.rma_atomic(locs[k], now(k), w, target, RmaAtomic.ACCUMULATE, sent=n)
        b.exit(locs[k], now(k))

    collective("MPI_Win_create", RmaSync.CREATE)
    collective("MPI_Win_fence", RmaSync.FENCE)
    for k in masters:
        for _ in range(rng.randrange(3)):
            transfer(k, rng.randrange(n_ranks))
    collective("MPI_Win_fence", RmaSync.FENCE)
    if n_ranks >= 2:
        o, t = ((r, 0) for r in rng.sample(range(n_ranks), 2))
        posted = now(t)
        call(t, "MPI_Win_post", RmaSync.POST, posted, group=[o[0]])
        began = now(o)
        call(o, "MPI_Win_start", RmaSync.START, began, max(began, posted) + next_tick(), group=[t[0]])
        for _ in range(rng.randrange(3)):
            transfer(o, t[0])
        completed = now(o)
        call(o, "MPI_Win_complete", RmaSync.COMPLETE, completed, group=[t[0]])
        waited = now(t)
        call(t, "MPI_Win_wait", RmaSync.WAIT, waited, max(waited, completed) + next_tick(), group=[o[0]])
    for k in masters:
        if rng.random() < 0.7:
            target = rng.randrange(n_ranks)
            flags = RmaSyncFlag.EXCLUSIVE if rng.random() < 0.5 else 0
            call(k, "MPI_Win_lock", RmaSync.LOCK, target=target, flags=flags)
            transfer(k, target)
            call(k, "MPI_Win_unlock", RmaSync.UNLOCK, target=target)
    collective("MPI_Win_free", RmaSync.FREE)


def _thread_step(b, rng, locs, clock, now, thread_no, n_ranks, n_threads, lock):
    """Rank r's master creates a POSIX thread, which runs on the rank's extra location (taking a mutex
    the master also takes), and joins it."""
    r = rng.randrange(n_ranks)
    m, w = (r, 0), (r, n_threads)
    thread_no[r] += 1
    tid = thread_no[r]
    mutex = b.lock(f"mutex {r}", LockKind.PTHREAD_MUTEX)
    b.enter(locs[m], now(m), "pthread_create")
    b.thread_create(locs[m], now(m), tid)
    b.exit(locs[m], now(m))
    clock[w] = max(clock[w], clock[m])
    b.thread_begin(locs[w], now(w), tid)
    b.enter(locs[w], now(w), "worker_main")
    for k in (w, m):
        if rng.random() < 0.6:
            clock[k] = max(clock[k], max(clock[w], clock[m]))
            b.enter(locs[k], now(k), "pthread_mutex_lock")
            b.acquire(locs[k], now(k), mutex)
            b.exit(locs[k], now(k))
            b.enter(locs[k], now(k), "pthread_mutex_unlock")
            b.release(locs[k], now(k), mutex)
            b.exit(locs[k], now(k))
    b.exit(locs[w], now(w))
    b.thread_end(locs[w], now(w), tid)
    b.enter(locs[m], now(m), "pthread_join")
    clock[m] = max(clock[m], clock[w])
    b.thread_join(locs[m], now(m), tid)
    b.exit(locs[m], now(m))
