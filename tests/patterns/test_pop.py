"""POP efficiencies: hand-built traces with designed imbalance and serialisation, the ideal-network replay
against its slow reference on random traces, and expert-analyze's table."""

from __future__ import annotations

import numpy as np
import pytest
from random_hybrid_traces import random_trace

import tracefmt
from pop_reference import ideal_end
from analyzer import analyze
from analyzer.replay import replay
from patterns.pop import NAMES, PATTERNS, efficiencies, ideal_elapsed

POP = [p.name for p in PATTERNS]


def _eff(trace):
    cube = analyze(trace, patterns=POP, plugins=False)
    return cube, efficiencies({n: cube.total(n) for n in NAMES})


def imbalanced():
    """Rank 0 computes 4 s, rank 1 2 s; both leave the barrier at 5: T = 5, useful 4 and 2."""
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    for loc, work in ((r0, 4.0), (r1, 2.0)):
        b.enter(loc, 0.0, "main")
        b.enter(loc, 0.0, "work"); b.exit(loc, work)
        b.collective(loc, work, 5.0, "MPI_Barrier")
        b.exit(loc, 5.0)
    return b.build()


def serialised():
    """A ping-pong: each rank computes 2 s while the other waits for its message; T = 5, useful 2 each."""
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    b.enter(r0, 0.0, "main"); b.enter(r1, 0.0, "main")
    b.enter(r0, 0.0, "work"); b.exit(r0, 2.0)
    b.enter(r0, 2.0, "MPI_Send"); b.send(r0, 2.0, dest=1, nbytes=8); b.exit(r0, 2.5)
    b.enter(r0, 2.5, "MPI_Recv"); b.recv(r0, 5.0, source=1, nbytes=8); b.exit(r0, 5.0)
    b.enter(r1, 0.0, "MPI_Recv"); b.recv(r1, 2.5, source=0, nbytes=8); b.exit(r1, 2.5)
    b.enter(r1, 2.5, "work"); b.exit(r1, 4.5)
    b.enter(r1, 4.5, "MPI_Send"); b.send(r1, 4.5, dest=0, nbytes=8); b.exit(r1, 5.0)
    b.exit(r0, 5.0); b.exit(r1, 5.0)
    return b.build()


def test_load_imbalance():
    cube, e = _eff(imbalanced())
    # avg useful 3, max 4, T 5; on an ideal network the barrier costs nothing: both leave at 4
    assert e["load_balance"] == pytest.approx(0.75)
    assert e["communication_efficiency"] == pytest.approx(0.8)
    assert e["parallel_efficiency"] == pytest.approx(0.6)
    assert e["serialisation_efficiency"] == pytest.approx(1.0)
    assert e["transfer_efficiency"] == pytest.approx(0.8)
    assert cube.per_location("pop_load_imbalance").tolist() == pytest.approx([0.0, 2.0])
    assert cube.total("pop_transfer") == pytest.approx(2.0)  # 1 s on each of the 2 locations


def test_serialisation():
    _, e = _eff(serialised())
    # ideal: rank 0 sends at 2, rank 1 computes 2..4 and sends at 4, rank 0 receives at 4: T_ideal = 4
    assert e["load_balance"] == pytest.approx(1.0)
    assert e["serialisation_efficiency"] == pytest.approx(0.5)
    assert e["transfer_efficiency"] == pytest.approx(0.8)
    assert e["communication_efficiency"] == pytest.approx(0.4)
    assert e["parallel_efficiency"] == pytest.approx(0.4)


def test_factors_multiply_and_the_tree_is_inclusive():
    for trace in (imbalanced(), serialised(), random_trace(4, n_ranks=3, n_threads=2, steps=30)):
        cube, e = _eff(trace)
        assert e["parallel_efficiency"] == pytest.approx(e["load_balance"] * e["communication_efficiency"])
        assert e["communication_efficiency"] == pytest.approx(
            e["serialisation_efficiency"] * e["transfer_efficiency"])
        assert all(0.0 <= v <= 1.0 + 1e-12 for v in e.values())
        v = cube.values
        assert np.allclose(v["pop_resources"], v["pop_useful"] + v["pop_inefficiency"])
        assert np.allclose(v["pop_communication"], v["pop_serialisation"] + v["pop_transfer"])


@pytest.mark.parametrize("seed", range(6))
def test_ideal_replay_matches_reference(seed):
    trace = random_trace(seed, n_ranks=2 + seed % 3, n_threads=1 + seed % 2, steps=20 + seed)
    ctx = replay(trace, tables=PATTERNS[0].requires)
    _, ideal = ideal_elapsed(ctx)
    assert ideal == pytest.approx(ideal_end(ctx), abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_barrier_groups_taken_as_the_replay_orders_them_equal_the_sorted_ones(seed, monkeypatch):
    import patterns.pop as pop

    trace = random_trace(seed, n_ranks=2 + seed % 2, n_threads=2 + seed % 3, steps=20 + seed)
    ctx = replay(trace, tables=PATTERNS[0].requires)
    assert pop._in_instance_order(ctx.table("omp_barriers"))  # the replay's table takes the short way
    fast = pop.ideal_inputs(ctx)
    monkeypatch.setattr(pop, "_in_instance_order", lambda B: False)
    slow = pop.ideal_inputs(ctx)
    assert len(fast.b_loc) > 0
    for name in ("b_inst", "b_off", "b_loc"):
        a, b = getattr(fast, name), getattr(slow, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name


def test_barrier_rows_out_of_instance_order_are_not_taken_as_groups():
    from patterns.pop import _in_instance_order

    def table(inst, team):
        return {"instance": np.array(inst, np.int64), "team": np.array(team, np.int64)}

    assert _in_instance_order(table([0, 0, 1, 1, 2], [0, 0, 1, 1, 0]))
    assert not _in_instance_order(table([0, 1, 0, 1], [0, 0, 0, 0]))  # not grouped
    assert not _in_instance_order(table([0, 0, 2, 2], [0, 0, 0, 0]))  # a gap in the numbering
    assert not _in_instance_order(table([1, 1, 2], [0, 0, 0]))  # not from 0
    assert not _in_instance_order(table([0, 0, 1], [0, -1, 0]))  # a row outside every team
    assert not _in_instance_order(table([], []))


def test_expert_analyze_prints_the_table(tmp_path, capsys):
    from analyzer.cli.analyze import main

    path = tmp_path / "t.elg"
    tracefmt.TraceBuilder.write  # noqa: B018 (the builder writes .elg files)
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    for loc, work in ((r0, 4.0), (r1, 2.0)):
        b.enter(loc, 0.0, "main"); b.enter(loc, 0.0, "work"); b.exit(loc, work)
        b.collective(loc, work, 5.0, "MPI_Barrier"); b.exit(loc, 5.0)
    b.write(path)
    assert main([str(path), "-o", str(tmp_path / "t.cubex"), "--no-plugins", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "POP efficiencies" in out
    assert "  parallel efficiency            60.0 %" in out
    assert "      transfer                   80.0 %" in out
