"""The critical path and the performance impact of activities (Scalasca 2.6, CriticalPath.pattern).

The critical path is the chain of activities, from the program's start to its end, that sets its
run time: it starts where the last rank leaves ``MPI_Finalize`` (without MPI: at the end of the
master thread), runs backwards on that location and, at a wait state it reaches, moves to the
location the wait was for (the late sender, the receiver of a late receiver, the last arrival at
a collective or a barrier, the master at an OpenMP fork), until ``MPI_Init`` (or the start).  Each
location is charged the time the path spends on it, per call path, minus the wait at the point
where the path leaves it.  The backward replay is ``patterns.kernels.backward.critical_path``.

From the path's profile ``gcp`` (summed over locations) and each location's time without wait
states ``t`` (the time maps minus every synchronisation point's wait):

* ``critical_path_activities`` = min(gcp, t) for call paths on the path: the resources the
  path's activities use;
* ``non_critical_path_activities`` = max(t - gcp, 0);
* ``critical_imbalance_impact``: per location the excess of the path over its own time,
  max(gcp - t, 0), scaled so that it adds up to the location's waiting (Σ gcp - Σ t), summed over
  locations and handed to the call paths on the path in proportion to each location's share of
  the path;
* ``inter_partition_imbalance``: the same for the *headroom*, the path's time in call paths a
  location never executes (another partition's activities: MPMD programs, or OpenMP workers
  against the MPI master); ``intra_partition_imbalance`` is the rest of the imbalance impact.

Where a location has no excess (or no headroom) its share is zero; Scalasca divides by zero
there, which makes the whole metric zero (docs/analysis.md, "Critical path").
"""

from __future__ import annotations

import numpy as np

from .api import Pattern
from .backward import REQUIRES, backward_inputs, time_profile
from .instances import cached

__all__ = ["critical_path_profile", "impact_metrics", "own_time", "CriticalPath", "PerformanceImpact", "PerformanceImpactCriticalPath",
           "CriticalPathActivities", "CriticalImbalanceImpact", "IntraPartitionImbalance",
           "InterPartitionImbalance", "NonCriticalPathActivities", "PATTERNS"]


def critical_path_profile(ctx) -> dict[str, np.ndarray]:
    """The critical path and the impact metrics as dense [C, L] arrays, by metric name (computed once)."""
    return cached(ctx, "patterns.critical_path", lambda: _profile(ctx))


def _waits(inp, C: int, L: int) -> np.ndarray:
    from .kernels.backward_build import wait_sums

    out = np.zeros((C, L))
    if wait_sums(inp.sp_i, inp.sp_f, out):  # one pass over the packed points, in their order
        return out
    keep = inp.sp_wait > 0  # np.bincount adds in the order of np.add.at: the same sums
    return np.bincount(inp.sp_cnode[keep].astype(np.int64) * L + inp.sp_loc[keep], weights=inp.sp_wait[keep],
                       minlength=C * L).reshape(C, L)


def _share(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den per location where den > 0, else 0."""
    return np.divide(num, den, out=np.zeros_like(num, dtype=np.float64), where=den > 0)


def _profile(ctx) -> dict[str, np.ndarray]:
    from .kernels.backward import critical_path

    inp = backward_inputs(ctx)
    C, L = ctx.n_cnodes, ctx.n_locations
    lcp = np.zeros((C, L))
    critical_path(inp, lcp)
    return impact_metrics(lcp, own_time(ctx, inp))


def own_time(ctx, inp, n_points: int | None = None) -> np.ndarray:
    """Each location's time per call path without its wait states ([C, L]: the time maps minus the waits at
    its first ``n_points`` points, all by default; a share's own points come first)."""
    C, L = ctx.n_cnodes, ctx.n_locations
    if n_points is not None and n_points < inp.sp_i.shape[0]:
        inp = inp._replace(sp_i=inp.sp_i[:n_points], sp_f=inp.sp_f[:n_points], sp_wait=inp.sp_wait[:n_points],
                           sp_cnode=inp.sp_cnode[:n_points], sp_loc=inp.sp_loc[:n_points])
    tm = time_profile(ctx)
    return tm - np.minimum(tm, _waits(inp, C, L))


def impact_metrics(lcp: np.ndarray, t: np.ndarray) -> dict[str, np.ndarray]:
    """The critical path's metrics from its profile ``lcp`` and the time without wait states ``t`` (both
    [C, L] over every location: the imbalance terms are sums over locations)."""
    gcp = lcp.sum(axis=1)
    on = gcp > 0
    activities = np.where(on[:, None], np.minimum(gcp[:, None], t), 0.0)
    non_critical = np.maximum(t - gcp[:, None], 0.0)
    gcplen = gcp.sum()
    frac = np.divide(lcp, gcp[:, None], out=np.zeros_like(lcp), where=on[:, None] & (lcp > 0))
    # imbalance impact (Böhme's thesis, p. 83): the excess of the path over the location, scaled to its waiting
    excess = np.maximum(gcp[:, None] - t, 0.0)
    scale = _share(gcplen - t.sum(axis=0), excess.sum(axis=0))
    imbalance = np.maximum(frac * (excess * scale[None, :]).sum(axis=1)[:, None], 0.0)
    # inter-partition: the path's time in call paths a location never executes (its headroom)
    executes = t > 0
    head = np.where(executes, 0.0, gcp[:, None])
    lplen = np.where(executes, t + gcp[:, None] - np.minimum(t, gcp[:, None]), 0.0).sum(axis=0)
    hrf = _share(gcplen - lplen, head.sum(axis=0))
    inter = np.maximum(frac * (head * hrf[None, :]).sum(axis=1)[:, None], 0.0)
    return {"critical_path": lcp, "critical_path_activities": activities, "critical_imbalance_impact": imbalance,
            "inter_partition_imbalance": inter, "non_critical_path_activities": non_critical}


class _CP(Pattern):
    unit = "sec"
    requires = REQUIRES
    depends = ()

    def compute(self, ctx):
        return critical_path_profile(ctx)[self.name]


class CriticalPath(_CP):
    name = "critical_path"
    parent = None
    display_name = "Critical path"
    description = ("Profile of the program's critical path: following the chain of activities and wait states from "
                   "the end of the run (the last rank leaving MPI_Finalize, or the end of the master thread) back to "
                   "MPI_Init (or the start), the time each call path on each location spends on that path; where "
                   "the path meets a wait state it continues on the location that caused it (Scalasca 2.6).")
    diagnosis = ("Call paths with much critical-path time set the run time; optimising call paths that are not on it "
                 "does not shorten the run.  A call path whose critical-path time is large against its average "
                 "execution time points to imbalance or serialisation.")


class PerformanceImpact(_CP):
    name = "performance_impact"
    parent = None
    display_name = "Performance impact"
    description = ("Resource consumption split by its impact on the run time: the activities on the critical path "
                   "(with the waiting their imbalance causes elsewhere) and those off it.  Sum of its children.")
    diagnosis = "Expand it to see how much of the resources goes to critical-path activities and their imbalance."

    def compute(self, ctx):
        p = critical_path_profile(ctx)
        return p["critical_path_activities"] + p["critical_imbalance_impact"] + p["non_critical_path_activities"]


class PerformanceImpactCriticalPath(_CP):
    name = "performance_impact_criticalpath"
    parent = "performance_impact"
    display_name = "Critical-path activities"
    description = ("Resources consumed by activities on the critical path, including the waiting their imbalance "
                   "causes on other locations: activity impact plus imbalance impact.")
    diagnosis = "Expand it to separate the activities' own time from the waiting their imbalance causes."

    def compute(self, ctx):
        p = critical_path_profile(ctx)
        return p["critical_path_activities"] + p["critical_imbalance_impact"]


class CriticalPathActivities(_CP):
    name = "critical_path_activities"
    parent = "performance_impact_criticalpath"
    display_name = "Activity impact"
    description = ("Resources consumed by executing activities that are on the critical path: per call path on the "
                   "path and location, min(the path's time in that call path, the location's time in it without "
                   "wait states).")
    diagnosis = "Speeding up these activities shortens the run, on every location that executes them."


class CriticalImbalanceImpact(_CP):
    name = "critical_imbalance_impact"
    parent = "performance_impact_criticalpath"
    display_name = "Imbalance impact"
    description = ("Waiting time mapped onto the call paths that spend more time on the critical path than on the "
                   "waiting locations: per location its waiting is distributed over its deficit against the path, "
                   "summed over locations and charged to the path's call paths in proportion to each location's "
                   "share of the path (Böhme, 2014).")
    diagnosis = ("A large value is a parallel bottleneck: load imbalance in those activities makes the others wait.  "
                 "Balance their work, or compare with the delay costs to find the imbalanced locations.")


class IntraPartitionImbalance(_CP):
    name = "intra_partition_imbalance"
    parent = "critical_imbalance_impact"
    display_name = "Intra-partition imbalance"
    description = ("The imbalance impact within partitions of locations that execute the same activities: imbalance "
                   "impact minus inter-partition imbalance (at least 0).")
    diagnosis = "Imbalance between locations doing the same work: redistribute it among them."

    def compute(self, ctx):
        p = critical_path_profile(ctx)
        return np.maximum(p["critical_imbalance_impact"] - _inter(p), 0.0)


def _inter(p) -> np.ndarray:
    """Inter-partition imbalance, at most the imbalance impact of its cell (it is a part of it)."""
    return np.minimum(p["inter_partition_imbalance"], p["critical_imbalance_impact"])


class InterPartitionImbalance(_CP):
    name = "inter_partition_imbalance"
    parent = "critical_imbalance_impact"
    display_name = "Inter-partition imbalance"
    description = ("The imbalance impact due to partitions that execute different activities (MPMD programs; in "
                   "hybrid programs the MPI master and the OpenMP workers): the critical path's time in call paths "
                   "a location never executes, scaled to the location's waiting, summed over locations and charged "
                   "to the path's call paths like the imbalance impact (at most the imbalance impact of the cell).")
    diagnosis = "A large value suggests repartitioning the work or the locations between the partitions."

    def compute(self, ctx):
        return _inter(critical_path_profile(ctx))


class NonCriticalPathActivities(_CP):
    name = "non_critical_path_activities"
    parent = "performance_impact"
    display_name = "Non-critical-path activities"
    description = ("Resources consumed by activities beyond their time on the critical path: per call path and "
                   "location max(time without wait states - the path's time in that call path, 0).")
    diagnosis = "Optimising these activities does not shorten the run; they have slack."


PATTERNS = [CriticalPath, PerformanceImpact, PerformanceImpactCriticalPath, CriticalPathActivities,
            CriticalImbalanceImpact, IntraPartitionImbalance, InterPartitionImbalance, NonCriticalPathActivities]
