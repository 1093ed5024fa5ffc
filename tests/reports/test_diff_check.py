"""expert-diff and expert-check on hand-built cubes and JSON summaries.

Base cube (report_cubes.small_cube): time 11 s, mpi 3.5 s, mpi_latesender 2 s,
all Late Sender on main/foo/MPI_Recv at rank 1 thread 0.  small_cube(3.0) has
1 s more Late Sender there (and so 1 s more mpi and time).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from analyzer.ci import check as chk
from analyzer.ci import compare
from analyzer.cli.tools import check_main, diff_main
from analyzer.cube import read_cubex, write_cubex, write_json

from report_cubes import small_cube


@pytest.fixture
def files(tmp_path):
    out = {}
    for name, ls in (("base", 2.0), ("same", 2.0), ("worse", 3.0), ("b1", 1.8), ("b2", 2.2), ("b3", 2.0)):
        p = tmp_path / f"{name}.cubex"
        write_cubex(small_cube(ls), str(p))
        out[name] = str(p)
    return out


# ---------------------------------------------------------------- diff
def test_diff_per_metric_callpath_location(files):
    d = compare.diff(files["base"], files["worse"])
    by = {m.name: m for m in d.metrics}
    assert by["mpi_latesender"].base == 2.0 and by["mpi_latesender"].new == 3.0
    assert by["time"].delta == pytest.approx(1.0) and by["mpi"].delta == pytest.approx(1.0)
    assert not by["visits"].changed
    ls = by["mpi_latesender"]
    assert [(c.key, c.base, c.new) for c in ls.callpaths] == [("main/foo/MPI_Recv", 2.0, 3.0)]
    assert [(c.key, c.delta) for c in ls.locations] == [("rank 1 thread 0", 1.0)]
    assert [m.name for m in d.changed] == ["time", "mpi", "mpi_latesender"]


def test_diff_json_against_cube(files, tmp_path):
    j = tmp_path / "base.json"
    write_json(read_cubex(files["base"]), str(j))
    d = compare.diff(str(j), files["worse"])
    ls = {m.name: m for m in d.metrics}["mpi_latesender"]
    assert ls.delta == pytest.approx(1.0)
    assert [c.key for c in ls.callpaths] == ["main/foo/MPI_Recv"]
    assert [c.key for c in ls.locations] == ["rank 1 thread 0"]


def test_diff_identical_has_no_changes(files):
    assert compare.diff(files["base"], files["same"]).changed == []


def test_diff_cube_output(files, tmp_path, capsys):
    out = tmp_path / "d.cubex"
    assert diff_main([files["base"], files["worse"], "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "mpi_latesender" in text and "main/foo/MPI_Recv" in text and "+50.0%" in text
    d = read_cubex(str(out))
    assert d.total("mpi_latesender") == pytest.approx(1.0)
    assert d.per_callpath("mpi_latesender")["main/foo/MPI_Recv"] == pytest.approx(1.0)
    assert d.total("visits") == 0


def test_diff_cube_union_of_call_paths():
    a = small_cube()
    b = small_cube(region_names=["main", "foo", "MPI_Recv", "MPI_Isend"])
    d = compare.diff_cube(a, b)
    paths = d.per_callpath("time")
    assert paths["main/MPI_Isend"] == pytest.approx(0.5)
    assert paths["main/MPI_Send"] == pytest.approx(-0.5)
    assert paths["main"] == 0


def test_diff_scalasca_cubex():
    """A CUBE4 file written by cubelib diffed against itself: readable, nothing changed."""
    path = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "cube" / "pycubexr__call_tree_test.cubex"
    d = compare.diff(str(path), str(path))
    assert d.metrics and d.changed == []


def test_diff_bad_input(tmp_path, capsys):
    assert diff_main([str(tmp_path / "missing.cubex"), str(tmp_path / "missing.cubex")]) == 2
    err = capsys.readouterr().err
    assert "missing.cubex: no such file" in err and "Traceback" not in err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert diff_main([str(bad), str(bad)]) == 2
    assert "invalid JSON" in capsys.readouterr().err


def test_diff_reads_results_by_content(files, tmp_path, capsys):
    """HDF5, gzip-compressed and JSON results are told apart by their bytes, not their names."""
    import gzip

    from analyzer.cube import write_hdf5

    h5 = tmp_path / "worse.result"
    write_hdf5(read_cubex(files["worse"]), str(h5))
    gz = tmp_path / "base.result"
    gz.write_bytes(gzip.compress(Path(files["base"]).read_bytes()))
    d = compare.diff(str(gz), str(h5))
    assert [m.name for m in d.changed] == ["time", "mpi", "mpi_latesender"]
    arr = tmp_path / "list.json"
    arr.write_text("[1, 2]")
    assert diff_main([str(arr), files["base"]]) == 2
    err = capsys.readouterr().err
    assert "not a JSON summary" in err and "Traceback" not in err
    assert diff_main([files["base"], files["base"], "-o", str(tmp_path / "d.dat")]) == 2
    assert "must end in .cubex" in capsys.readouterr().err


def test_diff_cube_needs_cubes(files, tmp_path, capsys):
    j = tmp_path / "s.json"
    write_json(read_cubex(files["base"]), str(j))
    assert diff_main([str(j), files["worse"], "-o", str(tmp_path / "d.cubex")]) == 2
    assert "needs cube inputs" in capsys.readouterr().err


# ---------------------------------------------------------------- quantities
@pytest.mark.parametrize("text,value,kind", [
    ("10%", 0.10, "percent"), ("2sd", 2.0, "sd"), ("0.5s", 0.5, "time"), ("1ms", 1e-3, "time"),
    ("250us", 250e-6, "time"), ("3MiB", 3 * 2**20, "bytes"), ("12", 12.0, "number"), ("1.5e-3s", 1.5e-3, "time"),
])
def test_parse_quantity(text, value, kind):
    q = chk.parse_quantity(text)
    assert q.value == pytest.approx(value) and q.kind == kind


@pytest.mark.parametrize("text", ["", "abc", "10 furlongs", "5%%"])
def test_parse_quantity_rejects(text):
    with pytest.raises(compare.ResultError):
        chk.parse_quantity(text)


# ---------------------------------------------------------------- check
def run(capsys, *argv):
    rc = check_main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_check_passes_unchanged_run(files, capsys):
    rc, out, _ = run(capsys, files["same"], "--baseline", files["base"], "--max-increase", "mpi_latesender=10%",
                     "--max-increase", "time=5%", "--abs-floor", "1ms")
    assert rc == 0 and "2 passed, 0 failed" in out


def test_check_fails_larger_late_sender(files, capsys, tmp_path):
    junit, md = tmp_path / "j.xml", tmp_path / "s.md"
    rc, out, _ = run(capsys, files["worse"], "--baseline", files["base"], "--max-increase", "mpi_latesender=10%",
                     "--max-increase", "time=10%", "--junit", str(junit), "--markdown", str(md))
    assert rc == 1
    fail = [l for l in out.splitlines() if l.startswith("FAIL")]
    assert len(fail) == 1 and "mpi_latesender" in fail[0] and "+50.0%" in fail[0]
    assert "grew most at call path: main/foo/MPI_Recv (+1.000 s)" in out
    assert "rank 1 thread 0" in out
    # time grew 1/11 = 9.1 %: within 10 %
    assert any(l.startswith("PASS") and "time" in l for l in out.splitlines())
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    failure = suite.find("testcase/failure")
    assert "main/foo/MPI_Recv" in failure.text
    text = md.read_text()
    assert "❌" in text and "`main/foo/MPI_Recv` +1.000 s" in text


def test_abs_floor_ignores_small_increases(files, capsys):
    # +1 s Late Sender is +50 %, but below a 2 s floor
    rc, out, _ = run(capsys, files["worse"], "--baseline", files["base"], "--max-increase", "mpi_latesender=10%",
                     "--abs-floor", "2s")
    assert rc == 0 and "below the floor" in out
    rc, _, _ = run(capsys, files["worse"], "--baseline", files["base"], "--max-increase", "mpi_latesender=10%",
                   "--abs-floor", "500ms")
    assert rc == 1


def test_bare_number_far_above_the_baseline_warns_with_the_unit_taken(files, capsys):
    # Late Sender is 2 s in the baseline: "=500" (a forgotten %) allows 500 s, so it passes, with a warning
    rc, _, err = run(capsys, files["worse"], "--baseline", files["base"], "--max-increase", "mpi_latesender=500")
    assert rc == 0
    warn = [l for l in err.splitlines() if l.startswith("expert-check: warning:")]
    assert len(warn) == 1 and "taken as 500" in warn[0] and "'sec'" in warn[0] and "500%" in warn[0]
    # a bare number of the baseline's size is a plausible absolute limit: no warning, and it still gates
    rc, _, err = run(capsys, files["worse"], "--baseline", files["base"], "--max-increase", "mpi_latesender=0.5")
    assert rc == 1 and "warning" not in err


def test_max_value(files, capsys):
    rc, out, _ = run(capsys, files["worse"], "--max-value", "mpi_latesender=2.5s")
    assert rc == 1 and "above the maximum 2.500 s" in out
    rc, _, _ = run(capsys, files["worse"], "--max-value", "mpi_latesender=3s")
    assert rc == 0


def test_several_baselines_mean_and_sd(files, capsys):
    # baselines 1.8, 2.2, 2.0: mean 2.0, sample sd 0.2 -> 2sd allows up to 2.4 s
    bases = [files["b1"], files["b2"], files["b3"]]
    rep = chk.check(files["worse"], bases, [chk.parse_threshold("increase", "mpi_latesender=2sd")])
    o = rep.outcomes[0]
    assert o.baseline_mean == pytest.approx(2.0) and o.baseline_sd == pytest.approx(0.2)
    assert o.limit == pytest.approx(2.4) and not o.passed
    rc, _, _ = run(capsys, files["same"], "--baseline", *bases, "--max-increase", "mpi_latesender=2sd")
    assert rc == 0
    # the most lenient part counts: 2sd (0.4 s) or 60 % (1.2 s) -> 3.0 s passes
    rc, _, _ = run(capsys, files["worse"], "-b", *bases, "--max-increase", "mpi_latesender=2sd,60%")
    assert rc == 0


def test_per_callpath(files, capsys):
    rc, out, _ = run(capsys, files["worse"], "-b", files["base"], "--max-increase", "time=10%", "--per-callpath")
    assert rc == 1
    assert "time (call path main/foo/MPI_Recv)" in out  # 3 s -> 4 s is +33 %


@pytest.mark.parametrize("argv,expect", [
    (["--max-increase", "mpi_nosuch=10%"], "no metric 'mpi_nosuch'"),
    (["--max-increase", "mpi_latesender"], "expected METRIC=LIMIT"),
    (["--max-increase", "mpi_latesender=2sd"], "at least two baselines"),
    (["--max-increase", "visits=1ms"], "time amount"),
    (["--max-value", "time=10%"], "one absolute amount"),
    ([], "no thresholds"),
])
def test_check_bad_input_exits_2(files, capsys, tmp_path, argv, expect):
    junit = tmp_path / "j.xml"
    rc, _, err = run(capsys, files["worse"], "--baseline", files["base"], *argv, "--junit", str(junit))
    assert rc == 2 and expect in err and "Traceback" not in err
    assert ET.parse(junit).getroot().find("testsuite").get("errors") == "1"


def test_check_missing_files(files, capsys, tmp_path):
    rc, _, err = run(capsys, str(tmp_path / "nope.cubex"), "-b", files["base"], "--max-increase", "time=5%")
    assert rc == 2 and "nope.cubex: no such file" in err
    rc, _, err = run(capsys, files["worse"], "-b", str(tmp_path / "gone.json"), "--max-increase", "time=5%")
    assert rc == 2 and "gone.json: no such file" in err


def test_check_metric_missing_in_baseline(files, capsys, tmp_path):
    j = tmp_path / "old.json"
    j.write_text(json.dumps({"metrics": {"time": {"unit": "sec", "total": 11.0}}}))
    rc, _, err = run(capsys, files["worse"], "-b", str(j), "--max-increase", "mpi_latesender=10%")
    assert rc == 2 and "old.json: no metric 'mpi_latesender'" in err


def test_markdown_escapes_names():
    rep = chk.check(small_cube(3.0, region_names=["main", "a|b", "<script>x</script>", "s"]),
                    [small_cube(2.0, region_names=["main", "a|b", "<script>x</script>", "s"])],
                    [chk.parse_threshold("increase", "mpi_latesender=10%")])
    md = chk.format_markdown(rep)
    assert "<script>" not in md and "a\\|b" in md
