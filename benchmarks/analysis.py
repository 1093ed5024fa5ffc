"""End-to-end analysis throughput and peak memory: ``python -m benchmarks analysis``.

Builds a realistic hybrid trace (R ranks x T threads; every iteration: a
compute phase with imbalance, a halo exchange with Isend/Irecv/Waitall, a
parallel loop with an implicit barrier, a contended critical section, an
Allreduce), writes it once per size into the cache directory, then analyzes
it with all built-in patterns in a fresh single-threaded process per size and
prints a table: events, trace size, wall time and events/s of that first
call, its CPU time (user + system: less sensitive to other jobs on the
machine), the same call repeated in the same process ("again": kernels
loaded, allocator warm), peak RSS (of the first call), peak RSS over trace
size.

    python -m benchmarks analysis [--sizes 1e6,1e7] [--ranks 4] [--threads 4] [--dir bench-out]
                                  [--jobs 1,2] [--mpi 2,3] [--phases] [--repeat 3]
                                  [--without MODULES] [--cost-of patterns.critical_path,patterns.delay,...]
                                  [--again N]

``--jobs``: the -j values to measure (threads in one process); ``--mpi``:
analysis rank counts run under ``mpiexec`` (``analyze(comm=...)``, needs
mpi4py and Open MPI); ``--phases``: also time read / replay / patterns /
cube writing separately.  Peak RSS under MPI is the largest rank's.
``--without``: pattern modules left out; ``--cost-of``: each row also without
those modules (the two runs taking turns), and their cost as ratios of the first
call's CPU time, of the second call's wall time and of peak RSS; ``--repeat``:
best of N runs; ``--again``: the call repeated N times in each process, "again" the best of them.
10^8 events is opt-in (``--sizes 1e8``: about 4 GB of trace).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

PAR = "!$omp parallel @bench.c:40"
LOOP = "!$omp for @bench.c:41"
IBAR = "!$omp implicit barrier @bench.c:45"
CRIT = "!$omp critical @bench.c:47"
#: the pattern modules of Scalasca 2's root-cause analysis (``--cost-of``)
SCALASCA2 = ("patterns.critical_path", "patterns.delay", "patterns.pop")
BODY = "!$omp critical sblock @bench.c:47"


def _iteration(b, loc, n_ranks, n_threads):
    """One iteration at times relative to 0 (builder-time); returns its period in seconds."""
    from tracefmt.layout import RecvFlag  # noqa: F401  (documented flags; none needed here)

    period = 0.01
    for r in range(n_ranks):
        m = loc[(r, 0)]
        t = 0.0
        b.enter(m, t, "iteration")
        # the imbalance grows with the rank; above 7 ranks it is scaled to end before the Waitall at 3.5 ms
        step = 0.0002 * min(1.0, 6.0 / max(n_ranks - 1, 1))
        b.enter(m, t, "compute"); t += 0.002 + step * r; b.exit(m, t, "compute")
        left, right = (r - 1) % n_ranks, (r + 1) % n_ranks
        for k, peer in enumerate((left, right)):
            b.enter(m, t, "MPI_Irecv"); b.recv_request(m, t + 1e-6, 10 + k, source=peer, tag=k)
            t += 2e-6; b.exit(m, t, "MPI_Irecv")
        for k, peer in enumerate((right, left)):
            b.enter(m, t, "MPI_Isend"); b.send(m, t, dest=peer, tag=k, nbytes=8192, request=20 + k)
            t += 2e-6; b.exit(m, t, "MPI_Isend")
        b.enter(m, 0.0035, "MPI_Waitall")
        for k, peer in enumerate((left, right)):
            b.recv(m, 0.0036, source=peer, tag=k, nbytes=8192, request=10 + k)
        for k in range(2):
            b.send_complete(m, 0.0036, 20 + k)
        b.exit(m, 0.0037, "MPI_Waitall")
        b.fork(m, 0.0038, 1, n_threads)
        for th in range(n_threads):
            w = loc[(r, th)]
            b.enter(w, 0.0039, PAR, team=1, thread_num=th)
            b.enter(w, 0.0040, LOOP)
            b.enter(w, 0.0040, "kernel"); b.exit(w, 0.0050 + 0.0003 * th, "kernel")
            b.barrier(w, 0.0050 + 0.0003 * th, 0.0050 + 0.0003 * n_threads + 1e-5, implicit=True, region=IBAR)
            b.exit(w, 0.0051 + 0.0003 * n_threads, LOOP)
            tc = 0.0052 + 0.0003 * n_threads
            b.enter(w, tc, CRIT)
        tc = 0.0052 + 0.0003 * n_threads
        for th in range(n_threads):
            w = loc[(r, th)]
            ta = tc + 1e-4 * th
            b.acquire(w, ta, "bench_critical")
            b.enter(w, ta, BODY); b.exit(w, ta + 1e-4, BODY)
            b.release(w, ta + 1e-4, "bench_critical")
            b.exit(w, ta + 1.01e-4, CRIT)
        tb = tc + 1e-4 * n_threads + 2e-6
        for th in range(n_threads):
            w = loc[(r, th)]
            b.barrier(w, tc + 1e-4 * th + 1.02e-4, tb, implicit=True, region=IBAR)
            b.exit(w, tb + 1e-6, PAR)
        b.join(m, tb + 2e-6, 1, n_threads)
        b.collective(m, tb + 3e-6 + 1e-5 * (n_ranks - r), 0.0095, "MPI_Allreduce", sent=64, recvd=64)
        b.exit(m, 0.0096, "iteration")
    return period


def build_trace(path: str, n_events: int, n_ranks: int = 4, n_threads: int = 4) -> int:
    """Write a trace of about n_events events; returns the exact count."""
    import tracefmt
    from tracefmt.layout import LockKind, EventType as E, NO_ID

    tb = tracefmt.TraceBuilder(creator="benchmarks.analysis")
    loc = {(r, t): tb.location(rank=r, thread=t) for r in range(n_ranks) for t in range(n_threads)}
    tb.lock("bench_critical", LockKind.OMP_CRITICAL)
    for r in range(n_ranks):
        tb.enter(loc[(r, 0)], 0.0, "main")
        tb.enter(loc[(r, 0)], 0.0, "MPI_Init"); tb.exit(loc[(r, 0)], 0.001, "MPI_Init")
    prologue = {l: tb.records(l) for l in loc.values()}
    it = tracefmt.TraceBuilder()
    it_loc = {(r, t): it.location(rank=r, thread=t) for r in range(n_ranks) for t in range(n_threads)}
    it.lock("bench_critical", LockKind.OMP_CRITICAL)
    # same ids in both builders: regions are created in the same order below
    for name in ("main", "MPI_Init"):
        it.region(name)
    period = _iteration(it, it_loc, n_ranks, n_threads)
    per_iter = sum(len(it.records(l)) for l in it_loc.values())
    n_iter = max(1, n_events // per_iter)
    defs = it.definitions()
    for name in ("MPI_Finalize",):
        it.region(name)
    defs = it.definitions()
    ticks_per_s = 1e9
    t0 = 0.001
    with tracefmt.TraceWriter(path, creator="benchmarks.analysis") as w:
        w.write_definitions(defs)
        total = 0
        for key, l in it_loc.items():
            tmpl = it.records(l)
            team = tmpl["type"] == E.OMP_FORK
            chunk = max(1, 2_000_000 // max(len(tmpl), 1))
            if key[1] == 0:
                w.write_events(l, prologue[loc[key]])
                total += len(prologue[loc[key]])
            acq = (tmpl["type"] == E.OMP_ACQUIRE_LOCK) | (tmpl["type"] == E.OMP_RELEASE_LOCK)
            par_enter = (tmpl["type"] == E.ENTER) & (tmpl["c"] != NO_ID)
            forkjoin = (tmpl["type"] == E.OMP_FORK) | (tmpl["type"] == E.OMP_JOIN)
            ocoll = tmpl["type"] == E.OMP_COLLEXIT
            for start in range(0, n_iter, chunk):
                k = np.arange(start, min(n_iter, start + chunk), dtype=np.uint64)
                rec = np.tile(tmpl, len(k))
                kk = np.repeat(k, len(tmpl))
                rec["time"] += ((t0 + kk.astype(np.float64) * period) * ticks_per_s).astype(np.uint64)
                rep = lambda m: np.tile(m, len(k))  # noqa: E731
                rec["a"][rep(forkjoin)] += kk[rep(forkjoin)].astype(np.uint32)
                rec["c"][rep(par_enter)] += kk[rep(par_enter)].astype(np.uint32)
                rec["b"][rep(ocoll)] += kk[rep(ocoll)].astype(np.uint32)
                rec["d"][rep(acq)] += kk[rep(acq)] * np.uint64(n_threads)
                w.write_events(l, rec)
                total += len(rec)
            del team
            if key[1] == 0:
                t_end = t0 + n_iter * period
                fin = tracefmt.TraceBuilder()
                fl = fin.location(rank=key[0])
                for name in ("main", "MPI_Init", "iteration"):
                    fin.region(name)
                # closing events with the ids of `defs`
                rid = {r.name: r.id for r in defs.regions.values()}
                tail = np.zeros(3, dtype=tracefmt.layout.EVENT_DTYPE)
                tail["time"] = np.array([t_end, t_end + 0.001, t_end + 0.002]) * ticks_per_s
                tail["type"] = [E.ENTER, E.EXIT, E.EXIT]
                tail["a"] = [rid["MPI_Finalize"], rid["MPI_Finalize"], rid["main"]]
                tail["b"] = [NO_ID, 0, 0]
                tail["c"] = [NO_ID, 0, 0]
                tail["d"] = [NO_ID, 0, 0]
                w.write_events(l, tail)
                total += 3
    return total


_MEASURE = """
import json, os, resource, sys, time
t0 = time.perf_counter()
from analyzer.analyze import analyze, build_cube, compute_patterns, select_patterns
from analyzer.cube import write_cubex
from analyzer.replay import replay
from tracefmt.detect import open_any
comm = None
if os.environ.get("BENCH_MPI"):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
# the pattern modules (and numba with them) are imported here, with the rest (import s), whatever the run
# leaves out: otherwise only a run of every pattern would count their import (about 0.2 s) as analysis
selected = select_patterns(None, plugins=False)
t1 = time.perf_counter()
def hwm():
    # this process's peak RSS in KiB: ru_maxrss would keep the parent's peak across the exec
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
base = hwm()
path, jobs, phases = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
without = set(filter(None, sys.argv[4].split(","))) if len(sys.argv) > 4 else set()
again_calls = int(sys.argv[5]) if len(sys.argv) > 5 else 1
pats = None
if without:  # every built-in pattern but those of the modules named
    pats = [p.name for p in selected if type(p).__module__ not in without]
if comm is not None:
    comm.Barrier()
    t1 = time.perf_counter()
r1 = resource.getrusage(resource.RUSAGE_SELF)
cube = analyze(path, patterns=pats, plugins=False, jobs=jobs, comm=comm)
t2 = time.perf_counter()
r2 = resource.getrusage(resource.RUSAGE_SELF)
peak = hwm()
cpu = (r2.ru_utime + r2.ru_stime) - (r1.ru_utime + r1.ru_stime)
again = None
events = int(cube.attrs["expert-analyze::events"]) if cube is not None else 0  # None on MPI ranks but rank 0
if comm is None:
    # the same call once more: JIT loaded, allocator warm; the first result is dropped first (held, its tables
    # and caches would make every array of the second call fresh memory)
    del cube
    for _ in range(again_calls):  # the best of them: a warm call's page faults vary with what the VM took back
        t3 = time.perf_counter()
        analyze(path, patterns=pats, plugins=False, jobs=jobs)
        t4 = time.perf_counter()
        again = t4 - t3 if again is None else min(again, t4 - t3)
if comm is not None:
    peak = comm.gather(peak, root=0)
    if comm.rank:
        sys.exit(0)
    peak = max(peak)
out = {"import_s": t1 - t0, "analyze_s": t2 - t1, "cpu_s": cpu, "again_s": again, "base_kib": base, "peak_kib": peak,
       "events": events}
if phases:  # the same work again, split into its steps (warm page cache)
    a = time.perf_counter()
    trace = open_any(path)
    for loc in trace.location_ids:
        trace.events(int(loc))
    b = time.perf_counter()
    from analyzer.analyze import required_tables
    ctx = replay(trace, tables=required_tables(select_patterns(pats, plugins=False)), jobs=jobs)
    c = time.perf_counter()
    pats = select_patterns(pats, plugins=False)
    compute_patterns(ctx, pats)
    d = time.perf_counter()
    write_cubex(build_cube(ctx, pats), path + ".bench.cubex")
    e = time.perf_counter()
    os.unlink(path + ".bench.cubex")
    out.update(read_s=b - a, replay_s=c - b, patterns_s=d - c, write_s=e - d)
print(json.dumps(out))
"""


def _measure(path: str, jobs: int = 1, ranks: int = 0, phases: bool = False, without: str = "",
             again: int = 1) -> dict:
    """Run one analysis in a fresh interpreter (``ranks`` > 0: under mpiexec); its timings and peak RSS.
    ``without``: comma-separated pattern modules left out of the analysis; ``again``: how many times the call is
    repeated in the process (the best of them is its "again" time).

    One numba/BLAS thread per process, so ``jobs`` and ``ranks`` are the only parallelism.
    """
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    cmd = [sys.executable, "-c", _MEASURE, path, str(jobs), "1" if phases else "0", without, str(max(1, again))]
    if ranks:
        import shutil

        mpiexec = shutil.which("mpiexec.openmpi") or shutil.which("mpiexec")
        if mpiexec is None:
            raise SystemExit("--ranks-mpi needs mpiexec (Open MPI)")
        env.update(BENCH_MPI="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   MPI4PY_MPIABI="openmpi", OMPI_MCA_btl="self,vader",
                   PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        cmd = [mpiexec, "--oversubscribe", "-n", str(ranks), *cmd]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"benchmark run failed ({' '.join(cmd[:4])} ...):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks analysis", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1e6,1e7", help="comma-separated event counts (default 1e6,1e7)")
    ap.add_argument("--ranks", type=int, default=4, help="MPI ranks of the generated trace")
    ap.add_argument("--threads", type=int, default=4, help="OpenMP threads per rank of the generated trace")
    ap.add_argument("--jobs", default="1", help="comma-separated -j values to measure (default 1)")
    ap.add_argument("--mpi", default="", help="comma-separated analysis rank counts K to measure under "
                    "mpiexec (default none)")
    ap.add_argument("--phases", action="store_true", help="also time read / replay / patterns / write "
                    "separately (serial runs)")
    ap.add_argument("--dir", default="bench-out", help="where the generated traces are kept")
    ap.add_argument("--without", default="", help="comma-separated pattern modules left out of every "
                    "analysis (e.g. patterns.delay)")
    ap.add_argument("--cost-of", default="", metavar="MODULES", help="comma-separated pattern modules whose cost "
                    "to measure: every row also without them, and a table of the ratios (e.g. "
                    + ",".join(SCALASCA2) + ")")
    ap.add_argument("--repeat", type=int, default=1, help="runs per row; the one with the least CPU time is shown")
    ap.add_argument("--again", type=int, default=1, metavar="N", help="repeat the call N times in each process; "
                    "\"again\" is the best of them (default 1)")
    ap.add_argument("--gap", type=float, default=0.0, metavar="S", help="sleep S seconds before each process, so "
                    "that a host taking back free memory (tracefmt.pages) has taken what the previous run freed, as "
                    "for a user starting an analysis (default 0: right after each other)")
    args = ap.parse_args(argv)
    os.makedirs(args.dir, exist_ok=True)
    # warm the JIT cache first so compile time is not measured
    from analyzer.warmup import warm

    warm()
    modes = [("serial" if int(j) == 1 else f"-j {int(j)}", int(j), 0) for j in args.jobs.split(",") if j]
    modes += [(f"mpi K={int(k)}", 1, int(k)) for k in args.mpi.split(",") if k]
    variants = [("", args.without)]
    if args.cost_of:
        variants.append((" -cost", ",".join(filter(None, [args.without, args.cost_of]))))
    rows = []
    for s in args.sizes.split(","):
        n = int(float(s))
        path = os.path.join(args.dir, f"analysis_{n}_{args.ranks}x{args.threads}.elg")
        if not os.path.exists(path):
            t = time.perf_counter()
            build_trace(path, n, args.ranks, args.threads)
            print(f"[bench] generated {path} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        size = os.path.getsize(path)
        for label, jobs, ranks in modes:
            # the variants take turns, run after run: a first call's page faults cost what the machine's state
            # makes them (a VM's host may have taken back the memory freed just before), alike for both
            runs = {suffix: [] for suffix, _ in variants}
            for _ in range(max(1, args.repeat)):
                for suffix, without in variants:
                    time.sleep(max(0.0, args.gap))
                    runs[suffix].append(_measure(path, jobs, ranks, phases=args.phases and ranks == 0,
                                                 without=without, again=args.again))
            for suffix, _ in variants:
                rows.append((label + suffix, min(runs[suffix], key=lambda m: m["cpu_s"]), size))
    what = f"all built-in patterns but those of {args.without}" if args.without else "all built-in patterns"
    best = f", best of {args.repeat} by CPU time" if args.repeat > 1 else ""
    print(f"Analysis benchmark: {args.ranks} ranks x {args.threads} threads, {what}{best}")
    if args.cost_of:
        print(f"(rows ending in -cost: also without {args.cost_of})")
    print(f"{'mode':>10} {'events':>12} {'trace MB':>9} {'analyze s':>10} {'Mevents/s':>10} {'cpu s':>7} "
          f"{'again s':>8} {'Mev/s again':>11} {'peak RSS MB':>12} {'base RSS MB':>12} {'peak/trace':>10} "
          f"{'import s':>9}")
    for label, m, size in rows:
        peak = m["peak_kib"] * 1024
        again = m.get("again_s")
        again_cols = (f"{again:>8.2f} {m['events'] / again / 1e6:>11.2f}" if again else f"{'':>8} {'':>11}")
        print(f"{label:>10} {m['events']:>12,d} {size / 1e6:>9.1f} {m['analyze_s']:>10.2f} "
              f"{m['events'] / m['analyze_s'] / 1e6:>10.2f} {m['cpu_s']:>7.2f} {again_cols} "
              f"{peak / 1e6:>12.0f} {m['base_kib'] * 1024 / 1e6:>12.0f} {peak / size:>10.2f} {m['import_s']:>9.2f}")
    ph = [(label, m) for label, m, _ in rows if "read_s" in m]
    if ph:
        print("\nWhere the time goes (the same analysis again, step by step; replay includes its own read)")
        print(f"{'mode':>10} {'events':>12} {'read s':>8} {'replay s':>9} {'patterns s':>11} {'cube+write s':>13}")
        for label, m in ph:
            print(f"{label:>10} {m['events']:>12,d} {m['read_s']:>8.2f} {m['replay_s']:>9.2f} "
                  f"{m['patterns_s']:>11.2f} {m['write_s']:>13.2f}")
    if args.cost_of:
        print(f"\nCost of {args.cost_of}: with them / without them")
        print(f"{'mode':>10} {'events':>12} {'cpu s':>14} {'cpu ratio':>10} {'again s':>14} {'again ratio':>12} "
              f"{'peak RSS MB':>14} {'RSS ratio':>10}")
        by = {(label, m["events"]): m for label, m, _ in rows}
        for label, m, _ in rows:
            o = by.get((label + " -cost", m["events"]))
            if o is None:
                continue
            # again: the second call, kernels loaded and the process's memory its own (no first faults)
            again = (f"{m['again_s']:>6.2f} / {o['again_s']:<5.2f} {m['again_s'] / o['again_s']:>12.2f}"
                     if m.get("again_s") and o.get("again_s") else f"{'n/a':>14} {'n/a':>12}")
            print(f"{label:>10} {m['events']:>12,d} {m['cpu_s']:>6.2f} / {o['cpu_s']:<5.2f} "
                  f"{m['cpu_s'] / o['cpu_s']:>10.2f} {again} "
                  f"{m['peak_kib'] * 1024 / 1e6:>6.0f} / {o['peak_kib'] * 1024 / 1e6:<5.0f} "
                  f"{m['peak_kib'] / o['peak_kib']:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
