"""OpenMP performance properties: time categories, wait states and idle threads.

The tree is Scalasca 1.4's final trace-report tree (``cube3_remap``) with the
lock-contention children that Scalasca 2.x added back::

    execution
      omp_time
        omp_flush
        omp_management > omp_fork
        omp_synchronization
          omp_barrier > {omp_ebarrier > omp_ebarrier_wait, omp_ibarrier > omp_ibarrier_wait,
                         omp_task_starvation (patterns/tasks.py)}
          omp_critical > omp_lock_contention_critical
          omp_lock_api > omp_lock_contention_api
          omp_ordered
          omp_taskwait, omp_task_management (patterns/tasks.py)
    time
      omp_idle_threads > omp_limited_parallelism

Time categories are classified by the region *role* recorded in the trace
(``tracefmt.layout.Role``) instead of Scalasca's name prefixes.  The wait
states and the management time sum the instance tables of
:mod:`patterns.instances` (barrier waits, lock contention, fork/join spans);
idle threads use the fork/join shift of ``time``
(:func:`patterns.generic.management_shift`).  Every formula lives in a
module-level function so the patterns can share them and each pattern stays
self-contained (no pattern here reads another's result, so any subset can be
selected).

Deliberate differences from Scalasca, all of them no-ops on consistent traces:

* a barrier wait is clamped to the barrier's own EXIT and a lock wait to the
  acquisition time, so a broken clock can never make a wait longer than the
  call that suffered it;
* the idle-threads split tests for *parallel* regions (role OMP_PARALLEL),
  where cube3_remap treated any top-level OpenMP construct as one.
"""

from __future__ import annotations

import numpy as np

from tracefmt.layout import Role

from .api import Pattern, Severity
from .generic import management_shift
from .instances import (omp_barrier_wait_instances, omp_fork_join_instances, omp_lock_contention_instances,
                        wait_severity)

__all__ = [
    "OmpTime",
    "OmpFlush",
    "OmpManagement",
    "OmpFork",
    "OmpSynchronization",
    "OmpBarrier",
    "OmpExplicitBarrier",
    "OmpExplicitBarrierWait",
    "OmpImplicitBarrier",
    "OmpImplicitBarrierWait",
    "OmpCritical",
    "OmpLockContentionCritical",
    "OmpLockApi",
    "OmpLockContentionApi",
    "OmpOrdered",
    "OmpIdleThreads",
    "OmpLimitedParallelism",
    "PATTERNS",
]

# --------------------------------------------------------------------------
# Region roles of each time category
# --------------------------------------------------------------------------
FLUSH_ROLES = (Role.OMP_FLUSH,)
EBARRIER_ROLES = (Role.OMP_BARRIER,)
IBARRIER_ROLES = (Role.OMP_IMPLICIT_BARRIER,)
BARRIER_ROLES = EBARRIER_ROLES + IBARRIER_ROLES
# atomics count as critical sections, as in Scalasca; the critical *body*
# (after the lock is held) is ordinary computation
CRITICAL_ROLES = (Role.OMP_CRITICAL, Role.OMP_ATOMIC)
LOCK_API_ROLES = (Role.OMP_LOCK_API,)
ORDERED_ROLES = (Role.OMP_ORDERED,)
# taskwait and the wait at a taskgroup's end: their exclusive time is waiting for tasks (the tasks a thread runs
# there are charged to the tasks); the child metric omp_taskwait is in patterns/tasks.py, as in Scalasca 2.6
TASKWAIT_ROLES = (Role.OMP_TASKWAIT,)
SYNC_ROLES = BARRIER_ROLES + CRITICAL_ROLES + LOCK_API_ROLES + ORDERED_ROLES + TASKWAIT_ROLES
# worksharing constructs and the parallel region's own exclusive time stay
# plain execution; only the management share of a parallel region is OpenMP time
OMP_TIME_ROLES = FLUSH_ROLES + SYNC_ROLES

#: limited-parallelism differences below this are clock noise (cube3_remap's threshold)
IDLE_THRESHOLD = 1e-10


# --------------------------------------------------------------------------
# Formulas
# --------------------------------------------------------------------------
def cnode_mask(ctx, roles) -> np.ndarray:
    """Boolean [n_cnodes]: the call path's callee has one of ``roles``."""
    return np.isin(ctx.cnode_role(), np.asarray(roles, dtype=ctx.region_role.dtype))


def time_in_roles(ctx, roles) -> np.ndarray:
    """Exclusive time at every call path whose callee has one of ``roles``."""
    mask = cnode_mask(ctx, roles)
    return np.where(mask[:, None], ctx.excl_time, 0.0)


def management(ctx, fork_only: bool = False) -> Severity:
    """Fork (ENTER(parallel) - FORK) plus join (JOIN - EXIT(parallel)) time of
    every team member, charged to the parallel region's call path
    (:func:`patterns.instances.omp_fork_join_instances`)."""
    fj = omp_fork_join_instances(ctx)
    return Severity(fj["cnode"], fj["loc"], fj["fork"] if fork_only else fj["fork"] + fj["join"])


def barrier_wait(ctx, roles) -> Severity:
    """Wait at OpenMP barriers whose call path has one of ``roles``
    (:func:`patterns.instances.omp_barrier_wait_instances`), so the wait always
    lands inside its time category."""
    bw = omp_barrier_wait_instances(ctx)
    return wait_severity(bw, cnode_mask(ctx, roles)[bw["cnode"]])


def lock_contention(ctx, roles) -> Severity:
    """Lock contention of acquiring calls whose callee has one of ``roles``
    (critical constructs or lock API calls;
    :func:`patterns.instances.omp_lock_contention_instances`)."""
    lc = omp_lock_contention_instances(ctx)
    return wait_severity(lc, cnode_mask(ctx, roles)[lc["cnode"]])


def _ancestor_flags(parent: np.ndarray, flag: np.ndarray) -> np.ndarray:
    """Boolean [N]: some strict ancestor of the node has ``flag`` set."""
    out = np.zeros(parent.shape[0], bool)
    up = parent.astype(np.int64).copy()
    live = up >= 0
    while live.any():
        out[live] |= flag[up[live]]
        up[live] = parent[up[live]]
        live = up >= 0
    return out


def _subtree_sum(parent: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Inclusive sums of ``values`` ([N, L]) over each node's subtree."""
    n = parent.shape[0]
    depth = np.zeros(n, np.int64)
    up = parent.astype(np.int64).copy()
    live = up >= 0
    while live.any():
        depth[live] += 1
        up[live] = parent[up[live]]
        live = up >= 0
    out = values.astype(np.float64, copy=True)
    for d in range(int(depth.max(initial=0)), 0, -1):
        nodes = np.flatnonzero(depth == d)
        np.add.at(out, parent[nodes], out[nodes])
    return out


def process_masters(ctx) -> np.ndarray:
    """int64 [L]: the master location (lowest thread number) of each location's process."""
    proc = np.asarray(ctx.location_process, np.int64)
    thread = np.asarray(ctx.location_thread, np.int64)
    order = np.lexsort((thread, proc))  # by process, then thread
    first = np.ones(order.shape[0], bool)
    first[1:] = proc[order][1:] != proc[order][:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(order.shape[0]), 0))
    masters = np.empty(order.shape[0], np.int64)
    masters[order] = order[group_start]
    return masters


def idle_threads(ctx, limited_only: bool = False) -> np.ndarray:
    """Dense [C, L] idle-thread time (cube3_remap's heuristic).

    Outside parallel regions every worker thread is charged the master's
    exclusive time at that call path.  At each outermost parallel region a
    thread is charged the master's inclusive time there minus its own
    (including each thread's fork/join management), when that exceeds
    IDLE_THRESHOLD: limited parallelism.
    """
    n_c, n_l = ctx.n_cnodes, ctx.n_locations
    out = np.zeros((n_c, n_l), np.float64)
    parent = np.asarray(ctx.calltree.parent, np.int64)
    is_par = cnode_mask(ctx, (Role.OMP_PARALLEL,))
    if n_c == 0 or n_l == 0 or not is_par.any():
        return out  # no OpenMP: threads beside the master are not OpenMP workers
    below_par = _ancestor_flags(parent, is_par)
    outermost = np.flatnonzero(is_par & ~below_par)
    serial = ~(is_par | below_par)
    masters = process_masters(ctx)
    workers = np.flatnonzero(masters != np.arange(n_l))

    # Scalasca's `time`: the fork/join spans moved onto the parallel regions
    shift = management_shift(ctx)
    if not limited_only and workers.size:
        rows = np.flatnonzero(serial)
        master_time = ctx.excl_time[rows] + shift[rows]
        out[np.ix_(rows, workers)] = np.maximum(master_time[:, masters[workers]], 0.0)

    # inclusive time per thread at each outermost parallel region; for a
    # nested team's master the shift cancels inside the outer region
    tvalue = ctx.incl_time[outermost] + _subtree_sum(parent, shift)[outermost]
    limited = tvalue[:, masters] - tvalue
    limited = np.where(limited >= IDLE_THRESHOLD, limited, 0.0)
    out[outermost] += limited
    return out


# --------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------
class _RoleTime(Pattern):
    """Exclusive time of call paths whose callee has one of ``roles``."""

    scope = "location"
    roles: tuple = ()

    def compute(self, ctx):
        return time_in_roles(ctx, self.roles)


class OmpTime(Pattern):
    name = "omp_time"
    scope = "location"
    parent = "execution"
    paradigm = "openmp"  # inherited by the whole OpenMP subtree
    display_name = "OMP"
    unit = "sec"
    description = (
        "Time spent inside the OpenMP runtime: flush directives, every kind of OpenMP synchronization (barriers, "
        "critical sections and atomics, lock API calls, ordered regions, taskwaits) and the management of thread teams at "
        "parallel regions.  Work done inside worksharing constructs and the parallel region's own code is "
        "computation and is not counted here."
    )
    diagnosis = (
        "Expand the metric to see which class of OpenMP activity dominates; a large share means the threads spend "
        "their time coordinating rather than computing."
    )
    requires = ("omp_teams", "omp_team_members")
    depends = ()

    def compute(self, ctx):
        return time_in_roles(ctx, OMP_TIME_ROLES) + management(ctx).to_dense(ctx.n_cnodes, ctx.n_locations)


class OmpFlush(_RoleTime):
    name = "omp_flush"
    parent = "omp_time"
    display_name = "Flush"
    unit = "sec"
    description = (
        "Time spent in OpenMP flush directives, which make a thread's view of shared memory consistent."
    )
    diagnosis = (
        "Frequent or expensive flushes usually come from hand-written synchronization; check whether they are needed "
        "for correctness or whether a barrier, atomic or lock already implies them."
    )
    requires = ()
    depends = ()
    roles = FLUSH_ROLES


class OmpManagement(Pattern):
    name = "omp_management"
    scope = "location"
    parent = "omp_time"
    display_name = "Management"
    unit = "sec"
    description = (
        "Time the threads of a team lose while the team is set up and torn down: for each thread, from the master's "
        "FORK until the thread enters the parallel region, and from the thread's exit of the region until the "
        "master's JOIN.  Charged to the parallel region's call path."
    )
    diagnosis = (
        "Team management cost grows with the number of threads and with how often parallel regions start. If it is "
        "large compared with the work in the region, merge neighbouring parallel regions, move the parallel region "
        "outward, or use fewer threads for short regions (num_threads or if clauses)."
    )
    requires = ("omp_teams", "omp_team_members")
    depends = ()

    def compute(self, ctx):
        return management(ctx)


class OmpFork(Pattern):
    name = "omp_fork"
    scope = "location"
    parent = "omp_management"
    display_name = "Fork"
    unit = "sec"
    description = (
        "The team set-up part of thread management: for each thread, the time from the master's FORK until the "
        "thread enters the parallel region."
    )
    diagnosis = (
        "High fork time on the workers but not on the master points at thread start-up or wake-up cost in the OpenMP "
        "runtime (check the wait policy and thread binding); a region started very often is better merged with its "
        "neighbours."
    )
    requires = ("omp_teams", "omp_team_members")
    depends = ()

    def compute(self, ctx):
        return management(ctx, fork_only=True)


class OmpSynchronization(_RoleTime):
    name = "omp_synchronization"
    parent = "omp_time"
    display_name = "Synchronization"
    unit = "sec"
    description = (
        "Time spent in OpenMP synchronization: barriers, critical sections and atomics, lock API calls, ordered "
        "regions and taskwaits (the tasks a thread runs in a barrier or taskwait not included), waiting included."
    )
    diagnosis = (
        "Expand to see whether barriers (load imbalance) or mutual exclusion (contention) dominate, then look at the "
        "call paths and threads with the largest values."
    )
    requires = ()
    depends = ()
    roles = SYNC_ROLES


class OmpBarrier(_RoleTime):
    name = "omp_barrier"
    parent = "omp_synchronization"
    display_name = "Barrier"
    unit = "sec"
    description = (
        "Time spent in OpenMP barriers, both the explicit ones written in the code and the implicit ones at the end "
        "of parallel regions and worksharing constructs."
    )
    diagnosis = (
        "Barrier time is mostly waiting for the slowest thread; see the wait children and balance the work that "
        "precedes the barrier."
    )
    requires = ()
    depends = ()
    roles = BARRIER_ROLES


class OmpExplicitBarrier(_RoleTime):
    name = "omp_ebarrier"
    parent = "omp_barrier"
    display_name = "Explicit"
    unit = "sec"
    description = (
        "Time spent in explicit (user-written) OpenMP barrier directives, waiting and barrier overhead."
    )
    diagnosis = (
        "Check whether each costly barrier is needed for correctness; a critical section, atomic or lock may order "
        "the accesses more cheaply.  Otherwise balance the work done before it."
    )
    requires = ()
    depends = ()
    roles = EBARRIER_ROLES


class OmpExplicitBarrierWait(Pattern):
    name = "omp_ebarrier_wait"
    scope = "location"
    parent = "omp_ebarrier"
    display_name = "Wait at Barrier"
    unit = "sec"
    description = (
        "Time a thread waits in an explicit OpenMP barrier for the last thread of its team to arrive: the latest "
        "ENTER of the barrier over the team minus the thread's own ENTER."
    )
    diagnosis = (
        "Waiting at a barrier is load imbalance in the work before it.  The threads with the least waiting time are "
        "the slow ones: move work from them to the threads that wait longest, or use a dynamic schedule."
    )
    requires = ("omp_barriers",)
    depends = ()

    def compute(self, ctx):
        return barrier_wait(ctx, EBARRIER_ROLES)


class OmpImplicitBarrier(_RoleTime):
    name = "omp_ibarrier"
    parent = "omp_barrier"
    display_name = "Implicit"
    unit = "sec"
    description = (
        "Time spent in the implicit OpenMP barriers at the end of parallel regions and of worksharing constructs "
        "without nowait, waiting and barrier overhead."
    )
    diagnosis = (
        "If threads wait unevenly, try another schedule clause for the loop before it; where the following code does "
        "not depend on the loop's results, a nowait clause removes the barrier."
    )
    requires = ()
    depends = ()
    roles = IBARRIER_ROLES


class OmpImplicitBarrierWait(Pattern):
    name = "omp_ibarrier_wait"
    scope = "location"
    parent = "omp_ibarrier"
    display_name = "Wait at Barrier"
    unit = "sec"
    description = (
        "Time a thread waits in an implicit OpenMP barrier for the last thread of its team to arrive: the latest "
        "ENTER of the barrier over the team minus the thread's own ENTER."
    )
    diagnosis = (
        "This is load imbalance in the worksharing construct or parallel region that ends at the barrier. Compare "
        "the threads: the ones that wait least carry the most work; a dynamic or guided schedule, or a different "
        "decomposition, evens them out."
    )
    requires = ("omp_barriers",)
    depends = ()

    def compute(self, ctx):
        return barrier_wait(ctx, IBARRIER_ROLES)


class OmpCritical(_RoleTime):
    name = "omp_critical"
    parent = "omp_synchronization"
    display_name = "Critical"
    unit = "sec"
    description = (
        "Time spent entering and leaving OpenMP critical sections and in atomic constructs, including the wait for "
        "another thread to leave the section; the protected block itself is not counted."
    )
    diagnosis = (
        "Find the most expensive critical sections and atomics and check whether they are needed, whether they can "
        "protect less code, or whether per-thread copies with a final reduction avoid them."
    )
    requires = ()
    depends = ()
    roles = CRITICAL_ROLES


class OmpLockContentionCritical(Pattern):
    name = "omp_lock_contention_critical"
    scope = "location"
    parent = "omp_critical"
    display_name = "Critical Contention"
    unit = "sec"
    description = (
        "Time a thread waits at the entry of a critical section while another thread is inside it: the release time "
        "of the section's previous holder minus the ENTER of the waiting thread's critical construct."
    )
    diagnosis = (
        "Contention means threads arrive at the section at nearly the same time.  Shorten the protected block, split "
        "one unnamed critical into named ones for unrelated data, or restructure so that threads reach the section "
        "at different times."
    )
    requires = ("locks",)
    depends = ()

    def compute(self, ctx):
        return lock_contention(ctx, CRITICAL_ROLES)


class OmpLockApi(_RoleTime):
    name = "omp_lock_api"
    parent = "omp_synchronization"
    display_name = "Lock API"
    unit = "sec"
    description = (
        "Time spent in OpenMP lock routines (omp_set_lock, omp_unset_lock, omp_test_lock, their nestable variants, "
        "and lock initialisation and destruction), waiting for a lock included."
    )
    diagnosis = (
        "Locate the most expensive lock operations and check whether the locks can be finer grained, held for a "
        "shorter time, or replaced by atomics or lock-free data structures."
    )
    requires = ()
    depends = ()
    roles = LOCK_API_ROLES


class OmpLockContentionApi(Pattern):
    name = "omp_lock_contention_api"
    scope = "location"
    parent = "omp_lock_api"
    display_name = "Lock API Contention"
    unit = "sec"
    description = (
        "Time a thread waits in an OpenMP lock routine while another thread holds the lock: the release time of the "
        "lock's previous holder minus the ENTER of the waiting call."
    )
    diagnosis = (
        "Threads ask for the same lock at nearly the same time.  Hold the lock for less time, split it into several "
        "locks for independent data, or let threads reach it at different times."
    )
    requires = ("locks",)
    depends = ()

    def compute(self, ctx):
        return lock_contention(ctx, LOCK_API_ROLES)


class OmpOrdered(_RoleTime):
    name = "omp_ordered"
    parent = "omp_synchronization"
    display_name = "Ordered"
    unit = "sec"
    description = (
        "Time spent entering OpenMP ordered regions, mostly waiting until the preceding loop iterations have passed "
        "through the region; the ordered block itself is not counted."
    )
    diagnosis = (
        "Ordered regions serialise the loop.  Check whether the ordering is needed, keep the ordered block small, or "
        "use a chunked schedule so that consecutive iterations sit on the same thread."
    )
    requires = ()
    depends = ()
    roles = ORDERED_ROLES


class OmpIdleThreads(Pattern):
    name = "omp_idle_threads"
    scope = "location"
    parent = "time"
    paradigm = "openmp"
    display_name = "Idle Threads"
    unit = "sec"
    description = (
        "Time the CPUs reserved for OpenMP worker threads stay unused: while the process runs serially outside "
        "parallel regions each worker is charged the master's time, and inside a parallel region each thread is "
        "charged the time it does less than the master (limited parallelism).  Because this time is not measured on "
        "the worker threads, it is added to the total time."
    )
    diagnosis = (
        "By Amdahl's law the serial part limits what more threads can gain.  Parallelise the serial call paths with "
        "the largest values, or, on dedicated nodes where idle threads still occupy cores, run with fewer threads "
        "for better use of the allocation."
    )
    requires = ("omp_teams", "omp_team_members")
    depends = ()

    def compute(self, ctx):
        return idle_threads(ctx)


class OmpLimitedParallelism(Pattern):
    name = "omp_limited_parallelism"
    scope = "location"
    parent = "omp_idle_threads"
    display_name = "Limited Parallelism"
    unit = "sec"
    description = (
        "Idle time of threads inside parallel regions: at each outermost parallel region, the master's inclusive "
        "time there minus the thread's own, for threads that are absent from the team or finish their share early.  "
        "Differences below 0.1 ns are ignored."
    )
    diagnosis = (
        "The region runs with fewer threads than the process has, or gives some threads little to do: too few loop "
        "iterations, a num_threads or if clause, or work done by the master alone.  Give the region more parallel "
        "work or run it with fewer threads."
    )
    requires = ("omp_teams", "omp_team_members")
    depends = ()

    def compute(self, ctx):
        return idle_threads(ctx, limited_only=True)


#: the OpenMP patterns in hierarchy order (the registry's built-in list for this module)
PATTERNS = (
    OmpTime,
    OmpFlush,
    OmpManagement,
    OmpFork,
    OmpSynchronization,
    OmpBarrier,
    OmpExplicitBarrier,
    OmpExplicitBarrierWait,
    OmpImplicitBarrier,
    OmpImplicitBarrierWait,
    OmpCritical,
    OmpLockContentionCritical,
    OmpLockApi,
    OmpLockContentionApi,
    OmpOrdered,
    OmpIdleThreads,
    OmpLimitedParallelism,
)
