"""expert-report: the HTML file, opened and clicked through in headless Chromium.

Expected values come from tests/reports/cubes.py (time 11 s in total, 3.5 s of
it MPI, 2 s of that Late Sender on main/foo/MPI_Recv at rank 1).
"""

from __future__ import annotations

import json
import re

import pytest

from analyzer.cube import write_cubex
from analyzer.report import html as report_html
from analyzer.cli.tools import report_main

from chromium_cdp import Chromium, find_chromium
from report_cubes import small_cube

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian package 'chromium' not installed (./dev setup)")

HELPERS = """
window.T = {
  row: function (tree, key) {
    var r = Array.from(document.querySelectorAll('.row')).find(function (r) {
      return r.dataset.tree === tree && r.dataset.key === key; });
    if (!r) throw new Error('no row ' + tree + ' ' + key);
    return r;
  },
  toggle: function (tree, key) { T.row(tree, key).querySelector('.toggle').click(); return true; },
  select: function (tree, key) { T.row(tree, key).querySelector('.label').click(); return true; },
  value: function (tree, key) { return +T.row(tree, key).dataset.value; },
  shown: function (tree, key) { return T.row(tree, key).querySelector('.val').textContent; },
  mode: function (tree, key) { return T.row(tree, key).dataset.mode; },
  keys: function (tree) { return Array.from(document.querySelectorAll('.row')).filter(function (r) {
      return r.dataset.tree === tree; }).map(function (r) { return r.dataset.key; }); }
};
true
"""


@pytest.fixture(scope="module")
def browser():
    b = Chromium(CHROMIUM)
    yield b
    b.close()


def open_report(browser, cube, tmp_path, name="report.html"):
    path = tmp_path / name
    report_html.write_report(cube, str(path), title="test")
    browser.open(path.as_uri())
    browser.eval(HELPERS)
    return path


def J(browser, call: str):
    return browser.eval(f"T.{call}")


@pytest.mark.runtime
@needs_chromium
def test_three_trees_coupled(browser, tmp_path):
    open_report(browser, small_cube(), tmp_path)
    # start: Time selected and collapsed (inclusive), everything collapsed
    assert J(browser, "value('metric', 'time')") == 11
    assert J(browser, "shown('metric', 'time')") == "11.000 s"
    assert J(browser, "mode('metric', 'time')") == "inclusive"
    assert J(browser, "value('metric', 'visits')") == 14
    assert J(browser, "value('call', 'main')") == 11
    assert J(browser, "value('sys', 'machine/cluster')") == 11

    # expanding Time shows its exclusive value (11 - 3.5 MPI) and the call tree follows it
    J(browser, "toggle('metric', 'time')")
    assert J(browser, "mode('metric', 'time')") == "exclusive"
    assert J(browser, "value('metric', 'time')") == 7.5
    assert J(browser, "value('metric', 'mpi')") == 3.5
    assert J(browser, "value('call', 'main')") == 7.5

    # select Late Sender: the call tree and the description follow
    J(browser, "toggle('metric', 'mpi')")
    assert J(browser, "value('metric', 'mpi')") == 1.5  # 3.5 - 2 exclusive
    J(browser, "select('metric', 'mpi_latesender')")
    assert J(browser, "value('call', 'main')") == 2
    info = browser.eval("document.getElementById('info').textContent")
    assert "Late Sender" in info and "mpi_latesender" in info
    assert "Time a receive waited for a message not yet sent" in info and "Post the send earlier" in info

    # expand main: exclusive 0 at main, foo collapsed holds the 2 s of its MPI_Recv
    J(browser, "toggle('call', 'main')")
    assert J(browser, "value('call', 'main')") == 0
    assert J(browser, "value('call', 'main/foo')") == 2
    assert J(browser, "value('call', 'main/MPI_Send')") == 0

    # select collapsed foo: the system tree shows its subtree, all on rank 1
    J(browser, "select('call', 'main/foo')")
    J(browser, "toggle('sys', 'machine/cluster')")
    assert J(browser, "value('sys', 'machine/cluster/node/n0')") == 0
    assert J(browser, "value('sys', 'machine/cluster/node/n1')") == 2
    J(browser, "toggle('sys', 'machine/cluster/node/n1')")
    J(browser, "toggle('sys', 'machine/cluster/node/n1/rank/1')")
    assert J(browser, "value('sys', 'machine/cluster/node/n1/rank/1')") == 0  # expanded process: own value
    assert J(browser, "value('sys', 'machine/cluster/node/n1/rank/1/thread/0')") == 2

    # expanding foo makes the selection exclusive (foo itself has no Late Sender)
    J(browser, "toggle('call', 'main/foo')")
    assert J(browser, "value('sys', 'machine/cluster/node/n1/rank/1/thread/0')") == 0
    J(browser, "select('call', 'main/foo/MPI_Recv')")
    assert J(browser, "value('sys', 'machine/cluster/node/n1/rank/1/thread/0')") == 2

    # back to inclusive Time (collapse it, select it): MPI_Send's 0.5 s are on rank 0 thread 0
    J(browser, "toggle('metric', 'time')")
    J(browser, "select('metric', 'time')")
    J(browser, "select('call', 'main/MPI_Send')")
    assert J(browser, "value('sys', 'machine/cluster/node/n0')") == 0.5  # collapsed node: inclusive
    J(browser, "toggle('sys', 'machine/cluster/node/n0')")
    assert J(browser, "value('sys', 'machine/cluster/node/n0')") == 0  # expanded: its own value
    J(browser, "toggle('sys', 'machine/cluster/node/n0/rank/0')")
    assert J(browser, "value('sys', 'machine/cluster/node/n0/rank/0/thread/0')") == 0.5
    assert J(browser, "value('sys', 'machine/cluster/node/n0/rank/0/thread/1')") == 0
    assert J(browser, "shown('sys', 'machine/cluster/node/n0/rank/0/thread/0')") == "500.000 ms"

    # severity colours: a node with a share is coloured, one without stays grey
    hot = browser.eval("getComputedStyle(T.row('sys','machine/cluster/node/n0/rank/0/thread/0')"
                       ".querySelector('.swatch')).backgroundColor")
    cold = browser.eval("getComputedStyle(T.row('sys','machine/cluster/node/n0/rank/0/thread/1')"
                        ".querySelector('.swatch')).backgroundColor")
    assert cold == "rgb(238, 240, 242)" and hot != cold


@pytest.mark.runtime
@needs_chromium
def test_hostile_names_are_text(browser, tmp_path):
    evil = '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
    cube = small_cube(region_names=["main", evil, "MPI_Recv&amp;<b>", "MPI_Send"], machine='"><svg onload=alert(1)>')
    path = open_report(browser, cube, tmp_path, "evil.html")
    text = path.read_text()
    assert evil not in text and "<img" not in text and "<svg" not in text
    assert browser.eval("typeof window.__pwned") == "undefined"
    J(browser, "toggle('call', 'main')")
    labels = browser.eval("Array.from(document.querySelectorAll('#call-tree .label')).map(l => l.textContent)")
    assert evil in labels
    assert browser.eval("document.querySelectorAll('img, svg, iframe, object').length") == 0
    J(browser, "toggle('call', 'main/' + " + json.dumps(evil) + ")")
    labels = browser.eval("Array.from(document.querySelectorAll('#call-tree .label')).map(l => l.textContent)")
    assert "MPI_Recv&amp;<b>" in labels
    # nothing was fetched: the page is self-contained
    assert browser.eval("performance.getEntriesByType('resource').length") == 0
    assert browser.eval("typeof window.__pwned") == "undefined"


def test_file_is_self_contained(tmp_path):
    path = tmp_path / "r.html"
    report_html.write_report(small_cube(), str(path))
    text = path.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text, re.I)
    assert "default-src 'none'" in text  # Content-Security-Policy: nothing may be loaded
    assert text.count("<script") == 2  # the data block and the inlined script


def test_cli_writes_report(tmp_path, capsys):
    cube_path = tmp_path / "r.cubex"
    write_cubex(small_cube(), str(cube_path))
    out = tmp_path / "out" / "r.html"
    assert report_main([str(cube_path), "-o", str(out)]) == 0
    assert "mpi_latesender" in out.read_text()


@pytest.mark.parametrize("content,expect", [
    (None, "no such file"),
    (b"not a cube at all", "not a readable CUBE4 file"),
    (b'{"metrics": {}}', "JSON summary"),
])
def test_cli_bad_input(tmp_path, capsys, content, expect):
    p = tmp_path / "in.cubex"
    if content is not None:
        p.write_bytes(content)
    assert report_main([str(p), "-o", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("expert-report: error:") and expect in err and str(p) in err
