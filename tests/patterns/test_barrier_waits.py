"""OpenMP barrier waits: patterns.instances' kernel path against the slow reference on tables with every edge."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from patterns.instances import _omp_barrier_wait
from patterns.tables import Table
from tracefmt.layout import Role

from barrier_waits_reference import barrier_waits_reference

ROLES = np.array([Role.FUNCTION, Role.OMP_BARRIER, Role.OMP_IMPLICIT_BARRIER, Role.OMP_PARALLEL, Role.OMP_LOOP],
                 np.uint8)


def _table(rng, n, n_inst, busy: bool, sparse: bool) -> Table:
    inst = rng.integers(-1, n_inst, n)
    if sparse:  # ids far apart (not from the replay): numbered densely for the latest ENTERs
        inst = np.where(inst >= 0, inst * 1_000_003, -1)
    enter = np.round(rng.uniform(0, 10, n), 1)  # rounded: equal ENTERs happen
    enter[rng.random(n) < 0.03] = np.nan
    exit_ = enter + rng.choice([0.0, 0.5, 3.0], n)
    exit_[rng.random(n) < 0.03] = np.nan
    cols = {"instance": inst, "team": rng.integers(-1, 3, n), "loc": rng.integers(0, 8, n).astype(np.int32),
            "cnode": rng.integers(-1, len(ROLES), n).astype(np.int32), "enter": enter, "exit": exit_}
    if busy:
        cols["task_busy"] = np.where(rng.random(n) < 0.3, rng.uniform(0, 2, n), 0.0)
    return Table(cols)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("busy", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_kernel_rows_equal_the_reference(seed, busy, sparse):
    rng = np.random.default_rng(seed)
    bar = _table(rng, 400, 40, busy, sparse)
    got = _omp_barrier_wait(SimpleNamespace(table=lambda name: bar, cnode_role=lambda: ROLES))
    want = barrier_waits_reference(bar, ROLES)
    assert len(want) > 20  # the draw holds waits of both kinds
    assert {w[6] for w in want} == {False, True}
    rows = list(zip(*(got[k].tolist() for k in ("row", "instance", "cnode", "loc", "enter", "wait", "implicit"))))
    assert rows == want  # the same floats: the same operations in the same order
    assert got["row"].dtype == np.int64 and got["wait"].dtype == np.float64 and got["implicit"].dtype == np.bool_


def test_no_rows_and_no_counted_rows():
    empty = Table({"instance": np.zeros(0, np.int64), "team": np.zeros(0, np.int64), "loc": np.zeros(0, np.int32),
                   "cnode": np.zeros(0, np.int32), "enter": np.zeros(0), "exit": np.zeros(0)})
    out = _omp_barrier_wait(SimpleNamespace(table=lambda name: empty, cnode_role=lambda: ROLES))
    assert len(out) == 0 and set(out) == {"row", "instance", "cnode", "loc", "enter", "wait", "implicit"}
    none = Table({"instance": np.array([-1, -1]), "team": np.array([0, 0]), "loc": np.zeros(2, np.int32),
                  "cnode": np.array([1, 1], np.int32), "enter": np.array([0.0, 1.0]), "exit": np.array([2.0, 2.0])})
    assert len(_omp_barrier_wait(SimpleNamespace(table=lambda name: none, cnode_role=lambda: ROLES))) == 0


def test_the_latest_enter_counts_members_outside_barrier_call_paths():
    # the member in a non-barrier call path arrives last: the others wait for it, it is no row itself
    bar = Table({"instance": np.array([0, 0, 0]), "team": np.array([0, 0, 0]), "loc": np.arange(3, dtype=np.int32),
                 "cnode": np.array([1, 2, 4], np.int32), "enter": np.array([1.0, 2.0, 5.0]),
                 "exit": np.array([5.5, 4.0, 5.5])})
    out = _omp_barrier_wait(SimpleNamespace(table=lambda name: bar, cnode_role=lambda: ROLES))
    assert out["row"].tolist() == [0, 1]
    assert out["wait"].tolist() == [4.0, 2.0]  # min(latest 5, exit) - enter: the second left at 4
    assert out["implicit"].tolist() == [False, True]


def test_a_call_path_outside_the_call_tree_is_an_index_error():
    bar = Table({"instance": np.array([0, 0]), "team": np.array([0, 0]), "loc": np.arange(2, dtype=np.int32),
                 "cnode": np.array([1, len(ROLES)], np.int32), "enter": np.array([1.0, 2.0]),
                 "exit": np.array([3.0, 3.0])})
    with pytest.raises(IndexError):
        _omp_barrier_wait(SimpleNamespace(table=lambda name: bar, cnode_role=lambda: ROLES))
