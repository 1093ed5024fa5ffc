"""The POP metrics per share (analyzer/distributed/share_pop.py) against the serial ``patterns.pop``.

Every share's owned columns of every ``pop_*`` metric must equal the serial values bit for bit, and every
share must get the serial T and T_ideal; over MemoryNetwork for K = 1, K < processes and K > processes
(empty shares), on random hybrid traces whose messages and collectives cross shares, on a hand-built
trace whose ideal run is known, and on an inconsistent one (a cycle of receives across two shares).  Every
test runs twice: each instance's reports to every member share directly, and each through its owner share
(``share_pop.DIRECT_SHARES``).
"""

from __future__ import annotations

import numpy as np
import pytest
from random_hybrid_traces import random_builder

import tracefmt
from analyzer.distributed import share_pop
from analyzer.distributed.network import MemoryNetwork, run_stages
from analyzer.distributed.share_pop import share_pop_profiles
from analyzer.distributed.share_replay import share_stages
from analyzer.replay import replay
from analyzer.replay.engine import partition
from patterns.api import compute_results
from patterns.kernels.ideal_shares import KINDS, OWNED, PREDICTED, REPORTS, RESULTS, REVOKED
from patterns.pop import NAMES, REQUIRES, pop_profile
from patterns.registry import load_patterns

N_PROCESSES = 5
KS = (1, 2, 3, 7)  # 7 > 5 processes: some shares are empty
BASE = ("execution", "mpi", "omp_time")
#: DIRECT_SHARES of each path: every instance through its owner share, every instance direct
PATHS = {"owner": 1, "direct": 1 << 30}


@pytest.fixture(autouse=True, params=sorted(PATHS))
def path(request, monkeypatch) -> str:
    monkeypatch.setattr(share_pop, "DIRECT_SHARES", PATHS[request.param])
    return request.param


def _base(ctx):
    compute_results(ctx, load_patterns(BASE, plugins=False))
    return ctx


def _serial(trace):
    return pop_profile(_base(replay(trace, tables=REQUIRES)))


def _shares(trace, K):
    shares = partition(trace, K)
    done = run_stages(MemoryNetwork(K), share_stages(trace, shares, set(REQUIRES), compact=True))
    ctxs = {s: _base(r.context) for s, r in done.items()}
    return shares, ctxs, share_pop_profiles(MemoryNetwork(K), ctxs)


def _check(trace, serial, K):
    shares, ctxs, got = _shares(trace, K)
    assert sorted(got) == list(range(K))
    for s, prof in got.items():
        ctx = ctxs[s]
        glob, owned = ctx.global_location, np.asarray(ctx.owned, np.int64)
        np.testing.assert_array_equal(glob[owned], sorted(shares[s]))
        assert prof["_elapsed"] == serial["_elapsed"] and prof["_ideal"] == serial["_ideal"], (K, s)
        for name in NAMES:
            mine, theirs = prof[name], serial[name]
            assert mine.shape == (ctx.n_cnodes, ctx.n_locations), name
            # bit for bit: equal as integers of the same bits
            assert (mine[:, owned].view(np.int64) == theirs[:, glob[owned]].view(np.int64)).all(), (name, K, s)
    return ctxs


def _crossing(trace, K):
    """(messages, collective instances) whose members lie on different shares of K."""
    share_of = {l: s for s, locs in enumerate(partition(trace, K)) for l in locs}
    ser = replay(trace, tables={"messages", "collectives"})
    M, C = ser.tables["messages"], ser.tables["collectives"]
    msgs = sum(share_of[a] != share_of[b] for a, b in zip(M["send_loc"].tolist(), M["recv_loc"].tolist()))
    owners: dict[int, set] = {}
    for i, l, ok in zip(C["instance"].tolist(), C["loc"].tolist(), C["complete"].tolist()):
        if ok:
            owners.setdefault(i, set()).add(share_of[l])
    return msgs, sum(len(v) > 1 for v in owners.values())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("tasks", [False, True])
def test_shares_give_the_serial_pop_metrics(seed, tasks):
    trace = random_builder(seed, N_PROCESSES, 2, 30, tasks=tasks).build()
    serial = _serial(trace)
    assert serial["_ideal"] > 0
    for K in KS:
        _check(trace, serial, K)
    msgs, colls = _crossing(trace, 2)
    assert msgs and colls  # the comparisons had messages and collective instances across shares


def hand_built():
    """Rank 0 computes 2 s, sends to rank 1 and enters a barrier; rank 1 receives (posted at 0.5, the
    message arrives at 3), computes 1 s and enters the barrier at 4; rank 2 computes 1 s and waits in the
    barrier.  Ideal: rank 1 receives at 2 (the send), computes to 3; the barrier ends at 3: T_ideal = 3,
    T = 5."""
    b = tracefmt.TraceBuilder()
    r0, r1, r2 = b.location(rank=0), b.location(rank=1), b.location(rank=2)
    for loc in (r0, r1, r2):
        b.enter(loc, 0.0, "main")
    b.enter(r0, 0.0, "work"); b.exit(r0, 2.0)
    b.enter(r0, 2.0, "MPI_Send"); b.send(r0, 2.0, dest=1, nbytes=8); b.exit(r0, 2.5)
    b.collective(r0, 2.5, 5.0, "MPI_Barrier")
    b.enter(r1, 0.0, "work"); b.exit(r1, 0.5)
    b.enter(r1, 0.5, "MPI_Recv"); b.recv(r1, 3.0, source=0, nbytes=8); b.exit(r1, 3.0)
    b.enter(r1, 3.0, "work"); b.exit(r1, 4.0)
    b.collective(r1, 4.0, 5.0, "MPI_Barrier")
    b.enter(r2, 0.0, "work"); b.exit(r2, 1.0)
    b.collective(r2, 1.0, 5.0, "MPI_Barrier")
    for loc in (r0, r1, r2):
        b.exit(loc, 5.0)
    return b.build()


@pytest.mark.parametrize("K", [2, 3])
def test_a_hand_built_ideal_run(K):
    trace = hand_built()
    serial = _serial(trace)
    assert serial["_elapsed"] == 5.0 and serial["_ideal"] == pytest.approx(3.0)
    _check(trace, serial, K)
    msgs, colls = _crossing(trace, K)
    assert colls == 1 and msgs == (K == 3 or partition(trace, K)[0] == [0])


def cycle():
    """Each rank receives from the other before sending to it: nothing can move (an inconsistent trace);
    the serial replay lets rank 0's receive pass first."""
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    for loc, other, work in ((r0, 1, 1.0), (r1, 0, 2.0)):
        b.enter(loc, 0.0, "main")
        b.enter(loc, 0.0, "work"); b.exit(loc, work)
        b.enter(loc, work, "MPI_Recv"); b.recv(loc, 3.0, source=other, nbytes=8); b.exit(loc, 3.0)
        b.enter(loc, 3.0, "work"); b.exit(loc, 3.0 + work)
        b.enter(loc, 3.0 + work, "MPI_Send"); b.send(loc, 3.0 + work, dest=other, nbytes=8); b.exit(loc, 6.0)
        b.exit(loc, 6.0)
    return b.build()


def test_a_cycle_of_receives_across_shares():
    trace = cycle()
    serial = _serial(trace)
    for K in (1, 2):
        _check(trace, serial, K)
    assert _crossing(trace, 2)[0] == 2


def test_single_thread_shares():
    """Shares of one location: the useful time's column sums as the serial ones over wider arrays."""
    trace = random_builder(5, 4, 1, 30).build()
    serial = _serial(trace)
    for K in (2, 4):
        _check(trace, serial, K)


def mismatched():
    """Ranks 0 and 1 call MPI_Reduce to rank 0 where rank 2 calls MPI_Bcast from itself (one instance, two
    roots, two operations; arrivals at 1, 2, 3): the serial replay takes the type and root of the member last
    in location order, rank 2's, so rank 1 leaves the 1-to-N at rank 2's arrival, 3 (at 2, its own, by
    rank 0's type or root), computes 3 s and ends the ideal run at 6 in a broadcast from itself."""
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(3)]
    for r, loc in enumerate(locs):
        b.enter(loc, 0.0, "main")
        b.enter(loc, 0.0, "work"); b.exit(loc, 1.0 + r)
        if r < 2:
            b.collective(loc, 1.0 + r, 4.0, "MPI_Reduce", root=0)
        else:
            b.collective(loc, 3.0, 4.0, "MPI_Bcast", root=2)
        b.enter(loc, 4.0, "work"); b.exit(loc, 4.0 + (1.0, 3.0, 1.0)[r])
        b.collective(loc, 4.0 + (1.0, 3.0, 1.0)[r], 8.0, "MPI_Bcast", root=1)
        b.exit(loc, 8.0)
    return b.build()


@pytest.mark.parametrize("K", [2, 3])
def test_mismatched_members_take_the_last_members_type_and_root(K):
    trace = mismatched()
    serial = _serial(trace)
    assert serial["_ideal"] == 6.0
    _check(trace, serial, K)
    assert _crossing(trace, K)[1] == 2


def test_contexts_with_global_location_ids():
    """Contexts not compacted (every location of the trace, ``global_location`` None) give the same."""
    trace = random_builder(6, N_PROCESSES, 2, 20).build()
    serial = _serial(trace)
    shares = partition(trace, 3)
    done = run_stages(MemoryNetwork(3), share_stages(trace, shares, set(REQUIRES)))
    ctxs = {s: _base(r.context) for s, r in done.items()}
    got = share_pop_profiles(MemoryNetwork(3), ctxs)
    for s, prof in got.items():
        owned = np.asarray(ctxs[s].owned, np.int64)
        assert prof["_ideal"] == serial["_ideal"]
        for name in NAMES:
            assert (prof[name][:, owned].view(np.int64) == serial[name][:, owned].view(np.int64)).all(), name


def _rounds(monkeypatch) -> list:
    """The rounds of every POP replay by shares from now on (``run_rounds`` as share_pop calls it)."""
    seen, run = [], share_pop.run_rounds

    def counted(net, step, limit=None):
        states, n = run(net, step, limit)
        seen.append(n)
        return states, n

    monkeypatch.setattr(share_pop, "run_rounds", counted)
    return seen


def chain(n: int):
    """Three ranks call ``n`` collectives one after another (barrier, allreduce, broadcast from rank 1,
    reduce to rank 2, in turn), computing between them for times that make each rank the last to arrive in
    turn: every instance waits for the one before, a chain of ``n`` instances across every share."""
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(3)]
    ops = (("MPI_Barrier", None), ("MPI_Allreduce", None), ("MPI_Bcast", 1), ("MPI_Reduce", 2))
    t = 0.0
    for loc in locs:
        b.enter(loc, t, "main")
    for i in range(n):
        work = [1.0 + ((i + r) % 3) * 0.5 for r in range(3)]
        end = t + max(work) + 0.25
        name, root = ops[i % len(ops)]
        for r, loc in enumerate(locs):
            b.enter(loc, t, "work"); b.exit(loc, t + work[r])
            b.collective(loc, t + work[r], end, name, root=root)
        t = end
    for loc in locs:
        b.exit(loc, t)
    return b.build()


@pytest.mark.parametrize("K", [2, 3])
def test_rounds_per_collective_instance_on_a_chain(monkeypatch, path, K):
    """Direct: each share sends its members' arrivals to every other member share, which ends the instance
    itself: one round per instance, and one to finish.  Through the owner: two (the members' reports to the
    owner share, its results to them)."""
    n = 12
    trace = chain(n)
    serial = _serial(trace)
    seen = _rounds(monkeypatch)
    _check(trace, serial, K)
    assert _crossing(trace, K)[1] == n
    assert seen == [(1 if path == "direct" else 2) * n + 1]


class _Records(MemoryNetwork):
    """A MemoryNetwork that counts the records of each kind in the POP replay's round payloads."""

    def __init__(self, K):
        super().__init__(K)
        self.records = np.zeros(KINDS, np.int64)

    def post(self, share, outbox):
        for p in outbox.get("pop_round", []):
            if p is not None:
                self.records += np.frombuffer(p, np.int64)[:KINDS]
        super().post(share, outbox)


def _records(trace, K) -> np.ndarray:
    shares = partition(trace, K)
    done = run_stages(MemoryNetwork(K), share_stages(trace, shares, set(REQUIRES), compact=True))
    net = _Records(K)
    share_pop_profiles(net, {s: _base(r.context) for s, r in done.items()})
    return net.records


def test_reports_per_instance_on_a_chain(path):
    """Three member shares per instance: direct, 3 x 2 reports; through the owner (a member here), 3 reports to
    it (its own handed to itself) and 2 results."""
    n = 12
    got = _records(chain(n), 3)
    if path == "direct":
        assert (got[REPORTS], got[OWNED], got[RESULTS]) == (6 * n, 0, 0)
    else:
        assert (got[REPORTS], got[OWNED], got[RESULTS]) == (0, 3 * n, 2 * n)


@pytest.mark.parametrize("K", [3, 4])
def test_direct_and_owner_instances_in_one_run(monkeypatch, K):
    """DIRECT_SHARES 2: the instances of the two-rank communicators go direct, the world's (K member shares)
    through their owners, in the same rounds; bit for bit the serial metrics."""
    monkeypatch.setattr(share_pop, "DIRECT_SHARES", 2)
    trace = communicators()
    _check(trace, _serial(trace), K)
    got = _records(trace, K)
    assert got[REPORTS] and got[OWNED] and got[RESULTS]


def ring(n: int):
    """Three ranks: ``n`` times an allreduce, then each sends to the next rank and receives from the one before;
    the computations make each rank the last to arrive in turn."""
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(3)]
    t = 0.0
    for loc in locs:
        b.enter(loc, t, "main")
    for i in range(n):
        work = [1.0 + ((i + r) % 3) * 0.5 for r in range(3)]
        end = t + max(work) + 0.25
        for r, loc in enumerate(locs):
            b.enter(loc, t, "work"); b.exit(loc, t + work[r])
            b.collective(loc, t + work[r], end, "MPI_Allreduce")
            b.enter(loc, end, "work"); b.exit(loc, end + 0.1 * (r + 1))
            b.enter(loc, end + 0.1 * (r + 1), "MPI_Send"); b.send(loc, end + 0.5, dest=(r + 1) % 3, nbytes=8)
            b.exit(loc, end + 0.5)
            b.enter(loc, end + 0.5, "MPI_Recv"); b.recv(loc, end + 1.0, source=(r - 1) % 3, nbytes=8)
            b.exit(loc, end + 1.0)
        t = end + 1.0
    for loc in locs:
        b.exit(loc, t)
    return b.build()


@pytest.mark.parametrize("K", [2, 3])
def test_sends_right_after_a_collective_cost_no_round(monkeypatch, path, K):
    """A member share computes the clocks of the sends the other members reach right after the instance when
    it ends there (their computations came with the arrivals): an allreduce and a ring of messages across
    the shares take the instance's rounds only (one direct, two through the owner), not one more."""
    n = 10
    trace = ring(n)
    serial = _serial(trace)
    seen = _rounds(monkeypatch)
    _check(trace, serial, K)
    msgs, colls = _crossing(trace, K)
    assert colls == n and msgs >= n
    assert seen == [(1 if path == "direct" else 2) * n + 1]


def passed_at_a_collective():
    """Rank 0 enters a barrier at 1, computes 5 s and sends to rank 1; ranks 1 and 2 first receive from each
    other before sending (a cycle), compute 2 s and enter the barrier; rank 1 then receives rank 0's message
    and computes 1 s.  Nothing can move: the serial replay lets rank 0 (the lowest location) leave the
    barrier at its arrival, so it sends at 6 (not 8, 5 s after the barrier's end at 3) and rank 1 ends at 7.
    Rank 0's share had computed that send's clock from the barrier's end for rank 1's share: it must take it
    back."""
    b = tracefmt.TraceBuilder()
    r0, r1, r2 = (b.location(rank=r) for r in range(3))
    for loc in (r0, r1, r2):
        b.enter(loc, 0.0, "main")
        b.enter(loc, 0.0, "work"); b.exit(loc, 1.0)
    b.collective(r0, 1.0, 9.0, "MPI_Barrier")
    b.enter(r0, 9.0, "work"); b.exit(r0, 14.0)
    b.enter(r0, 14.0, "MPI_Send"); b.send(r0, 14.0, dest=1, nbytes=8); b.exit(r0, 14.5)
    for loc, other in ((r1, 2), (r2, 1)):
        b.enter(loc, 1.0, "MPI_Recv"); b.recv(loc, 3.0, source=other, nbytes=8); b.exit(loc, 3.0)
        b.enter(loc, 3.0, "MPI_Send"); b.send(loc, 3.0, dest=other, nbytes=8); b.exit(loc, 3.5)
        b.enter(loc, 3.5, "work"); b.exit(loc, 5.5)
        b.collective(loc, 5.5, 9.0, "MPI_Barrier")
    b.enter(r1, 9.0, "MPI_Recv"); b.recv(r1, 14.5, source=0, nbytes=8); b.exit(r1, 14.5)
    b.enter(r1, 14.5, "work"); b.exit(r1, 15.5)
    for loc, end in ((r0, 14.5), (r1, 15.5), (r2, 9.0)):
        b.exit(loc, end)
    return b.build()


def test_a_member_let_pass_at_its_collective_takes_its_predicted_clocks_back():
    trace = passed_at_a_collective()
    serial = _serial(trace)
    assert serial["_ideal"] == 7.0
    for K in (2, 3):
        _check(trace, serial, K)
    records = _records(trace, 3)
    assert records[PREDICTED] and records[REVOKED]


def communicators():
    """Four ranks: collectives on two communicators of two ranks each and on the world, in turn, and one
    communicator of ranks 0 and 1 that rank 2 calls too (a malformed trace): its first instance has three
    members (incomplete), its second ranks 0 and 2 (complete).  The instances of one communicator need not
    have the same member shares."""
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(4)]
    world = b.comm(range(4), "MPI_COMM_WORLD")
    low, high, odd = b.comm((0, 1), "low"), b.comm((2, 3), "high"), b.comm((0, 1), "odd")
    t = [0.0] * 4

    def call(r, comm, w, name="MPI_Allreduce"):
        b.enter(locs[r], t[r], "work"); b.exit(locs[r], t[r] + w)
        b.collective(locs[r], t[r] + w, t[r] + w + 0.5, name, comm=comm)
        t[r] += w + 0.5

    for loc in locs:
        b.enter(loc, 0.0, "main")
    for i in range(3):
        for r in range(4):
            call(r, low if r < 2 else high, 1.0 + ((i + r) % 4) * 0.5)
        for r in range(4):
            call(r, world, 0.5 + r * 0.25, "MPI_Barrier")
    for r, n in ((0, 2), (1, 1), (2, 2)):
        for k in range(n):
            call(r, odd, 1.0 + r + k)
    for r in range(4):
        call(r, world, 0.25)
        b.exit(locs[r], t[r])
    return b.build()


@pytest.mark.parametrize("K", [2, 3, 4])
def test_instances_of_one_communicator_with_other_member_shares(K):
    trace = communicators()
    serial = _serial(trace)
    _check(trace, serial, K)
    assert _crossing(trace, K)[1] >= 4
