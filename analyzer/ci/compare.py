"""Compare two analysis results: ``expert-diff``.

Inputs may be our cubes (``.cubex``, CUBE3, HDF5, or a
:class:`analyzer.cube.Cube` in memory), our JSON summaries (``expert-analyze
--json``), or CUBE4 files written by Scalasca or Score-P.  Files are read by
content (:mod:`analyzer.cube.files`), summarised by names and compared with
the one comparator, :func:`analyzer.cube.compare.compare`: metrics by unique
name, call paths by region-name path (``main/foo/MPI_Recv``), locations by
``(rank, thread)``.  This module adds what the diff tool shows: the changes
above a floor, largest first, as text or JSON, and the difference cube.

Values follow the Cube convention: inclusive along the metric tree (a
metric's total contains its children), exclusive along the call tree (a call
path's value does not contain its callees).
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

import numpy as np

from analyzer.cube import Cube, CubeError, RegionInfo
from analyzer.cube.compare import Change, MetricDiff, Summary, compare, format_loc, summarize, summary_from_json
from analyzer.cube.files import read_result


class ResultError(Exception):
    """An input cannot be used (missing file, unreadable, missing metric).  CLIs exit 2."""


# --------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------
def load_result(src) -> Summary:
    """A Summary from a Cube, a Summary, a JSON-summary dict, or a path to a result file (read by content)."""
    if isinstance(src, Summary):
        return src
    try:
        if isinstance(src, Cube):
            return summarize(src)
        if isinstance(src, dict):
            return summary_from_json(src, "<json>")
        path = os.fspath(src)
        data = read_result(path, expected="a .cubex or .json result")
        return summarize(data, source=path) if isinstance(data, Cube) else summary_from_json(data, path)
    except CubeError as e:
        raise ResultError(str(e)) from None


# --------------------------------------------------------------------------
# Differences
# --------------------------------------------------------------------------
@dataclass
class Diff:
    base: Summary
    new: Summary
    metrics: list[MetricDiff]

    @property
    def changed(self) -> list[MetricDiff]:
        return [m for m in self.metrics if m.changed]

    def to_dict(self) -> dict:
        def ch(c: Change) -> dict:
            return {"key": c.key, "base": c.base, "new": c.new, "delta": c.delta}

        return {
            "base": self.base.source,
            "new": self.new.source,
            "metrics": [
                {
                    "name": m.name,
                    "unit": m.unit,
                    "presence": m.presence,
                    "base": m.base,
                    "new": m.new,
                    "delta": m.delta,
                    "rel": None if math.isinf(m.rel) else m.rel,
                    "callpaths": [ch(c) for c in m.callpaths],
                    "locations": [ch(c) for c in m.locations],
                }
                for m in self.metrics
            ],
        }


def _largest_first(changes: list[Change], fmt_key) -> list[Change]:
    out = [Change(fmt_key(c.key), float(c.base), float(c.new)) for c in changes]
    out.sort(key=lambda c: (-abs(c.delta), c.key))
    return out


def diff(base, new, floor: float = 0.0) -> Diff:
    """Per-metric changes between two results; call paths and locations whose value moved by more than ``floor``."""
    b, n = load_result(base), load_result(new)
    names = list(n.metrics) + [m for m in b.metrics if m not in n.metrics]
    out = compare(b, n, atol=floor, names=names)
    for m in out:
        m.base, m.new = float(m.base), float(m.new)
        m.callpaths = _largest_first(m.callpaths, str)
        m.locations = _largest_first(m.locations, format_loc)
    return Diff(b, n, out)


# --------------------------------------------------------------------------
# Text output
# --------------------------------------------------------------------------
_TIME_UNITS = {"sec", "secs", "s", "seconds", "second"}


def is_time_unit(unit: str) -> bool:
    return unit.strip().lower() in _TIME_UNITS


def format_value(v: float, unit: str) -> str:
    """A value with a readable unit: seconds scaled to s/ms/us, bytes to B/KiB/MiB, counts plain."""
    u = unit.strip().lower()
    if u in _TIME_UNITS:
        a = abs(v)
        if a == 0 or a >= 1:
            return f"{v:.3f} s"
        if a >= 1e-3:
            return f"{v * 1e3:.3f} ms"
        return f"{v * 1e6:.3f} us"
    if u in ("bytes", "byte", "b"):
        a = abs(v)
        for scale, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if a >= scale:
                return f"{v / scale:.2f} {name}"
        return f"{v:g} B"
    if float(v).is_integer():
        return f"{int(v)}" + (f" {unit}" if unit and u != "occ" else "")
    return f"{v:.6g}" + (f" {unit}" if unit and u != "occ" else "")


def format_rel(rel: float) -> str:
    if math.isinf(rel):
        return "new" if rel > 0 else "-inf"
    return f"{rel * 100:+.1f}%"


def format_delta(v: float, unit: str) -> str:
    s = format_value(v, unit)
    return s if s.startswith("-") else "+" + s


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
    return [fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]


def format_diff(d: Diff, top: int = 10, all_metrics: bool = False) -> str:
    lines = [f"base: {d.base.source}", f"new:  {d.new.source}", ""]
    shown = d.metrics if all_metrics else d.changed
    if not shown:
        lines.append("no metric changed")
        return "\n".join(lines)
    rows = []
    for m in shown:
        note = "" if m.presence == "both" else f"  ({m.presence})"
        rows.append([m.name + note, format_value(m.base, m.unit), format_value(m.new, m.unit),
                     format_delta(m.delta, m.unit), format_rel(m.rel)])
    lines += _table(rows, ["metric", "base", "new", "change", "rel"])
    for m in shown:
        if not (m.callpaths or m.locations):
            continue
        for title, items in (("call path", m.callpaths), ("location", m.locations)):
            if not items:
                continue
            lines += ["", f"{m.name}: changes per {title}" + (f" (largest {top} of {len(items)})" if len(items) > top else "")]
            lines += _table(
                [[c.key, format_value(c.base, m.unit), format_value(c.new, m.unit), format_delta(c.delta, m.unit),
                  format_rel(c.rel)] for c in items[:top]],
                [title, "base", "new", "change", "rel"],
            )
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Difference cube
# --------------------------------------------------------------------------
#: region of the synthetic root a difference cube gets when its inputs have several roots between them
DIFF_ROOT = "<difference root>"


def diff_cube(base, new):
    """A Cube holding new - base over the union of metrics, call paths and locations (both inputs must be cubes)."""
    b, n = load_result(base), load_result(new)
    for r in (b, n):
        if r.cube is None:
            raise ResultError(f"{r.source}: a difference cube needs cube inputs (.cubex), not a JSON summary")
    cb, cn = b.cube, n.cube

    # metrics: new's order, then base-only ones (their parents exist in base, so in the union); a difference
    # of counts can be negative, so every metric is FLOAT (CUBE writes INTEGER as UINT64)
    metrics = [dataclasses.replace(m, dtype="FLOAT") if m.dtype != "FLOAT" else m
               for m in list(cn.metrics) + [m for m in cb.metrics if m.name not in n.metrics]]

    # call tree: union by (parent in the union, region name), so names containing "/" stay intact and a
    # deep tree costs linear time and memory (no path is ever spelt out); new's nodes first, then base's
    union_parent: list[int] = []
    union_name: list[str] = []
    children: list[list[int]] = []
    roots: list[int] = []
    key_of: dict[tuple[int, str], int] = {}

    def merge(cube) -> np.ndarray:
        names = [r.name for r in cube.regions]
        parent = np.asarray(cube.cnode_parent, np.int64)
        region = np.asarray(cube.cnode_region, np.int64)
        where = np.full(len(parent), -1, np.int64)
        for c in cube.dfs_order():  # parents before children
            p = int(parent[c])
            up = int(where[p]) if p >= 0 else -1
            key = (up, names[int(region[c])])
            u = key_of.get(key)
            if u is None:
                u = key_of[key] = len(union_parent)
                union_parent.append(up)
                union_name.append(key[1])
                children.append([])
                (children[up] if up >= 0 else roots).append(u)
            where[c] = u
        return where

    wn, wb = merge(cn), merge(cb)
    synthetic = len(roots) > 1  # CUBE readers need one root: a synthetic one above several
    order: list[int] = []
    stack = list(reversed(roots))
    while stack:
        u = stack.pop()
        order.append(u)
        stack.extend(reversed(children[u]))
    index = np.empty(len(order), np.int64)
    index[np.asarray(order, np.int64)] = np.arange(len(order)) + (1 if synthetic else 0)

    region_info = {}
    for cube in (cn, cb):
        for r in cube.regions:
            region_info.setdefault(r.name, r)
    if synthetic:
        region_info.setdefault(DIFF_ROOT, RegionInfo(name=DIFF_ROOT))
    region_names = list(region_info)
    region_id = {name: i for i, name in enumerate(region_names)}
    parent_of = [index[union_parent[u]] if union_parent[u] >= 0 else (0 if synthetic else -1) for u in order]
    cnode_parent = np.array(([-1] if synthetic else []) + parent_of, dtype=np.int64)
    cnode_region = np.array(([region_id[DIFF_ROOT]] if synthetic else []) + [region_id[union_name[u]] for u in order],
                            dtype=np.int64)
    n_cnodes = len(cnode_parent)

    loc_info = {}
    for cube in (cn, cb):
        for li in cube.locations:
            loc_info.setdefault((int(li.rank), int(li.thread)), li)
    loc_keys = sorted(loc_info)
    loc_index = {k: i for i, k in enumerate(loc_keys)}

    def scatter(cube, where, name) -> np.ndarray:
        out = np.zeros((n_cnodes, len(loc_keys)))
        if name not in cube.values:
            return out
        vals = np.asarray(cube.values[name], dtype=np.float64)
        rows = index[where]
        cols = np.array([loc_index[(int(li.rank), int(li.thread))] for li in cube.locations], dtype=np.int64)
        np.add.at(out, (rows[:, None], cols[None, :]), vals)
        return out

    values = {m.name: scatter(cn, wn, m.name) - scatter(cb, wb, m.name) for m in metrics}
    attrs = {"expert.diff.base": b.source, "expert.diff.new": n.source}
    return Cube(metrics, [region_info[nm] for nm in region_names], cnode_parent, cnode_region,
                [loc_info[k] for k in loc_keys], values, attrs=attrs, strict=False)
