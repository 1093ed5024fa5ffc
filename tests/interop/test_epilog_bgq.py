"""A Scalasca 1.4 Blue Gene/Q-shaped EPIK archive (32 ranks x 64 threads, big-endian, gzip'ed per-rank
files, WORLD group without rank list, metrics on every ENTER/EXIT, call paths, a Cartesian topology):
read, and analysed end to end by ``expert-analyze`` with wait states known by hand (``bgq_expected``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from analyzer.analyze import analyze
from analyzer.cli.analyze import main as expert_analyze
from analyzer.cube.cubex_read import read_cubex
from epilog_samples import BGQ_METRICS, BGQ_PAR, bgq_expected, epik_bgq

from tracefmt import epilog
from tracefmt.detect import open_any
from tracefmt.layout import EventType as E

RANKS, THREADS = 32, 64
DATA = Path(__file__).resolve().parents[1] / "data" / "epilog_bgq"


@pytest.fixture(scope="module")
def bgq(tmp_path_factory):
    return epik_bgq(str(tmp_path_factory.mktemp("bgq") / "epik_bgq"), RANKS, THREADS)


def test_the_archive_is_what_blue_gene_runs_wrote(bgq):
    raw = Path(bgq, "ELG", "00007").read_bytes()
    assert raw[:2] == b"\x1f\x8b"  # whole-file gzip
    assert gzip.decompress(raw)[:10] == b"EPILOG\0\x01\x09\x02"  # EPILOG 1.9, big-endian
    assert Path(bgq, "epik.esd").read_bytes()[9] == 2


def test_bgq_archive_reads_every_location_metric_and_world(bgq):
    asm = epilog.read(bgq)
    assert len(asm.locations) == RANKS * THREADS
    assert [(asm.locations[i].rank, asm.locations[i].thread) for i in (0, 63, 64, 2047)] == \
        [(0, 0), (0, 63), (1, 0), (31, 63)]
    world = asm.comms[0]
    assert world[1] == "MPI_COMM_WORLD" and asm.groups[world[0]] == tuple(range(RANKS))
    assert [m[0] for m in asm.metrics.values()] == list(BGQ_METRICS)
    assert not asm.problems
    assert any("6 CALL_PATH" in n for n in asm.notes) and any("Cartesian" in n for n in asm.notes)
    assert asm.attributes["epilog.cart_topology.0"] == "torus: 4x8, periodic 10, comm 0, 32 coordinates"
    # a worker thread: ENTER parallel + 2 counters, ENTER ibarrier + 2, two OMP_COLLEXITs + 2 each
    ev = asm.events[5 * THREADS + 3]
    assert [E(t).name for t in ev["type"][::3]] == ["ENTER", "ENTER", "OMP_COLLEXIT", "OMP_COLLEXIT"]
    assert (ev["a"][0], ev["c"][0], ev["d"][0]) == (BGQ_PAR, 0, 3)  # team 0 of rank 5, thread number 3
    counters = ev[ev["type"] == E.COUNTER]
    assert counters["a"].tolist()[:2] == [0, 1]
    assert counters["d"].tolist()[:2] == [int(1.0 * 1.6e9), int(1.0 * 1e6)]  # the values at t = 1.0
    master = asm.events[5 * THREADS]
    fork = master[master["type"] == E.OMP_FORK][0]
    assert (fork["a"], fork["c"]) == (0, THREADS)  # team 0 of all 64 threads
    recv = asm.events[5 * THREADS][asm.events[5 * THREADS]["type"] == E.MPI_RECV][0]
    assert (recv["a"], recv["b"], recv["c"], recv["d"]) == (4, 0, 9, 1024)


def test_bgq_archive_analysed_end_to_end_with_known_wait_states(bgq, tmp_path):
    out = tmp_path / "bgq.cubex"
    assert expert_analyze([bgq, "-o", str(out), "--no-plugins", "--no-progress", "-q"]) == 0
    cube = read_cubex(out)
    for metric, value in bgq_expected(RANKS, THREADS).items():
        assert cube.total(metric) == pytest.approx(value, rel=1e-9), metric
    assert len(cube.locations) == RANKS * THREADS


def test_little_and_big_endian_archives_give_identical_events_and_analysis(tmp_path):
    little = epik_bgq(str(tmp_path / "le"), 4, 8, big_endian=False, compress=False, iterations=2)
    big = epik_bgq(str(tmp_path / "be"), 4, 8, big_endian=True, compress=True, iterations=2)
    a, b = epilog.read(little), epilog.read(big)
    assert sorted(a.events) == sorted(b.events)
    for loc in a.events:
        np.testing.assert_array_equal(a.events[loc], b.events[loc])
    ca, cb = analyze(open_any(little)), analyze(open_any(big))
    assert ca.metric_names == cb.metric_names
    for name in ca.metric_names:
        assert ca.total(name) == cb.total(name), name
    for metric, value in bgq_expected(4, 8, iterations=2).items():
        assert ca.total(metric) == pytest.approx(value, rel=1e-9), metric


@pytest.mark.parametrize("shape", ["4x4", "8x6"])
def test_same_wait_states_per_location_as_scalasca_reading_the_same_archive(tmp_path, shape):
    """Scalasca 2.6's own EPILOG reader and SCOUT on the generated archive (values recorded by
    tests/data/epilog_bgq/record.py): every location's wait states, visits, syncs, bytes agree.  Our
    `time` also holds the idle time of worker threads outside parallel regions (omp_idle_threads, the
    Scalasca 1.x tree); SCOUT 2.6 leaves it out, so its `time` is our `execution`."""
    doc = json.loads((DATA / f"scout_{shape}.json").read_text())
    ranks, threads = (int(x) for x in shape.split("x"))
    cube = analyze(open_any(epik_bgq(str(tmp_path / "q"), ranks, threads)))
    ours = [[int(L.rank), int(L.thread)] for L in cube.locations]
    order = [ours.index(loc) for loc in doc["locations"]]
    for metric, theirs in doc["metrics"].items():
        mine = cube.per_location("execution" if metric == "time" else metric)[order]
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-9, err_msg=metric)
