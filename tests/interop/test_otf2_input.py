"""OTF2 input: the Score-P ping-pong fixture and small synthetic hybrid traces."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from repo_paths import shared
from tracefmt import otf2_in
from tracefmt.errors import TraceFormatError
from tracefmt.layout import NO_ID, EventType as E, LockKind, Paradigm, Role


def count(ev, t):
    return int((ev["type"] == t).sum())


def test_score_p_ping_pong():
    a = otf2_in.read(shared("fixtures", "otf2", "pipit-ping-pong"))  # the directory works as well as the anchor file
    assert a.problems == []
    assert [(a.locations[i].rank, a.locations[i].thread) for i in (0, 1)] == [(0, 0), (1, 0)]
    names = {r.name for r in a.regions.values()}
    assert {"MPI_Send", "MPI_Recv", "MPI_Init", "MPI_Finalize", "MPI_Comm_rank", "MPI_Comm_size",
            "int main(int, char**)"} <= names
    for me, other in ((0, 1), (1, 0)):
        ev = a.events[me]
        assert len(ev) == 58  # 60 records, less ProgramBegin/ProgramEnd
        sends, recvs = ev[ev["type"] == E.MPI_SEND], ev[ev["type"] == E.MPI_RECV]
        assert len(sends) == len(recvs) == 8
        assert set(sends["a"].tolist()) == {other} and set(recvs["a"].tolist()) == {other}
        assert int(sends["d"].sum()) == 4_177_920 and int(recvs["d"].sum()) == 4_177_920
        assert count(ev, E.ENTER) == count(ev, E.EXIT) == 21
        world = a.comms[int(sends["b"][0])]
        assert world[1] == "MPI_COMM_WORLD" and a.groups[world[0]] == (0, 1)
    rid = next(i for i, r in a.regions.items() if r.name == "MPI_Init")
    assert (a.regions[rid].paradigm, a.regions[rid].role, a.regions[rid].file) == (
        Paradigm.MPI, Role.MPI_INIT_FINALIZE, "MPI")
    # ticks counted from the archive's global offset at the timer resolution
    assert a.ticks_per_second == 2095197216.0
    assert int(a.events[0]["time"][0]) == 7397466977683839 - 7397466976977800  # rank 0 enters main


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "run"
    subprocess.run([sys.executable, shared("tools", "gen_otf2_synth.py"), "2", "3", "2", str(out)], check=True,
                   capture_output=True)
    return str(out)


def test_synthetic_hybrid_events(synth):
    a = otf2_in.read(os.path.join(synth, "traces.otf2"))
    assert a.problems == []
    assert [(loc.rank, loc.thread) for _, loc in sorted(a.locations.items())] == [
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    rid = {r.name.split(" @")[0]: i for i, r in a.regions.items()}
    role = {n: a.regions[i].role for n, i in rid.items()}
    assert role["!$omp parallel"] == Role.OMP_PARALLEL
    assert role["!$omp critical"] == Role.OMP_CRITICAL
    assert role["!$omp critical sblock"] == Role.OMP_CRITICAL_BODY
    assert role["!$omp implicit barrier"] == Role.OMP_IMPLICIT_BARRIER
    assert role["MPI_Allreduce"] == Role.MPI_COLL_ALL2ALL and role["MPI_Barrier"] == Role.MPI_COLL_BARRIER
    assert role["MPI_Init_thread"] == Role.MPI_INIT_FINALIZE
    for rank in (0, 1):
        master = a.events[3 * rank]
        # per iteration: FORK/JOIN of a team of 3; 2 iterations
        forks = master[master["type"] == E.OMP_FORK]
        joins = master[master["type"] == E.OMP_JOIN]
        assert forks["a"].tolist() == [0, 1] and forks["c"].tolist() == [3, 3]
        assert joins["a"].tolist() == [0, 1] and joins["c"].tolist() == [3, 3]
        # the ring: rank r sends 8192 bytes with tag 42 to rank 1-r, receives from it
        s = master[master["type"] == E.MPI_SEND]
        r = master[master["type"] == E.MPI_RECV]
        assert s["a"].tolist() == [1 - rank] * 2 and r["a"].tolist() == [1 - rank] * 2
        assert s["c"].tolist() == [42, 42] and s["d"].tolist() == [8192, 8192] and r["d"].tolist() == [8192] * 2
        coll = master[master["type"] == E.MPI_COLLEXIT]
        assert coll["a"].tolist() == [rid["MPI_Allreduce"], rid["MPI_Barrier"]] * 2
        assert coll["c"].tolist() == [NO_ID] * 4 and coll["d"].tolist() == [8, 0, 8, 0]
        orders = []
        for th in range(3):
            ev = a.events[3 * rank + th]
            par = ev[(ev["type"] == E.ENTER) & (ev["a"] == rid["!$omp parallel"])]
            assert par["c"].tolist() == [0, 1] and par["d"].tolist() == [th, th]  # team ids, thread number
            ib = ev[ev["type"] == E.OMP_COLLEXIT]
            assert ib["a"].tolist() == [rid["!$omp implicit barrier"]] * 2 and ib["b"].tolist() == [0, 1]
            acq = ev[ev["type"] == E.OMP_ACQUIRE_LOCK]
            rel = ev[ev["type"] == E.OMP_RELEASE_LOCK]
            assert acq["d"].tolist() == rel["d"].tolist()
            orders += acq["d"].tolist()
            kind, name = a.locks[int(acq["a"][0])]
            assert kind == LockKind.OMP_CRITICAL and name == "!$omp critical"
        assert sorted(orders) == [1, 2, 3, 4, 5, 6]  # counted from 1 per process
    # time conversion: ENTER main at the global offset (1 ms), MPI_Init_thread 100 ns later
    assert a.ticks_per_second == 1e9
    assert a.events[0]["time"][:2].tolist() == [0, 100]


def test_bad_archive(tmp_path):
    (tmp_path / "traces.otf2").write_bytes(b"garbage")
    with pytest.raises(TraceFormatError, match=r"traces\.otf2: not a readable OTF2 archive"):
        otf2_in.read(tmp_path)
    with pytest.raises(TraceFormatError, match=r"no OTF2 anchor file"):
        otf2_in.read(tmp_path / "..")


def test_synthetic_event_count(synth):
    with open(os.path.join(synth, "synth_expected.json")) as f:
        info = json.load(f)
    a = otf2_in.read(synth)
    # records with no event of their own here: per rank and iteration two collectives lose their
    # MpiCollectiveBegin and merge End+Leave (2 x 2 records); per thread and iteration
    # ThreadTeamBegin/End (2 records): 2 ranks x 2 iterations x (4 + 3 x 2) = 40
    assert a.n_events() == info["events"] - 40
