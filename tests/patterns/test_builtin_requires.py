"""Every built-in pattern declares what it reads: the replay tables in ``requires``, other patterns' results in
``depends`` / ``optional_depends``.

The replay builds only the tables the selected patterns require, so a pattern that reads an undeclared table
(directly, or through a helper such as the instance tables or the management shift) would silently lose data.
Each built-in is computed twice on small hybrid traces: once on the full context, once on a copy holding only
what it declares (no shared cache), and must give the same values; reading anything undeclared fails.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from analyzer.replay import replay
from patterns import load_patterns
from patterns.api import Severity
from patterns.tables import TABLES
from random_hybrid_traces import random_trace  # tests/helpers (pytest's pythonpath)


class Undeclared(AssertionError):
    pass


class OnlyDeclared(dict):
    """A dict that fails on any lookup of a key outside ``declared`` (also through ``get`` and ``in``)."""

    def __init__(self, full: dict, declared, what: str, pattern: str):
        super().__init__({k: v for k, v in full.items() if k in declared})
        self.declared, self.what, self.pattern = tuple(declared), what, pattern

    def _check(self, key):
        if key not in self.declared:
            raise Undeclared(f"{self.pattern} reads {self.what} {key!r} but declares only {self.declared}")

    def __getitem__(self, key):
        self._check(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._check(key)
        return super().get(key, default)

    def __contains__(self, key):
        self._check(key)
        return super().__contains__(key)


def copy_ctx(ctx, **changes):
    """A copy of ``ctx`` that shares no cached derived values with it."""
    if any(f.name == "derived" for f in dataclasses.fields(ctx)):
        changes.setdefault("derived", {})
    changes.setdefault("results", {})
    return dataclasses.replace(ctx, **changes)


def dense(ctx, result) -> np.ndarray:
    if isinstance(result, Severity):
        return result.to_dense(ctx.n_cnodes, ctx.n_locations)
    return np.asarray(result, np.float64)


BUILTINS = load_patterns(plugins=False)


@pytest.fixture(scope="module")
def full_runs():
    """(context, results) of every built-in on a few random hybrid traces with every table."""
    runs = []
    for seed in (3, 11, 20):
        ctx = replay(random_trace(seed, n_ranks=3, n_threads=3, steps=40, tasks=seed == 20, deps=seed == 20,
                                  rma=seed == 20))  # tasks, threads, one-sided
        fresh = copy_ctx(ctx)
        for p in BUILTINS:
            fresh.results[p.name] = dense(fresh, p.compute(fresh))
        runs.append((ctx, fresh.results))
    return runs


def test_the_traces_exercise_every_table(full_runs):
    for name in TABLES:
        assert any(len(ctx.tables[name]) for ctx, _ in full_runs), name


@pytest.mark.parametrize("p", BUILTINS, ids=lambda p: p.name)
def test_builtin_reads_only_what_it_declares(p, full_runs):
    assert set(p.requires) <= set(TABLES), p.requires
    for ctx, results in full_runs:
        only = copy_ctx(
            ctx,
            tables=OnlyDeclared(ctx.tables, p.requires, "replay table", p.name),
            results=OnlyDeclared(results, tuple(p.depends) + tuple(getattr(p, "optional_depends", ())),
                                 "result of", p.name),
        )
        got = dense(only, p.compute(only))
        np.testing.assert_array_equal(got, results[p.name], err_msg=p.name)


def test_the_check_catches_an_undeclared_table(full_runs):
    ctx, results = full_runs[0]
    late_sender = next(p for p in BUILTINS if p.name == "mpi_latesender")
    only = copy_ctx(ctx, tables=OnlyDeclared(ctx.tables, (), "replay table", "test"))
    with pytest.raises(Undeclared):
        late_sender.compute(only)
