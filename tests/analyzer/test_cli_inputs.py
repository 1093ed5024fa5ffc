"""expert-analyze on every input format it detects by content: EPILOG 1.x file, EPIK directory, OTF2.

Expected severities are computed by hand from the sample traces' documented
times (tests/helpers/epilog_samples.py) or taken from the synthetic OTF2
generator's own totals (../shared/tools/gen_otf2_synth.py, Scalasca's
definitions; Scalasca 2.6 reproduces them exactly).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from analyzer.cli.analyze import main
from epilog_samples import epik_hybrid, merged_mpi
from repo_paths import shared


def _run(argv, tmp_path):
    js = tmp_path / "r.json"
    rc = main([*map(str, argv), "--json", str(js), "-o", str(tmp_path / "r.cubex"), "-q"])
    assert rc == 0
    return {k: v["total"] for k, v in json.loads(js.read_text())["metrics"].items()}


def test_epilog_file_detected_by_magic(tmp_path):
    # merged_mpi: rank 1 enters MPI_Recv at 1.5, rank 0 enters MPI_Send at 2.0 -> Late Sender 0.5 s;
    # MPI_Barrier entered at 3.0 and 3.5 -> Wait at Barrier 0.5 s on rank 0.  The name says nothing.
    path = merged_mpi(tmp_path / "run.trace")
    tot = _run([path], tmp_path)
    assert tot["mpi_latesender"] == pytest.approx(0.5, abs=1e-12)
    assert tot["mpi_barrier_wait"] == pytest.approx(0.5, abs=1e-12)


def test_gzipped_epilog_file(tmp_path):
    path = merged_mpi(tmp_path / "run.elg.gz", compress=True, big_endian=True)
    tot = _run([path], tmp_path)
    assert tot["mpi_latesender"] == pytest.approx(0.5, abs=1e-12)


def test_epik_directory(tmp_path):
    # global times (rank 1's clock: global = 1.5 x local) from the sample's comments:
    #  Allreduce entered at 3.2 (rank 0) and 5.4 (rank 1): 2.2 s, but rank 0 leaves it at 4.0 (an
    #  inconsistent clock), and a wait never exceeds the call's own time -> Wait at N x N 0.8 s
    #  implicit barrier: rank 0 threads at 2.5 / 2.7 (0.2 s), rank 1 at 3.6 / 3.9 (0.3 s) -> 0.5 s
    #  critical: thread 1 of rank 0 enters at 2.3, the lock is released at 2.4 -> contention 0.1 s
    #  the message is sent at 3.0, the receive entered at 4.8 -> no Late Sender
    d = epik_hybrid(str(tmp_path / "epik_jacobi"))
    tot = _run([d + "/"], tmp_path)  # a trailing slash as shells complete it
    assert tot["mpi_wait_nxn"] == pytest.approx(0.8, abs=1e-9)
    assert tot["omp_ibarrier_wait"] == pytest.approx(0.5, abs=1e-9)
    assert tot["omp_lock_contention_critical"] == pytest.approx(0.1, abs=1e-9)
    assert tot["mpi_latesender"] == 0


def test_default_output_name_of_a_directory(tmp_path):
    d = epik_hybrid(str(tmp_path / "epik_x"))
    assert main([d + "/", "-q"]) == 0
    assert (tmp_path / "epik_x.cubex").is_file()  # beside the directory, not inside it


def test_not_a_trace_is_one_line_error(tmp_path, capsys):
    p = tmp_path / "notes.txt"
    p.write_text("hello")
    assert main([str(p), "-q"]) == 2
    err = capsys.readouterr().err
    assert "notes.txt" in err and "unknown trace format" in err and "Traceback" not in err


def test_otf2_score_p_ping_pong(tmp_path):
    ping_pong = shared("fixtures", "otf2", "pipit-ping-pong")
    tot = _run([ping_pong / "traces.otf2"], tmp_path)
    assert tot["time"] > 0
    # 8 messages each way, all matched: the importer and the matcher agree on every one
    tot_dir = _run([ping_pong], tmp_path)
    assert tot_dir == tot


# generator key -> our metric's unique name
SYNTH_METRICS = {
    "late_sender": "mpi_latesender",
    "late_receiver": "mpi_latereceiver",
    "wait_nxn": "mpi_wait_nxn",
    "wait_barrier": "mpi_barrier_wait",
    "omp_ibarrier_wait": "omp_ibarrier_wait",
    "omp_critical_contention": "omp_lock_contention_critical",
}


@pytest.mark.parametrize("shape", [("2", "2", "3"), ("3", "1", "4"), ("1", "3", "3", "--no-mpi"),
                                   ("3", "4", "2", "--seed", "7")])
def test_synthetic_otf2_wait_states_exact(tmp_path, shape):
    out = tmp_path / "synth"
    gen = shared("tools", "gen_otf2_synth.py")
    subprocess.run([sys.executable, gen, *shape[:3], str(out), *shape[3:]], check=True, capture_output=True)
    expected = json.loads((out / "synth_expected.json").read_text())["expected_seconds"]
    tot = _run([out / "traces.otf2"], tmp_path)
    assert set(expected) == set(SYNTH_METRICS)
    for key, secs in expected.items():
        # both sides sum the same nanosecond differences; only summation order differs
        assert tot.get(SYNTH_METRICS[key], 0.0) == pytest.approx(secs, rel=1e-9, abs=1e-15), key


@pytest.mark.parametrize("suffix,kind", [(".cubex", "a CUBE4 result"), (".json", "a JSON summary")])
def test_a_result_given_as_the_trace_points_to_the_result_tools(tmp_path, capsys, suffix, kind):
    trace = merged_mpi(tmp_path / "run.elg")
    out = tmp_path / "run.cubex"
    js = tmp_path / "run.json"
    assert main([trace, "-o", str(out), "--json", str(js), "-q"]) == 0
    capsys.readouterr()
    result = out if suffix == ".cubex" else js
    assert main([str(result)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"is {kind}" in err[0] and "not a trace" in err[0]
    assert "expert-report" in err[0] and "expert-diff" in err[0]


def test_records_we_do_not_analyse_are_a_note_not_damage(tmp_path, capsys):
    # the hand-written archive holds records of a type we do not know (type 200, two per iteration):
    # expert-analyze says so in a note and analyses; only damage would need --salvage
    import otf2_bytes

    anchor = otf2_bytes.write_archive(tmp_path / "a", big=False, iterations=3)
    assert main([str(anchor), "-o", str(tmp_path / "a.cubex")]) == 0
    err = capsys.readouterr().err
    assert "expert-analyze: note:" in err and "6 type-200 record(s) skipped (not analysed)" in err
    assert "damaged" not in err


def test_missing_trace_with_per_process_pieces_names_the_merge(tmp_path, capsys):
    # a crashed MPI run leaves x.<rank>.elg instead of x.elg: the error says how to make one trace of them
    from random_hybrid_traces import random_builder

    random_builder(3, n_ranks=2, n_threads=1, steps=3).write(tmp_path / "x.0.elg")
    assert main([str(tmp_path / "x.elg"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such file" in err[0] and f"expert-trace merge {tmp_path / 'x.elg'}" in err[0]
