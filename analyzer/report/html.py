"""``expert-report``: one self-contained, offline HTML file with the three coupled trees.

The page embeds its stylesheet, script and data; a Content-Security-Policy
allows nothing to be fetched and only the page's own script (by hash) to run.
Names from the trace travel only inside a JSON data block whose ``<``, ``>``
and ``&`` are escaped, and the script inserts them as text, never as markup.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
from importlib import resources

import numpy as np

from analyzer.cube.files import open_cube, peek, result_kind


class ReportError(Exception):
    """No report can be made of an input (a JSON summary, a trace that cannot be analyzed, NaN values).

    A result file that cannot be read raises :class:`analyzer.cube.ResultFileError`.
    """


def load_cube(path: str):
    """A Cube from a cube file (.cubex, CUBE3, HDF5; by content), or from a trace by analysing it first."""
    head = peek(path, expected="a .cubex result or a trace")
    if head.startswith(b"\x89ELG") or path.endswith(".elg"):
        try:
            from analyzer.analyze import analyze

            return analyze(path)
        except ImportError:
            raise ReportError(f"{path}: analyzing traces is not available; run expert-analyze first") from None
        except Exception as e:
            raise ReportError(f"{path}: cannot analyze: {e}") from None
    if result_kind(head) == "json":
        raise ReportError(f"{path}: a JSON summary has no per-location detail; give the .cubex file")
    return open_cube(path, head)


def _asset(name: str) -> str:
    return resources.files("analyzer.report").joinpath("assets", name).read_text(encoding="utf-8")


def _metric_order(metrics) -> list:
    """Metrics with every parent before its children (depth-first, original order among siblings)."""
    names = {m.name for m in metrics}
    kids: dict[str | None, list] = {}
    for m in metrics:
        p = m.parent if (m.parent and m.parent in names) else None
        kids.setdefault(p, []).append(m)
    out, stack = [], list(reversed(kids.get(None, [])))
    while stack:
        m = stack.pop()
        out.append(m)
        stack.extend(reversed(kids.get(m.name, [])))
    return out


def _says_kind(label: str, *words: str) -> bool:
    """True when ``label`` already starts with one of ``words`` ("machine 0" for a machine)."""
    low = label.strip().lower()
    return any(low == w or low.startswith(w + " ") for w in words)


def _system_tree(locations) -> list[dict]:
    """machine -> node -> process (rank) -> thread, as flat nodes with parent indices.

    ``kind`` is what the node is; ``prefix`` is the word shown before its label, empty when the
    label already says it (a machine named "machine", a thread labelled "thread 0"), so no row
    reads "machine machine".  A thread's or process's own name is added in parentheses only when
    it says more than its number ("thread 0", "rank 0 thread 0" and "rank 0" say nothing more).
    """
    nodes: list[dict] = []
    index: dict[tuple, int] = {}

    def node(key: tuple, parent: int, kind: str, label: str, loc: int = -1) -> int:
        if key not in index:
            index[key] = len(nodes)
            nodes.append({"parent": parent, "kind": kind, "label": label, "loc": loc,
                          "prefix": "" if _says_kind(label, kind, "rank" if kind == "process" else kind) else kind,
                          "key": "/".join(str(k) for k in key)})
        return index[key]

    for li, loc in enumerate(locations):
        rank, thread = int(loc.rank), int(loc.thread)
        m = node(("machine", loc.machine), -1, "machine", str(loc.machine))
        n = node(("machine", loc.machine, "node", loc.node), m, "node", str(loc.node))
        pname = str(getattr(loc, "process_name", "") or "")
        plabel = f"rank {rank}" + (f" ({pname})" if pname and pname.lower() != f"rank {rank}" else "")
        p = node(("machine", loc.machine, "node", loc.node, "rank", rank), n, "process", plabel)
        tname = str(getattr(loc, "name", "") or "")
        plain = {f"thread {thread}", f"rank {rank} thread {thread}", f"{rank}.{thread}"}
        label = f"thread {thread}" + (f" ({tname})" if tname and tname.lower() not in plain else "")
        node(("machine", loc.machine, "node", loc.node, "rank", rank, "thread", thread), p, "thread", label, loc=li)
    # siblings in order of rank / thread number as users expect
    return nodes


def report_data(cube, title: str = "") -> dict:
    metrics = _metric_order(list(cube.metrics))
    midx = {m.name: i for i, m in enumerate(metrics)}
    parent = np.asarray(cube.cnode_parent, dtype=np.int64)
    region = np.asarray(cube.cnode_region, dtype=np.int64)
    regions = list(cube.regions)
    labels = [regions[int(r)].name for r in region]
    paths = list(cube.callpaths)  # row keys; a call path thousands of calls deep is a digest (Cube.callpaths)
    where = []
    for r in region:
        ri = regions[int(r)]
        f = getattr(ri, "file", "") or ""
        line = getattr(ri, "begin_line", -1)
        where.append(f"{f}:{line}" if f and line is not None and line >= 0 else f)
    values = []
    for m in metrics:
        v = np.asarray(cube.values[m.name], dtype=np.float64)
        c, l = np.nonzero(v)
        values.append({"c": c.tolist(), "l": l.tolist(), "v": v[c, l].tolist()})
    return {
        "title": title,
        "metrics": [{
            "name": m.name,
            "display": getattr(m, "display_name", "") or m.name,
            "parent": midx.get(m.parent, -1) if m.parent else -1,
            "unit": getattr(m, "unit", "") or "",
            "descr": getattr(m, "description", "") or "",
            "diag": getattr(m, "diagnosis", "") or "",
        } for m in metrics],
        "cnodes": {"parent": parent.tolist(), "label": labels, "path": paths, "where": where},
        "sys": _system_tree(list(cube.locations)),
        "nloc": len(cube.locations),
        "values": values,
    }


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_for_script(obj) -> str:
    """JSON safe inside <script>: no '<', '>' or '&' can end the element or start markup."""
    s = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    s = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", s)  # a name's undecodable byte: valid UTF-8 out
    return (s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def render(cube, title: str = "expert report") -> str:
    data = report_data(cube, title)
    try:
        payload = _json_for_script(data)
    except ValueError:
        raise ReportError("the result holds NaN or infinite values; cannot write a report") from None
    script = _asset("report.js")
    css = _asset("report.css")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    csp = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    t = html.escape(_LONE_SURROGATE.sub("\ufffd", title), quote=True)  # a file name's undecodable byte
    n_loc = len(cube.locations)
    sub = html.escape(f"{len(data['metrics'])} properties · {len(data['cnodes']['parent'])} call paths · "
                      f"{n_loc} locations")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="expert-report">
<title>{t}</title>
<style>
{css}
</style>
</head>
<body>
<header><h1>{t}</h1><span class="sub">{sub}</span>
<span class="legend">severity <span class="swatch" style="background:#eef0f2"></span>0
<span class="swatch" style="background:hsl(240,85%,52%)"></span>
<span class="swatch" style="background:hsl(120,85%,52%)"></span>
<span class="swatch" style="background:hsl(60,85%,52%)"></span>
<span class="swatch" style="background:hsl(0,85%,52%)"></span>100%</span></header>
<main>
<section class="pane"><h2>Properties</h2><div class="tree" id="metric-tree"></div></section>
<section class="pane"><h2>Call tree<span class="mode" id="call-mode"></span></h2><div class="tree" id="call-tree"></div></section>
<section class="pane"><h2>System tree<span class="mode" id="sys-mode"></span></h2><div class="tree" id="sys-tree"></div></section>
</main>
<div id="info"></div>
<noscript>This report needs JavaScript to show its trees.</noscript>
<script type="application/json" id="expert-data">{payload}</script>
<script>{script}</script>
</body>
</html>
"""


def write_report(cube, path: str, title: str | None = None) -> str:
    text = render(cube, title=title or os.path.basename(path))
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path
