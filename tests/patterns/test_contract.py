"""The plugin contract made true (issue 12, items 1 and 3).

* a plugin author imports everything from ``patterns``, which never imports ``analyzer``;
* ``requires`` decides which replay tables are built, and a pattern reading a table it did
  not declare gets a PatternError naming it and the missing entry;
* ``paradigm`` is declared where a subtree of a paradigm starts and validated, ``optional_depends`` is declared
  and validated;
* the subset rule (a child never exceeds its parent in any (call path, location) cell) is
  checked after the patterns are computed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import patterns
import tracefmt
from analyzer import analyze
from analyzer.analyze import compute_patterns, required_tables, select_patterns
from analyzer.replay import ALL_TABLES, replay
from patterns import AnalysisContext, CallTree, Pattern, PatternError, Severity, Table, pattern
from random_hybrid_traces import random_trace  # tests/helpers (pytest's pythonpath)

OMP_TABLES = {"omp_teams", "omp_team_members", "omp_barriers"}


# --------------------------------------------------------------------------
# Imports
# --------------------------------------------------------------------------
def test_the_whole_contract_is_importable_from_patterns():
    for name in ("Pattern", "Severity", "pattern", "PatternError", "AnalysisContext", "CallTree", "Table",
                 "MESSAGES", "COLLECTIVES", "OMP_TEAMS", "OMP_TEAM_MEMBERS", "OMP_BARRIERS", "LOCKS",
                 "TABLES", "load_patterns", "all_patterns", "hierarchy", "check_subset_rule"):
        assert name in patterns.__all__ and hasattr(patterns, name), name
    assert patterns.TABLES["messages"] is patterns.MESSAGES
    assert tuple(patterns.TABLES) == ALL_TABLES


def test_patterns_and_every_builtin_import_without_the_analyzer():
    code = ("import sys, patterns, patterns.generic, patterns.mpi, patterns.omp, patterns.reasons; "
            "patterns.load_patterns(plugins=False); "
            "bad = sorted(m for m in sys.modules if m == 'analyzer' or m.startswith('analyzer.')); "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])


# --------------------------------------------------------------------------
# Metadata: paradigm, optional_depends declared and validated, requires names tables
# --------------------------------------------------------------------------
def _meta(**extra):
    attrs = dict(name="probe", display_name="Probe", description="what it measures", diagnosis="what to do",
                 compute=lambda self, ctx: Severity.empty())
    attrs.update(extra)
    return type("Probe", (Pattern,), attrs)()


def test_paradigm_is_declared_on_subtree_roots_and_optional_depends_is_declared():
    assert Pattern.paradigm is None and Pattern().unmeasured(None) is None
    assert Pattern.optional_depends == ()
    declared = {p.name: p.paradigm for p in patterns.load_patterns(plugins=False) if p.paradigm is not None}
    assert declared == {"mpi": "mpi", "syncs": "mpi", "comms": "mpi", "bytes": "mpi", "mpi_file_ops": "mpi", "mpi_file_bytes": "mpi", "mpi_rma_pairsync_count": "mpi", "omp_time": "openmp",
                        "omp_idle_threads": "openmp", "omp_false_sharing": "openmp", "delay_mpi": "mpi",
                        "delay_omp": "openmp",
                        "omp_task_creation": "openmp", "omp_task_execution": "openmp", "pthread_time": "pthread"}
    patterns.validate_pattern(_meta(paradigm="generic"))  # as earlier plugins wrote it
    with pytest.raises(PatternError, match="'probe'.*paradigm must be one of"):
        patterns.validate_pattern(_meta(paradigm="MPI"))

    @pattern(name="probe_fn", display_name="P", description="d", diagnosis="g", optional_depends=("time",))
    def probe_fn(ctx):
        return Severity.empty()

    assert probe_fn.optional_depends == ("time",)


@pytest.mark.parametrize("attr", ["requires", "depends", "optional_depends"])
def test_names_tuples_are_validated(attr):
    patterns.validate_pattern(_meta(**{attr: ()}))
    with pytest.raises(PatternError, match=rf"'probe'.*{attr} must be a tuple of names, got 'messages'"):
        patterns.validate_pattern(_meta(**{attr: "messages"}))


def test_requires_must_name_a_replay_table():
    with pytest.raises(PatternError, match=r"'probe'.*unknown replay table 'message'; did you mean 'messages'"):
        patterns.validate_pattern(_meta(requires=("message",)))


# --------------------------------------------------------------------------
# requires decides which tables are built
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hybrid():
    """A small hybrid trace with messages, collectives, teams, barriers and locks."""
    trace = random_trace(11, n_ranks=3, n_threads=3, steps=40, tasks=True, deps=True, rma=True)
    full = analyze(trace, plugins=False)
    for name in ALL_TABLES:
        assert len(full.context.table(name)), name
    return trace, full


def test_a_full_run_builds_every_table(hybrid):
    _, full = hybrid
    assert list(full.context.tables) == list(ALL_TABLES)


def test_the_replay_builds_only_the_tables_asked_for(hybrid):
    trace, full = hybrid
    ctx = replay(trace, tables=("messages", "omp_teams"))
    assert set(ctx.tables) == {"messages", "omp_teams"}
    for name in ctx.tables:
        assert ctx.tables[name].keys() == full.context.tables[name].keys()
        for col in ctx.tables[name]:
            np.testing.assert_array_equal(ctx.tables[name][col], full.context.tables[name][col])
    assert set(replay(trace, tables=()).tables) == set()
    with pytest.raises(ValueError, match="unknown replay tables"):
        replay(trace, tables=("mesages",))


def test_an_mpi_selection_builds_only_what_it_requires_and_computes_the_same(hybrid):
    trace, full = hybrid
    cube = analyze(trace, patterns="mpi_latesender", plugins=False)
    pats = select_patterns("mpi_latesender", plugins=False)
    assert set(cube.context.tables) == set(required_tables(pats))
    # no OpenMP barrier or lock matching for MPI properties (the time categories above them need the
    # teams for the fork/join spans, if they declare them)
    assert "omp_barriers" not in cube.context.tables and "locks" not in cube.context.tables
    assert "collectives" not in cube.context.tables
    selected = {p.name for p in pats}
    for p in pats:  # the selected properties' values do not depend on what else was selected ...
        if set(p.optional_depends) <= selected:  # ... except by design (time adds idle threads if computed)
            np.testing.assert_array_equal(cube.context.results[p.name], full.context.results[p.name],
                                          err_msg=p.name)
    assert "execution" in selected and "mpi_latesender" in selected


class Receives(Pattern):
    """A plugin root reading only the messages: a run of it builds no OpenMP table."""

    name = "probe_receive_wait"
    display_name = "Receive time"
    description = "Time in the receiving calls of matched messages."
    diagnosis = "None; a test probe."
    requires = ("messages",)

    def compute(self, ctx):
        m = ctx.table("messages")
        return Severity(m["recv_cnode"], m["recv_loc"], np.zeros(len(m)))


def test_a_messages_only_run_builds_no_openmp_table(hybrid):
    trace, _ = hybrid
    cube = analyze(trace, patterns=[Receives])
    assert set(cube.context.tables) == {"messages"}
    assert required_tables([Receives()]) == ("messages",)


class LockWaits(Pattern):
    name = "lock_waits_by_share"
    display_name = "Lock waits"
    description = "The locks table's acquisitions, per share (a test pattern)."
    diagnosis = "None."
    unit = "occ"
    requires = ("locks",)
    scope = "location"

    def compute(self, ctx):
        t = ctx.table("locks")
        return Severity(t["cnode"], t["loc"], np.ones(len(t)))


def test_the_analysis_by_shares_builds_only_the_tables_asked_for(hybrid):
    # the shares build the tables their location patterns require (and share 0 only row counts of them)
    from analyzer.distributed.network import MemoryNetwork
    from analyzer.distributed.pipeline import analyze_by_shares

    trace, full = hybrid
    ctx = analyze_by_shares(trace, [LockWaits()], MemoryNetwork(2))
    assert set(ctx.tables) == {"locks"} and len(ctx.tables["locks"]) == len(full.context.table("locks"))
    t = full.context.table("locks")
    want = np.zeros((ctx.n_cnodes, ctx.n_locations))
    np.add.at(want, (t["cnode"], t["loc"]), 1.0)
    rows, data = ctx.stored_results["lock_waits_by_share"]  # the nonzero call-path rows, every location
    assert list(rows) == list(np.flatnonzero(want.any(axis=1)))
    np.testing.assert_array_equal(data, want[rows])


# --------------------------------------------------------------------------
# Reading an undeclared table
# --------------------------------------------------------------------------
def _sneaky(how):
    def compute(self, ctx):
        if how == "table":
            ctx.table("messages")
        elif how == "get":
            ctx.tables.get("messages")
        elif how == "in":
            "messages" in ctx.tables  # noqa: B015
        else:
            ctx.tables["messages"]
        return Severity.empty()

    return type("Sneaky", (Pattern,), dict(
        name="probe_sneaky", display_name="Sneaky", description="reads a table it does not declare",
        diagnosis="declare it", requires=("locks",), compute=compute))


@pytest.mark.parametrize("how", ["table", "get", "in", "item"])
def test_reading_an_undeclared_table_names_the_pattern_and_the_missing_entry(hybrid, how):
    trace, _ = hybrid
    with pytest.raises(PatternError, match=r"pattern 'probe_sneaky' .*reads replay table 'messages' but does not "
                                           r"declare it: add 'messages' to its requires \(now \('locks',\)\)"):
        analyze(trace, patterns=[_sneaky(how)])


def test_the_declared_tables_are_all_a_pattern_sees(hybrid):
    trace, _ = hybrid
    ctx = replay(trace)
    seen = {}

    class Looker(Receives):
        name = "probe_looker"
        requires = ("messages", "locks")

        def compute(self, ctx):
            seen["tables"] = sorted(ctx.tables)
            seen["current"] = ctx.current_pattern
            return super().compute(ctx)

    p = Looker()
    compute_patterns(ctx, [p])
    assert seen == {"tables": ["locks", "messages"], "current": p}
    assert ctx.current_pattern is None and set(ctx.tables) == set(ALL_TABLES)  # restored afterwards
    # outside a compute step (tests of a formula, notebooks) every built table is readable
    assert len(ctx.table("omp_barriers"))


# --------------------------------------------------------------------------
# The subset rule
# --------------------------------------------------------------------------
def small_ctx():
    """main -> {MPI_Recv, foo}; 2 locations: rank 0 and rank 1 thread 0."""
    tree = CallTree(parent=np.array([-1, 0, 0], np.int32), region=np.array([0, 1, 2], np.int32),
                    callsite=np.full(3, -1, np.int32))
    excl = np.array([[1.0, 1.0], [2.0, 3.0], [0.5, 0.5]])
    return AnalysisContext(
        trace=None, calltree=tree, n_locations=2, location_process=np.array([0, 1], np.int32),
        location_thread=np.array([0, 0], np.int32), region_name=["main", "MPI_Recv", "foo"],
        region_paradigm=np.zeros(3, np.uint8), region_role=np.zeros(3, np.uint8),
        visits=np.ones((3, 2), np.int64), excl_time=excl, incl_time=excl.copy(), tables={})


def dense_pattern(name, parent, values, unit="sec"):
    return type(name, (Pattern,), dict(
        name=name, parent=parent, unit=unit, display_name=name, description="a test probe", diagnosis="none",
        compute=lambda self, ctx: np.asarray(values, np.float64)))()


PARENT = [[1.0, 1.0], [2.0, 3.0], [0.5, 0.5]]


def test_a_child_larger_than_its_parent_is_a_clear_error():
    bad = [[0.0, 0.0], [1.0, 3.25], [0.0, 0.0]]  # 3.25 > 3.0 at main/MPI_Recv on rank 1
    with pytest.raises(PatternError) as err:
        compute_patterns(small_ctx(), [dense_pattern("parent_wait", None, PARENT),
                                       dense_pattern("child_wait", "parent_wait", bad)])
    msg = str(err.value)
    assert "pattern 'child_wait'" in msg and "exceeds its parent 'parent_wait'" in msg
    assert "call path 'main/MPI_Recv'" in msg and "location rank 1 thread 0" in msg
    assert "3.25 > 3.0 sec" in msg and "1 (call path, location) cell(s) in all" in msg


def test_the_subset_rule_allows_rounding_only():
    ok = [[1.0 + 1e-12, 0.0], [2.0, 3.0], [0.0, 0.5]]
    ctx = small_ctx()
    compute_patterns(ctx, [dense_pattern("parent_wait", None, PARENT), dense_pattern("child_wait", "parent_wait", ok)])
    assert "child_wait" in ctx.results
    over = [[1.0 + 1e-6, 0.0], [0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(PatternError, match="call path 'main', location rank 0 thread 0"):
        compute_patterns(small_ctx(), [dense_pattern("parent_wait", None, PARENT),
                                       dense_pattern("child_wait", "parent_wait", over)])


def test_the_subset_rule_compares_only_equal_units_and_present_parents():
    counts = [[5.0, 5.0], [9.0, 9.0], [9.0, 9.0]]  # a count below a time is not comparable
    compute_patterns(small_ctx(), [dense_pattern("parent_wait", None, PARENT),
                                   dense_pattern("child_count", "parent_wait", counts, unit="occ")])
    # a child whose parent is not computed in this run (instances passed directly)
    compute_patterns(small_ctx(), [dense_pattern("child_wait", "parent_wait", counts)])
    # counts and bytes per location (an instance count may sit at another call than its parent's count)
    moved = [[0.0, 0.0], [0.0, 0.0], [3.5, 4.5]]  # above the parent at main/foo, within it per location
    compute_patterns(small_ctx(), [dense_pattern("parent_count", None, PARENT, unit="occ"),
                                   dense_pattern("child_count", "parent_count", moved, unit="occ")])
    with pytest.raises(PatternError, match=r"'child_count' .*exceeds its parent 'parent_count' at all call paths "
                                           r"together, location rank 0 thread 0: 23.0 > 3.5 occ"):
        compute_patterns(small_ctx(), [dense_pattern("parent_count", None, PARENT, unit="occ"),
                                       dense_pattern("child_count", "parent_count", counts, unit="occ")])


def test_a_plugin_exceeding_a_builtin_parent_fails_the_analysis():
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0, thread=0), b.location(rank=1, thread=0)
    b.enter(r0, 0.0, "main")
    b.enter(r1, 0.0, "main")
    b.enter(r0, 1.0, "MPI_Send")
    b.send(r0, 1.0, dest=1, tag=7, nbytes=64)
    b.exit(r0, 1.5, "MPI_Send")
    b.enter(r1, 0.2, "MPI_Recv")
    b.recv(r1, 1.4, source=0, tag=7, nbytes=64)
    b.exit(r1, 1.5, "MPI_Recv")
    b.exit(r0, 2.0, "main")
    b.exit(r1, 2.0, "main")

    class TooMuch(Receives):  # the whole receive call, not only its waiting part
        name = "probe_too_much"
        parent = "mpi_latesender"

        def compute(self, ctx):
            m = ctx.table("messages")
            return Severity(m["recv_cnode"], m["recv_loc"], m["recv_exit"] - m["recv_enter"])

    trace = b.build()
    pats = select_patterns("mpi_latesender", plugins=False) + [TooMuch()]
    ctx = replay(trace, tables=required_tables(pats))
    with pytest.raises(PatternError, match=r"'probe_too_much' .*exceeds its parent 'mpi_latesender' at call path "
                                           r"'main/MPI_Recv', location rank 1 thread 0: 1.3 > 0.8"):
        compute_patterns(ctx, pats)


def test_table_empty_is_still_a_table():  # the schemas are usable by plugin tests as documented
    t = Table.empty(patterns.MESSAGES)
    assert len(t) == 0 and "recv_cnode" in t.columns()
