"""MPI called from two OpenMP threads of each rank (MPI_THREAD_MULTIPLE), under Open MPI and MPICH.

samples/runtime/mpi_thread_multiple.c: rank 0's thread t sends 5 messages with tag t to rank 1's thread t;
thread 1 of rank 0 works 60 ms longer before each send.  So rank 1's thread 1 waits about 5 x 65 ms in
MPI_Recv (blocking phase) and again in MPI_Wait (MPI_Irecv + MPI_Wait phase), and its thread 0 only about
5 x 5 ms.  A message is matched by communicator, source rank, tag and order, whichever thread receives it:
a matching by location instead of rank would find no sender for any of these receives.
"""
from __future__ import annotations

import numpy as np
import pytest

import analyzer
import tracefmt
from runtime_harness import MPI_TOOLS, assert_valid, trace_mpi_sample
from samples.demo import matching_cnodes
from tracefmt.layout import EventType

pytestmark = pytest.mark.runtime

ITER, DELAY, BASE = 5, 0.060, 0.005  # the sample's ITER, DELAY_MS and the 5 ms of work before every send


@pytest.fixture(scope="module", params=sorted(MPI_TOOLS))
def analyzed(request, runtime_built, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"thread_multiple_{request.param}")
    path = trace_mpi_sample(d, request.param, "mpi_thread_multiple.c", 2, flags=("-fopenmp",))
    trace = tracefmt.open(str(path))
    assert_valid(trace)
    return trace, analyzer.analyze(str(path))


def late_sender(cube, suffix, rank, thread):
    cnodes = matching_cnodes(cube, suffix)
    assert cnodes, f"no call path ends with {suffix!r}"
    locs = [i for i, loc in enumerate(cube.locations) if loc.rank == rank and loc.thread == thread]
    return float(np.asarray(cube.values["mpi_latesender"])[np.ix_(cnodes, locs)].sum())


def test_every_thread_records_its_own_messages(analyzed):
    trace, _ = analyzed
    for loc, info in trace.defs.locations.items():
        ev = trace.events(loc)
        kind = EventType.MPI_SEND if info.process == 0 else EventType.MPI_RECV
        tags = ev.c[ev.type == int(kind)]  # field c of a send/receive record is its tag
        assert sorted(set(tags.tolist())) == [info.thread, 2 + info.thread], (info, kind)
        assert len(tags) == 2 * ITER


@pytest.mark.parametrize("call", ["MPI_Recv", "MPI_Wait"])
def test_designed_late_sender_on_the_receiving_thread(analyzed, call):
    _, cube = analyzed
    found = late_sender(cube, f"!$omp parallel/{call}", 1, 1)
    assert found == pytest.approx(ITER * (DELAY + BASE), rel=0.20)
    # the other thread waits only for the 5 ms of work before each send (plus scheduling): far less
    assert late_sender(cube, f"!$omp parallel/{call}", 1, 0) < ITER * DELAY / 2


def test_every_receive_found_its_sender(analyzed):
    _, cube = analyzed
    assert cube.total("mpi_latereceiver") < 0.01
    assert cube.total("mpi_latesender_wo") == 0.0
    assert float(np.asarray(cube.values["mpi_latesender"])[:, [i for i, loc in enumerate(cube.locations)
                                                                if loc.rank == 0]].sum()) == 0.0
