"""The ATS properties: how each program is run and what the analysis must find.

Every entry gives the program's command line (severity parameters), the team size,
and the expected findings computed from those parameters by the formulas in
docs/ats.md.  Distribution functions mirror samples/ats/src/distr.c.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# --------------------------------------------------------------------------
# distributions (same definitions as distr.c)
# --------------------------------------------------------------------------


def distribution(name: str, me: int, sz: int, low: float, med: float, high: float, peak: int = 0) -> float:
    if name == "same":
        return high
    if name == "cyclic2":
        return low if me % 2 == 0 else high
    if name == "block2":
        return low if me < sz // 2 else high
    if name == "linear":
        return low if sz < 2 else low + (high - low) * me / (sz - 1)
    if name == "peak":
        return high if me == peak else low
    if name == "cyclic3":
        return (low, med, high)[me % 3]
    if name == "block3":
        return (low, med, high)[me * 3 // sz if sz else 0]
    raise ValueError(f"unknown distribution {name!r}")


def imbalance_wait(work: list[float]) -> float:
    """Summed wait of a team that synchronizes after doing ``work[i]`` each: sum(max - w_i)."""
    return sum(max(work) - w for w in work)


def static_blocks(n: int, team: int) -> list[int]:
    """Iterations (or sections) per thread under libomp's balanced static schedule."""
    return [n // team + (1 if t < n % team else 0) for t in range(team)]


def ordered_loop(pre: list[float], body: list[float], team: int) -> tuple[float, float]:
    """Simulate an ordered loop with schedule(static, 1): iteration i runs on thread i % team,
    does ``pre[i]`` outside and ``body[i]`` inside the ordered block.  Returns the summed wait
    at the ordered constructs and at the loop's closing barrier."""
    cur = [0.0] * team
    released = 0.0  # release time of the previous iteration's ordered block
    ordered_wait = 0.0
    for i in range(len(pre)):
        t = i % team
        ready = cur[t] + pre[i]
        start = max(ready, released)
        ordered_wait += start - ready
        released = start + body[i]
        cur[t] = released
    return ordered_wait, imbalance_wait(cur)


def task_imbalance(work: list[float]) -> float:
    """Task imbalance of a team whose threads run ``work[i]`` seconds of tasks each: max - mean."""
    return max(work) - sum(work) / len(work)


def serial_producer_idle(n: int, d: float, w: float, team: int) -> float:
    """Idle time of a team while one thread creates ``n`` tasks of ``w`` seconds, one every ``d`` seconds
    (d > w): the other threads idle from the start to the last creation, n d each, but for the n - 1 tasks
    they run meanwhile (the last one starts after the producer is done)."""
    return (team - 1) * n * d - (n - 1) * w


def chain_starvation(n: int, w: float, team: int) -> float:
    """Starvation of a team that runs a chain of ``n`` dependent tasks of ``w`` seconds, all created at once,
    in a barrier: one thread runs each task while the others have no task they may start; during the last
    one no task is left unstarted (idle, but not starving)."""
    return (team - 1) * (n - 1) * w


# --------------------------------------------------------------------------
# expectations
# --------------------------------------------------------------------------
@dataclass
class Expect:
    """One expected finding.

    kind "sec": ``patterns`` summed over the call-path subtree ``path`` must be within the
    tolerance of ``value`` seconds; "visits": the visits at exactly ``path`` equal ``value``;
    "present": the pattern is above zero there; "absent": it is at most the noise threshold.
    Paths are ``/``-joined region names without their ``@file:line`` suffixes, starting at
    the property's own region.
    """

    patterns: tuple[str, ...]
    path: str
    value: float = 0.0
    kind: str = "sec"

    def describe(self) -> str:
        what = " + ".join(self.patterns)
        if self.kind == "sec":
            return f"{what} @ {self.path} = {self.value:.3f} s"
        if self.kind == "visits":
            return f"visits @ {self.path} = {int(self.value)}"
        if self.kind == "present":
            return f"{what} @ {self.path} > 0"
        return f"{what} @ {self.path} silent"


@dataclass
class Property:
    name: str
    family: str  # "omp" or "mpi"
    team: int  # OpenMP threads or MPI ranks
    args: list[str]
    expects: list[Expect]
    #: why (part of) this property cannot be measured here; None when it can
    not_measurable: str | None = None
    note: str = ""
    twin_args: list[str] = field(default_factory=lambda: ["-B"])
    #: extra environment of the traced run (e.g. EXPERT_METRICS)
    env: dict[str, str] = field(default_factory=dict)
    #: patterns besides WAIT_STATES the twin must keep below the noise threshold (the property's own
    #: measure where it is no wait state, as task imbalance)
    twin_silent: tuple[str, ...] = ()
    #: wait states the design leaves in the twin too, so its check skips them (idle threads of a
    #: process whose teams are smaller than its thread pool: the twin has the same team sizes)
    twin_keeps: tuple[str, ...] = ()


def _f(x: float) -> str:
    return f"{x:g}"


def properties(scale: float = 1.0, reps: int = 2, omp_threads: int = 2, mpi_ranks: int = 2,
               false_sharing_reason: str | None = "hardware counters were not asked for") -> list[Property]:
    """All properties, with designed waits of about ``scale`` x 0.04-0.1 s each."""
    T, P, r = omp_threads, mpi_ranks, reps
    T3 = max(3, T)  # the two lock-contention kinds are told apart only with three or more threads
    lo, hi = 0.01 * scale, 0.05 * scale
    w = 0.04 * scale
    cyc = [distribution("cyclic2", i, T, lo, 0, hi) for i in range(T)]
    dist_args = ["-r", str(r), "-d", "cyclic2", "-l", _f(lo), "-H", _f(hi)]
    work_args = ["-r", str(r), "-H", _f(w)]
    ps: list[Property] = []

    def omp(name, args, expects, team=T, **kw):
        ps.append(Property(name, "omp", team, args, expects, **kw))

    # ---------------------------------------------------------------- Table 1
    n_crit = 2000
    omp("critical_section_locking", ["-n", str(n_crit)],
        [Expect(("visits",), "critical_section_locking/!$omp parallel/!$omp critical", n_crit, "visits"),
         Expect(("omp_critical",), "critical_section_locking/!$omp parallel/!$omp critical", kind="present")],
        note="overhead only: checked by count; its time is machine-dependent")
    omp("critical_section_contention", work_args,
        [Expect(("omp_lock_contention_critical",), "critical_section_contention/!$omp parallel/!$omp critical",
                r * T * (T - 1) / 2 * w),
         Expect(("omp_critical_serialization",), "critical_section_contention", kind="absent")])
    n_ser, w_ser = 2 * T, 0.025 * scale
    omp("serialization_due_to_critical_section", ["-n", str(n_ser), "-H", _f(w_ser)],
        [Expect(("omp_lock_contention_critical", "omp_ibarrier_wait"),
                "serialization_due_to_critical_section/!$omp parallel/!$omp for", (T - 1) * n_ser * w_ser),
         Expect(("omp_critical_serialization",),
                "serialization_due_to_critical_section/!$omp parallel/!$omp for/!$omp critical", kind="present")],
        note="how the serialized time splits between critical and barrier depends on lock fairness: "
             "their sum is checked")
    n_atomic = 20000
    omp("frequent_atomic", ["-n", str(n_atomic)],
        [Expect(("visits",), "frequent_atomic/!$omp parallel/!$omp atomic", n_atomic, "visits"),
         Expect(("omp_frequent_atomics",), "frequent_atomic/!$omp parallel/!$omp atomic", kind="present")],
        note="atomics are visible only when the OpenMP runtime performs them (long double, GCC)")
    n_lock = 1000
    omp("setting_lock", ["-n", str(n_lock)],
        [Expect(("visits",), "setting_lock/!$omp parallel/omp_set_lock", n_lock * T, "visits"),
         Expect(("omp_lock_contention_api",), "setting_lock", kind="absent")],
        note="overhead only: checked by count")
    omp("lock_testing", ["-n", str(n_lock)],
        [Expect(("visits",), "lock_testing/!$omp parallel/omp_test_lock", n_lock * T, "visits"),
         Expect(("omp_lock_contention_api",), "lock_testing", kind="absent")],
        note="overhead only: checked by count")
    omp("lock_waiting", work_args,
        [Expect(("omp_lock_contention_api",), "lock_waiting/!$omp parallel/omp_set_lock", r * (T - 1) * w)])
    w_lock = 0.04 * scale  # three threads on two cores: arrival skew is milliseconds
    omp("all_threads_lock_contention", ["-r", str(r), "-H", _f(w_lock)],
        [Expect(("omp_lock_contention_api",), "all_threads_lock_contention/!$omp parallel/omp_set_lock",
                r * T3 * (T3 - 1) / 2 * w_lock),
         Expect(("omp_lock_contention_all_threads",), "all_threads_lock_contention/!$omp parallel/omp_set_lock",
                r * T3 * (T3 - 1) / 2 * w_lock),
         Expect(("omp_lock_contention_pairs",), "all_threads_lock_contention", kind="absent")], team=T3)
    omp("pairwise_lock_contention", ["-r", str(r), "-H", _f(w)],
        [Expect(("omp_lock_contention_api",), "pairwise_lock_contention/!$omp parallel/omp_set_lock",
                r * (T3 // 2) * w),
         Expect(("omp_lock_contention_pairs",), "pairwise_lock_contention/!$omp parallel/omp_set_lock",
                r * (T3 // 2) * w),
         Expect(("omp_lock_contention_all_threads",), "pairwise_lock_contention", kind="absent")], team=T3)

    # ---------------------------------------------------------------- Table 2
    imb = r * imbalance_wait(cyc)
    omp("imbalance_in_parallel_region", dist_args,
        [Expect(("omp_ibarrier_wait",), "imbalance_in_parallel_region/!$omp parallel/!$omp ibarrier", imb),
         Expect(("omp_nowait_loop_imbalance",), "imbalance_in_parallel_region", kind="absent")])
    omp("imbalance_at_barrier", dist_args,
        [Expect(("omp_ebarrier_wait",), "imbalance_at_barrier/!$omp parallel/!$omp barrier", imb)])
    omp("imbalance_in_parallel_loop", dist_args,
        [Expect(("omp_ibarrier_wait",), "imbalance_in_parallel_loop/!$omp parallel/!$omp for/!$omp ibarrier", imb),
         Expect(("omp_nowait_loop_imbalance",), "imbalance_in_parallel_loop", kind="absent")])
    omp("imbalance_in_parallel_loop_nowait", dist_args,
        [Expect(("omp_ibarrier_wait",), "imbalance_in_parallel_loop_nowait/!$omp parallel/!$omp ibarrier", imb),
         Expect(("omp_nowait_loop_imbalance",), "imbalance_in_parallel_loop_nowait/!$omp parallel/!$omp ibarrier",
                imb)],
        note="the loop's imbalance shows at the parallel region's closing barrier, right after the loop")
    sec2 = [distribution("cyclic2", i, 2, lo, 0, hi) for i in range(2)]
    per_thread = [0.0] * T
    for k, s in enumerate(static_blocks(2, T)):
        per_thread[k] = sum(sec2[sum(static_blocks(2, T)[:k]):sum(static_blocks(2, T)[:k]) + s])
    omp("imbalance_in_parallel_section", dist_args,
        [Expect(("omp_ibarrier_wait",), "imbalance_in_parallel_section/!$omp parallel/!$omp sections/!$omp ibarrier",
                r * imbalance_wait(per_thread)),
         Expect(("omp_uneven_section_distribution", "omp_not_enough_sections"), "imbalance_in_parallel_section",
                kind="absent")] if T == 2 else [],
        note="two sections, designed for two threads")
    uneven = r * w * imbalance_wait([float(n) for n in static_blocks(3, T)])
    reason = "omp_uneven_section_distribution" if min(static_blocks(3, T)) > 0 else "omp_not_enough_sections"
    path = "imbalance_due_to_uneven_section_distribution/!$omp parallel/!$omp sections/!$omp ibarrier"
    omp("imbalance_due_to_uneven_section_distribution", work_args,
        [Expect(("omp_ibarrier_wait",), path, uneven), Expect((reason,), path, uneven)],
        note="three equal sections")
    few = r * w * imbalance_wait([float(n) for n in static_blocks(1, T)])
    path = "imbalance_due_to_not_enough_sections/!$omp parallel/!$omp sections/!$omp ibarrier"
    omp("imbalance_due_to_not_enough_sections", work_args,
        [Expect(("omp_ibarrier_wait",), path, few), Expect(("omp_not_enough_sections",), path, few)],
        note="one section")
    path = "unparallelized_in_master_region/!$omp parallel/!$omp barrier"
    omp("unparallelized_in_master_region", work_args,
        [Expect(("omp_ebarrier_wait",), path, r * (T - 1) * w),
         Expect(("omp_master_serialization",), path, r * (T - 1) * w)])
    path = "unparallelized_in_single_region/!$omp parallel/!$omp single/!$omp ibarrier"
    omp("unparallelized_in_single_region", work_args,
        [Expect(("omp_ibarrier_wait",), path, r * (T - 1) * w),
         Expect(("omp_single_serialization",), path, r * (T - 1) * w)])
    n_ord, w_ord = 2 * T, 0.025 * scale
    o_wait, _ = ordered_loop([0.0] * n_ord, [w_ord] * n_ord, T)
    path = "unparallelized_in_ordered_loop/!$omp parallel/!$omp for/!$omp ordered"
    omp("unparallelized_in_ordered_loop", ["-n", str(n_ord), "-H", _f(w_ord)],
        [Expect(("omp_ordered",), path, o_wait), Expect(("omp_ordered_serialization",), path, o_wait)])
    n_ord2, lo2, hi2 = 3 * T, 0.01 * scale, 0.04 * scale
    pre = [distribution("cyclic2", i % T, T, lo2, 0, hi2) for i in range(n_ord2)]
    o_wait2, _ = ordered_loop(pre, [0.0] * n_ord2, T)
    path = "imbalance_in_ordered_loop/!$omp parallel/!$omp for/!$omp ordered"
    omp("imbalance_in_ordered_loop", ["-n", str(n_ord2), "-d", "cyclic2", "-l", _f(lo2), "-H", _f(hi2)],
        [Expect(("omp_ordered",), path, o_wait2),
         Expect(("omp_ordered_serialization",), "imbalance_in_ordered_loop", kind="absent")])

    # ---------------------------------------------------------------- Table 3
    no_events = ("the runtime records neither the loop's schedule kind nor its chunk dispatches "
                 "(OMPT dispatch events), so the overhead cannot be told from loop work")
    no_copy = ("OMPT reports no events for copying {} variables, so their cost is part of the "
               "construct's own time and cannot be separated")
    n_loop = 20000
    omp("dynamic_scheduling_overhead", ["-n", str(n_loop)],
        [Expect(("visits",), "dynamic_scheduling_overhead/!$omp parallel/!$omp for", T, "visits")],
        not_measurable=no_events)
    n_par = 200
    omp("scheduling_overhead_in_parallelized_inner_loop", ["-n", str(n_par)],
        [Expect(("visits",), "scheduling_overhead_in_parallelized_inner_loop/!$omp parallel", n_par * T, "visits"),
         Expect(("omp_management",), "scheduling_overhead_in_parallelized_inner_loop/!$omp parallel",
                kind="present")],
        note="overhead only: checked by the team start-ups it causes (Management)")
    omp("insufficient_work_in_parallel_loop", ["-n", str(n_par)],
        [Expect(("visits",), "insufficient_work_in_parallel_loop/!$omp parallel/!$omp for", n_par * T, "visits"),
         Expect(("omp_management",), "insufficient_work_in_parallel_loop/!$omp parallel", kind="present")],
        note="overhead only: checked by the team start-ups it causes (Management)")
    omp("firstprivate_initialization", ["-n", str(n_par)],
        [Expect(("visits",), "firstprivate_initialization/!$omp parallel", n_par * T, "visits")],
        not_measurable=no_copy.format("firstprivate"))
    omp("lastprivate_overhead", ["-n", str(n_par)],
        [Expect(("visits",), "lastprivate_overhead/!$omp parallel/!$omp for", n_par * T, "visits")],
        not_measurable=no_copy.format("lastprivate"))
    omp("reduction_handling", ["-n", str(n_par)],
        [Expect(("visits",), "reduction_handling/!$omp parallel", n_par * T, "visits")],
        not_measurable="the runtime records no OMPT reduction events, so the combining step is part "
                       "of the parallel region's own time")

    # ---------------------------------------------------------------- Table 4
    # false_sharing_reason: why cache-miss counters cannot be read here; None when they can
    path = "false_sharing_in_parallel_region/!$omp parallel"
    if false_sharing_reason is None:
        omp("false_sharing_in_parallel_region", ["-n", "2000000"],
            [Expect(("visits",), path, T, "visits"), Expect(("omp_false_sharing",), path, kind="present")],
            env={"EXPERT_METRICS": "PAPI_L1_DCM,PAPI_SR_INS"},
            note="neighbouring doubles on one cache line; the twin pads them 128 bytes apart")
    else:
        omp("false_sharing_in_parallel_region", ["-n", "2000000"], [Expect(("visits",), path, T, "visits")],
            not_measurable=false_sharing_reason)

    # ---------------------------------------------------------------- OpenMP tasks (docs/ats.md)
    t_lo, t_hi = 0.04 * scale, 0.2 * scale
    tree_work = [distribution("cyclic2", i, T, t_lo, 0, t_hi) for i in range(T)]
    omp("imbalanced_task_tree", ["-r", str(r), "-d", "cyclic2", "-l", _f(t_lo), "-H", _f(t_hi)],
        [Expect(("omp_task_imbalance",), "imbalanced_task_tree/!$omp parallel",
                r * task_imbalance(tree_work))],
        twin_silent=("omp_task_imbalance",))
    w_tw = 0.16 * scale
    omp("taskwait_on_long_child", ["-r", str(r), "-H", _f(w_tw)],
        [Expect(("omp_taskwait",), "taskwait_on_long_child/!$omp parallel/!$omp single", r * 0.75 * w_tw)])
    n_fine = 20000
    omp("too_fine_tasks", ["-n", str(n_fine)],
        [Expect(("visits",), "too_fine_tasks/!$omp parallel/!$omp task", n_fine, "visits"),
         Expect(("omp_task_management",), "too_fine_tasks/!$omp parallel", kind="present")],
        note="overhead only: checked by the tasks it runs and the dispatch time between them (Task Management)")
    n_prod, d_prod = 2 * T, 0.08 * scale  # the twin's worksharing loop gives every thread two
    omp("serial_task_producer", ["-r", str(r), "-n", str(n_prod), "-H", _f(d_prod)],
        [Expect(("omp_task_starvation", "omp_task_management"), "serial_task_producer/!$omp parallel/!$omp single",
                r * serial_producer_idle(n_prod, d_prod, d_prod / 4, T)),
         Expect(("omp_task_starvation",), "serial_task_producer/!$omp parallel/!$omp single", kind="present")])
    n_chain, w_chain = 2 * T, 0.08 * scale  # the twin's independent tasks: two per thread
    omp("task_dependence_chain", ["-r", str(r), "-n", str(n_chain), "-H", _f(w_chain)],
        [Expect(("omp_task_starvation",), "task_dependence_chain/!$omp parallel/!$omp single",
                r * chain_starvation(n_chain, w_chain, T)),
         Expect(("omp_task_management",), "task_dependence_chain", kind="absent"),
         Expect(("omp_ibarrier_wait",), "task_dependence_chain", kind="absent")],
        note="the tasks are ready when their predecessor completes, not when created: idle threads starve")

    # ---------------------------------------------------------------- nested parallelism, varying team sizes
    n_lo, n_hi = 0.02 * scale, 0.1 * scale  # four threads on two cores: a wider spread than the flat teams
    nest_args = ["-r", str(r), "-d", "cyclic2", "-l", _f(n_lo), "-H", _f(n_hi)]
    inner = [[distribution("cyclic2", 2 * o + j, 4, n_lo, 0, n_hi) for j in range(2)] for o in range(2)]
    omp("imbalance_in_nested_region", nest_args,
        [Expect(("omp_ibarrier_wait",), "imbalance_in_nested_region/!$omp parallel/!$omp parallel/!$omp ibarrier",
                r * sum(imbalance_wait(team) for team in inner)),
         Expect(("omp_ibarrier_wait",), "imbalance_in_nested_region/!$omp parallel/!$omp ibarrier", kind="absent"),
         Expect(("omp_limited_parallelism",), "imbalance_in_nested_region", kind="present")],
        team=2, twin_keeps=("omp_limited_parallelism",),
        note="two outer threads each fork a team of two (4 threads); outside the inner teams two of them idle")
    sizes = (2, 3)  # num_threads of the first construct; the second is serial (if(0)): a team of one
    omp("imbalance_with_varying_team_sizes", nest_args,
        [Expect(("omp_ibarrier_wait",), "imbalance_with_varying_team_sizes/!$omp parallel/!$omp ibarrier",
                r * sum(imbalance_wait([distribution("cyclic2", i, n, n_lo, 0, n_hi) for i in range(n)])
                        for n in sizes)),
         Expect(("omp_limited_parallelism",), "imbalance_with_varying_team_sizes", kind="present")],
        twin_keeps=("omp_limited_parallelism",),
        note="one construct run with teams of 2 and 3 threads, another serialised by if(0): smaller teams than "
             "the 3 threads leave threads idle (limited parallelism), in the twin too")

    # ---------------------------------------------------------------- MPI
    # MPI start-ups after a barrier are skewed by up to ~10 ms on a busy 2-core machine, so the
    # designed differences are larger here
    pairs = P // 2
    lo, hi, w = 0.01 * scale, 0.1 * scale, 0.08 * scale
    lh = ["-r", str(r), "-l", _f(lo), "-H", _f(hi)]
    dist_args = ["-r", str(r), "-d", "cyclic2", "-l", _f(lo), "-H", _f(hi)]
    work_args = ["-r", str(r), "-H", _f(w)]
    d = hi - lo

    def mpi(name, args, expects, **kw):
        ps.append(Property(name, "mpi", P, args, expects, **kw))

    mpi("late_sender", lh, [Expect(("mpi_latesender",), "late_sender/MPI_Recv", r * pairs * d)])
    mpi("late_receiver", lh, [Expect(("mpi_latereceiver",), "late_receiver/MPI_Ssend", r * pairs * d)])
    mpi("wrong_order", work_args, [Expect(("mpi_latesender_wo",), "wrong_order/MPI_Recv", r * pairs * w)])
    work = [distribution("cyclic2", i, P, lo, 0, hi) for i in range(P)]
    mpi("imbalance_at_mpi_barrier", dist_args,
        [Expect(("mpi_barrier_wait",), "imbalance_at_mpi_barrier/MPI_Barrier", r * imbalance_wait(work))])
    mpi("imbalance_at_mpi_alltoall", dist_args,
        [Expect(("mpi_wait_nxn",), "imbalance_at_mpi_alltoall/MPI_Alltoall", r * imbalance_wait(work))])
    for name, call in (("late_broadcast", "MPI_Bcast"), ("late_scatter", "MPI_Scatter"),
                       ("late_scatterv", "MPI_Scatterv")):
        mpi(name, lh, [Expect(("mpi_latebroadcast",), f"{name}/{call}", r * (P - 1) * d)])
    for name, call in (("early_reduce", "MPI_Reduce"), ("early_gather", "MPI_Gather"),
                       ("early_gatherv", "MPI_Gatherv")):
        mpi(name, lh, [Expect(("mpi_earlyreduce",), f"{name}/{call}", r * d)])
    # MPI one-sided communication (format 2.3): where a library blocks for a late post or a held lock (start,
    # put, complete; lock, put, unlock) is its choice, so those are checked over the property's subtree; the
    # silent ones tell a wait from its neighbour (a late process, not pending transfers, at the fence; a late
    # complete, not a late post; not the other way round: the target's early wait after a late post is the
    # origin's wake-up, up to tens of ms here)
    mpi("rma_late_fence", lh, [Expect(("mpi_rma_wait_at_fence",), "rma_late_fence/MPI_Win_fence", r * (P - 1) * d),
                               Expect(("mpi_rma_early_fence",), "rma_late_fence", kind="absent")])
    late_post = ("mpi_rma_sync_late_post", "mpi_rma_comm_late_post")
    mpi("rma_late_post", lh, [Expect(late_post, "rma_late_post", r * pairs * d)])
    mpi("rma_late_complete", lh, [Expect(("mpi_rma_early_wait",), "rma_late_complete/MPI_Win_wait", r * pairs * d),
                                  Expect(("mpi_rma_late_complete",), "rma_late_complete/MPI_Win_wait", r * pairs * d),
                                  Expect(late_post, "rma_late_complete", kind="absent")])
    mpi("rma_lock_contention", lh, [Expect(("mpi_rma_sync_lock_competition", "mpi_rma_comm_lock_competition"),
                                           "rma_lock_contention", r * d)])
    return ps


#: the wait-state patterns a balanced twin must keep below the noise threshold
WAIT_STATES = (
    "mpi_latesender", "mpi_latereceiver", "mpi_barrier_wait", "mpi_wait_nxn", "mpi_earlyreduce",
    "mpi_earlyscan", "mpi_latebroadcast", "omp_ebarrier_wait", "omp_ibarrier_wait",
    "omp_lock_contention_critical", "omp_lock_contention_api", "omp_ordered", "omp_limited_parallelism",
    "omp_taskwait", "omp_task_starvation", "mpi_rma_wait_at_fence", "mpi_rma_sync_late_post",
    "mpi_rma_comm_late_post", "mpi_rma_early_wait", "mpi_rma_sync_lock_competition", "mpi_rma_comm_lock_competition",
    "mpi_rma_wait_at_create", "mpi_rma_wait_at_free",
)
