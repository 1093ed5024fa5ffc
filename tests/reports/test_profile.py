"""expert-profile on the hand-built hybrid trace of profile_trace.py.

Worked out by hand from the event times there:
* critical on 0.0: 2.0..3.1 with the body 2.0..3.0 -> execT 1.1, bodyT 1.0, enterT 0, exitT 0.1,
  and the MPI_Send inside (2.2..2.5, 100 bytes) -> mpiT 0.3, outV 100, sendC 1;
  on 0.1: 2.5..4.0, body 3.1..4.0 -> execT 1.5, bodyT 0.9, enterT 0.6, exitT 0.
* parallel: fork 1.0, join 4.5; 0.0 inside 1.5..4.0, 0.1 inside 2.0..4.2.
* Bcast of d = 64 bytes from rank 0 over N = 3 ranks: naive root sends d(N-1) = 128, minimal d = 64.
"""

from __future__ import annotations

import os

import pytest

from analyzer.cli.tools import profile_main
from analyzer.profile import COLUMNS, PROGRAM, collective_volume, profile_trace

from profile_trace import hybrid_builder


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory):
    p = tmp_path_factory.mktemp("prof") / "hybrid.elg"
    hybrid_builder().write(str(p))
    return str(p)


def cols(row, loc):
    return dict(zip(COLUMNS, row.per_loc[loc].tolist()))


def by_name(p, name):
    return next(r for r in p.regions.values() if r.name == name)


def test_critical_columns(trace_path):
    p = profile_trace(trace_path)
    crit = by_name(p, "!$omp critical")
    a, b = cols(crit, (0, 0)), cols(crit, (0, 1))
    assert a["execT"] == pytest.approx(1.1) and a["bodyT"] == pytest.approx(1.0)
    assert a["enterT"] == pytest.approx(0.0) and a["exitT"] == pytest.approx(0.1)
    assert a["mpiT"] == pytest.approx(0.3) and a["outV"] == 100 and a["sendC"] == 1 and a["execC"] == 1
    assert b["execT"] == pytest.approx(1.5) and b["bodyT"] == pytest.approx(0.9)
    assert b["enterT"] == pytest.approx(0.6) and b["exitT"] == 0 and b["mpiT"] == 0


def test_parallel_columns(trace_path):
    par = by_name(profile_trace(trace_path), "!$omp parallel")
    a, b = cols(par, (0, 0)), cols(par, (0, 1))
    assert (a["bodyT"], a["enterT"], a["exitT"], a["execT"]) == pytest.approx((2.5, 0.5, 0.5, 3.5))
    assert (b["bodyT"], b["enterT"], b["exitT"], b["execT"]) == pytest.approx((2.2, 1.0, 0.3, 3.5))


def test_mpi_columns_and_volume_accounting(trace_path):
    naive, minimal = profile_trace(trace_path), profile_trace(trace_path, volume="minimal")
    m0, m1, m2 = (cols(by_name(naive, "main"), (r, 0)) for r in (0, 1, 2))
    assert m0["mpiT"] == pytest.approx(0.8) and m0["outV"] == 100 + 128 and m0["inV"] == 0
    assert m0["sendC"] == 1 and m0["collC"] == 1 and m0["recvC"] == 0
    assert m1["mpiT"] == pytest.approx(1.9) and m1["inV"] == 100 + 64 and m1["recvC"] == 1
    assert m2["mpiT"] == pytest.approx(0.4) and m2["inV"] == 64 and m2["outV"] == 0
    assert cols(by_name(minimal, "main"), (0, 0))["outV"] == 100 + 64
    # MPI calls are columns, not rows (as in ompP)
    assert not any(r.name.startswith("MPI_") for r in naive.regions.values())


def test_overheads(trace_path):
    rows = profile_trace(trace_path).overhead_rows()
    # Total, Synch (critical enterT), Imbal (implicit barrier), Limpar, Mgmt (start-up, shutdown, critical exitT), MPI
    assert rows["!$omp parallel"] == pytest.approx([7.0, 0.6, 0.9, 0.0, 2.4, 0.3])
    # whole run: 6 s x 4 threads; thread 0.1 idles 6 - 3.5 s outside the parallel region; MPI 0.8 + 1.9 + 0.4
    assert rows[PROGRAM] == pytest.approx([24.0, 0.6, 0.9, 2.5, 2.4, 3.1])


@pytest.mark.parametrize("name,sent,recvd,n,root,crank,naive,minimal", [
    ("MPI_Allreduce", 40, 40, 4, False, 1, (30, 30), (30, 30)),
    ("MPI_Reduce", 10, 40, 4, True, 0, (0, 30), (0, 10)),
    ("MPI_Reduce", 10, 0, 4, False, 2, (10, 0), (10, 0)),
    ("MPI_Bcast", 40, 10, 4, True, 0, (30, 0), (10, 0)),
    ("MPI_Bcast", 0, 10, 4, False, 3, (0, 10), (0, 10)),
    ("MPI_Scan", 16, 16, 3, False, 1, (8, 8), (8, 8)),
    ("MPI_Scan", 24, 8, 3, False, 0, (8, 0), (8, 0)),
    ("MPI_Scan", 8, 24, 3, False, 2, (0, 8), (0, 8)),
    ("MPI_Allgather", 20, 20, 4, False, 1, (20, 20), (5, 20)),
    ("MPI_Gather", 5, 20, 4, True, 0, (5, 20), (5, 20)),
    ("MPI_Gather", 5, 0, 4, False, 1, (5, 0), (5, 0)),
    ("MPI_Barrier", 0, 0, 4, False, 1, (0, 0), (0, 0)),
])
def test_collective_volume_fig4(name, sent, recvd, n, root, crank, naive, minimal):
    assert collective_volume(name, sent, recvd, n, root, crank, "naive") == pytest.approx(naive)
    assert collective_volume(name, sent, recvd, n, root, crank, "minimal") == pytest.approx(minimal)


def test_cli_tables_json_and_charts(trace_path, tmp_path, capsys):
    charts = tmp_path / "charts"
    rc = profile_main([trace_path, "--charts", str(charts), "--json", str(tmp_path / "p.json"), "--volume", "minimal"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "!$omp critical" in out and "execT" in out and "collC" in out and "Imbal (%)" in out
    pngs = sorted(os.listdir(charts))
    assert pngs == ["overheads_rank0.png", "overheads_rank1.png", "overheads_rank2.png", "radar_execT.png"]
    for f in pngs:
        assert (charts / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_bad_input(tmp_path, capsys, trace_path):
    assert profile_main([str(tmp_path / "none.elg")]) == 2
    assert "none.elg: no such file" in capsys.readouterr().err
    junk = tmp_path / "junk.elg"
    junk.write_bytes(b"this is not a trace" * 10)
    assert profile_main([str(junk)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("expert-profile: error:") and "junk.elg" in err and "Traceback" not in err
    assert profile_main([trace_path, "--region", "nosuch"]) == 2
    assert "no region named 'nosuch'" in capsys.readouterr().err
