"""expert-report in headless Chromium at two window sizes, every tree fully expanded: nothing overlaps, one
unit per column, no negative zero, no doubled labels.  Checked on the DOM; the screenshots go to the test's
tmp_path (and to $EXPERT_SCREENSHOTS when set) for a person to look at."""

from __future__ import annotations

import base64
import os
import re

import numpy as np
import pytest

from analyzer.cube import Cube, LocationInfo, MetricInfo, RegionInfo
from analyzer.report import html as report_html

from chromium_cdp import Chromium, find_chromium

CHROMIUM = find_chromium()
pytestmark = [pytest.mark.runtime,
              pytest.mark.skipif(CHROMIUM is None, reason="Debian package 'chromium' not installed (./dev setup)")]

SIZES = [(1400, 900), (900, 600)]


def awkward_cube() -> Cube:
    """Times from 2 s down to 40 us in one column, a parent whose exclusive value is a float rounding
    residue (0.3 - 0.1 - 0.2 < 0), many properties (a tall tree), and the default names of our runtime:
    machine "machine", threads named "thread N"."""
    metrics = [MetricInfo("time", "Time", None, "sec", "Total time"),
               MetricInfo("part_a", "Part A", "time", "sec", "a part"),
               MetricInfo("part_b", "Part B", "time", "sec", "another part")]
    for k in range(40):
        metrics.append(MetricInfo(f"extra{k}", f"Extra property {k} with a long display name", "part_b", "sec", "x"))
    metrics.append(MetricInfo("visits", "Visits", None, "occ", "visits", dtype="INTEGER"))
    regions = [RegionInfo("main"), RegionInfo("compute"), RegionInfo("MPI_Recv", paradigm="mpi")]
    parent, region = np.array([-1, 0, 0]), np.array([0, 1, 2])
    locs = [LocationInfo("machine", "node0", r, t, name=f"thread {t}", process_name=f"rank {r}")
            for r in range(2) for t in range(2)]
    C, L = 3, len(locs)
    z = np.zeros((C, L))
    time, a, b = z.copy(), z.copy(), z.copy()
    time[0, 0], a[0, 0], b[0, 0] = 0.3, 0.1, 0.2  # exclusive time at main, rank 0: 0.3 - 0.1 - 0.2 = -2.8e-17
    time[1, 1] = b[1, 1] = 2.0
    time[2, 2] = b[2, 2] = 0.003
    time[2, 3] = b[2, 3] = 40e-6
    values = {"time": time, "part_a": a, "part_b": b, "visits": np.ones((C, L))}
    return Cube(metrics, regions, parent, region, locs, values)


EXPAND_ALL = """
(function () {
  var S = window.expertReport.state, D = JSON.parse(document.getElementById('expert-data').textContent);
  D.metrics.forEach(function (m, i) { S.open.metric[i] = true; });
  D.cnodes.parent.forEach(function (p, i) { S.open.call[i] = true; });
  D.sys.forEach(function (s, i) { S.open.sys[i] = true; });
  S.sel.metric = D.metrics.findIndex(function (m) { return m.name === 'part_b'; });
  S.sel.call = 2;  // main/MPI_Recv, expanded: itself
  window.expertReport.render();
  return true;
})()
"""

FACTS = """
(function () {
  function rect(e) { var r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }
  var out = {boxes: [], trees: {}, info_top_element_inside: false};
  document.querySelectorAll('section.pane, #info').forEach(function (e) { out.boxes.push(rect(e)); });
  ['metric-tree', 'call-tree', 'sys-tree'].forEach(function (id) {
    var t = document.getElementById(id);
    out.trees[id] = {
      vals: Array.from(t.querySelectorAll('.val')).map(function (e) { return e.textContent; }),
      pcts: Array.from(t.querySelectorAll('.pct')).map(function (e) { return e.textContent; }),
      labels: Array.from(t.querySelectorAll('.label')).map(function (e) { return e.textContent; }),
      scrolls: t.scrollHeight > t.clientHeight,
      pane_bottom: t.parentElement.getBoundingClientRect().bottom
    };
  });
  var info = document.getElementById('info');
  out.info_top = info.getBoundingClientRect().top;
  info.scrollIntoView({block: 'end'});  // below the fold in a narrow window
  var r = info.getBoundingClientRect();
  var hit = document.elementFromPoint((r.left + r.right) / 2, r.top + 12);
  out.info_top_element_inside = !!hit && info.contains(hit);
  out.overflow_x = document.documentElement.scrollWidth > document.documentElement.clientWidth;
  out.info_text = info.textContent;
  window.scrollTo(0, 0);
  return out;
})()
"""


def overlaps(a, b) -> bool:
    return a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    path = tmp_path_factory.mktemp("layout") / "report.html"
    report_html.write_report(awkward_cube(), str(path), title="layout")
    b = Chromium(CHROMIUM)
    b.open(path.as_uri())
    yield b, path.parent
    b.close()


@pytest.mark.parametrize("width,height", SIZES)
def test_expanded_trees_stay_in_their_panes(page, width, height):
    b, where = page
    b.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                  "mobile": False})
    b.eval(EXPAND_ALL)
    f = b.eval(FACTS)
    shot = base64.b64decode(b.send("Page.captureScreenshot", {"format": "png"})["data"])  # what a person sees
    for d in filter(None, [str(where), os.environ.get("EXPERT_SCREENSHOTS")]):
        with open(os.path.join(d, f"report_{width}x{height}.png"), "wb") as fh:
            fh.write(shot)
    # the three panes and the description never overlap; a long tree scrolls inside its pane
    boxes = f["boxes"]
    assert len(boxes) == 4
    for i in range(4):
        for j in range(i + 1, 4):
            assert not overlaps(boxes[i], boxes[j]), (boxes[i], boxes[j])
    assert f["trees"]["metric-tree"]["scrolls"]
    assert all(t["pane_bottom"] <= f["info_top"] + 0.5 for t in f["trees"].values())
    assert f["info_top_element_inside"]  # what is drawn at the top of the description is the description
    assert not f["overflow_x"]  # nothing wider than the window


@pytest.mark.parametrize("width,height", SIZES[:1])
def test_one_unit_per_column_no_negative_zero_no_doubled_labels(page, width, height):
    b, _ = page
    b.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                  "mobile": False})
    b.eval(EXPAND_ALL)
    f = b.eval(FACTS)
    for tree, t in f["trees"].items():
        units = {m.group(1) for v in t["vals"] if (m := re.search(r"\d (s|ms|us)$", v))}
        assert len(units) == 1, (tree, t["vals"])
        for text in t["vals"] + t["pcts"]:
            assert not re.match(r"-0(\.0+)?(?![\d.])", text), (tree, text)
        for label in t["labels"]:
            words = label.lower().split()
            assert all(x != y for x, y in zip(words, words[1:])), label
    assert "-0.0" not in f["info_text"]
    metric = f["trees"]["metric-tree"]
    time_row = metric["labels"].index("Time")  # expanded: 0.3 - 0.1 - 0.2 is no "-0.000 us"
    assert metric["vals"][time_row] == "0.000 s" and metric["pcts"][time_row] == "0.0%"
    assert metric["vals"][metric["labels"].index("Part B")] == "2.203 s"
    assert "12" in metric["vals"]  # visits: a count, no unit
    # Part B over the call tree: 0.2 s, 2 s and 3.04 ms in seconds, with decimals enough for the smallest
    assert f["trees"]["call-tree"]["vals"] == ["0.2000 s", "2.0000 s", "0.0030 s"]
    # ... and at MPI_Recv over the locations (every node expanded: its own value): 3 ms and 40 us, both in ms
    assert f["trees"]["sys-tree"]["vals"] == ["0.000 ms", "0.000 ms", "0.000 ms", "0.000 ms", "0.000 ms",
                                              "0.000 ms", "3.000 ms", "0.040 ms"]
    assert f["trees"]["sys-tree"]["labels"] == ["machine", "node node0", "rank 0", "thread 0", "thread 1",
                                                "rank 1", "thread 0", "thread 1"]
