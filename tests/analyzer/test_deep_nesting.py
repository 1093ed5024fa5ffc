"""A valid trace nested 20,000 or 200,000 calls deep: linear time and memory everywhere (issue 18, item 3).

Before: 11 s and 2.5 GB at 20,000 (the cube's depth check, the anchor's
indentation, call-path strings spelt out in full for every cnode), more than
60 s at 200,000.
"""

import json
import time

import numpy as np
import pytest

import tracefmt
from analyzer.analyze import analyze
from analyzer.cube import read_cubex, write_cubex, write_json
from analyzer.cube.model import MAX_CALLPATH, Cube
from analyzer.cube import LocationInfo, MetricInfo, RegionInfo


def deep_trace(depth: int):
    b = tracefmt.TraceBuilder()
    loc = b.location(0)
    t = 0.0
    for i in range(depth):
        b.enter(loc, t, f"f{i % 7}")
        t += 1e-6
    for _ in range(depth):
        b.exit(loc, t)
        t += 1e-6
    return b.build()


def chain_cube(n: int) -> Cube:
    regions = [RegionInfo(f"function_{k}") for k in range(7)]
    parent = np.arange(-1, n - 1)
    return Cube([MetricInfo("time", "Time", None, "sec")], regions, parent, np.arange(n) % 7, [LocationInfo()],
                {"time": np.ones((n, 1))})


def test_the_depth_check_of_a_chain_is_not_quadratic():
    t0 = time.perf_counter()
    c = chain_cube(200_000)
    assert time.perf_counter() - t0 < 5
    assert c._depths()[-1] == 199_999  # noqa: SLF001 - the check itself


def test_a_cycle_is_still_found():
    from analyzer.cube import CubeError

    with pytest.raises(CubeError, match="cycle"):
        Cube([MetricInfo("time", "Time", None, "sec")], [RegionInfo("a")], [-1, 2, 1], [0, 0, 0], [LocationInfo()])


def test_call_path_keys_stay_short_and_the_same_in_every_cube():
    a, b = chain_cube(20_000), chain_cube(20_000)
    paths = a.callpaths
    assert max(len(p) for p in paths) <= MAX_CALLPATH + 40
    assert sum(len(p) for p in paths) < 2_000_000  # linear: spelt out in full, 2.4e9 characters
    assert paths == b.callpaths and len(set(paths)) == len(paths)
    assert paths[3] == "function_0/function_1/function_2/function_3"
    assert paths[-1].startswith("\u2026") and paths[-1].endswith("/function_" + str(19_999 % 7))


def test_analysis_and_every_result_file_of_a_trace_5000_calls_deep(tmp_path):
    trace = deep_trace(5_000)
    t0 = time.perf_counter()
    cube = analyze(trace)
    write_cubex(cube, tmp_path / "d.cubex")
    write_json(cube, tmp_path / "d.json")
    back = read_cubex(tmp_path / "d.cubex")
    elapsed = time.perf_counter() - t0
    assert back.n_cnodes == cube.n_cnodes >= 5_000
    assert back.callpaths == cube.callpaths
    assert (tmp_path / "d.cubex").stat().st_size < 30 << 20  # linear: 400 MB of indentation before
    assert (tmp_path / "d.json").stat().st_size < 60 << 20
    json.loads((tmp_path / "d.json").read_text())
    assert elapsed < 30


def test_report_and_diff_of_a_deep_cube(tmp_path, capsys):
    from analyzer.cli.tools import diff_main
    from analyzer.report.html import report_data

    cube = chain_cube(20_000)
    data = report_data(cube)
    assert sum(len(p) for p in data["cnodes"]["path"]) < 2_000_000
    write_cubex(cube, tmp_path / "c.cubex")
    assert diff_main([str(tmp_path / "c.cubex"), str(tmp_path / "c.cubex"), "-o", str(tmp_path / "d.cubex")]) == 0
    assert read_cubex(tmp_path / "d.cubex").n_cnodes == 20_000


@pytest.mark.slow
def test_every_command_on_a_trace_200000_calls_deep(tmp_path, capsys):
    from analyzer.cli.analyze import main as analyze_main
    from analyzer.cli.tools import check_main, diff_main, profile_main, report_main
    from tracefmt.cli import main as trace_main

    path = tmp_path / "deep.elg"
    b = tracefmt.TraceBuilder()
    loc = b.location(0)
    for i in range(200_000):
        b.enter(loc, i * 1e-6, f"f{i % 7}")
    for i in range(200_000):
        b.exit(loc, 0.2 + i * 1e-6)
    b.write(path)
    cubex, js = tmp_path / "d.cubex", tmp_path / "d.json"
    t0 = time.perf_counter()
    assert trace_main(["check", str(path)]) == 0
    assert analyze_main([str(path), "-o", str(cubex), "--json", str(js), "-q"]) == 0
    assert profile_main([str(path)]) == 0
    assert report_main([str(cubex), "-o", str(tmp_path / "d.html")]) == 0
    assert diff_main([str(cubex), str(js)]) == 0
    assert check_main([str(cubex), "--baseline", str(js), "--max-increase", "time=1%"]) == 0
    assert time.perf_counter() - t0 < 240
