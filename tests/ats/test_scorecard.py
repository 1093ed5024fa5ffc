"""The ATS scorecard end to end: every property program and its balanced twin, traced with the
runtime and analyzed; fails on any missed finding (positive) or false finding (twin).

Also checks the scorecard's own arithmetic (designed severities) on hand-computed cases.
"""

from __future__ import annotations

import shutil

import pytest

from samples.ats import scorecard
from samples.ats.properties import distribution, imbalance_wait, ordered_loop, properties, static_blocks


def test_distributions_by_hand():
    assert [distribution("cyclic2", i, 4, 1, 0, 3) for i in range(4)] == [1, 3, 1, 3]
    assert [distribution("block2", i, 4, 1, 0, 3) for i in range(4)] == [1, 1, 3, 3]
    assert [distribution("linear", i, 3, 1, 0, 3) for i in range(3)] == [1, 2, 3]
    assert [distribution("peak", i, 3, 1, 0, 3, peak=1) for i in range(3)] == [1, 3, 1]
    assert [distribution("cyclic3", i, 4, 1, 2, 3) for i in range(4)] == [1, 2, 3, 1]
    assert [distribution("block3", i, 6, 1, 2, 3) for i in range(6)] == [1, 1, 2, 2, 3, 3]
    assert imbalance_wait([1.0, 3.0, 2.0]) == 3.0  # (3-1) + 0 + (3-2)


def test_static_blocks_and_ordered_loop_by_hand():
    assert static_blocks(3, 2) == [2, 1] and static_blocks(1, 2) == [1, 0] and static_blocks(5, 4) == [2, 1, 1, 1]
    # fully serialized: 2 threads, 4 iterations of 1 s inside the ordered block; thread 1 waits
    # 1 s before its first iteration and 1 s before its second, thread 0 waits 1 s before its
    # second; at the end thread 0 (done at 3 s) waits 1 s for thread 1 (done at 4 s)
    assert ordered_loop([0.0] * 4, [1.0] * 4, 2) == (3.0, 1.0)
    # work outside: thread 0 does 1 s, thread 1 3 s per iteration, 4 iterations (0 1 2 3)
    # it0: t0 ready 1, runs; it1: t1 ready 3; it2: t0 ready 2, waits until 3 (1 s); it3: t1 ready 6
    # ends: t0 3, t1 6 -> barrier wait 3
    assert ordered_loop([1.0, 3.0, 1.0, 3.0], [0.0] * 4, 2) == (1.0, 3.0)


def test_every_paper_property_has_a_program():
    names = {p.name for p in properties()}
    paper_omp = {
        "critical_section_locking", "critical_section_contention", "serialization_due_to_critical_section",
        "frequent_atomic", "setting_lock", "lock_testing", "lock_waiting", "all_threads_lock_contention",
        "pairwise_lock_contention", "imbalance_in_parallel_region", "imbalance_at_barrier",
        "imbalance_in_parallel_loop", "imbalance_in_parallel_loop_nowait", "imbalance_in_parallel_section",
        "imbalance_due_to_uneven_section_distribution", "imbalance_due_to_not_enough_sections",
        "unparallelized_in_master_region", "unparallelized_in_single_region", "unparallelized_in_ordered_loop",
        "imbalance_in_ordered_loop", "dynamic_scheduling_overhead", "scheduling_overhead_in_parallelized_inner_loop",
        "insufficient_work_in_parallel_loop", "firstprivate_initialization", "lastprivate_overhead",
        "reduction_handling", "false_sharing_in_parallel_region",
    }
    mpi = {"late_sender", "late_receiver", "wrong_order", "imbalance_at_mpi_barrier", "imbalance_at_mpi_alltoall",
           "late_broadcast", "late_scatter", "late_scatterv", "early_reduce", "early_gather", "early_gatherv"}
    assert len(paper_omp) == 27
    assert names == paper_omp | mpi


def _need(*tools):
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (installed by ./dev setup)")


@pytest.mark.runtime
@pytest.mark.slow
def test_scorecard_finds_every_property_and_nothing_in_the_twins(tmp_path, capsys):
    _need("clang", "gcc", "mpicc.openmpi", "mpirun.openmpi", "make")
    md = tmp_path / "scorecard.md"
    rc = scorecard.main(["--keep", str(tmp_path / "traces"), "--markdown", str(md), "--retries", "2"])
    out = capsys.readouterr().out
    assert "38 properties" in out
    assert rc == 0, out
    text = md.read_text()
    assert text.count("\n| `") == 38
    assert "not measurable" in text  # firstprivate/lastprivate/reduction/dynamic, false sharing in a VM
