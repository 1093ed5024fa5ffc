"""OpenMP patterns on hand-made AnalysisContexts.

Each context is a small call tree with exclusive times and replay tables
written out by hand; the expected values in the tests are computed by hand
from the definitions in patterns/omp.py (Scalasca 1.4 remap + SCOUT, lock
contention from Scalasca 2.x).  End-to-end tests on real traces live in
test_omp_e2e.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from patterns.context import AnalysisContext, CallTree
from patterns.tables import LOCKS, OMP_BARRIERS, OMP_TEAM_MEMBERS, OMP_TEAMS, Table
from patterns import omp
from patterns.api import Severity, validate_pattern
from tracefmt.layout import Paradigm, Role

NAN = math.nan


# --------------------------------------------------------------------------
# building contexts by hand
# --------------------------------------------------------------------------
def make_table(schema: dict[str, str], rows: list[dict]) -> Table:
    """A replay table from row dicts; columns not given are -1 (ids) or NaN (times)."""
    cols = {}
    for name, dt in schema.items():
        default = NAN if dt == "f8" else (False if dt == "?" else -1)
        cols[name] = np.array([r.get(name, default) for r in rows], dtype=dt)
    return Table(cols)


def make_ctx(regions, cnodes, locations, excl, tables=None) -> AnalysisContext:
    """regions: [(name, role)]; cnodes: [(parent, region)] in pre-order;
    locations: [(process, thread)]; excl: {(cnode, loc): seconds}."""
    n_c, n_l = len(cnodes), len(locations)
    parent = np.array([p for p, _ in cnodes], np.int32)
    region = np.array([r for _, r in cnodes], np.int32)
    excl_time = np.zeros((n_c, n_l))
    for (c, loc), v in excl.items():
        excl_time[c, loc] = v
    incl_time = excl_time.copy()
    for c in range(n_c - 1, 0, -1):  # pre-order: children after parents
        incl_time[parent[c]] += incl_time[c]
    roles = np.array([int(role) for _, role in regions], np.uint8)
    paradigm = np.array(
        [Paradigm.OPENMP if 30 <= role < 60 else Paradigm.USER for _, role in regions], np.uint8
    )
    all_tables = {
        "omp_teams": Table.empty(OMP_TEAMS),
        "omp_team_members": Table.empty(OMP_TEAM_MEMBERS),
        "omp_barriers": Table.empty(OMP_BARRIERS),
        "locks": Table.empty(LOCKS),
    }
    all_tables.update(tables or {})
    return AnalysisContext(
        trace=None,
        calltree=CallTree(parent=parent, region=region, callsite=np.full(n_c, -1, np.int32)),
        n_locations=n_l,
        location_process=np.array([p for p, _ in locations], np.int32),
        location_thread=np.array([t for _, t in locations], np.int32),
        region_name=[name for name, _ in regions],
        region_paradigm=paradigm,
        region_role=roles,
        visits=(excl_time > 0).astype(np.int64),
        excl_time=excl_time,
        incl_time=incl_time,
        tables=all_tables,
    )


def dense(result, ctx) -> np.ndarray:
    if isinstance(result, Severity):
        return result.to_dense(ctx.n_cnodes, ctx.n_locations)
    return np.asarray(result, np.float64)


def run(pattern_cls, ctx) -> np.ndarray:
    return dense(pattern_cls().compute(ctx), ctx)


def expect(ctx, cells: dict[tuple[int, int], float]) -> np.ndarray:
    out = np.zeros((ctx.n_cnodes, ctx.n_locations))
    for (c, loc), v in cells.items():
        out[c, loc] = v
    return out


# --------------------------------------------------------------------------
# context A: one process tree with every kind of OpenMP construct
# --------------------------------------------------------------------------
REGIONS_A = [
    ("main", Role.FUNCTION),  # 0
    ("!$omp parallel @a.c:10", Role.OMP_PARALLEL),  # 1
    ("!$omp for @a.c:12", Role.OMP_LOOP),  # 2
    ("!$omp ibarrier @a.c:12", Role.OMP_IMPLICIT_BARRIER),  # 3
    ("!$omp barrier @a.c:20", Role.OMP_BARRIER),  # 4
    ("!$omp critical", Role.OMP_CRITICAL),  # 5
    ("!$omp critical sblock", Role.OMP_CRITICAL_BODY),  # 6
    ("omp_set_lock", Role.OMP_LOCK_API),  # 7
    ("!$omp flush @a.c:30", Role.OMP_FLUSH),  # 8
    ("!$omp ordered @a.c:31", Role.OMP_ORDERED),  # 9
    ("!$omp ordered sblock @a.c:31", Role.OMP_ORDERED_BODY),  # 10
    ("!$omp atomic @a.c:33", Role.OMP_ATOMIC),  # 11
    ("foo", Role.FUNCTION),  # 12
    ("MPI_Barrier", Role.MPI_COLL_BARRIER),  # 13
]
CNODES_A = [
    (-1, 0),  # 0 main
    (0, 12),  # 1 main/foo
    (0, 1),  # 2 main/parallel
    (2, 2),  # 3 .../for
    (3, 3),  # 4 .../for/ibarrier
    (2, 4),  # 5 .../barrier
    (2, 5),  # 6 .../critical
    (6, 6),  # 7 .../critical/sblock
    (2, 7),  # 8 .../omp_set_lock
    (2, 8),  # 9 .../flush
    (2, 9),  # 10 .../ordered
    (10, 10),  # 11 .../ordered/sblock
    (2, 11),  # 12 .../atomic
    (2, 3),  # 13 .../ibarrier (end of the parallel region)
    (0, 13),  # 14 main/MPI_Barrier
]
# process 0 has three threads, process 1 two
LOCS_A = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]


def ctx_a(tables=None) -> AnalysisContext:
    # distinct exclusive times: cnode c, location l -> c + l/10 (+1 so none is 0)
    excl = {(c, loc): 1 + c + loc / 10 for c in range(len(CNODES_A)) for loc in range(len(LOCS_A))}
    return make_ctx(REGIONS_A, CNODES_A, LOCS_A, excl, tables)


def only_cnodes(ctx, cnodes) -> np.ndarray:
    out = np.zeros_like(ctx.excl_time)
    out[list(cnodes)] = ctx.excl_time[list(cnodes)]
    return out


@pytest.mark.parametrize(
    "cls, cnodes",
    [
        (omp.OmpFlush, [9]),
        (omp.OmpExplicitBarrier, [5]),
        (omp.OmpImplicitBarrier, [4, 13]),
        (omp.OmpBarrier, [4, 5, 13]),
        (omp.OmpCritical, [6, 12]),  # critical and atomic, not the critical's body
        (omp.OmpLockApi, [8]),
        (omp.OmpOrdered, [10]),  # not the ordered body
        (omp.OmpSynchronization, [4, 5, 6, 8, 10, 12, 13]),
        # no teams: omp_time is flush + synchronization; loops and the parallel region's own time are computation
        (omp.OmpTime, [4, 5, 6, 8, 9, 10, 12, 13]),
    ],
)
def test_time_categories_select_call_paths_by_role(cls, cnodes):
    ctx = ctx_a()
    np.testing.assert_array_equal(run(cls, ctx), only_cnodes(ctx, cnodes))


def teams_a():
    teams = make_table(
        OMP_TEAMS,
        [
            dict(team=0, process=0, team_id=7, master_loc=0, fork_time=1.0, join_time=5.0, size=3, parallel_cnode=2),
            dict(team=1, process=1, team_id=3, master_loc=3, fork_time=2.0, join_time=3.0, size=2, parallel_cnode=2),
        ],
    )
    members = make_table(
        OMP_TEAM_MEMBERS,
        [
            dict(team=0, loc=0, thread_num=0, enter=1.1, exit=4.9),
            dict(team=0, loc=1, thread_num=1, enter=1.3, exit=4.8),
            dict(team=0, loc=2, thread_num=2, enter=1.2, exit=5.0),
            dict(team=1, loc=3, thread_num=0, enter=2.0, exit=3.0),
            # enters before the FORK (clock skew): no negative fork time
            dict(team=1, loc=4, thread_num=1, enter=1.9, exit=2.5),
        ],
    )
    return {"omp_teams": teams, "omp_team_members": members}


def test_management_is_fork_plus_join_per_member_at_the_parallel_call_path():
    ctx = ctx_a(teams_a())
    fork = {(2, 0): 0.1, (2, 1): 0.3, (2, 2): 0.2}
    mgmt = {(2, 0): 0.1 + 0.1, (2, 1): 0.3 + 0.2, (2, 2): 0.2, (2, 4): 0.5}
    np.testing.assert_allclose(run(omp.OmpFork, ctx), expect(ctx, fork), atol=1e-12)
    np.testing.assert_allclose(run(omp.OmpManagement, ctx), expect(ctx, mgmt), atol=1e-12)
    # omp_time adds the management at the parallel region's call path to the role times
    want = only_cnodes(ctx, [4, 5, 6, 8, 9, 10, 12, 13]) + expect(ctx, mgmt)
    np.testing.assert_allclose(run(omp.OmpTime, ctx), want, atol=1e-12)


def test_management_ignores_members_of_unknown_teams_and_missing_fork():
    tables = teams_a()
    tables["omp_teams"]["fork_time"][0] = NAN  # FORK lost (truncated trace)
    tables["omp_team_members"]["team"][4] = 99  # a member row whose team is not in the table
    ctx = ctx_a(tables)
    mgmt = {(2, 0): 0.1, (2, 1): 0.2, (2, 2): 0.0}
    np.testing.assert_allclose(run(omp.OmpManagement, ctx), expect(ctx, mgmt), atol=1e-12)


def barriers_a():
    rows = []

    def inst(instance, team, cnode, implicit, members):
        for loc, enter, exit_ in members:
            rows.append(
                dict(instance=instance, team=team, seq=instance, loc=loc, region=CNODES_A[cnode][1], cnode=cnode,
                     implicit=implicit, enter=enter, exit=exit_, n_members=len(members))
            )

    inst(0, 0, 13, True, [(0, 4.0, 4.5), (1, 4.4, 4.5), (2, 4.2, 4.5)])
    inst(1, 0, 5, False, [(0, 3.0, 3.3), (1, 3.1, 3.3), (2, 3.3, 3.3)])
    inst(2, 1, 4, True, [(3, 2.2, 2.6), (4, 2.5, 2.6)])  # a team of two in another process
    inst(3, 0, 13, True, [(0, 6.0, 6.1), (1, 6.05, 6.1), (2, 6.1, 6.1)])  # same call path again: adds up
    inst(4, -1, 5, False, [(3, 8.0, 8.6), (4, 8.5, 8.6)])  # outside any team: no wait
    inst(5, 1, 5, False, [(3, 9.0, 9.2), (4, 9.5, 9.6)])  # loc 3 leaves before loc 4 enters: clamped
    return {"omp_barriers": make_table(OMP_BARRIERS, rows)}


def test_explicit_barrier_wait_is_latest_team_enter_minus_own_enter():
    ctx = ctx_a(barriers_a())
    want = {(5, 0): 0.3, (5, 1): 0.2, (5, 2): 0.0, (5, 3): 9.2 - 9.0}
    np.testing.assert_allclose(run(omp.OmpExplicitBarrierWait, ctx), expect(ctx, want), atol=1e-12)


def test_implicit_barrier_wait_sums_instances_per_call_path():
    ctx = ctx_a(barriers_a())
    want = {(13, 0): 0.4 + 0.1, (13, 1): 0.0 + 0.05, (13, 2): 0.2 + 0.0, (4, 3): 0.3}
    np.testing.assert_allclose(run(omp.OmpImplicitBarrierWait, ctx), expect(ctx, want), atol=1e-12)


def test_barrier_wait_instances_one_row_per_waiting_member():
    from patterns import omp_barrier_wait_instances

    ctx = ctx_a(barriers_a())
    bw = omp_barrier_wait_instances(ctx)
    rows = sorted(zip(bw["instance"].tolist(), bw["loc"].tolist(), bw["cnode"].tolist(), bw["implicit"].tolist()))
    assert rows == [(0, 0, 13, True), (0, 2, 13, True), (1, 0, 5, False), (1, 1, 5, False), (2, 3, 4, True),
                    (3, 0, 13, True), (3, 1, 13, True), (5, 3, 5, False)]  # instance 4 is outside any team
    want = {(0, 0): 4.4 - 4.0, (0, 2): 4.4 - 4.2, (1, 0): 0.3, (1, 1): 0.2, (2, 3): 0.3, (3, 0): 0.1,
            (3, 1): 0.05, (5, 3): 9.2 - 9.0}
    got = {(i, loc): w for i, loc, w in zip(bw["instance"].tolist(), bw["loc"].tolist(), bw["wait"].tolist())}
    assert got == pytest.approx(want)
    bar = ctx.tables["omp_barriers"]
    assert bar["instance"][bw["row"]].tolist() == bw["instance"].tolist()
    assert bw["enter"].tolist() == bar["enter"][bw["row"]].tolist()
    assert omp_barrier_wait_instances(ctx) is bw  # computed once per context


def locks_a():
    rows = [
        # critical "A" in process 0 (call path 6): hand-over loc0 -> loc1 -> loc2
        dict(process=0, lock=0, order=1, loc=0, call_enter=2.0, acquire_time=2.0, release_time=2.5,
             prev_release_time=NAN, cnode=6, lock_kind=3),
        dict(process=0, lock=0, order=2, loc=1, call_enter=2.1, acquire_time=2.5, release_time=2.7,
             prev_release_time=2.5, cnode=6, lock_kind=3),
        dict(process=0, lock=0, order=3, loc=2, call_enter=2.8, acquire_time=2.8, release_time=2.9,
             prev_release_time=2.7, cnode=6, lock_kind=3),  # free when asked for: no wait
        # an omp_lock_t (call path 8)
        dict(process=0, lock=1, order=1, loc=0, call_enter=3.0, acquire_time=3.0, release_time=3.4,
             prev_release_time=NAN, cnode=8, lock_kind=1),
        dict(process=0, lock=1, order=2, loc=2, call_enter=3.1, acquire_time=3.45, release_time=3.5,
             prev_release_time=3.4, cnode=8, lock_kind=1),
        # previous release recorded after this acquisition (clock skew): clamped to the acquisition
        dict(process=0, lock=1, order=3, loc=1, call_enter=3.2, acquire_time=3.3, release_time=3.6,
             prev_release_time=3.5, cnode=8, lock_kind=1),
        # an atomic counts with the critical sections
        dict(process=0, lock=2, order=2, loc=1, call_enter=4.0, acquire_time=4.2, release_time=4.3,
             prev_release_time=4.2, cnode=12, lock_kind=5),
        # ordered and unknown call paths have no contention pattern
        dict(process=0, lock=3, order=2, loc=0, call_enter=5.0, acquire_time=5.5, release_time=5.6,
             prev_release_time=5.5, cnode=10, lock_kind=4),
        dict(process=0, lock=4, order=2, loc=0, call_enter=5.0, acquire_time=5.5, release_time=5.6,
             prev_release_time=5.5, cnode=-1, lock_kind=6),
    ]
    return {"locks": make_table(LOCKS, rows)}


def test_lock_contention_routes_by_acquiring_construct():
    ctx = ctx_a(locks_a())
    crit = {(6, 1): 2.5 - 2.1, (12, 1): 4.2 - 4.0}
    api = {(8, 2): 3.4 - 3.1, (8, 1): 3.3 - 3.2}
    np.testing.assert_allclose(run(omp.OmpLockContentionCritical, ctx), expect(ctx, crit), atol=1e-12)
    np.testing.assert_allclose(run(omp.OmpLockContentionApi, ctx), expect(ctx, api), atol=1e-12)


def test_lock_contention_instances_cover_every_acquiring_call():
    from patterns import omp_lock_contention_instances

    ctx = ctx_a(locks_a())
    lc = omp_lock_contention_instances(ctx)
    # rows 1 (critical), 4 and 5 (lock API, 5 clamped to its acquisition), 6 (atomic), 7 (ordered: in the
    # table, in no contention pattern); row 2 did not wait, row 8 has no call path
    assert lc["row"].tolist() == [1, 4, 5, 6, 7]
    assert lc["wait"].tolist() == pytest.approx([2.5 - 2.1, 3.4 - 3.1, 3.3 - 3.2, 4.2 - 4.0, 5.5 - 5.0])
    assert lc["cnode"].tolist() == [6, 8, 8, 12, 10] and lc["loc"].tolist() == [1, 2, 1, 1, 0]
    assert lc["lock"].tolist() == [0, 1, 1, 2, 3] and set(lc["process"].tolist()) == {0}


def test_fork_join_instances_without_a_recorded_fork_call_path():
    from patterns import omp_fork_join_instances

    tables = teams_a()
    assert "fork_cnode" not in tables["omp_teams"]  # hand-made: the master forked in the region's parent
    fj = omp_fork_join_instances(ctx_a(tables))
    assert fj["loc"].tolist() == [0, 1, 2, 3, 4] and fj["cnode"].tolist() == [2] * 5
    assert fj["fork"].tolist() == pytest.approx([0.1, 0.3, 0.2, 0.0, 0.0])
    assert fj["join"].tolist() == pytest.approx([0.1, 0.2, 0.0, 0.0, 0.5])
    assert fj["master"].tolist() == [True, False, False, True, False]
    assert fj["fork_cnode"].tolist() == [0, -1, -1, 0, -1]


def test_patterns_without_rows_are_zero():
    ctx = ctx_a()
    for cls in (omp.OmpManagement, omp.OmpFork, omp.OmpExplicitBarrierWait, omp.OmpImplicitBarrierWait,
                omp.OmpLockContentionCritical, omp.OmpLockContentionApi):
        assert not run(cls, ctx).any(), cls.name


def test_children_never_exceed_parents_cell_by_cell():
    tables = {**teams_a(), **barriers_a(), **locks_a()}
    ctx = ctx_a(tables)
    values = {cls.name: run(cls, ctx) for cls in omp.PATTERNS}
    for cls in omp.PATTERNS:
        if cls.parent in values:
            assert np.all(values[cls.name] <= values[cls.parent] + 1e-12), (cls.name, cls.parent)
    # a parent category is at least the sum of its disjoint children
    kids = {}
    for cls in omp.PATTERNS:
        kids.setdefault(cls.parent, []).append(cls.name)
    for parent in ("omp_time", "omp_synchronization", "omp_barrier"):
        total = sum(values[k] for k in kids[parent])
        assert np.all(total <= values[parent] + 1e-12), parent


# --------------------------------------------------------------------------
# context B: idle threads
# --------------------------------------------------------------------------
REGIONS_B = [
    ("main", Role.FUNCTION),  # 0
    ("init", Role.FUNCTION),  # 1
    ("!$omp parallel @b.c:5", Role.OMP_PARALLEL),  # 2
    ("work", Role.FUNCTION),  # 3
    ("!$omp parallel @b.c:9", Role.OMP_PARALLEL),  # 4 (nested)
    ("fin", Role.FUNCTION),  # 5
    ("!$omp parallel @b.c:20", Role.OMP_PARALLEL),  # 6
]
CNODES_B = [
    (-1, 0),  # 0 main
    (0, 1),  # 1 main/init
    (0, 2),  # 2 main/par_a
    (2, 3),  # 3 main/par_a/work
    (3, 4),  # 4 main/par_a/work/par_nested
    (0, 5),  # 5 main/fin
    (0, 6),  # 6 main/par_b
]
# process 0: three threads; process 1: pure MPI; process 2: master is location 5, its worker location 4
LOCS_B = [(0, 0), (0, 1), (0, 2), (1, 0), (2, 1), (2, 0)]


def ctx_b(with_teams=True):
    excl = {
        # serial call paths, masters only
        (0, 0): 1.0, (1, 0): 0.5, (5, 0): 0.25,
        (0, 3): 2.0, (1, 3): 0.6, (5, 3): 0.35,
        (0, 5): 3.0, (1, 5): 0.7, (5, 5): 0.45,
        # par_a: master 0.1 + 2.0 + 0.5 = 2.6
        (2, 0): 0.1, (3, 0): 2.0, (4, 0): 0.5,
        (2, 1): 0.1, (3, 1): 1.2, (4, 1): 0.5,  # 1.8 (+ 0.4 + 0.2 management)
        (2, 2): 0.1, (3, 2): 2.7,  # 2.8: more than the master, no idle time
        (2, 5): 0.2, (3, 5): 1.0,  # process 2 master: 1.2
        (2, 4): 0.2, (3, 4): 0.9,  # 1.1 (+ 0.05 management)
        # par_b: only threads 0 and 1 of process 0 take part
        (6, 0): 1.0, (6, 1): 0.6,
        (6, 5): 0.3, (6, 4): 0.3 - 5e-11,  # below the 1e-10 threshold
    }
    tables = {}
    if with_teams:
        tables["omp_teams"] = make_table(
            OMP_TEAMS,
            [
                dict(team=0, process=0, master_loc=0, fork_time=10.0, join_time=20.0, size=3, parallel_cnode=2),
                dict(team=1, process=0, master_loc=0, fork_time=12.0, join_time=13.0, size=2, parallel_cnode=4,
                     parent_team=0),
                dict(team=2, process=2, master_loc=5, fork_time=10.0, join_time=12.0, size=2, parallel_cnode=2),
                dict(team=3, process=0, master_loc=0, fork_time=30.0, join_time=31.0, size=2, parallel_cnode=6),
            ],
        )
        tables["omp_team_members"] = make_table(
            OMP_TEAM_MEMBERS,
            [
                dict(team=0, loc=0, thread_num=0, enter=10.0, exit=20.0),
                dict(team=0, loc=1, thread_num=1, enter=10.3, exit=19.9),  # 0.4 management
                dict(team=0, loc=2, thread_num=2, enter=10.0, exit=20.0),
                # the nested master's fork span is already in its time at `work`: not added again
                dict(team=1, loc=0, thread_num=0, enter=12.1, exit=13.0),
                dict(team=1, loc=1, thread_num=1, enter=12.2, exit=13.0),  # 0.2 in the nested region
                dict(team=2, loc=5, thread_num=0, enter=10.0, exit=12.0),
                dict(team=2, loc=4, thread_num=1, enter=10.05, exit=12.0),  # 0.05
                dict(team=3, loc=0, thread_num=0, enter=30.0, exit=31.0),
                dict(team=3, loc=1, thread_num=1, enter=30.0, exit=31.0),
            ],
        )
    return make_ctx(REGIONS_B, CNODES_B, LOCS_B, excl, tables)


def test_limited_parallelism_compares_with_the_master_at_outermost_parallel_regions():
    ctx = ctx_b()
    want = {
        (2, 1): 2.6 - (1.8 + 0.4 + 0.2),  # nested management counts inside the outer region
        (2, 4): 1.2 - (1.1 + 0.05),
        (6, 1): 1.0 - 0.6,
        (6, 2): 1.0,  # not in the team at all
    }
    np.testing.assert_allclose(run(omp.OmpLimitedParallelism, ctx), expect(ctx, want), atol=1e-12)


def test_idle_threads_charges_workers_the_masters_serial_time():
    ctx = ctx_b()
    want = {
        (2, 1): 2.6 - 2.4, (2, 4): 1.2 - 1.15, (6, 1): 0.4, (6, 2): 1.0,
        # process 0's workers get location 0's serial time, process 2's worker location 5's
        (0, 1): 1.0, (1, 1): 0.5, (5, 1): 0.25,
        (0, 2): 1.0, (1, 2): 0.5, (5, 2): 0.25,
        (0, 4): 3.0, (1, 4): 0.7, (5, 4): 0.45,
    }
    np.testing.assert_allclose(run(omp.OmpIdleThreads, ctx), expect(ctx, want), atol=1e-12)


def test_masters_fork_span_moves_from_the_serial_call_path_to_the_parallel_region():
    ctx = ctx_b()
    members = ctx.tables["omp_team_members"]
    members["enter"][7] = 30.1  # the master of par_b enters 0.1 after its FORK (counted in main by the replay)
    got = run(omp.OmpIdleThreads, ctx)
    # workers of process 0 get the master's time at main without the span: 1.0 - 0.1
    assert got[0, 1] == pytest.approx(0.9) and got[0, 2] == pytest.approx(0.9)
    # at par_b the master's time includes the span: 1.0 + 0.1
    assert got[6, 1] == pytest.approx(1.1 - 0.6) and got[6, 2] == pytest.approx(1.1)
    assert got[0, 4] == pytest.approx(3.0)  # another process: unchanged


def test_idle_threads_without_management_rows_uses_plain_inclusive_time():
    ctx = ctx_b(with_teams=False)
    want = {(2, 1): 2.6 - 1.8, (2, 4): 1.2 - 1.1, (6, 1): 0.4, (6, 2): 1.0}
    np.testing.assert_allclose(run(omp.OmpLimitedParallelism, ctx), expect(ctx, want), atol=1e-12)


def test_no_parallel_region_means_no_idle_threads():
    # several threads per process but no OpenMP parallel region (e.g. an MPI progress thread)
    regions = [("main", Role.FUNCTION), ("helper", Role.FUNCTION)]
    cnodes = [(-1, 0), (0, 1)]
    ctx = make_ctx(regions, cnodes, [(0, 0), (0, 1)], {(0, 0): 2.0, (1, 1): 1.0})
    assert not run(omp.OmpIdleThreads, ctx).any()


def test_process_masters_is_the_lowest_thread_of_each_process():
    ctx = ctx_b()
    np.testing.assert_array_equal(omp.process_masters(ctx), [0, 0, 0, 3, 5, 5])


# --------------------------------------------------------------------------
# metadata
# --------------------------------------------------------------------------
def test_metadata_and_tree_shape():
    parents = {cls.name: cls.parent for cls in omp.PATTERNS}
    assert parents == {
        "omp_time": "execution",
        "omp_flush": "omp_time",
        "omp_management": "omp_time",
        "omp_fork": "omp_management",
        "omp_synchronization": "omp_time",
        "omp_barrier": "omp_synchronization",
        "omp_ebarrier": "omp_barrier",
        "omp_ebarrier_wait": "omp_ebarrier",
        "omp_ibarrier": "omp_barrier",
        "omp_ibarrier_wait": "omp_ibarrier",
        "omp_critical": "omp_synchronization",
        "omp_lock_contention_critical": "omp_critical",
        "omp_lock_api": "omp_synchronization",
        "omp_lock_contention_api": "omp_lock_api",
        "omp_ordered": "omp_synchronization",
        "omp_idle_threads": "time",
        "omp_limited_parallelism": "omp_idle_threads",
    }
    for cls in omp.PATTERNS:
        p = cls()
        validate_pattern(p, "test")
        assert p.unit == "sec"
        assert len(p.description) > 60 and len(p.diagnosis) > 60, p.name
