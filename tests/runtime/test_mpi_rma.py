"""MPI one-sided calls traced by the runtime (as calls: Scalasca's RMA time categories), Open MPI and MPICH.

samples/runtime/mpi_rma.c: 3 ranks; rank 0 enters the first MPI_Win_fence 100 ms late, so ranks 1 and 2
spend about that long in theirs (RMA synchronisation time); each then puts, gets under a shared lock,
flushes and accumulates under an exclusive lock.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import analyzer
import tracefmt
from runtime_harness import MPI_TOOLS, assert_valid, events, trace_mpi_sample
from tracefmt.layout import EventType, Role

pytestmark = pytest.mark.runtime

LATE = 0.100


@pytest.fixture(scope="module", params=sorted(MPI_TOOLS))
def traced(request, runtime_built, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"mpi_rma_{request.param}")
    path = trace_mpi_sample(d, request.param, "mpi_rma.c", 3)
    trace = tracefmt.open(str(path))
    assert_valid(trace)
    return trace, analyzer.analyze(str(path))


def test_every_one_sided_call_recorded_with_its_role(traced):
    trace, _ = traced
    for loc, info in trace.defs.locations.items():
        calls = Counter(e[1] for e in events(trace, loc) if e[0] == EventType.ENTER and e[1].startswith("MPI_")
                        and e[1] not in ("MPI_Init", "MPI_Finalize", "MPI_Barrier"))
        want = {"MPI_Win_create": 1, "MPI_Win_fence": 2, "MPI_Win_free": 1}
        if info.process > 0:
            want.update({"MPI_Put": 1, "MPI_Win_lock": 2, "MPI_Get": 1, "MPI_Win_flush": 1, "MPI_Win_unlock": 2,
                         "MPI_Accumulate": 1})
        assert calls == want, (info, calls)
    roles = {r.name: r.role for r in trace.defs.regions.values() if r.name.startswith(("MPI_Win", "MPI_Put"))}
    assert set(roles.values()) == {Role.MPI_RMA}


def test_late_epoch_is_rma_synchronisation_time(traced):
    _, cube = traced
    sync = np.asarray(cube.values["mpi_synchronization"])
    fence = cube.find_cnodes(f"{cube.callpaths[0]}/MPI_Win_fence")
    for loc, L in enumerate(cube.locations):
        t = float(sync[fence, loc].sum())
        if L.rank == 0:
            assert t < LATE / 2
        else:
            assert t >= 0.8 * LATE, (L.rank, t)
    comm = np.asarray(cube.values["mpi_communication"])
    put = cube.find_cnodes(f"{cube.callpaths[0]}/MPI_Put")
    assert float(comm[put].sum()) > 0 and float(sync[put].sum()) == 0
