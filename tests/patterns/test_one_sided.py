"""MPI one-sided communication (patterns/mpi_rma.py) on hand-built traces (format 2.3); every expected value is
worked out in the comments from the definitions in docs/analysis.md ("MPI one-sided communication")."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tracefmt
from analyzer import analyze
from analyzer.cli.analyze import main
from random_hybrid_traces import random_builder, random_trace
from tracefmt.layout import RmaAtomic, RmaSync, RmaSyncFlag

EXCL = RmaSyncFlag.EXCLUSIVE


def total(cube, metric, path=None, loc=None):
    v = np.asarray(cube.values[metric])
    if path is not None:
        v = v[cube.find_cnodes(path)]
    if loc is not None:
        v = v[..., loc]
    return float(v.sum())


def transfer(b, loc, t0, t1, w, target, kind="put", nbytes=8):
    region = {"put": "MPI_Put", "get": "MPI_Get", "acc": "MPI_Accumulate"}[kind]
    b.enter(loc, t0, region)
    if kind == "put":
        b.rma_put(loc, t0, w, target, nbytes)
    elif kind == "get":
        b.rma_get(loc, t0, w, target, nbytes)
    else:
        b.rma_atomic(loc, t0, w, target, RmaAtomic.ACCUMULATE, sent=nbytes)
    b.exit(loc, t1, region)


def start(n, t_create=1.0):
    """n ranks in main with a window created over the world in [0, t_create]."""
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(n)]
    w = b.window()
    for loc in locs:
        b.enter(loc, 0.0, "main")
        b.rma_call(loc, 0.0, t_create, "MPI_Win_create", w, RmaSync.CREATE)
    return b, locs, w


def finish(b, locs, w, t=20.0):
    for loc in locs:
        b.rma_call(loc, t, t + 1.0, "MPI_Win_free", w, RmaSync.FREE)
        b.exit(loc, t + 2.0, "main")
    return analyze(b.build(), plugins=False)


# --------------------------------------------------------------------------
# fence: a late epoch
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fence():
    """Rank 0 enters the first fence late (3.0; ranks 1 and 2 at 1.0; all leave at 3.5).  Ranks 1 and 2 put
    8 and 16 bytes to rank 0 in [4, 5] and [4, 6]; the second fence: rank 0 enters at 4.5, rank 1 at 5.5,
    rank 2 at 6.5, all leave at 7."""
    b, locs, w = start(3)
    for r, loc in enumerate(locs):
        b.rma_call(loc, 3.0 if r == 0 else 1.0, 3.5, "MPI_Win_fence", w, RmaSync.FENCE)
    for r, loc in enumerate(locs[1:], 1):
        transfer(b, loc, 4.0, 4.0 + r, w, 0, nbytes=8 * r)
    for r, loc in enumerate(locs):
        b.rma_call(loc, 4.5 + r, 7.0, "MPI_Win_fence", w, RmaSync.FENCE)
    return finish(b, locs, w)


def test_wait_at_fence(fence):
    # fence 1: latest enter 3.0 < earliest exit 3.5; ranks 1, 2 wait 2.0 each.  Fence 2: latest 6.5; rank 0
    # waits 2.0, rank 1 1.0
    assert total(fence, "mpi_rma_wait_at_fence") == pytest.approx(7.0)
    assert [total(fence, "mpi_rma_wait_at_fence", loc=k) for k in range(3)] == pytest.approx([2.0, 3.0, 2.0])
    assert total(fence, "mpi_rma_wait_at_fence", "main/MPI_Win_fence") == pytest.approx(7.0)


def test_early_fence_waits_for_the_last_transfer_to_it(fence):
    # rank 0's second fence (enter 4.5): the last transfer to it ends at 6.0 -> 1.5 of its 2.0 wait
    assert total(fence, "mpi_rma_early_fence") == pytest.approx(1.5)
    assert total(fence, "mpi_rma_early_fence", loc=0) == pytest.approx(1.5)


def test_fence_pairsync_counts(fence):
    # 2 fences x 3 ranks x 3 processes of the window; unneeded: fence 1 has no transfer (3 x 3); fence 2:
    # rank 0 was accessed by 1 and 2 (3 - 2), ranks 1 and 2 accessed 0 (3 - 1 each)
    assert total(fence, "mpi_rma_pairsync_count") == 18
    assert total(fence, "mpi_rma_pairsync_unneeded_count") == 9 + 1 + 2 + 2


def test_counts_bytes_and_time_categories(fence):
    assert total(fence, "comms_rma") == total(fence, "comms_rma_puts") == 2
    assert total(fence, "comms_rma_gets") == total(fence, "comms_rma_atomics") == 0
    assert total(fence, "bytes_put") == total(fence, "bytes_rma") == 24 and total(fence, "bytes_get") == 0
    assert total(fence, "syncs_rma") == total(fence, "syncs_rma_active") == 6  # fences; create/free are management
    assert total(fence, "syncs_rma_passive") == 0
    assert total(fence, "bytes") == 24 and total(fence, "comms") == 2 and total(fence, "syncs") == 6
    # fence 1: 0.5 + 2.5 + 2.5, fence 2: 2.5 + 1.5 + 0.5; create and free 1 s each per rank; puts 1 + 2 s
    assert total(fence, "mpi_rma_sync_active") == total(fence, "mpi_rma_synchronization") == pytest.approx(10.0)
    assert total(fence, "mpi_mgmt_win") == pytest.approx(6.0)
    assert total(fence, "mpi_rma_communication") == pytest.approx(3.0)
    assert total(fence, "mpi_rma_wait_at_create") == total(fence, "mpi_rma_wait_at_free") == 0


def test_balanced_fences_and_calls_that_do_not_overlap_are_no_wait():
    b, locs, w = start(2)
    for loc in locs:  # everyone at once: no wait
        b.rma_call(loc, 2.0, 2.5, "MPI_Win_fence", w, RmaSync.FENCE)
    # rank 0 leaves its fence (3.5) before rank 1 enters (4.0): no synchronisation happened, none is blamed
    b.rma_call(locs[0], 3.0, 3.5, "MPI_Win_fence", w, RmaSync.FENCE)
    b.rma_call(locs[1], 4.0, 4.5, "MPI_Win_fence", w, RmaSync.FENCE)
    cube = finish(b, locs, w)
    assert total(cube, "mpi_rma_wait_at_fence") == 0 and total(cube, "mpi_rma_early_fence") == 0


def test_wait_at_create_and_free():
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(2)]
    w = b.window()
    for r, loc in enumerate(locs):
        b.enter(loc, 0.0, "main")
        b.rma_call(loc, 1.0 + 2 * r, 4.0, "MPI_Win_create", w, RmaSync.CREATE)  # rank 0 waits 2
        b.rma_call(loc, 6.0 - 0.5 * r, 7.0, "MPI_Win_free", w, RmaSync.FREE)  # rank 1 waits 0.5
        b.exit(loc, 8.0, "main")
    cube = analyze(b.build(), plugins=False)
    assert total(cube, "mpi_rma_wait_at_create", "main/MPI_Win_create", loc=0) == pytest.approx(2.0)
    assert total(cube, "mpi_rma_wait_at_create") == pytest.approx(2.0)
    assert total(cube, "mpi_rma_wait_at_free", "main/MPI_Win_free", loc=1) == pytest.approx(0.5)
    assert total(cube, "mpi_rma_wait_at_free") == pytest.approx(0.5)


# --------------------------------------------------------------------------
# general active target synchronisation
# --------------------------------------------------------------------------
def gats(post, start_call, ops, complete, wait):
    """Rank 0 exposes (post, wait), rank 1 accesses it (start, transfers, complete): (enter, exit) pairs."""
    b, (t, o), w = start(2, t_create=0.1)
    b.rma_call(t, *post, "MPI_Win_post", w, RmaSync.POST, group=[1])
    b.rma_call(o, *start_call, "MPI_Win_start", w, RmaSync.START, group=[0])
    for t0, t1 in ops:
        transfer(b, o, t0, t1, w, 0)
    b.rma_call(o, *complete, "MPI_Win_complete", w, RmaSync.COMPLETE, group=[0])
    b.rma_call(t, *wait, "MPI_Win_wait", w, RmaSync.WAIT, group=[1])
    return finish(b, [t, o], w)


def test_late_post_in_a_blocking_start_then_early_wait_and_late_complete():
    # post enters at 2.0; the start [0.5, 2.05] spans it: 1.5 late post in MPI_Win_start (the complete [3, 4]
    # does not).  The wait enters at 2.2, the complete at 3.0: early wait 0.8; the last transfer to rank 0
    # ends at 2.8: late complete 3.0 - 2.8 = 0.2
    cube = gats(post=(2.0, 2.1), start_call=(0.5, 2.05), ops=[(2.5, 2.8)], complete=(3.0, 4.0), wait=(2.2, 5.0))
    assert total(cube, "mpi_rma_sync_late_post", "main/MPI_Win_start", loc=1) == pytest.approx(1.5)
    assert total(cube, "mpi_rma_sync_late_post") == pytest.approx(1.5)
    assert total(cube, "mpi_rma_comm_late_post") == 0
    assert total(cube, "mpi_rma_early_wait", "main/MPI_Win_wait", loc=0) == pytest.approx(0.8)
    assert total(cube, "mpi_rma_late_complete", "main/MPI_Win_wait", loc=0) == pytest.approx(0.2)
    # one target at the complete, one origin at the wait, both took part in a transfer
    assert total(cube, "mpi_rma_pairsync_count") == 2 and total(cube, "mpi_rma_pairsync_unneeded_count") == 0


def test_late_post_in_the_complete():
    # the start returned at once (0.6); the post enters at 3.5 while the complete [2.0, 3.7] runs: 1.5 there.
    # The wait enters at 3.7, after the complete began (2.0): no early wait
    cube = gats(post=(3.5, 3.6), start_call=(0.5, 0.6), ops=[(1.0, 1.1)], complete=(2.0, 3.7), wait=(3.7, 4.5))
    assert total(cube, "mpi_rma_sync_late_post", "main/MPI_Win_complete", loc=1) == pytest.approx(1.5)
    assert total(cube, "mpi_rma_early_wait") == 0 and total(cube, "mpi_rma_late_complete") == 0


def test_early_transfer_waits_for_the_post_in_the_put():
    # the put [1.0, 3.7] spans the post's enter 3.5 (start and complete do not): 2.5 late post in MPI_Put
    cube = gats(post=(3.5, 3.6), start_call=(0.5, 0.6), ops=[(1.0, 3.7)], complete=(4.0, 4.1), wait=(3.8, 4.5))
    assert total(cube, "mpi_rma_comm_late_post", "main/MPI_Put", loc=1) == pytest.approx(2.5)
    assert total(cube, "mpi_rma_sync_late_post") == 0
    # the wait (3.8) waits for the complete (4.0): 0.2, all of it after the last transfer (3.7 < 3.8)
    assert total(cube, "mpi_rma_early_wait") == pytest.approx(0.2)
    assert total(cube, "mpi_rma_late_complete") == pytest.approx(0.2)


def test_an_early_post_and_a_late_wait_are_no_wait():
    cube = gats(post=(0.2, 0.3), start_call=(0.5, 0.6), ops=[], complete=(1.0, 1.1), wait=(2.0, 2.1))
    for m in ("mpi_rma_sync_late_post", "mpi_rma_comm_late_post", "mpi_rma_early_wait", "mpi_rma_late_complete"):
        assert total(cube, m) == 0, m
    # no transfer in the epoch: both pair-wise synchronisations were unneeded
    assert total(cube, "mpi_rma_pairsync_count") == total(cube, "mpi_rma_pairsync_unneeded_count") == 2


# --------------------------------------------------------------------------
# passive target: lock contention
# --------------------------------------------------------------------------
def locks(first, second, second_lock=(1.5, 2.6), second_ops=(), second_unlock=(3.0, 3.2)):
    """Ranks 1 and 2 lock rank 0's window: rank 1 with ``first`` flags in [1.0, 1.1], a put [1.2, 1.3], unlock
    [1.4, 2.0]; rank 2 with ``second`` flags as given."""
    b, locs, w = start(3, t_create=0.5)
    o1, o2 = locs[1], locs[2]
    b.rma_call(o1, 1.0, 1.1, "MPI_Win_lock", w, RmaSync.LOCK, target=0, flags=first)
    transfer(b, o1, 1.2, 1.3, w, 0)
    b.rma_call(o1, 1.4, 2.0, "MPI_Win_unlock", w, RmaSync.UNLOCK, target=0)
    b.rma_call(o2, *second_lock, "MPI_Win_lock", w, RmaSync.LOCK, target=0, flags=second)
    for t0, t1 in second_ops:
        transfer(b, o2, t0, t1, w, 0)
    b.rma_call(o2, *second_unlock, "MPI_Win_unlock", w, RmaSync.UNLOCK, target=0)
    return finish(b, locs, w)


def test_lock_contention_in_the_lock_call():
    # rank 1 releases at 2.0 (its unlock's exit); rank 2's exclusive lock [1.5, 2.6] waited 0.5 for it
    cube = locks(EXCL, EXCL)
    assert total(cube, "mpi_rma_sync_lock_competition", "main/MPI_Win_lock", loc=2) == pytest.approx(0.5)
    assert total(cube, "mpi_rma_sync_lock_competition") == pytest.approx(0.5)
    assert total(cube, "syncs_rma_passive") == 4
    # a shared lock after an exclusive one waits too
    assert total(locks(EXCL, 0), "mpi_rma_sync_lock_competition") == pytest.approx(0.5)


def test_lock_contention_in_a_transfer_and_in_the_unlock():
    # lazy lock [1.5, 1.55]: the put [1.6, 2.3] spans the release at 2.0: 0.4 in MPI_Put
    cube = locks(EXCL, EXCL, second_lock=(1.5, 1.55), second_ops=[(1.6, 2.3)], second_unlock=(2.4, 2.5))
    assert total(cube, "mpi_rma_comm_lock_competition", "main/MPI_Put", loc=2) == pytest.approx(0.4)
    assert total(cube, "mpi_rma_sync_lock_competition") == 0
    # nothing spans it but the unlock [1.8, 2.5]: 0.2 in MPI_Win_unlock
    cube = locks(EXCL, EXCL, second_lock=(1.5, 1.55), second_ops=[(1.6, 1.7)], second_unlock=(1.8, 2.5))
    assert total(cube, "mpi_rma_sync_lock_competition", "main/MPI_Win_unlock", loc=2) == pytest.approx(0.2)


def test_lock_granted_inside_the_holders_unlock():
    # MPICH hands the lock over before the holder's MPI_Win_unlock [1.4, 2.0] returns: rank 2's lock call
    # [1.2, 1.9], asked before that unlock began, returned inside it: it waited all its 0.7 s
    cube = locks(EXCL, EXCL, second_lock=(1.2, 1.9))
    assert total(cube, "mpi_rma_sync_lock_competition", "main/MPI_Win_lock", loc=2) == pytest.approx(0.7)
    # asked only after the unlock began [1.5, 1.9]: no wait is known (the release may have been at 1.4)
    assert total(locks(EXCL, EXCL, second_lock=(1.5, 1.9)), "mpi_rma_sync_lock_competition") == 0


def test_shared_locks_and_disjoint_epochs_do_not_compete():
    assert total(locks(0, 0), "mpi_rma_sync_lock_competition") == 0
    # rank 2 locks after rank 1 released (2.0): nothing spans the release
    cube = locks(EXCL, EXCL, second_lock=(2.1, 2.2))
    assert total(cube, "mpi_rma_sync_lock_competition") == 0 and total(cube, "mpi_rma_comm_lock_competition") == 0


# --------------------------------------------------------------------------
# what the trace does not measure
# --------------------------------------------------------------------------
def test_one_sided_calls_without_rma_records_are_not_measured():
    # a format 2.2 trace (or a foreign one): MPI_Win_fence without MPI_RMA_SYNC: the time is there, the wait
    # states and counts are n/a, not 0
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(2)]
    for r, loc in enumerate(locs):
        b.enter(loc, 0.0, "main")
        b.enter(loc, 1.0 + r, "MPI_Win_fence")
        b.exit(loc, 3.0, "MPI_Win_fence")
        b.exit(loc, 4.0, "main")
    cube = analyze(b.build(), plugins=False)
    assert "mpi_rma_wait_at_fence" not in cube.values and "comms_rma" not in cube.values
    assert total(cube, "mpi_rma_sync_active") == pytest.approx(3.0)


def test_the_random_traces_give_the_same_results_serially_and_on_two_cores():
    trace = random_trace(11, n_ranks=3, n_threads=2, steps=40, tasks=True, rma=True)
    assert len(analyze(trace, plugins=False).context.table("mpi_rma_ops"))
    a = analyze(trace, plugins=False)
    b = analyze(trace, plugins=False, jobs=2)
    assert a.metric_names == b.metric_names
    for m in a.metric_names:
        assert np.array_equal(np.asarray(a.values[m]), np.asarray(b.values[m])), m
    assert total(a, "mpi_rma_pairsync_count") > 0


@pytest.mark.runtime
def test_the_random_traces_give_the_same_json_over_mpi_ranks(tmp_path):
    """``mpiexec -n 2 expert-analyze --mpi`` on a random trace with one-sided epochs: the serial JSON summary."""
    mpiexec = shutil.which("mpiexec.openmpi") or shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec (Open MPI) on this machine")
    trace = tmp_path / "rma.elg"
    random_builder(11, n_ranks=3, n_threads=2, steps=40, tasks=True, rma=True).write(trace)
    serial = tmp_path / "serial.json"
    assert main([str(trace), "-j", "1", "-q", "--json", str(serial), "-o", str(tmp_path / "serial.cubex")]) == 0
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    env = dict(os.environ, PYTHONPATH=root, NUMBA_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_btl="self,vader", OMPI_MCA_rmaps_base_oversubscribe="1",
               MPI4PY_MPIABI="openmpi")
    out = tmp_path / "mpi.json"
    run = subprocess.run([mpiexec, "--oversubscribe", "-n", "2", sys.executable, "-m", "analyzer.cli", "--mpi",
                          str(trace), "-q", "--json", str(out), "-o", str(tmp_path / "mpi.cubex")],
                         capture_output=True, text=True, env=env, timeout=180, cwd=root)
    assert run.returncode == 0, run.stderr
    assert out.read_bytes() == serial.read_bytes()
    assert b"mpi_rma_wait_at_fence" in serial.read_bytes()


def collective_reference(ctx):
    """Slow counterpart of the vectorised collectives of patterns.rma_epochs: {(metric, cnode, loc): value} of
    wait at create / free / fence, early fence and the fences' pair-wise counts, row by row."""
    from collections import defaultdict

    T = ctx.table("mpi_rma_ops")
    defs = ctx.trace.defs
    rows = [{k: T[k][i].item() for k in T} for i in range(len(T))]
    rows.sort(key=lambda r: (r["window"], r["rank"], r["time"], r["loc"]))
    seq, colls, last_op, partners = defaultdict(int), defaultdict(list), {}, defaultdict(set)
    for r in rows:
        key = (r["window"], r["rank"])
        if r["op"] == tracefmt.layout.EventType.MPI_RMA_SYNC and r["kind"] in (RmaSync.CREATE, RmaSync.FENCE,
                                                                             RmaSync.FREE):
            colls[(r["window"], seq[key])].append(dict(r, seq=seq[key]))
            seq[key] += 1
        elif r["op"] != tracefmt.layout.EventType.MPI_RMA_SYNC:
            k = (r["window"], r["peer"], seq[key])
            last_op[k] = max(last_op.get(k, -np.inf), r["exit"])
            partners[k].add(r["rank"])
            partners[(r["window"], r["rank"], seq[key])].add(r["peer"])
    out = defaultdict(float)
    name = {RmaSync.CREATE: "wait_at_create", RmaSync.FREE: "wait_at_free", RmaSync.FENCE: "wait_at_fence"}
    for (w, s), members in colls.items():
        ranks = defs.comms[defs.windows[w].comm].ranks
        for m in members:
            if m["kind"] == RmaSync.FENCE:
                out[("pairsync", m["cnode"], m["loc"])] += len(ranks)
                out[("pairsync_unneeded", m["cnode"], m["loc"])] += len(ranks) - len(partners[(w, m["rank"], s)])
        if len({m["kind"] for m in members}) != 1 or sorted(m["rank"] for m in members) != sorted(ranks) or \
                len(ranks) < 2:
            continue
        latest = max(m["enter"] for m in members)
        if min(m["exit"] for m in members) <= latest:
            continue
        for m in members:
            if m["enter"] < latest:
                out[(name[m["kind"]], m["cnode"], m["loc"])] += latest - m["enter"]
                lo = last_op.get((w, m["rank"], s), -np.inf)
                if m["kind"] == RmaSync.FENCE and m["enter"] < lo <= m["exit"]:
                    out[("early_fence", m["cnode"], m["loc"])] += min(lo, latest) - m["enter"]
    return {k: v for k, v in out.items() if v > 0}


@pytest.mark.parametrize("seed", [0, 2, 4, 8, 11])
def test_vectorised_collectives_match_the_reference(seed):
    from patterns.rma_epochs import rma_instances

    cube = analyze(random_trace(seed, n_ranks=3, n_threads=2, steps=40, tasks=True, rma=True), plugins=False)
    inst = rma_instances(cube.context)
    got = {}
    for key in ("wait_at_create", "wait_at_free", "wait_at_fence", "early_fence", "pairsync", "pairsync_unneeded"):
        sev = inst[key]
        if key.startswith("pairsync"):  # the epoch loops add the complete / wait counts: fences only here
            fence = {c for c, name in enumerate(cube.context.region_name) if name == "MPI_Win_fence"}
            keep = np.isin(cube.context.calltree.region[sev.cnode], list(fence))
        else:
            keep = np.ones(len(sev.value), bool)
        for c, l, v in zip(sev.cnode[keep].tolist(), sev.location[keep].tolist(), sev.value[keep].tolist()):
            got[(key, c, l)] = got.get((key, c, l), 0.0) + v
    want = collective_reference(cube.context)
    assert any(k[0] == "wait_at_fence" for k in want)
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=1e-12), k


def _epoch_results(ctx, slow: bool):
    """{(metric, cnode, loc): value} of the epoch metrics, from patterns.rma_epochs or from the slow reference."""
    import rma_reference

    from patterns import rma_epochs as R

    T = ctx.table("mpi_rma_ops")
    order = np.lexsort((np.arange(len(T)), T["loc"], T["time"], T["rank"], T["window"]))
    c = {k: np.asarray(T[k])[order] for k in T}
    defs = ctx.trace.defs

    def comm_ranks(w):
        return tuple(defs.comms[defs.windows[w].comm].ranks)

    out = {k: (rma_reference.Sink() if slow else R._Sink()) for k in R._METRICS}
    (rma_reference._epochs if slow else R._epochs)(c, comm_ranks, defs, out)
    got = {}
    for key, sink in out.items():
        sev = sink.severity()
        for cn, l, v in zip(sev.cnode.tolist(), sev.location.tolist(), sev.value.tolist()):
            got[(key, cn, l)] = got.get((key, cn, l), 0.0) + v
    return got


@pytest.mark.parametrize("seed", range(12))
def test_epochs_match_the_row_by_row_reference(seed):
    """Post/start/complete/wait and lock epochs: the jitted walk, the lock queue kernel and the NumPy joins of
    patterns.rma_epochs against the dict-per-row matcher of tests/patterns/rma_reference.py."""
    trace = random_trace(seed, n_ranks=2 + seed % 3, n_threads=2, steps=40, tasks=True, rma=True)
    ctx = analyze(trace, plugins=False).context
    want = _epoch_results(ctx, slow=True)
    got = _epoch_results(ctx, slow=False)
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=1e-12), k


def test_epochs_match_the_reference_with_lock_all_and_several_epochs_per_pair():
    """LOCK_ALL (a shared epoch on every process), two exposure epochs of one target to one origin in a row, a
    start naming two targets, a TEST ending an exposure epoch, and exclusive locks that queue up."""
    b, locs, w = start(3, t_create=0.1)
    t0, o1, o2 = locs
    for k in range(2):
        base = 1.0 + 2.0 * k
        b.rma_call(t0, base + 0.5, base + 0.6, "MPI_Win_post", w, RmaSync.POST, group=[1])
        b.rma_call(o1, base, base + 0.7, "MPI_Win_start", w, RmaSync.START, group=[0, 2])
        transfer(b, o1, base + 0.8, base + 0.9, w, 0)
        b.rma_call(o2, base, base + 0.2, "MPI_Win_post", w, RmaSync.POST, group=[1])
        b.rma_call(o1, base + 1.0, base + 1.3, "MPI_Win_complete", w, RmaSync.COMPLETE, group=[0, 2])
        b.rma_call(t0, base + 0.9, base + 1.4, "MPI_Win_wait", w, RmaSync.WAIT, group=[1])
        b.rma_call(o2, base + 0.3, base + 1.5, "MPI_Win_test", w, RmaSync.TEST, group=[1])
    b.rma_call(o1, 6.0, 6.1, "MPI_Win_lock_all", w, RmaSync.LOCK_ALL)
    transfer(b, o1, 6.2, 6.9, w, 2, "get")
    b.rma_call(o1, 7.0, 7.5, "MPI_Win_unlock_all", w, RmaSync.UNLOCK_ALL)
    b.rma_call(o2, 6.5, 7.2, "MPI_Win_lock", w, RmaSync.LOCK, target=2, flags=EXCL)
    transfer(b, o2, 7.3, 7.4, w, 2, "acc")
    b.rma_call(o2, 7.5, 7.6, "MPI_Win_unlock", w, RmaSync.UNLOCK, target=2)
    b.rma_call(t0, 6.4, 7.8, "MPI_Win_lock", w, RmaSync.LOCK, target=2, flags=EXCL)
    b.rma_call(t0, 7.9, 8.0, "MPI_Win_unlock", w, RmaSync.UNLOCK, target=2)
    cube = finish(b, locs, w)
    want = _epoch_results(cube.context, slow=True)
    assert {k[0] for k in want} >= {"sync_late_post", "early_wait", "late_complete", "sync_lock", "pairsync"}
    got = _epoch_results(cube.context, slow=False)
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=1e-12), k


def test_time_line_waits_name_their_causes():
    from analyzer.timeline.waits import wait_states

    def waits(cube):
        ws = wait_states(cube.context)
        return sorted((p, int(ws.loc[i]), round(float(ws.start[i]), 9), round(float(ws.seconds[i]), 9),
                       int(ws.cause_loc[i]), round(float(ws.cause_time[i]), 9))
                      for i, p in enumerate(ws.prop) if p.startswith("mpi_rma"))

    # late post in rank 1's start [0.5, ...] caused by rank 0's post at 2.0; rank 0's early wait from 2.2
    # caused by rank 1's complete at 3.0 (its late complete part is no slice of its own)
    cube = gats(post=(2.0, 2.1), start_call=(0.5, 2.05), ops=[(2.5, 2.8)], complete=(3.0, 4.0), wait=(2.2, 5.0))
    assert waits(cube) == [("mpi_rma_early_wait", 0, 2.2, 0.8, 1, 3.0), ("mpi_rma_sync_late_post", 1, 0.5, 1.5, 0, 2.0)]
    # rank 2's lock from 1.5 waits for rank 1's unlock, which ends at 2.0
    assert waits(locks(EXCL, EXCL)) == [("mpi_rma_sync_lock_competition", 2, 1.5, 0.5, 1, 2.0)]
    # fence: the last to enter (rank 0 at 3.0 in the first fence, rank 2 at 6.5 in the second)
    b, locs, w = start(3)
    for r, loc in enumerate(locs):
        b.rma_call(loc, 3.0 if r == 0 else 1.0, 3.5, "MPI_Win_fence", w, RmaSync.FENCE)
    assert waits(finish(b, locs, w)) == [("mpi_rma_wait_at_fence", 1, 1.0, 2.0, 0, 3.0),
                                         ("mpi_rma_wait_at_fence", 2, 1.0, 2.0, 0, 3.0)]
