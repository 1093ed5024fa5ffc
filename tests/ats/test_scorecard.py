"""The ATS scorecard end to end: every property program and its balanced twin, traced with the
runtime and analyzed; fails on any missed finding (positive) or false finding (twin).

Also checks the scorecard's own arithmetic (designed severities) on hand-computed cases.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from samples.ats import scorecard
from samples.ats.properties import (WAIT_STATES, chain_starvation, distribution, imbalance_wait, ordered_loop,
                                    properties, serial_producer_idle, static_blocks, task_imbalance)


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
    tasks = {"imbalanced_task_tree", "taskwait_on_long_child", "too_fine_tasks", "serial_task_producer",
             "task_dependence_chain"}  # issue 16
    nesting = {"imbalance_in_nested_region", "imbalance_with_varying_team_sizes"}  # issue 16
    rma = {"rma_late_fence", "rma_late_post", "rma_late_complete", "rma_lock_contention"}  # issue 16
    assert len(paper_omp) == 27
    assert names == paper_omp | mpi | tasks | nesting | rma


def test_nesting_severities_by_hand():
    # cyclic2 over the 4 threads of two inner teams: (0.02, 0.1) and (0.02, 0.1); each team waits 0.08, 2 reps
    p = {q.name: q for q in properties()}
    nested, varying = p["imbalance_in_nested_region"], p["imbalance_with_varying_team_sizes"]
    assert nested.expects[0].value == pytest.approx(2 * 2 * 0.08)
    # teams of 2: (0.02, 0.1) waits 0.08; of 3: (0.02, 0.1, 0.02) waits 0.16; 2 reps
    assert varying.expects[0].value == pytest.approx(2 * (0.08 + 0.16))
    for q in (nested, varying):
        assert q.twin_keeps == ("omp_limited_parallelism",)
        assert any(e.patterns == ("omp_limited_parallelism",) and e.kind == "present" for e in q.expects)


def test_twin_check_skips_only_what_the_design_keeps():
    """judge_twin: limited parallelism, which the nesting twins have by design, is not held against them;
    any other wait still is."""
    prop = next(q for q in properties() if q.name == "imbalance_in_nested_region")

    def cube(ibarrier):
        class FakeCube:
            callpaths = ["ats/imbalance_in_nested_region", "ats/imbalance_in_nested_region/!$omp parallel @a.c:1"]
            values = {"execution": 1, "omp_limited_parallelism": 1, "omp_ibarrier_wait": 1}

            @staticmethod
            def per_cnode(name):
                return np.array({"execution": [1.0, 0.0], "omp_limited_parallelism": [0.5, 0.0],
                                 "omp_ibarrier_wait": [0.0, ibarrier]}[name])
        return FakeCube()

    assert scorecard.judge_twin(cube(0.0), prop).ok
    assert not scorecard.judge_twin(cube(0.3), prop).ok


def test_task_severities_by_hand():
    # threads with 0.04 and 0.2 s of tasks: max 0.2 - mean 0.12
    assert task_imbalance([0.04, 0.2]) == pytest.approx(0.08)
    assert task_imbalance([0.1, 0.1, 0.1]) == pytest.approx(0.0, abs=1e-12)
    # 4 tasks of 0.0125 s created 0.05 s apart, 2 threads: the other thread idles 0.2 s but for the 3 tasks
    # it runs before the last creation
    assert serial_producer_idle(4, 0.05, 0.0125, 2) == pytest.approx(0.2 - 3 * 0.0125)
    # 3 threads: two idle through the 0.2 s, together running the same 3 tasks
    assert serial_producer_idle(4, 0.05, 0.0125, 3) == pytest.approx(0.4 - 3 * 0.0125)
    # a chain of 4 tasks of 0.08 s on 2 threads: the idle thread starves through the first three (0.24 s), not
    # through the last (nothing left to start); on 3 threads two starve
    assert chain_starvation(4, 0.08, 2) == pytest.approx(0.24)
    assert chain_starvation(4, 0.08, 3) == pytest.approx(0.48)
    assert chain_starvation(1, 0.08, 2) == 0
    chain = next(p for p in properties() if p.name == "task_dependence_chain")
    assert chain.args == ["-r", "2", "-n", "4", "-H", "0.08"] and chain.expects[0].value == pytest.approx(0.48)


def test_rma_severities_by_hand():
    # L = 0.01, H = 0.1, 2 repetitions: each designed wait is 0.09 s per repetition and waiting rank
    by_name = {p.name: p for p in properties(mpi_ranks=2)}
    assert by_name["rma_late_fence"].expects[0].value == pytest.approx(0.18)
    assert by_name["rma_late_post"].expects[0].value == pytest.approx(0.18)
    assert [e.value for e in by_name["rma_late_complete"].expects[:2]] == pytest.approx([0.18, 0.18])
    assert by_name["rma_lock_contention"].expects[0].value == pytest.approx(0.18)
    # 5 ranks: four wait at each fence for rank 0, two pairs (rank 4 has no partner), one rank waits for the lock
    by_name = {p.name: p for p in properties(mpi_ranks=5)}
    assert by_name["rma_late_fence"].expects[0].value == pytest.approx(4 * 0.18)
    assert by_name["rma_late_post"].expects[0].value == pytest.approx(2 * 0.18)
    assert by_name["rma_late_complete"].expects[0].value == pytest.approx(2 * 0.18)
    assert by_name["rma_lock_contention"].expects[0].value == pytest.approx(0.18)
    rma_waits = {"mpi_rma_wait_at_create", "mpi_rma_wait_at_free", "mpi_rma_wait_at_fence", "mpi_rma_sync_late_post",
                 "mpi_rma_comm_late_post", "mpi_rma_early_wait", "mpi_rma_sync_lock_competition",
                 "mpi_rma_comm_lock_competition"}
    assert rma_waits <= set(WAIT_STATES)


def test_task_properties_expect_their_patterns_and_twins_watch_them():
    by_name = {p.name: p for p in properties()}
    found = {name: {pat for e in by_name[name].expects for pat in e.patterns}
             for name in ("imbalanced_task_tree", "taskwait_on_long_child", "too_fine_tasks", "serial_task_producer",
                          "task_dependence_chain")}
    assert found == {"imbalanced_task_tree": {"omp_task_imbalance"}, "taskwait_on_long_child": {"omp_taskwait"},
                     "too_fine_tasks": {"visits", "omp_task_management"},
                     "serial_task_producer": {"omp_task_starvation", "omp_task_management"},
                     "task_dependence_chain": {"omp_task_starvation", "omp_task_management", "omp_ibarrier_wait"}}
    # a held-back task is ready when its predecessor completes: the chain's idle thread starves, and the dispatch
    # after the predecessor's end (task management) stays small
    chain = {e.patterns: e.kind for e in by_name["task_dependence_chain"].expects}
    assert chain == {("omp_task_starvation",): "sec", ("omp_task_management",): "absent",
                     ("omp_ibarrier_wait",): "absent"}
    # task management is overhead (dispatch), like omp_management, and task imbalance a measure of the task
    # work's spread, like imbalance: no waits every twin must avoid; the task tree's twin is checked for its own
    assert {"omp_taskwait", "omp_task_starvation"} <= set(WAIT_STATES)
    assert not {"omp_task_management", "omp_management", "omp_task_imbalance", "imbalance"} & set(WAIT_STATES)
    assert by_name["imbalanced_task_tree"].twin_silent == ("omp_task_imbalance",)


def test_a_twin_is_judged_on_its_own_measure_too():
    """judge_twin: a pattern in the property's twin_silent counts like a wait state."""
    prop = next(p for p in properties() if p.name == "imbalanced_task_tree")

    class FakeCube:
        callpaths = ["ats/imbalanced_task_tree", "ats/imbalanced_task_tree/!$omp parallel @a.c:1"]
        values = {"execution": 1, "omp_task_imbalance": 1}

        @staticmethod
        def per_cnode(name):
            return np.array({"execution": [0.1, 0.0], "omp_task_imbalance": [0.0, 0.05]}[name])

    v = scorecard.judge_twin(FakeCube(), prop)
    assert not v.ok and "omp_task_imbalance" in v.found[0]
    prop.twin_silent = ()
    assert scorecard.judge_twin(FakeCube(), prop).ok


# --------------------------------------------------------------------------
# honesty: "not measurable here" is never a pass
# --------------------------------------------------------------------------
def _rows(*kinds):
    """Fake scorecard rows: "pass", "fail" (missed positive), "twin" (false finding), "nm" (not measurable)."""
    props = properties(false_sharing_reason="no counters in this test")
    measurable = [p for p in props if not p.not_measurable]
    unmeasurable = [p for p in props if p.not_measurable]
    rows = []
    for i, kind in enumerate(kinds):
        prop = (unmeasurable if kind == "nm" else measurable)[i]
        pos = scorecard.Verdict(kind != "fail", ["found"] * len(prop.expects))
        twin = scorecard.Verdict(kind != "twin", ["max wait 0.0000 s (omp_ibarrier_wait), noise 0.010 s"])
        rows.append(scorecard.Row(prop, pos, twin, 0.1))
    return rows


def test_not_measurable_is_counted_apart_from_passes():
    rows = _rows("pass", "nm", "nm", "fail", "twin")
    assert [r.status for r in rows] == ["pass", "not measurable", "not measurable", "FAIL", "FAIL"]
    assert [r.passed for r in rows] == [True, False, False, False, False]
    assert scorecard.summary(rows) == "5 properties: 1 passed, 2 failed, 2 not measurable here"
    rows[0].attempts = 2
    assert scorecard.summary(rows).endswith(f"; retried: {rows[0].prop.name} (2 attempts)")


def test_markdown_and_text_never_show_a_not_measurable_row_as_pass():
    rows = _rows("pass", "nm")
    md = scorecard.markdown(rows, "python -m samples.ats.scorecard")
    table = [line for line in md.splitlines() if line.startswith("| `")]
    pos, twin = [c.strip() for c in table[1].split(" | ")[4:6]]
    assert pos.startswith("not measurable here: ") and "pass" not in pos
    assert twin.startswith("silent (")
    assert table[0].split(" | ")[4] == "pass"
    assert "2 properties: 1 passed, 0 failed, 1 not measurable here." in md
    text = scorecard.text_table(rows)
    assert text.splitlines()[-1] == "2 properties: 1 passed, 0 failed, 1 not measurable here"
    assert f"=> not measurable" in text


@pytest.mark.parametrize("kinds, rc", [(("pass", "nm"), 0), (("pass", "fail"), 1), (("twin", "nm"), 1)])
def test_exit_status_fails_on_failures_only(monkeypatch, capsys, kinds, rc):
    rows = _rows(*kinds)
    monkeypatch.setattr(scorecard, "run", lambda props, workdir, log, retries: rows)
    assert scorecard.main(["--no-build"]) == rc
    assert scorecard.summary(rows) in capsys.readouterr().out


def test_retries_are_bounded():
    with pytest.raises(SystemExit):
        scorecard.main(["--no-build", "--retries", str(scorecard.MAX_RETRIES + 1)])


def markdown_structure(text: str):
    """What a scorecard file says apart from timings: the lines before the table, and per row
    the property, team, expectations and verdict words; the totals without retries."""
    head, rows, total = [], [], None
    for line in text.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            verdicts = [re.sub(r"[:(].*", "", c).strip() for c in cells[4:6]]
            rows.append((cells[0], cells[1], cells[2], *verdicts))
        elif re.match(r"\d+ properties: ", line):
            total = line.split("; retried")[0].rstrip(".")
        elif not rows:
            head.append(line)
    return head, rows, total


def _need(*tools):
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (installed by ./dev setup)")


@pytest.mark.runtime
@pytest.mark.slow
def test_scorecard_finds_every_property_and_nothing_in_the_twins(tmp_path, capsys):
    """The whole card, with bounded retries; then docs/ats-scorecard.md must say what a fresh
    run says (same rows, expectations, verdicts and totals; timings differ)."""
    _need("clang", "gcc", "mpicc.openmpi", "mpirun.openmpi", "make")
    md = tmp_path / "scorecard.md"
    rc = scorecard.main(["--keep", str(tmp_path / "traces"), "--markdown", str(md), "--retries", "2"])
    out = capsys.readouterr().out
    assert rc == 0, out
    total = out.strip().splitlines()[-1]
    m = re.match(r"49 properties: (\d+) passed, 0 failed, (\d+) not measurable here", total)
    assert m, total
    n_nm = sum(bool(p.not_measurable) for p in properties(false_sharing_reason=scorecard.false_sharing_reason()))
    assert int(m.group(2)) == n_nm and int(m.group(1)) == 49 - n_nm
    fresh = markdown_structure(md.read_text())
    assert len(fresh[1]) == 49
    published = markdown_structure((Path(scorecard.ROOT) / "docs" / "ats-scorecard.md").read_text())
    assert published == fresh, "docs/ats-scorecard.md is stale: regenerate it with " \
        "python -m samples.ats.scorecard --markdown docs/ats-scorecard.md"
