"""What the OpenMP task properties (patterns/tasks.py) cost against the replay, on synthetic task traces.

    python -m benchmarks tasks [--tasks 10000,100000] [--threads 4] [--repeat 3] [--deps]

Builds a serial-producer trace per size with TraceBuilder (one thread creates every task in a single, the others
run them in the single's barrier as they come; with --deps every task depends on the one its worker ran before,
one OMP_TASK_DEPENDENCE per task), replays it with every table, then computes each task property alone (nothing
derived kept from another: management and starvation each pay for the scheduling gaps they share in a full
analysis) --repeat times, after one warm-up on a small trace (numba's cache loaded); prints the minimum CPU time
(user + system, of this process) of the replay and of each property.  docs/analysis.md ("OpenMP tasks") quotes
the numbers.
"""

from __future__ import annotations

import argparse
import time

TASK, BAR, PAR = "!$omp task @b.c:3", "!$omp implicit barrier @b.c:2", "!$omp parallel @b.c:1"
NAMES = ("omp_task_creation", "omp_task_execution", "omp_task_imbalance", "omp_taskwait", "omp_task_management",
         "omp_task_starvation")


def producer_trace(n_tasks: int, n_threads: int, deps: bool = False):
    """A valid format 2.1 trace: n_tasks created 1 us apart by thread 0, run by the others in turn; with
    ``deps`` each task after the first round depends on the task its worker ran before it."""
    import tracefmt

    b = tracefmt.TraceBuilder(creator="benchmarks.tasks")
    locs = [b.location(0, t) for t in range(n_threads)]
    m, workers = locs[0], locs[1:]
    dt, work = 1e-6, 0.5e-6 * max(len(workers), 1)
    b.enter(m, 0.0, "main")
    b.fork(m, 0.0, 1, n_threads)
    for loc in locs:
        b.enter(loc, 1e-4, PAR, team=1)
    b.enter(m, 2e-4, "!$omp single @b.c:2")
    create = [2e-4 + (i + 1) * dt for i in range(n_tasks)]
    k = max(len(workers), 1)
    for i, t in enumerate(create):
        b.task_create(m, t, i + 1, TASK, dependences=int(deps and i >= k))
        if deps and i >= k:
            b.task_dependence(m, t, i + 1 - k, i + 1)
    b.exit(m, create[-1] + dt)
    end = create[-1] + 2 * dt
    for k, w in enumerate(workers):
        b.enter(w, 2e-4, BAR)
        t = 2e-4
        for i in range(k, n_tasks, len(workers)):
            start = max(t, create[i] + dt / 4)
            b.task_run(w, start, start + work, i + 1)
            t = start + work
        end = max(end, t)
    end += dt
    b.enter(m, create[-1] + dt, BAR)
    for loc in locs:
        b.omp_coll_exit(loc, end, BAR)
        b.exit(loc, end + dt)
    b.join(m, end + 2 * dt, 1, n_threads)
    b.exit(m, end + 3 * dt, "main")
    return b.build()


def measure(trace, repeat: int) -> dict[str, float]:
    from analyzer.analyze import required_tables, select_patterns
    from analyzer.replay import replay

    pats = select_patterns(list(NAMES), plugins=False)
    tables = required_tables(select_patterns(None, plugins=False))
    out = {}
    for _ in range(repeat):
        t0 = time.process_time()
        ctx = replay(trace, tables=tables)
        out["replay"] = min(out.get("replay", float("inf")), time.process_time() - t0)
        for p in pats:
            if p.name not in NAMES:
                continue
            ctx.derived.clear()
            with ctx.computing(p):
                t0 = time.process_time()
                p.compute(ctx)
                out[p.name] = min(out.get(p.name, float("inf")), time.process_time() - t0)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks tasks", description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="10000,100000", help="comma-separated task counts (default 10000,100000)")
    ap.add_argument("--threads", type=int, default=4, help="team size (default 4)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per size; the minimum is shown (default 3)")
    ap.add_argument("--deps", action="store_true", help="every task depends on its worker's previous one")
    a = ap.parse_args(argv)
    sizes = [int(x) for x in a.tasks.split(",") if x.strip()]
    measure(producer_trace(20, a.threads), 1)  # warm-up: the kernels' compiled code loaded
    print(f"{'tasks':>8} {'events':>9} {'replay s':>9} " + " ".join(f"{n[4:]:>15}" for n in NAMES) + "  (CPU seconds)")
    for n in sizes:
        trace = producer_trace(n, a.threads, a.deps)
        events = sum(len(trace.events(int(loc))) for loc in trace.location_ids)
        r = measure(trace, a.repeat)
        print(f"{n:>8} {events:>9} {r['replay']:>9.3f} " + " ".join(f"{r[name]:>15.4f}" for name in NAMES))
    return 0
