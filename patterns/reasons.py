"""Reasons: patterns that name *why* threads wait, each a child of the wait it explains.

EXPERT (and our ``omp_*_wait`` patterns) report load imbalance as "waiting at a
barrier".  The patterns here look at what the trace shows around that wait and
split off the part with a known cause.  All of them use only what the
``patterns`` package exports (the API, the context, the instance tables),
like a plugin would.

Every reason works on aggregates per (call path, location) over the whole run:

    explained(b, loc) = min(wait(b, loc), max over the team of X(loc') - X(loc))

(the section reasons use the sections a thread did not get times the mean section time), where ``wait`` is the parent pattern's value at barrier call path ``b`` and
``X`` is the time (or count) the cause gives each thread (the master-region
time, the single-block time, the nowait loop's work, ...).  A reason is
therefore never larger than the wait it explains; threads of one process form
the team.  Repeated instances of the same construct are summed, which is exact
when every instance is shaped alike (as in the ATS programs) and an
approximation otherwise (documented in docs/ats.md).

Call paths come from the call tree, so a reason needs the events it reads:
section counts need a recorded call inside each section (a user region, or
compiler instrumentation); without one the section reasons stay silent.
"""

from __future__ import annotations

import re

import numpy as np

from tracefmt.layout import Role

from .api import Pattern, Severity
from .instances import omp_lock_contention_instances, wait_severity

__all__ = [
    "OmpUnevenSectionDistribution",
    "OmpNotEnoughSections",
    "OmpSingleSerialization",
    "OmpNowaitLoopImbalance",
    "OmpMasterSerialization",
    "OmpOrderedSerialization",
    "OmpCriticalSerialization",
    "OmpFrequentAtomics",
    "OmpLockContentionAllThreads",
    "OmpLockContentionPairs",
    "OmpFalseSharing",
    "PATTERNS",
    "FREQUENT_ATOMIC_RATE",
    "SERIALIZED_SHARE",
]

#: atomics per second of the enclosing region's time (per thread) from which they count as
#: frequent: a runtime-performed atomic costs 0.1-1 us, so at this rate they take >= 0.1-1 %
FREQUENT_ATOMIC_RATE = 1.0e4
#: a construct is serialized when its protected blocks, summed over the team, fill at least
#: this share of the enclosing loop's wall time
SERIALIZED_SHARE = 0.5

_SOURCE = re.compile(r"@(.*):(\d+)$")


# --------------------------------------------------------------------------
# helpers over the call tree
# --------------------------------------------------------------------------
def _roles(ctx) -> np.ndarray:
    return np.asarray(ctx.cnode_role(), np.int64)


def _children(ctx) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for c, p in enumerate(np.asarray(ctx.calltree.parent, np.int64).tolist()):
        out.setdefault(p, []).append(c)
    return out


def _source_line(ctx, cnode: int) -> tuple[str, int] | None:
    """(file, line) of a construct, from the region definition or its ``@file:line`` name."""
    rid = int(ctx.calltree.region[cnode])
    reg = ctx.trace.defs.regions.get(rid) if ctx.trace is not None else None
    name = ctx.region_name[rid]
    m = _SOURCE.search(name)
    if m:
        return m.group(1), int(m.group(2))
    if reg is not None and reg.begin_line not in (None, 0xFFFFFFFF):
        return str(reg.file), int(reg.begin_line)
    return None


def _processes(ctx) -> list[np.ndarray]:
    """Location ids of each process (the members of its OpenMP teams)."""
    proc = np.asarray(ctx.location_process, np.int64)
    return [np.flatnonzero(proc == p) for p in np.unique(proc)]


def _explained(wait_row: np.ndarray, cause_row: np.ndarray, ctx, members_only: np.ndarray | None = None):
    """min(wait, team max of cause - own cause) per location, team = the location's process."""
    out = np.zeros_like(wait_row)
    for locs in _processes(ctx):
        sel = locs if members_only is None else locs[members_only[locs]]
        if sel.size == 0:
            continue
        gap = cause_row[sel].max() - cause_row[sel]
        out[sel] = np.clip(np.minimum(wait_row[sel], gap), 0.0, None)
    return out


def _dense(ctx) -> np.ndarray:
    return np.zeros((ctx.n_cnodes, ctx.n_locations))


# --------------------------------------------------------------------------
# sections
# --------------------------------------------------------------------------
def _section_reasons(ctx, want_not_enough: bool) -> np.ndarray:
    """Waits at a sections construct's barrier explained by how many sections each thread got.

    Sections executed per thread ``n_i`` = calls recorded directly inside the construct (one
    per section body), summed over its instances.  A thread that got fewer sections than the
    busiest one waits for the sections it did not get:

        explained_i = min(wait_i, (max n - n_i) * mean section time)

    with the mean over every section the team executed there.  The construct counts as "not
    enough sections" when some thread ran none, as "uneven distribution" when all ran some."""
    out = _dense(ctx)
    wait = ctx.results["omp_ibarrier_wait"]
    roles = _roles(ctx)
    kids = _children(ctx)
    for s in np.flatnonzero(roles == Role.OMP_SECTIONS):
        barriers = [c for c in kids.get(int(s), []) if roles[c] == Role.OMP_IMPLICIT_BARRIER]
        work = [c for c in kids.get(int(s), []) if roles[c] != Role.OMP_IMPLICIT_BARRIER]
        if not barriers or not work:
            continue
        executed = ctx.visits[work].sum(axis=0).astype(np.float64)
        busy = ctx.incl_time[work].sum(axis=0)
        present = ctx.visits[int(s)] > 0
        for locs in _processes(ctx):
            team = locs[present[locs]]
            if team.size < 2:
                continue
            counts = executed[team]
            if counts.max() == counts.min():
                continue
            if (counts.min() == 0) != want_not_enough:
                continue
            missing = (counts.max() - counts) * (busy[team].sum() / counts.sum())
            for b in barriers:
                out[b, team] = np.clip(np.minimum(wait[b, team], missing), 0.0, None)
    return out


class OmpUnevenSectionDistribution(Pattern):
    name = "omp_uneven_section_distribution"
    scope = "location"
    parent = "omp_ibarrier_wait"
    display_name = "Uneven Section Distribution"
    unit = "sec"
    description = (
        "Waiting at the implicit barrier of a sections construct in which every thread executed at least one section "
        "but some executed more than others: the number of sections is not a multiple of the team size."
    )
    diagnosis = (
        "Make the number of sections a multiple of the number of threads (merge or split sections), or run the "
        "construct with as many threads as it has sections."
    )
    requires = ()
    depends = ("omp_ibarrier_wait",)

    def compute(self, ctx):
        return _section_reasons(ctx, want_not_enough=False)


class OmpNotEnoughSections(Pattern):
    name = "omp_not_enough_sections"
    scope = "location"
    parent = "omp_ibarrier_wait"
    display_name = "Not Enough Sections"
    unit = "sec"
    description = (
        "Waiting at the implicit barrier of a sections construct in which some threads executed no section at all: "
        "the construct has fewer sections than the team has threads."
    )
    diagnosis = (
        "Threads without a section only wait.  Give the construct more (smaller) sections, use a parallel loop or "
        "tasks instead, or run it with fewer threads (num_threads clause)."
    )
    requires = ()
    depends = ("omp_ibarrier_wait",)

    def compute(self, ctx):
        return _section_reasons(ctx, want_not_enough=True)


# --------------------------------------------------------------------------
# single, master, nowait loops
# --------------------------------------------------------------------------
class OmpSingleSerialization(Pattern):
    name = "omp_single_serialization"
    scope = "location"
    parent = "omp_ibarrier_wait"
    display_name = "Serialization in Single"
    unit = "sec"
    description = (
        "Waiting at the implicit barrier of a single construct while another thread executes the single block: "
        "min(wait, single-block time of the whole team - own single-block time)."
    )
    diagnosis = (
        "The other threads idle while one works.  Parallelise the block's work, move it out of the parallel region's "
        "critical path, or add nowait if the following code does not need its result."
    )
    requires = ()
    depends = ("omp_ibarrier_wait",)

    def compute(self, ctx):
        out = _dense(ctx)
        wait = ctx.results["omp_ibarrier_wait"]
        roles = _roles(ctx)
        kids = _children(ctx)
        for s in np.flatnonzero(roles == Role.OMP_SINGLE):
            ch = kids.get(int(s), [])
            body = [c for c in ch if roles[c] == Role.OMP_SINGLE_BODY]
            if not body:
                continue
            # each instance has one executor, which may change between instances: a thread can
            # wait through every block it did not execute itself
            own = ctx.incl_time[body].sum(axis=0)
            members = ctx.visits[int(s)] > 0
            for locs in _processes(ctx):
                team = locs[members[locs]]
                others = own[team].sum() - own[team]
                for b in (c for c in ch if roles[c] == Role.OMP_IMPLICIT_BARRIER):
                    out[b, team] = np.clip(np.minimum(wait[b, team], others), 0.0, None)
        return out


class OmpNowaitLoopImbalance(Pattern):
    name = "omp_nowait_loop_imbalance"
    scope = "location"
    parent = "omp_ibarrier_wait"
    display_name = "Imbalance in Nowait Loop"
    unit = "sec"
    description = (
        "Waiting at the implicit barrier that directly follows a worksharing loop without its own barrier (nowait): "
        "min(wait, longest loop time in the team - own loop time).  The loop's imbalance shows up at the next "
        "barrier, typically the end of the parallel region."
    )
    diagnosis = (
        "The nowait loop's iterations take different times on different threads.  Use a dynamic or guided schedule "
        "for that loop, or balance its iterations; nowait only moved the wait to a later barrier."
    )
    requires = ()
    depends = ("omp_ibarrier_wait",)

    def compute(self, ctx):
        out = _dense(ctx)
        wait = ctx.results["omp_ibarrier_wait"]
        roles = _roles(ctx)
        kids = _children(ctx)
        for loop in np.flatnonzero(roles == Role.OMP_LOOP):
            loop = int(loop)
            ch = kids.get(loop, [])
            barriers = [c for c in ch if roles[c] == Role.OMP_IMPLICIT_BARRIER]
            members = ctx.visits[loop] > 0
            if not barriers:
                # the next barrier is a sibling: count it when it comes right after the loop
                # (children are numbered in order of first visit)
                parent = int(ctx.calltree.parent[loop])
                sib = kids.get(parent, [])
                nxt = sib.index(loop) + 1
                if nxt < len(sib) and roles[sib[nxt]] == Role.OMP_IMPLICIT_BARRIER:
                    b = sib[nxt]
                    out[b] = np.maximum(out[b], _explained(wait[b], ctx.incl_time[loop], ctx, members))
                continue
            here = _source_line(ctx, loop)
            # a barrier from another source line is not the loop's: the runtime nests the next
            # construct's barrier (e.g. the parallel region's end) into a nowait loop
            # (a worker's end-of-region barrier may have no source location at all)
            src = {b: _source_line(ctx, b) for b in barriers}
            own = [b for b in barriers if src[b] == here]
            foreign = [b for b in barriers if src[b] != here]
            if here is None or own or not any(src[b] is not None for b in foreign):
                continue
            cause = ctx.incl_time[loop] - ctx.incl_time[barriers].sum(axis=0)
            for b in foreign:
                out[b] = _explained(wait[b], cause, ctx, members)
        return out


class OmpMasterSerialization(Pattern):
    name = "omp_master_serialization"
    scope = "location"
    parent = "omp_ebarrier_wait"
    display_name = "Serialization in Master"
    unit = "sec"
    description = (
        "Waiting at an explicit barrier while the master thread executes master regions between the previous barrier "
        "and this one: min(wait, master-region time of the master - own master-region time)."
    )
    diagnosis = (
        "Only the master works while the team waits.  Parallelise the master region's work, give the other threads "
        "independent work before the barrier, or drop the barrier if nothing depends on it."
    )
    requires = ()
    depends = ("omp_ebarrier_wait",)

    def compute(self, ctx):
        out = _dense(ctx)
        wait = ctx.results["omp_ebarrier_wait"]
        roles = _roles(ctx)
        kids = _children(ctx)
        parents = {int(ctx.calltree.parent[int(m)]) for m in np.flatnonzero(roles == Role.OMP_MASTER)}
        for parent in parents:
            members = ctx.visits[parent] > 0
            pending: list[int] = []  # master regions since the last barrier, in order of first visit
            for c in kids.get(parent, []):
                if roles[c] == Role.OMP_MASTER:
                    pending.append(c)
                elif roles[c] in (Role.OMP_BARRIER, Role.OMP_IMPLICIT_BARRIER):
                    if roles[c] == Role.OMP_BARRIER and pending:
                        out[c] = _explained(wait[c], ctx.incl_time[pending].sum(axis=0), ctx, members)
                    pending = []
        return out


# --------------------------------------------------------------------------
# ordered and critical serialization
# --------------------------------------------------------------------------
def _serialized(ctx, construct: int, body_role: int, loop: int) -> bool:
    """The construct's protected blocks, summed over the team, fill SERIALIZED_SHARE of the loop."""
    kids = _children(ctx)
    roles = _roles(ctx)
    body = [c for c in kids.get(construct, []) if roles[c] == body_role]
    if not body:
        return False
    for locs in _processes(ctx):
        busy = ctx.incl_time[body][:, locs].sum()
        wall = ctx.incl_time[loop, locs].max(initial=0.0)
        if wall > 0 and busy >= SERIALIZED_SHARE * wall:
            return True
    return False


def _serialization(ctx, construct_role: int, body_role: int, parent_pattern: str) -> np.ndarray:
    """``parent_pattern``'s value at the constructs of ``construct_role`` directly inside a worksharing loop
    that their blocks (``body_role``) serialize (:func:`_serialized`), zero elsewhere."""
    out = _dense(ctx)
    roles = _roles(ctx)
    parent = np.asarray(ctx.calltree.parent, np.int64)
    for c in np.flatnonzero(roles == construct_role):
        loop = int(parent[int(c)])
        if loop >= 0 and roles[loop] == Role.OMP_LOOP and _serialized(ctx, int(c), body_role, loop):
            out[int(c)] = ctx.results[parent_pattern][int(c)]
    return out


class OmpOrderedSerialization(Pattern):
    name = "omp_ordered_serialization"
    # whether a loop counts as serialized is decided over every process (_serialized: any process whose
    # blocks fill the loop), so a location's value depends on other processes' times: computed from whole rows
    scope = "row"
    parent = "omp_ordered"
    display_name = "Ordered Serialization"
    unit = "sec"
    description = (
        "Time in ordered constructs of loops whose ordered blocks, summed over the team, take at least half of the "
        "loop's wall time: the loop runs one iteration at a time."
    )
    diagnosis = (
        "Move work out of the ordered block (compute in parallel, only write out in order), or drop the parallel "
        "loop: serialized it costs overhead and gains nothing."
    )
    requires = ()
    depends = ("omp_ordered",)

    def compute(self, ctx):
        return _serialization(ctx, Role.OMP_ORDERED, Role.OMP_ORDERED_BODY, self.parent)


class OmpCriticalSerialization(Pattern):
    name = "omp_critical_serialization"
    # whether a loop counts as serialized is decided over every process (_serialized: any process whose
    # blocks fill the loop), so a location's value depends on other processes' times: computed from whole rows
    scope = "row"
    parent = "omp_lock_contention_critical"
    display_name = "Critical Serialization"
    unit = "sec"
    description = (
        "Contention at a critical section directly inside a worksharing loop whose critical blocks, summed over the "
        "team, take at least half of the loop's wall time: the loop's work is serialized by the section."
    )
    diagnosis = (
        "Nearly all of the loop's work is protected.  Compute into private variables and protect only the final "
        "update (or use a reduction clause or atomics)."
    )
    requires = ()
    depends = ("omp_lock_contention_critical",)

    def compute(self, ctx):
        return _serialization(ctx, Role.OMP_CRITICAL, Role.OMP_CRITICAL_BODY, self.parent)


# --------------------------------------------------------------------------
# atomics and locks
# --------------------------------------------------------------------------
class OmpFrequentAtomics(Pattern):
    name = "omp_frequent_atomics"
    scope = "location"
    parent = "omp_critical"
    display_name = "Frequent Atomics"
    unit = "sec"
    description = (
        "Time in atomic constructs performed by the OpenMP runtime at call paths where a thread executes at "
        f"least {FREQUENT_ATOMIC_RATE:g} of them per second of the enclosing region's time."
    )
    diagnosis = (
        "Many tiny synchronized updates: accumulate into a private variable and update the shared one once per "
        "thread (or use a reduction clause)."
    )
    requires = ()
    depends = ("omp_critical",)

    def compute(self, ctx):
        out = _dense(ctx)
        roles = _roles(ctx)
        parent = np.asarray(ctx.calltree.parent, np.int64)
        for a in np.flatnonzero(roles == Role.OMP_ATOMIC):
            p = int(parent[int(a)])
            if p < 0:
                continue
            span = ctx.incl_time[p]
            rate = np.where(span > 0, ctx.visits[int(a)] / np.where(span > 0, span, 1.0), 0.0)
            frequent = rate >= FREQUENT_ATOMIC_RATE
            out[int(a)] = np.where(frequent, ctx.results["omp_critical"][int(a)], 0.0)
        return out


def _lock_waits(ctx, want: str) -> Severity:
    """Lock-API contention (:func:`patterns.instances.omp_lock_contention_instances`) on the locks
    that all threads of a process, or exactly a pair of them, acquire through the lock API."""
    locks = ctx.table("locks")
    cnode = np.asarray(locks["cnode"], np.int64)
    ok = cnode >= 0
    ok[ok] = _roles(ctx)[cnode[ok]] == Role.OMP_LOCK_API
    proc = np.asarray(locks["process"], np.int64)
    lock = np.asarray(locks["lock"], np.int64)
    loc = np.asarray(locks["loc"], np.int64)
    threads = np.bincount(np.asarray(ctx.location_process, np.int64))
    keep = np.zeros(len(cnode), bool)
    for p, lk in {(int(a), int(b)) for a, b in zip(proc[ok], lock[ok])}:
        rows = ok & (proc == p) & (lock == lk)
        users = np.unique(loc[rows]).size
        n = int(threads[p]) if p < threads.size else 0
        if n < 3:
            continue  # with two threads "all" and "a pair" are the same thing
        if (want == "all" and users == n) or (want == "pairs" and users == 2):
            keep |= rows
    lc = omp_lock_contention_instances(ctx)
    return wait_severity(lc, keep[lc["row"]])


class OmpLockContentionAllThreads(Pattern):
    name = "omp_lock_contention_all_threads"
    scope = "location"
    parent = "omp_lock_contention_api"
    display_name = "Contention by All Threads"
    unit = "sec"
    description = (
        "Lock-API contention on locks that every thread of the process (three or more) acquires: one lock serializes "
        "the whole team."
    )
    diagnosis = (
        "A single global lock is the bottleneck.  Split the protected data and use one lock per part, or let threads "
        "work on private copies and combine them once."
    )
    requires = ("locks",)
    depends = ()

    def compute(self, ctx):
        return _lock_waits(ctx, "all")


class OmpLockContentionPairs(Pattern):
    name = "omp_lock_contention_pairs"
    scope = "location"
    parent = "omp_lock_contention_api"
    display_name = "Contention by Pairs"
    unit = "sec"
    description = (
        "Lock-API contention on locks that exactly two threads of a process with three or more threads acquire: "
        "neighbours compete for shared data, the rest of the team does not."
    )
    diagnosis = (
        "Pairs of threads share a lock (neighbour exchange, shared boundary).  Stagger their accesses, or give each "
        "side its own copy of the shared data."
    )
    requires = ("locks",)
    depends = ()

    def compute(self, ctx):
        return _lock_waits(ctx, "pairs")


# --------------------------------------------------------------------------
# hardware counters: false sharing
# --------------------------------------------------------------------------
#: cache-miss counters, in order of preference (the first one the trace has is used)
MISS_METRICS = ("PAPI_L1_DCM", "PAPI_L2_DCM", "perf::L1-DCACHE-LOAD-MISSES")
#: the accesses the misses are counted against
ACCESS_METRICS = ("PAPI_SR_INS", "PAPI_LST_INS", "PAPI_L1_DCA", "perf::L1-DCACHE-LOADS")
#: misses per access from which a parallel call path counts as suffering (1 %: a thread that
#: updates its own cache line misses almost never)
FALSE_SHARING_RATE = 0.01
#: ... and at least this many times the same code's rate outside parallel regions, when it ran there
FALSE_SHARING_FACTOR = 4.0


class OmpFalseSharing(Pattern):
    name = "omp_false_sharing"
    # the team size (locations visiting the parallel region) and the serial base rate are taken over every
    # location of the run: computed from whole rows of the counters and visits
    scope = "row"
    parent = None
    paradigm = "openmp"
    display_name = "False Sharing (excess cache misses)"
    unit = "occ"
    description = (
        "Cache misses in parallel regions beyond what the same code misses when run serially: at every call "
        "path inside a parallel region with two or more threads, misses - base * accesses, where the thread's "
        f"miss rate (misses per access) is at least {FALSE_SHARING_RATE:g} and at least {FALSE_SHARING_FACTOR:g} "
        "times base, the rate of the same region outside parallel regions (0 if it never ran there).  Needs a "
        f"miss counter ({', '.join(MISS_METRICS)}) and an access counter ({', '.join(ACCESS_METRICS)}), "
        "recorded with EXPERT_METRICS."
    )
    diagnosis = (
        "Threads write to different data on the same cache line, so the line moves between cores on every write.  "
        "Pad or align per-thread data to a cache line (64 bytes), or accumulate in a private variable and write the "
        "shared one once."
    )
    requires = ()
    depends = ()

    def unmeasured(self, ctx):
        counters = getattr(ctx, "counters", None) or {}
        if not any(m in counters for m in MISS_METRICS) or not any(m in counters for m in ACCESS_METRICS):
            return "the trace has no cache-miss and access counters, which EXPERT_METRICS records"
        return None

    def compute(self, ctx):
        out = _dense(ctx)
        counters = getattr(ctx, "counters", None) or {}
        miss = next((counters[m] for m in MISS_METRICS if m in counters), None)
        acc = next((counters[m] for m in ACCESS_METRICS if m in counters), None)
        if miss is None or acc is None:
            return out
        roles = _roles(ctx)
        parent = np.asarray(ctx.calltree.parent, np.int64)
        region = np.asarray(ctx.calltree.region, np.int64)
        # the innermost parallel region at or above each call path (-1 outside)
        par = np.full(ctx.n_cnodes, -1, np.int64)
        for c in range(ctx.n_cnodes):  # pre-order: parents first
            par[c] = c if roles[c] == Role.OMP_PARALLEL else (par[parent[c]] if parent[c] >= 0 else -1)
        serial = par < 0
        for c in np.flatnonzero(~serial):
            team = int((ctx.visits[par[c]] > 0).sum())
            if team < 2:
                continue
            same = serial & (region == region[c])
            base_acc = acc[same].sum()
            base = miss[same].sum() / base_acc if base_acc > 0 else 0.0
            rate = np.where(acc[c] > 0, miss[c] / np.where(acc[c] > 0, acc[c], 1), 0.0)
            hit = (rate >= FALSE_SHARING_RATE) & (rate >= FALSE_SHARING_FACTOR * base)
            out[c] = np.where(hit, np.clip(miss[c] - base * acc[c], 0.0, None), 0.0)
        return out


PATTERNS = (
    OmpUnevenSectionDistribution,
    OmpNotEnoughSections,
    OmpSingleSerialization,
    OmpNowaitLoopImbalance,
    OmpMasterSerialization,
    OmpOrderedSerialization,
    OmpCriticalSerialization,
    OmpFrequentAtomics,
    OmpLockContentionAllThreads,
    OmpLockContentionPairs,
    OmpFalseSharing,
)
