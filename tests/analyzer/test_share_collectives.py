"""The collectives and one-sided tables of a share (analyzer.distributed.share_collectives) against the serial
replay: own rows identical, halo rows real serial rows, and every collective wait state of an owned location
the serial one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tracefmt
from analyzer.analyze import collective_mismatches
from analyzer.distributed.network import EVERY, deliver, route
from analyzer.distributed.share_collectives import (collective_candidates, collective_problems,
                                                    collective_summary, collective_table, mismatch_problems,
                                                    reduce_candidates, rma_rows, rma_table)
from analyzer.replay import merge_trees, partition, replay
from analyzer.replay.engine import region_arrays, walk_share
from analyzer.replay.matching import remap_cnodes
from patterns import instances as I
from random_hybrid_traces import random_trace

WAIT_STATES = (I.mpi_barrier_wait_instances, I.mpi_barrier_completion_instances, I.mpi_wait_nxn_instances,
               I.mpi_nxn_completion_instances, I.mpi_late_broadcast_instances, I.mpi_early_reduce_instances,
               I.mpi_early_scan_instances)


def _remap(fr, m):
    """A location's fragments with builder call-tree ids mapped to the merged ids ``m``."""
    return {kind: {k: (np.where(v >= 0, m[np.maximum(v, 0)], v) if k == "cnode" or k.endswith("_cnode") else v)
                   for k, v in cols.items()} for kind, cols in fr.items()}


def _share_rows(trace, K):
    """Per share its own collectives and one-sided rows in walk order (merged builder ids), and the map from
    merged builder ids to final call paths."""
    shares = partition(trace, K)
    names, _, role = region_arrays(trace.defs)
    walked = [walk_share(trace, p, role, names, keep={"collectives", "rma_ops"}) for p in shares]
    merged, maps = merge_trees([w.tree for w in walked])
    _, new_id, _ = merged.freeze(len(names) - 1)
    rows = []
    for w, m, p in zip(walked, maps, shares):
        frs = [_remap(w.done[loc][1], m) for loc in p]
        cat = {}
        for kind in ("collectives", "rma_ops"):
            pieces = [f[kind] for f in frs if kind in f]
            cat[kind] = {k: np.concatenate([q[k] for q in pieces]) for k in pieces[0]} if pieces else {}
        rows.append(cat)
    return shares, rows, new_id


def _run(trace, shares, rows):
    """The four stages with in-memory delivery: per share (table, problems part), and the one-sided tables."""
    K = len(shares)
    out = {s: {"sum": {EVERY: collective_summary(trace, rows[s]["collectives"])},
               "rma": {EVERY: rma_rows(trace, rows[s]["rma_ops"])}} for s in range(K)}
    inbox = deliver(out, K)
    rma = {s: rma_table(trace, inbox[s]["rma"]) for s in range(K)}
    states = {}
    for s in range(K):
        states[s], by_dest = collective_candidates(trace, shares, s, rows[s]["collectives"], inbox[s]["sum"])
        out[s] = route(K, {"cand": by_dest})
    inbox = deliver(out, K)
    for s in range(K):
        states[s], by_dest = reduce_candidates(trace, shares, s, states[s], inbox[s]["cand"])
        out[s] = route(K, {"win": by_dest})
    inbox = deliver(out, K)
    return {s: collective_table(trace, shares, s, states[s], inbox[s]["win"]) for s in range(K)}, rma


def _rows_of(table, sel):
    return {k: v[sel] for k, v in table.items()}


def _same(a, b, what):
    assert list(a) == list(b), what
    for k in a:
        assert a[k].dtype == b[k].dtype, (what, k)
        assert np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f"), (what, k)


def _check(trace, K):
    serial = replay(trace)
    S = serial.tables["collectives"]
    shares, rows, new_id = _share_rows(trace, K)
    got, rma = _run(trace, shares, rows)
    for s, (table, _) in got.items():
        remap_cnodes(table, new_id)
        owned = np.asarray(shares[s], np.int64)
        mine = np.isin(table["loc"], owned)
        _same(_rows_of(table, mine), _rows_of(S, np.isin(S["loc"], owned)), (K, s, "own rows"))
        # halo rows are real serial rows: (instance, loc) names a serial row
        key = S["instance"] * (1 << 32) + S["loc"]
        for i in np.flatnonzero(~mine):
            j = np.flatnonzero(key == table["instance"][i] * (1 << 32) + table["loc"][i])
            assert len(j) == 1
            for k in table:
                assert table[k][i] == S[k][j[0]] or (np.isnan(table[k][i]) and np.isnan(S[k][j[0]])), (s, k)
        ctx = dataclasses.replace(serial, tables={"collectives": table}, derived={})
        for fn in WAIT_STATES:
            a, b = fn(ctx), fn(serial)
            ka = np.isin(a["loc"], owned)
            kb = np.isin(b["loc"], owned)
            oa = np.lexsort((a["instance"][ka], a["loc"][ka]))
            ob = np.lexsort((b["instance"][kb], b["loc"][kb]))
            for col in ("instance", "cnode", "loc", "enter", "wait"):
                assert np.array_equal(a[col][ka][oa], b[col][kb][ob]), (K, s, fn.__name__, col)
        remap_cnodes(rma[s], new_id)
        _same(rma[s], serial.tables["mpi_rma_ops"], (K, s, "mpi_rma_ops"))
    parts = [got[s][1] for s in range(K)]
    texts = ("collectives on undefined communicators", "collective instances miss members")
    assert collective_problems(parts) == [p for p in serial.problems if any(t in p for t in texts)]
    assert mismatch_problems(parts, trace) == collective_mismatches(serial)
    return serial


@pytest.mark.parametrize("K", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_traces_give_the_serial_rows_and_waits(seed, K):
    trace = random_trace(seed, n_ranks=5, n_threads=2, steps=30)
    serial = _check(trace, K)
    assert len(serial.tables["collectives"])  # the trace has collectives to compare


@pytest.mark.parametrize("K", [2, 3, 7])
def test_random_traces_with_one_sided_calls(K):
    trace = random_trace(4, n_ranks=5, n_threads=2, steps=30, tasks=True, rma=True)
    serial = _check(trace, K)
    assert len(serial.tables["mpi_rma_ops"])


def _five(b):
    return [b.location(rank=r, thread=0) for r in range(5)]


def test_scan_broadcast_and_reduce_across_shares():
    b = tracefmt.TraceBuilder()
    locs = _five(b)
    mixed = b.comm([3, 1, 4, 0], name="mixed")  # comm-local order differs from the global ranks
    for loc in locs:
        b.enter(loc, 0.0, "main")
    # a scan whose latest ENTER below ranks 1 and 2 is rank 0's, which is no other extreme of the instance
    for r, t in enumerate((5.0, 1.0, 2.0, 7.0, 3.0)):
        b.collective(locs[r], t, 9.5 - r * 0.1, "MPI_Scan", sent=8, recvd=8)
    # in "mixed" order rank 1 waits for rank 3, which in the global rank order would be no record (rank 0 is)
    for r, t0, t1 in ((3, 12.0, 14.6), (1, 11.0, 14.5), (4, 13.0, 14.7), (0, 12.5, 14.0)):
        b.collective(locs[r], t0, t1, "MPI_Exscan", comm=mixed, sent=8, recvd=8)
    # a broadcast from rank 3, which enters last; a reduce to rank 4 with the earliest sender on rank 0
    for r, t in enumerate((15.0, 15.5, 16.0, 18.0, 15.2)):
        b.collective(locs[r], t, 19.0, "MPI_Bcast", root=3, sent=8 if r == 3 else 0, recvd=0 if r == 3 else 8)
    for r, t in enumerate((20.0, 21.0, 22.0, 23.0, 19.5)):
        b.collective(locs[r], t, 25.0, "MPI_Reduce", root=4, sent=8, recvd=8 if r == 4 else 0)
    # an n-to-n call whose earliest EXIT (rank 0) receives nothing and whose latest ENTER (rank 2) sends nothing
    for r, (t0, t1) in enumerate(((25.1, 26.0), (25.2, 26.5), (25.8, 26.7), (25.3, 27.0), (25.4, 27.5))):
        b.collective(locs[r], t0, t1, "MPI_Allreduce", sent=0 if r == 2 else 8, recvd=0 if r == 0 else 8)
    for loc in locs:
        b.exit(loc, 30.0)
    trace = b.build()
    for K in (1, 2, 3, 5):
        serial = _check(trace, K)
    waits = {fn.__name__: float(fn(serial)["wait"].sum()) for fn in WAIT_STATES}
    assert waits["mpi_early_scan_instances"] > 0
    assert waits["mpi_late_broadcast_instances"] > 0
    assert waits["mpi_early_reduce_instances"] > 0
    assert waits["mpi_nxn_completion_instances"] > 0


def test_incomplete_instance_undefined_communicator_and_mismatch():
    b = tracefmt.TraceBuilder()
    locs = _five(b)
    ghost = b.comm([], name="ghost")  # no ranks: its size is taken from the ranks seen
    for loc in locs:
        b.enter(loc, 0.0, "main")
    for r, loc in enumerate(locs):
        b.collective(loc, 1.0 + r, 8.0, "MPI_Barrier")
    for r in (0, 4):  # ranks 1 to 3 never reach this broadcast
        b.collective(locs[r], 9.0 + r, 14.0, "MPI_Bcast", root=0, sent=8 if r == 0 else 0, recvd=8)
    for r in (1, 3):
        b.collective(locs[r], 9.0 + r, 14.0, "MPI_Allreduce", comm=ghost, sent=8, recvd=8)
    for r, loc in enumerate(locs):  # rank 2 calls another operation than the others
        b.collective(loc, 15.0 + r, 21.0, "MPI_Allgather" if r == 2 else "MPI_Allreduce", sent=8, recvd=8)
    for loc in locs:
        b.exit(loc, 30.0)
    trace = b.build()
    for K in (1, 2, 4, 7):
        serial = _check(trace, K)
    assert any("miss members" in p for p in serial.problems)
    assert any("undefined communicators" in p for p in serial.problems)
    assert collective_mismatches(serial)


def test_the_halo_holds_the_extremes_not_every_member():
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r, thread=0) for r in range(16)]
    for loc in locs:
        b.enter(loc, 0.0, "main")
    for r, loc in enumerate(locs):
        b.collective(loc, 1.0 + 0.1 * r, 5.0 + 0.1 * r, "MPI_Barrier")
    for r, loc in enumerate(locs):  # rank 0 enters last: the latest ENTER below every rank is its own
        b.collective(loc, 9.0 - 0.1 * r, 10.0 + 0.1 * r, "MPI_Scan", sent=8, recvd=8)
    for loc in locs:
        b.exit(loc, 20.0)
    trace = b.build()
    _check(trace, 16)
    shares, rows, _ = _share_rows(trace, 16)
    got, _ = _run(trace, shares, rows)
    for s, (table, _) in got.items():
        halo = ~np.isin(table["loc"], shares[s])
        assert np.bincount(table["instance"][halo]).max() <= 5, s  # of 15 other members
