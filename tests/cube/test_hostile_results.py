"""Hostile result files for expert-diff, expert-check and expert-report (issue 18, items 3, 4 and 6).

JSON summaries with 400- or 5,000-digit numbers, 10^5-deep nesting or a list
where an object belongs gave OverflowError, ValueError, RecursionError and
AttributeError tracebacks; a FIFO or a link to /dev/urandom blocked or read
2 GB; a 2.8 MB .cubex inflated to 5 GB; expert-diff -o failed on every pair
of our cubes and expert-report on the minimal CUBE fixture.
"""

import gzip
import io
import json
import os
import struct
import tarfile
import time
import tracemalloc
import zlib

import numpy as np
import pytest

from analyzer.ci.compare import ResultError, load_result
from analyzer.cli.tools import check_main, diff_main, report_main
from analyzer.cube import CubeFormatError, read_cubex, write_cubex, write_json
from analyzer.cube.files import read_result
from cube_helpers import small_cube
from repo_paths import shared

FIXTURES = shared("fixtures", "cube")
CUBES = sorted(p for p in FIXTURES.iterdir() if p.suffix in (".cubex", ".cube"))


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    d = tmp_path_factory.mktemp("s")
    write_json(small_cube(), d / "a.json")
    return json.loads((d / "a.json").read_text())


def _hostile_json(summary, kind: str) -> str:
    text = json.dumps(summary)
    first = next(iter(summary["metrics"]))
    if kind == "digits400":
        return text.replace('"total": ', '"total": ' + "9" * 400 + ', "x": ', 1)
    if kind == "digits5000":
        return text.replace('"total": ', '"total": ' + "9" * 5000 + ', "x": ', 1)
    if kind == "float_overflow":
        return text.replace('"total": ', '"total": 1e400, "x": ', 1)
    if kind == "nan":
        return text.replace('"total": ', '"total": NaN, "x": ', 1)
    if kind == "deep_list":
        return '{"metrics": ' + "[" * 100_000 + "]" * 100_000 + "}"
    if kind == "deep_object":
        return '{"metrics": {"time": ' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "}}"
    doc = json.loads(text)
    m = doc["metrics"][first]
    if kind == "list_callpaths":
        m["per_callpath"] = [1, 2]
    elif kind == "list_locations":
        m["per_location"] = [1, 2]
    elif kind == "list_metrics":
        doc["metrics"] = [1]
    elif kind == "list_total":
        m["total"] = [1]
    elif kind == "bool_value":
        m["total"] = True
    elif kind == "list_parent":
        m["parent"] = ["x"]
    elif kind == "top_list":
        doc = [doc]
    return json.dumps(doc)


JSON_KINDS = ["digits400", "digits5000", "float_overflow", "nan", "deep_list", "deep_object", "list_callpaths",
              "list_locations", "list_metrics", "list_total", "bool_value", "list_parent", "top_list"]


def _one_line_2(rc, capsys):
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("kind", JSON_KINDS)
def test_hostile_json_summaries_are_one_line_for_every_tool(tmp_path, capsys, summary, kind):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(summary))
    bad.write_text(_hostile_json(summary, kind))
    with pytest.raises(ResultError, match="bad.json"):
        load_result(str(bad))
    assert "bad.json" in _one_line_2(diff_main([str(good), str(bad)]), capsys)
    assert "bad.json" in _one_line_2(check_main([str(bad), "--baseline", str(good), "--max-increase", "time=10%"]),
                                     capsys)
    assert "bad.json" in _one_line_2(check_main([str(good), "--baseline", str(bad), "--max-increase", "time=10%"]),
                                     capsys)
    _one_line_2(report_main([str(bad), "-o", str(tmp_path / "r.html")]), capsys)


@pytest.mark.parametrize("kind", ["fifo", "urandom"])
def test_special_files_are_refused_by_every_result_tool(tmp_path, capsys, summary, kind):
    special = tmp_path / "x.cubex"
    if kind == "fifo":
        os.mkfifo(special)
    else:
        os.symlink("/dev/urandom", special)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(summary))
    t0 = time.perf_counter()
    for main, argv in ((diff_main, [special, good]), (diff_main, [good, special]),
                       (check_main, [special, "--baseline", good, "--max-increase", "time=10%"]),
                       (check_main, [good, "--baseline", special, "--max-increase", "time=10%"]),
                       (report_main, [special, "-o", tmp_path / "r.html"])):
        assert "not a regular file" in _one_line_2(main([str(a) for a in argv]), capsys)
    assert time.perf_counter() - t0 < 10
    with pytest.raises(CubeFormatError, match="not a regular file"):
        read_cubex(special)


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _members(path) -> dict[str, bytes]:
    with tarfile.open(path) as tf:
        return {m.name: tf.extractfile(m).read() for m in tf.getmembers()}


def test_a_gzip_compressed_archive_bomb_is_refused(tmp_path):
    members = _members(_ours(tmp_path))
    members["junk"] = bytes(256 << 20)  # 256 MiB of zeros: a few hundred kB compressed
    bomb = gzip.compress(_tar(members), 9)
    assert len(bomb) < 1 << 20
    p = tmp_path / "bomb.cubex"
    p.write_bytes(bomb)
    tracemalloc.start()
    with pytest.raises(CubeFormatError, match="decompression bomb"):
        read_cubex(p)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 200 << 20


def test_a_compressed_data_bomb_is_refused(tmp_path):
    members = _members(_ours(tmp_path))
    name = next(n for n in members if n.endswith(".data"))
    block = zlib.compress(bytes(512 << 20), 9)  # one block of 512 MiB of zeros
    members[name] = b"ZCUBEX.DATA" + struct.pack("<Q", 1) + struct.pack("<3Q", 0, 0, len(block)) + block
    p = tmp_path / "zbomb.cubex"
    p.write_bytes(_tar(members))
    tracemalloc.start()
    with pytest.raises(CubeFormatError, match="decompression bomb"):
        read_cubex(p)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 << 20


def test_dense_values_beyond_what_the_file_can_justify_are_refused(tmp_path, monkeypatch):
    import analyzer.cube.cubex_read as cr

    monkeypatch.setattr(cr, "ONE_METRIC_FLOOR", 16)
    monkeypatch.setattr(cr, "ONE_METRIC_RATIO", 0)
    with pytest.raises(CubeFormatError, match="per metric as dense values, more than this reader holds"):
        read_cubex(_ours(tmp_path))


def _ours(tmp_path):
    p = tmp_path / "ours.cubex"
    if not p.exists():
        write_cubex(small_cube(), p)
    return p


@pytest.mark.parametrize("path", CUBES, ids=lambda p: p.name)
def test_report_opens_every_fixture_cube(tmp_path, capsys, path):
    assert report_main([str(path), "-o", str(tmp_path / "r.html")]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("path", CUBES, ids=lambda p: p.name)
def test_diff_writes_a_difference_cube_of_every_fixture(tmp_path, capsys, path):
    out = tmp_path / "d.cubex"
    assert diff_main([str(path), str(path), "-o", str(out)]) == 0, capsys.readouterr().err
    d = read_cubex(out)
    assert len(d.roots()) == 1
    assert all(np.all(d.values[m.name] == 0) for m in d.metrics)


def test_diff_of_two_of_our_cubes_and_of_cubes_with_different_roots(tmp_path, capsys):
    a, b = small_cube(), small_cube()
    b.values["time"][...] += 1.0
    write_cubex(a, tmp_path / "a.cubex")
    write_cubex(b, tmp_path / "b.cubex")
    assert diff_main([str(tmp_path / "a.cubex"), str(tmp_path / "b.cubex"), "-o", str(tmp_path / "d.cubex")]) == 0
    d = read_cubex(tmp_path / "d.cubex")
    assert d.total("time") == pytest.approx(b.total("time") - a.total("time"))
    capsys.readouterr()
    multi = FIXTURES / "cubelib__proxy_denseindex_multiroot.cubex"
    assert diff_main([str(multi), str(tmp_path / "a.cubex"), "-o", str(tmp_path / "m.cubex")]) == 0
    m = read_cubex(tmp_path / "m.cubex")
    assert len(m.roots()) == 1  # a synthetic root above the several roots of the union


def test_result_readers_refuse_a_json_summary_with_a_huge_file_without_a_traceback(tmp_path):
    p = tmp_path / "big.json"
    p.write_text('{"metrics": {"time": {"total": 1, "per_callpath": {' +
                 ",".join(f'"p{i}": {i}' for i in range(100_000)) + "}}}}")
    doc = read_result(p)
    assert len(doc["metrics"]["time"]["per_callpath"]) == 100_000


def test_outputs_that_cannot_be_written_are_one_line(tmp_path, capsys):
    from analyzer.cli.tools import profile_main
    from hostile import small_builder

    cube = tmp_path / "a.cubex"
    write_cubex(small_cube(), cube)
    trace = tmp_path / "t.elg"
    small_builder().write(trace)
    nowhere = "/proc/nonexistent-dir/out"
    for main, argv in ((diff_main, [cube, cube, "--json", f"{nowhere}.json"]),
                       (diff_main, [cube, cube, "-o", f"{nowhere}.cubex"]),
                       (check_main, [cube, "--baseline", cube, "--max-increase", "time=1%", "--junit", nowhere]),
                       (check_main, [cube, "--baseline", cube, "--max-increase", "time=1%", "--markdown", nowhere]),
                       (check_main, [tmp_path / "missing.cubex", "--baseline", cube, "--max-increase", "time=1%",
                                     "--junit", nowhere]),
                       (report_main, [cube, "-o", f"{nowhere}.html"]),
                       (profile_main, [trace, "--json", f"{nowhere}.json"]),
                       (profile_main, [trace, "--charts", nowhere])):
        err = _one_line_2(main([str(a) for a in argv]), capsys)
        assert "nonexistent-dir" in err


def test_convert_to_an_output_that_cannot_be_written_is_one_line(tmp_path, capsys):
    from hostile import small_builder
    from tracefmt.cli import main as trace_main

    trace = tmp_path / "t.elg"
    small_builder().write(trace)
    for out in ("/proc/nonexistent-dir/x.json", "/proc/nonexistent-dir/x.elg", str(tmp_path)):
        argv = ["convert", str(trace), out] + (["--to", "elg"] if out == str(tmp_path) else [])
        err = _one_line_2(trace_main(argv), capsys)
        assert "cannot write" in err or "exists" in err


def test_an_hdf5_dataset_declared_larger_than_the_file_can_justify_is_refused(tmp_path):
    import h5py  # a dependency of the package
    from analyzer.cube import read_hdf5, write_hdf5

    p = tmp_path / "c.h5"
    write_hdf5(small_cube(), p)
    with h5py.File(p, "a") as f:
        del f["calltree/parent"]
        f.create_dataset("calltree/parent", shape=(10**10,), dtype="i8")  # a shape costs no storage
    tracemalloc.start()
    with pytest.raises(CubeFormatError, match="declares 80000000000 bytes"):
        read_hdf5(p)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 16 << 20


def test_hdf5_values_are_held_as_their_rows_and_bounded_by_the_file(tmp_path):
    # a compressed dataset of zeros declared at 256 MiB in a file of a few kB: refused before it is inflated;
    # a sane file reads back each metric as its nonzero rows, dense only when asked for
    import h5py  # a dependency of the package
    from analyzer.cube import read_hdf5, write_hdf5

    cube = small_cube()
    p = tmp_path / "c.h5"
    write_hdf5(cube, p)
    back = read_hdf5(p)
    for name in cube.values:
        assert np.array_equal(np.asarray(back.values[name]), np.asarray(cube.values[name])), name
    with h5py.File(p, "a") as f:
        g = next(iter(f["values"].values()))
        n_loc = g["data"].shape[1]
        del g["rows"], g["data"]
        g.create_dataset("rows", shape=(2**25 // n_loc,), dtype="i8", compression="gzip", chunks=True)
        g.create_dataset("data", shape=(2**25 // n_loc, n_loc), dtype="f8", compression="gzip", chunks=True,
                         fillvalue=0.0)
    assert p.stat().st_size < 1 << 20
    tracemalloc.start()
    with pytest.raises(CubeFormatError, match="more than a file of .* bytes can hold"):
        read_hdf5(p)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 16 << 20
