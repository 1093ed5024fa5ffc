"""OpenMP task properties (format 2.1 traces; definitions with formulas in docs/analysis.md, "OpenMP tasks").

From the replay's task tables (``omp_tasks``, ``omp_task_fragments``) and the team tables::

    omp_task_creation (root, occ)       tasks created, at the creating call path
    omp_task_execution (root)           time executing tasks, at the task construct's call path
      omp_task_imbalance                per team instance: max - mean of the threads' task time
    execution > omp_time > omp_synchronization
      omp_taskwait                      (Scalasca 2.6 OMP_TASKWAIT) time in taskwait / taskgroup ends
                                        not spent executing tasks: waiting for the children
      omp_task_management               a task was ready but the thread in the scheduling point
                                        had not started it yet (dispatch)
      omp_barrier > omp_task_starvation a thread idle in a barrier while its team still has tasks
                                        that nobody started (queued, or still to be created)

A *scheduling gap* is a stretch of a barrier or taskwait call in which its thread runs no task: from
the call's ENTER or the end of the previous task fragment it hosted to the next hosted fragment (or,
in a barrier, the call's EXIT).  Its time is the call's exclusive time (the replay charges the hosted
fragments to the tasks), and it splits into management (after the next task was ready, when that
fragment starts the task: created, and its predecessors in ``omp_task_dependences`` completed,
``omp_tasks.ready_time``) and starvation (before, while the team has a task not yet started; in
barriers only: in a taskwait a tied task may only take its own descendants, and waiting for those
is ``omp_taskwait``).  Shared per-row work (team lookup, the pending-task horizon) is in
``patterns.kernels.tasks``.

The replay charges a task run inside a barrier, taskwait or taskgroup to the task's call path, not
to the barrier, and barrier waits exclude task time (``omp_barriers.task_busy``).
"""

from __future__ import annotations

import numpy as np

from tracefmt.layout import TaskFlag, TaskSwitch

from .api import Pattern, Severity
from .instances import cached
from .kernels.tasks import innermost_team, pending_until
from .omp import BARRIER_ROLES, TASKWAIT_ROLES, time_in_roles
from .tables import Table

__all__ = ["OmpTaskCreation", "OmpTaskExecution", "OmpTaskImbalance", "OmpTaskwait", "OmpTaskManagement",
           "OmpTaskStarvation", "PATTERNS", "scheduling_gaps", "team_at", "task_imbalance", "within_exclusive_time"]

# omp_task_dependences: what omp_tasks.ready_time is made of (the scheduling gaps read only that column)
GAP_TABLES = ("omp_task_fragments", "omp_tasks", "omp_task_dependences", "omp_barriers", "omp_team_members")


# --------------------------------------------------------------------------
# Formulas
# --------------------------------------------------------------------------
def team_at(ctx, loc, time) -> np.ndarray:
    """int64 per point: the team instance (``omp_team_members.team``) whose parallel region is innermost
    on location ``loc`` at ``time``, -1 outside every parallel region.  Reads ``omp_team_members``."""
    m = ctx.table("omp_team_members")
    loc = np.asarray(loc, np.int64)
    time = np.asarray(time, np.float64)
    out = np.full(len(loc), -1, np.int64)
    if len(loc) == 0 or len(m) == 0:
        return out
    m_loc, m_enter, m_exit = (np.asarray(m[c]) for c in ("loc", "enter", "exit"))
    mo = np.lexsort((-m_exit, m_enter, m_loc))
    qo = np.lexsort((time, loc))
    out[qo] = innermost_team(m_loc[mo].astype(np.int64), m_enter[mo].astype(np.float64),
                             m_exit[mo].astype(np.float64), np.asarray(m["team"], np.int64)[mo],
                             loc[qo], time[qo])
    return out


def _task_rows(ctx, process, task) -> np.ndarray:
    """Row of ``omp_tasks`` for each (process, task), -1 where the task was never created."""
    t = ctx.table("omp_tasks")
    key = (np.asarray(t["process"], np.int64) << 40) | np.asarray(t["task"], np.int64)  # sorted by the replay
    want = (np.asarray(process, np.int64) << 40) | np.asarray(task, np.int64)
    if len(key) == 0:
        return np.full(len(want), -1, np.int64)
    at = np.minimum(np.searchsorted(key, want), len(key) - 1)
    return np.where(key[at] == want, at, -1)


def _scheduling_gaps(ctx) -> Table:
    f = ctx.table("omp_task_fragments")
    bar = ctx.table("omp_barriers")
    role = np.asarray(ctx.cnode_role(), np.int64)
    # fragments hosted directly by a barrier or taskwait call, by call and time
    host_cnode = np.asarray(f["host_cnode"], np.int64)
    tsp = (host_cnode >= 0) & np.isin(role[np.maximum(host_cnode, 0)], np.asarray(BARRIER_ROLES + TASKWAIT_ROLES))
    h = np.flatnonzero(tsp)
    h = h[np.lexsort((np.asarray(f["enter"])[h], np.asarray(f["host_call"])[h]))]
    call = np.asarray(f["host_call"], np.int64)[h]
    enter, exit_ = np.asarray(f["enter"], np.float64)[h], np.asarray(f["exit"], np.float64)[h]
    first = np.ones(len(h), bool)
    first[1:] = call[1:] != call[:-1]
    start = np.where(first, np.asarray(f["host_enter"], np.float64)[h], np.roll(exit_, 1))
    # the task of a START fragment is ready from its creation or its last predecessor's completion
    # (omp_tasks.ready_time); a resumed one's readiness is not recorded
    row = _task_rows(ctx, f["process"][h], f["task"][h])
    ready_k = np.where(row >= 0, np.asarray(ctx.table("omp_tasks")["ready_time"], np.float64)[np.maximum(row, 0)],
                       np.nan)
    starts = (np.asarray(f["begin_how"])[h] == int(TaskSwitch.START)) & np.isfinite(ready_k)
    ready = np.where(starts, np.clip(np.where(starts, ready_k, 0.0), start, enter), enter)

    # the barrier rows: their closing gap, and the team and EXIT of every gap in a barrier
    b_call = np.asarray(bar["call_id"], np.int64) if "call_id" in bar else np.full(len(bar), -1, np.int64)
    b_cnode = np.asarray(bar["cnode"], np.int64)
    is_bar = (b_cnode >= 0) & np.isin(role[np.maximum(b_cnode, 0)], np.asarray(BARRIER_ROLES))
    b = np.flatnonzero(is_bar)
    bo = b[np.argsort(b_call[b], kind="stable")]
    host_row = np.full(len(h), -1, np.int64)
    if len(bo):
        pos = np.minimum(np.searchsorted(b_call[bo], call), len(bo) - 1)
        host_row = np.where(b_call[bo][pos] == call, bo[pos], -1)
    closing = np.asarray(bar["enter"], np.float64).copy()  # a barrier's last gap starts after its last task
    in_bar = host_row >= 0
    np.maximum.at(closing, host_row[in_bar], exit_[in_bar])

    gaps = {
        "loc": np.concatenate([np.asarray(f["loc"], np.int64)[h], np.asarray(bar["loc"], np.int64)[b]]),
        "cnode": np.concatenate([host_cnode[h], b_cnode[b]]),
        "start": np.concatenate([start, closing[b]]),
        "ready": np.concatenate([ready, np.asarray(bar["exit"], np.float64)[b]]),
        "end": np.concatenate([enter, np.asarray(bar["exit"], np.float64)[b]]),
        "barrier_row": np.concatenate([host_row, b]),
    }
    # the horizon: the latest start of a task the team created before the barrier was complete
    br = gaps["barrier_row"]
    in_b = (br >= 0) & (np.asarray(bar["team"], np.int64)[np.maximum(br, 0)] >= 0) if len(bar) else br >= 0
    horizon = np.full(len(br), -np.inf)
    if in_b.any():
        t = ctx.table("omp_tasks")
        k_team = team_at(ctx, t["create_loc"], t["create_time"])
        # an undeferred (included) task runs on its creator at once: never one another thread could take
        k_team = np.where(np.asarray(t["flags"], np.int64) & int(TaskFlag.UNDEFERRED), -2, k_team)
        ko = np.lexsort((np.asarray(t["create_time"]), k_team))
        # the barrier is complete when the first thread of the team leaves it: a task created later
        # belongs to what the team does next
        inst = np.asarray(bar["instance"], np.int64)
        done = np.full(int(inst.max(initial=-1)) + 2, np.inf)
        np.minimum.at(done, inst, np.asarray(bar["exit"], np.float64))
        q_team = np.asarray(bar["team"], np.int64)[br[in_b]]
        q_time = done[inst[br[in_b]]]
        qo = np.lexsort((q_time, q_team))
        h_in = np.empty(len(qo))
        h_in[qo] = pending_until(k_team[ko], np.asarray(t["create_time"], np.float64)[ko],
                                 np.asarray(t["start_time"], np.float64)[ko], q_team[qo], q_time[qo])
        horizon[in_b] = h_in
    gaps["horizon"] = horizon
    return Table(gaps)


def scheduling_gaps(ctx) -> Table:
    """One row per scheduling gap (module docstring): ``loc``, ``cnode`` (of the barrier or taskwait),
    ``start``, ``ready`` (from here on the next task was ready: management), ``end``, ``barrier_row``
    (row in ``omp_barriers``, -1 in a taskwait) and ``horizon`` (the latest start of a task the barrier's
    team created before the first thread left the barrier; -inf in a taskwait).  Reads ``GAP_TABLES``."""
    return cached(ctx, "patterns.task_scheduling_gaps", lambda: _scheduling_gaps(ctx))


def _no_tasks(ctx) -> bool:
    """No task was created or run: every gap is a barrier's closing one, which ends where the next task would be
    ready (its exit) and has no horizon, so management and starvation are zero without building the gaps (one
    row per OpenMP barrier: 0.1 s at 10^7 events)."""
    return len(ctx.table("omp_task_fragments")) == 0 and len(ctx.table("omp_tasks")) == 0


def within_exclusive_time(ctx, sev: Severity) -> np.ndarray:
    """Dense [C, L] ``sev``, clamped to the exclusive time of each cell: a call recorded inside a barrier
    or taskwait that is no task fragment (none is on consistent traces) must not make a part of its
    scheduling gaps exceed the call's own time."""
    return np.minimum(sev.to_dense(ctx.n_cnodes, ctx.n_locations), np.maximum(ctx.excl_time, 0.0))


def task_imbalance(ctx) -> Severity:
    """Per team instance u with threads l: tau(u, l) = own task time of the fragments l ran in u;
    I(u) = max_l tau - mean_l tau over the team's threads, charged to the busiest thread (lowest
    location on ties) at its task call paths in proportion to its task time there (so never above it).
    Reads ``omp_task_fragments`` and ``omp_team_members``."""
    f = ctx.table("omp_task_fragments")
    m = ctx.table("omp_team_members")
    cnode = np.asarray(f["cnode"], np.int64)
    loc = np.asarray(f["loc"], np.int64)
    own = np.asarray(f["own_time"], np.float64)
    team = team_at(ctx, loc, f["enter"])
    ok = (team >= 0) & (cnode >= 0)
    if not ok.any():
        return Severity.empty()
    cnode, loc, own, team = cnode[ok], loc[ok], own[ok], team[ok]
    n_team = int(max(team.max(), np.max(m["team"], initial=-1))) + 1
    size = np.bincount(np.asarray(m["team"], np.int64), minlength=n_team).astype(np.float64)
    # per (team, location) task time; the busiest location of each team
    pair, pair_of = np.unique(team * ctx.n_locations + loc, return_inverse=True)
    tau = np.bincount(pair_of, own)
    p_team, p_loc = pair // ctx.n_locations, pair % ctx.n_locations
    o = np.lexsort((p_loc, -tau, p_team))  # per team: busiest first, then the lowest location
    top = np.ones(len(o), bool)
    top[1:] = p_team[o][1:] != p_team[o][:-1]
    busiest = o[top]
    total = np.bincount(p_team, tau, minlength=n_team)
    mean = total / np.maximum(size, 1.0)
    imb = np.zeros(len(pair))
    imb[busiest] = np.maximum(tau[busiest] - mean[p_team[busiest]], 0.0)
    share = np.where(tau[pair_of] > 0, own / np.where(tau[pair_of] > 0, tau[pair_of], 1.0), 0.0)
    value = imb[pair_of] * share
    keep = value > 0
    return Severity(cnode[keep], loc[keep], value[keep])


# --------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------
class OmpTaskCreation(Pattern):
    name = "omp_task_creation"
    scope = "location"
    parent = None
    paradigm = "openmp"
    display_name = "OMP Tasks Created"
    unit = "occ"
    description = "Number of explicit OpenMP tasks created, at the call path and on the thread that created them."
    diagnosis = ("Compare with OMP Task Execution: many tasks with little execution time each mean creation and "
                 "scheduling overhead dominates; raise the grain size (cut-off depth, final, fewer larger tasks).")
    requires = ("omp_tasks",)

    def compute(self, ctx):
        t = ctx.table("omp_tasks")
        cnode = np.asarray(t["create_cnode"], np.int64)
        ok = cnode >= 0
        return Severity(cnode[ok], np.asarray(t["create_loc"], np.int64)[ok], np.ones(int(ok.sum())))


class OmpTaskExecution(Pattern):
    name = "omp_task_execution"
    scope = "location"
    parent = None
    paradigm = "openmp"
    display_name = "OMP Task Execution"
    unit = "sec"
    description = ("Time threads spend executing explicit OpenMP tasks, at the task construct's call path and the "
                   "executing thread: every execution fragment's duration minus the fragments of other tasks run "
                   "inside it.")
    diagnosis = ("Uneven values over the threads of a team mean the task work is imbalanced (too few tasks, a serial "
                 "producer, long tasks created last); per call path it shows which task construct does the work.")
    requires = ("omp_task_fragments",)

    def compute(self, ctx):
        f = ctx.table("omp_task_fragments")
        cnode = np.asarray(f["cnode"], np.int64)
        ok = cnode >= 0
        return Severity(cnode[ok], np.asarray(f["loc"], np.int64)[ok], np.asarray(f["own_time"], np.float64)[ok])


class OmpTaskImbalance(Pattern):
    name = "omp_task_imbalance"
    scope = "location"
    parent = "omp_task_execution"
    display_name = "Task Imbalance"
    unit = "sec"
    description = ("Per instance of a parallel region: the task time of its busiest thread minus the mean task time "
                   "of the team's threads (max - mean), charged to the busiest thread at its task call paths: what "
                   "an even spread of the task work would have saved.")
    diagnosis = ("Too few or too coarse tasks, or tasks that cannot move (included, tied to a thread that created "
                 "them late): create more, smaller tasks, create the big ones first, or split the work differently.")
    requires = ("omp_task_fragments", "omp_team_members")

    def compute(self, ctx):
        # never above the task time of its cell, also where a broken clock gives a fragment negative own time
        execution = OmpTaskExecution().compute(ctx).to_dense(ctx.n_cnodes, ctx.n_locations)
        return np.minimum(task_imbalance(ctx).to_dense(ctx.n_cnodes, ctx.n_locations), np.maximum(execution, 0.0))


class OmpTaskwait(Pattern):
    name = "omp_taskwait"
    scope = "location"
    parent = "omp_synchronization"
    display_name = "Taskwait"
    unit = "sec"
    description = ("Time in taskwait directives and at the end of taskgroups not spent executing tasks: waiting for "
                   "child (or descendant) tasks to finish, at the taskwait's call path (Scalasca's OMP Taskwait).")
    diagnosis = ("A task waits for children that run long elsewhere: create the long child earlier, give the waiting "
                 "task more own work before its taskwait, or drop the taskwait where the result is not needed yet.")
    requires = ()

    def compute(self, ctx):
        return time_in_roles(ctx, TASKWAIT_ROLES)


class OmpTaskManagement(Pattern):
    name = "omp_task_management"
    scope = "location"
    parent = "omp_synchronization"
    display_name = "Task Management"
    unit = "sec"
    description = ("Time a thread in a barrier or taskwait spends between the moment the task it runs next was ready "
                   "(created, and the tasks it depends on completed) and the start of that task, not before the end "
                   "of its previous task there: the runtime's dispatch cost per task (dequeue, switch, and what the "
                   "measurement adds), at the barrier or taskwait.")
    diagnosis = ("Large against OMP Task Execution, with many tasks created: the tasks are too fine.  Raise the grain "
                 "size (a cut-off depth, final or if clauses, a taskloop grainsize).")
    requires = GAP_TABLES

    def compute(self, ctx):
        if _no_tasks(ctx):
            return Severity.empty()
        g = scheduling_gaps(ctx)
        value = g["end"] - g["ready"]
        keep = (value > 0) & (g["cnode"] >= 0)
        return within_exclusive_time(ctx, Severity(g["cnode"][keep], g["loc"][keep], value[keep]))


class OmpTaskStarvation(Pattern):
    name = "omp_task_starvation"
    scope = "location"
    parent = "omp_barrier"
    display_name = "Task Starvation"
    unit = "sec"
    description = ("Time a thread idles in a barrier while its team has a task nobody started yet: one already "
                   "created, or one still to be created before the barrier is complete (a producer is still "
                   "creating); the part before the task it runs next was ready (created, and the tasks it depends "
                   "on completed).  At the barrier's call path.")
    diagnosis = ("The tasks come from one thread too slowly (a serial producer) or too late, or wait for each other "
                 "(a chain of dependences): create them in parallel (a worksharing loop or a taskloop), create them "
                 "earlier, or give the dependence graph more width.")
    requires = GAP_TABLES

    def compute(self, ctx):
        if _no_tasks(ctx):
            return Severity.empty()
        g = scheduling_gaps(ctx)
        value = np.minimum(g["ready"], g["horizon"]) - g["start"]
        keep = (g["barrier_row"] >= 0) & (value > 0) & (g["cnode"] >= 0)
        return within_exclusive_time(ctx, Severity(g["cnode"][keep], g["loc"][keep], value[keep]))


PATTERNS = (OmpTaskCreation, OmpTaskExecution, OmpTaskImbalance, OmpTaskwait, OmpTaskManagement, OmpTaskStarvation)
