"""Generic properties: time, visits, execution, overhead and computational imbalance.

Time follows Scalasca 1.4 (SCOUT's TIME plus cube3_remap):

* the exclusive time of every call path on every location (replay), with the
  OpenMP fork and join spans moved onto the parallel region's call path: on
  every team member ENTER(parallel) - FORK and JOIN - EXIT(parallel) are
  added there, and on the master the same amount is taken from the call path
  it forked from (where the replay had counted it; nothing when it forked
  outside every call).  :func:`management_shift` is that move, the one
  the OpenMP idle-threads heuristic uses too;
* plus ``omp_idle_threads`` (worker threads outside parallel regions) when
  that pattern is computed in the same run.

``execution`` is that time minus measurement overhead (the ``TRACING``
region of buffer flushes) and minus idle threads, so time = execution +
overhead + idle threads exactly.

The computational imbalance follows the Cube remapper of Scalasca (cube3_remap,
and cubelib's remapper for Scalasca 2): per call path the average over its
participants, ``imbalance_above`` / ``imbalance_below`` the positive / negative
deviations, ``imbalance`` their sum.  Like Scalasca 2 it is computed over
computation time (Scalasca's ``comp``: execution without MPI and OpenMP time,
:func:`computation`); Scalasca 1.4 used execution, which also counted the waits
an imbalance causes (docs/analysis.md).
"""

from __future__ import annotations

import numpy as np

from tracefmt.layout import Paradigm, Role

from .api import Pattern
from .instances import cached, omp_fork_join_instances


def management_shift(ctx) -> np.ndarray:
    """[C, L] time moved onto parallel-region call paths by the fork/join spans (see module doc).

    Positive at the parallel region's call path on every team member (its fork plus join span,
    :func:`patterns.instances.omp_fork_join_instances`), negative by the master's own span at the
    call path it forked from (``fork_cnode``), where the replay counted that span as exclusive time.
    A master that forked outside every call has nothing to give back.  Computed once per context;
    read-only.  Reads ``omp_teams`` and ``omp_team_members``.
    """
    return cached(ctx, "patterns.management_shift", lambda: _management_shift(ctx))


def _management_shift(ctx) -> np.ndarray:
    out = np.zeros((ctx.n_cnodes, ctx.n_locations))
    fj = omp_fork_join_instances(ctx)
    span = fj["fork"] + fj["join"]
    np.add.at(out, (fj["cnode"], fj["loc"]), span)
    gives_back = fj["fork_cnode"] >= 0  # masters only
    np.add.at(out, (fj["fork_cnode"][gives_back], fj["loc"][gives_back]), -span[gives_back])
    return out


def overhead_mask(ctx) -> np.ndarray:
    """[C] True where the callee is a measurement region (buffer flush, pause)."""
    return ctx.cnode_paradigm() == Paradigm.MEASUREMENT


def base_time(ctx) -> np.ndarray:
    """Exclusive time with the fork/join spans on the parallel regions (no idle threads); read-only."""
    return cached(ctx, "patterns.base_time", lambda: ctx.excl_time + management_shift(ctx))


class Time(Pattern):
    name = "time"
    scope = "location"
    parent = None
    display_name = "Time"
    unit = "sec"
    description = (
        "Total time of the program on every location: the exclusive wall-clock time of each call path, including the "
        "time worker threads are idle outside parallel regions, which is charged as Idle Threads. It is the root of "
        "every other time property."
    )
    diagnosis = (
        "Expand the metric tree to see how time splits into execution, overhead and idle threads, then expand the "
        "call tree to find the call paths that take the most time."
    )
    requires = ("omp_teams", "omp_team_members")  # the fork/join spans (management_shift)
    depends = ()
    #: computed first when registered, so its value can be added; not a hard dependency
    optional_depends = ("omp_idle_threads",)

    def compute(self, ctx):
        t = base_time(ctx).copy()
        idle = ctx.results.get("omp_idle_threads")
        if idle is not None:
            t += idle
        return t


class Visits(Pattern):
    name = "visits"
    scope = "location"
    parent = None
    display_name = "Visits"
    unit = "occ"
    description = (
        "Number of times each call path was entered on each location."
    )
    diagnosis = (
        "Compare visits with time: a call path with many short visits may carry more instrumentation and call "
        "overhead than work; consider inlining it or excluding it from measurement."
    )
    requires = ()
    depends = ()

    def compute(self, ctx):
        return ctx.visits.astype(np.float64)


class Execution(Pattern):
    name = "execution"
    scope = "location"
    parent = "time"
    display_name = "Execution"
    unit = "sec"
    description = (
        "Time spent executing the program, its MPI and OpenMP calls included: Time without measurement overhead and "
        "without idle threads."
    )
    diagnosis = (
        "Expand the metric tree to separate MPI and OpenMP time from the remaining computation."
    )
    requires = ("omp_teams", "omp_team_members")  # the fork/join spans (management_shift)
    depends = ()

    def compute(self, ctx):
        t = base_time(ctx).copy()
        t[overhead_mask(ctx)] = 0.0
        return t


class Overhead(Pattern):
    name = "overhead"
    scope = "location"
    parent = "time"
    display_name = "Overhead"
    unit = "sec"
    description = (
        "Time the measurement system spent on its own work that shows in the trace, mainly writing full trace "
        "buffers to disk (the TRACING region)."
    )
    diagnosis = (
        "Large overhead distorts every other measurement: enlarge the trace buffers so they are not flushed during "
        "the run, or exclude frequently called small functions from instrumentation."
    )
    requires = ()
    depends = ()

    def compute(self, ctx):
        t = np.zeros_like(ctx.excl_time)
        m = overhead_mask(ctx)
        t[m] = ctx.excl_time[m]
        return t


# --------------------------------------------------------------------------
# Computational imbalance (the Cube remapper's definition, over computation time as in Scalasca 2)
# --------------------------------------------------------------------------
def in_parallel_mask(ctx) -> np.ndarray:
    """[C] True for call paths at or below an OpenMP parallel region."""
    tree = ctx.calltree
    par = ctx.cnode_role() == Role.OMP_PARALLEL
    out = par.copy()
    # pre-order ids: a parent always has a smaller id than its children
    for c in range(1, len(tree)):
        p = tree.parent[c]
        if p >= 0 and out[p]:
            out[c] = True
    return out


def computation(ctx) -> np.ndarray:
    """[C, L] computation time: ``execution`` without the MPI and OpenMP time (``mpi``, ``omp_time``).

    Scalasca 2's ``comp`` metric, which its Cube remapper computes the load imbalance over: time spent
    waiting in MPI or in the OpenMP runtime is not work, and is a consequence of the imbalance, not a part of it.
    """
    return ctx.results["execution"] - ctx.results["mpi"] - ctx.results["omp_time"]


def imbalance_parts(ctx) -> dict[str, np.ndarray]:
    """Deviation of each participant's computation time (:func:`computation`) from the call path's average.

    Participants of a call path are all threads when it lies inside a
    parallel region, otherwise one location per process (its master thread).
    Computed once per context; read-only.
    """
    return cached(ctx, "patterns.imbalance", lambda: _imbalance_parts(ctx))


def _imbalance_parts(ctx) -> dict[str, np.ndarray]:
    ex = computation(ctx)
    C, L = ex.shape
    inpar = in_parallel_mask(ctx)
    master = ctx.location_thread[:L] == 0
    part = np.where(inpar[:, None], True, master[None, :])  # [C, L]
    n_part = part.sum(axis=1)
    avg = np.where(n_part > 0, (ex * part).sum(axis=1) / np.maximum(n_part, 1), 0.0)
    dev = np.where(part, ex - avg[:, None], 0.0)
    above = np.maximum(dev, 0.0)
    below = np.maximum(-dev, 0.0)
    visited = part & (ctx.visits[:, :L] > 0)
    n_vis = visited.sum(axis=1)
    bypass = np.where(part & ~visited, below, 0.0)
    single = (n_vis == 1)[:, None]
    return {
        "above": above,
        "below": below,
        "bypass": bypass,
        "above_single": np.where(single, above, 0.0),
        "singularity": np.where(single, bypass, 0.0),
    }


class _Imbalance(Pattern):
    """The sum of the ``parts`` of :func:`imbalance_parts`."""

    # a call path's imbalance compares its time on every location with their mean: it needs the whole row
    # of its depends' results (computed after the shares' columns are gathered), and no table
    scope = "row"
    parts: tuple[str, ...] = ()

    def compute(self, ctx):
        p = imbalance_parts(ctx)
        return sum(p[k] for k in self.parts)


class Imbalance(_Imbalance):
    name = "imbalance"
    parent = None
    display_name = "Computational imbalance"
    unit = "sec"
    description = (
        "How far each location's computation time (execution without MPI and OpenMP time) at a call path deviates "
        "from the average over the participants (all threads inside parallel regions, one thread per process "
        "elsewhere): the sum of the time above and below the average, so twice the Overload."
    )
    diagnosis = (
        "Call paths with a large imbalance are where work is distributed unevenly; expand to Overload and Underload "
        "to see which locations have too much or too little work, and rebalance the decomposition there."
    )
    requires = ()
    depends = ("execution", "mpi", "omp_time")  # computation()
    parts = ("above", "below")


class ImbalanceAbove(_Imbalance):
    name = "imbalance_above"
    parent = "imbalance"
    display_name = "Overload"
    unit = "sec"
    description = (
        "Computation time above the call path's average, on the locations that have more work than average: what "
        "perfect balance of this call path would save there."
    )
    diagnosis = (
        "Move work away from these locations, or split their work into smaller pieces that others can take."
    )
    requires = ()
    depends = ("execution", "mpi", "omp_time")  # computation()
    parts = ("above",)


class ImbalanceAboveSingle(_Imbalance):
    name = "imbalance_above_single"
    parent = "imbalance_above"
    display_name = "Single participant"
    unit = "sec"
    description = (
        "Overload at call paths that only one participant executes: all the others are idle there, so the whole "
        "deviation is serialisation."
    )
    diagnosis = (
        "Parallelise this code, or overlap it with work on the other locations."
    )
    requires = ()
    depends = ("execution", "mpi", "omp_time")  # computation()
    parts = ("above_single",)


class ImbalanceBelow(_Imbalance):
    name = "imbalance_below"
    parent = "imbalance"
    display_name = "Underload"
    unit = "sec"
    description = (
        "Computation time below the call path's average, on the locations that have less work than average."
    )
    diagnosis = (
        "Give these locations more of the work at this call path."
    )
    requires = ()
    depends = ("execution", "mpi", "omp_time")  # computation()
    parts = ("below",)


class ImbalanceBelowBypass(_Imbalance):
    name = "imbalance_below_bypass"
    parent = "imbalance_below"
    display_name = "Non-participation"
    unit = "sec"
    description = (
        "Underload of participants that never visited the call path: their deviation is the whole average."
    )
    diagnosis = (
        "These locations skip the call path entirely; check whether the work could be divided among them too."
    )
    requires = ()
    depends = ("execution", "mpi", "omp_time")  # computation()
    parts = ("bypass",)


class ImbalanceBelowSingularity(_Imbalance):
    name = "imbalance_below_singularity"
    parent = "imbalance_below_bypass"
    display_name = "Singularity"
    unit = "sec"
    description = (
        "Non-participation at call paths that only a single participant executes."
    )
    diagnosis = (
        "The call path is serial: parallelise it or overlap it with other work."
    )
    requires = ()
    depends = ("execution", "mpi", "omp_time")  # computation()
    parts = ("singularity",)


PATTERNS = [Time, Visits, Execution, Overhead, Imbalance, ImbalanceAbove, ImbalanceAboveSingle, ImbalanceBelow,
            ImbalanceBelowBypass, ImbalanceBelowSingularity]
