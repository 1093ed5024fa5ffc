"""Compare two analysis results: ``expert-diff``.

Inputs may be our cubes (``.cubex``, or a :class:`analyzer.cube.Cube` in
memory), our JSON summaries (``expert-analyze --json``), or CUBE4 files
written by Scalasca.  Everything is first normalised into a :class:`Result`
whose keys are independent of how the file numbered things:

* metrics by unique name (``mpi_latesender``),
* call paths by their region-name path (``main/foo/MPI_Recv``),
* locations by ``(rank, thread)``.

Values follow the Cube convention: inclusive along the metric tree (a
metric's total contains its children), exclusive along the call tree (a call
path's value does not contain its callees).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field

import numpy as np


class ResultError(Exception):
    """An input cannot be used (missing file, unreadable, missing metric).  CLIs exit 2."""


Loc = tuple[int, int]  # (rank, thread)


@dataclass
class MetricSummary:
    name: str
    display_name: str
    unit: str
    parent: str | None
    description: str
    diagnosis: str
    total: float
    per_callpath: dict[str, float]
    per_location: dict[Loc, float]


@dataclass
class Result:
    """One analysis result, keyed by names rather than by file-local ids."""

    source: str  # file name or "<cube>"
    kind: str  # "cube" or "json"
    metrics: dict[str, MetricSummary]  # metric-tree order (parents before children)
    cube: object | None = None  # the Cube when the input was one (needed for a difference cube)

    def metric(self, name: str, why: str = "") -> MetricSummary:
        try:
            return self.metrics[name]
        except KeyError:
            avail = ", ".join(self.metrics) or "none"
            what = f" (named by {why})" if why else ""
            raise ResultError(f"{self.source}: no metric {name!r}{what}; metrics present: {avail}") from None


# --------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------
def format_loc(loc: Loc) -> str:
    return f"rank {loc[0]} thread {loc[1]}"


_INTS = re.compile(r"-?\d+")


def parse_loc_key(key: str, source: str) -> Loc:
    """A JSON summary's location key (``"0.1"``, ``"0:1"``, ``"rank 0 thread 1"``, ``"3"``) -> (rank, thread)."""
    nums = _INTS.findall(str(key))
    if len(nums) == 1:
        return int(nums[0]), 0
    if len(nums) >= 2:
        return int(nums[-2]), int(nums[-1])
    raise ResultError(f"{source}: location key {key!r} names no rank/thread")


def cube_locations(cube) -> list[Loc]:
    return [(int(loc.rank), int(loc.thread)) for loc in cube.locations]


def from_cube(cube, source: str = "<cube>") -> Result:
    locs = cube_locations(cube)
    metrics: dict[str, MetricSummary] = {}
    for m in cube.metrics:
        per_loc: dict[Loc, float] = {}
        for loc, v in zip(locs, cube.per_location(m.name).tolist()):
            per_loc[loc] = per_loc.get(loc, 0.0) + float(v)
        metrics[m.name] = MetricSummary(
            name=m.name,
            display_name=m.display_name or m.name,
            unit=m.unit or "",
            parent=m.parent or None,
            description=m.description or "",
            diagnosis=m.diagnosis or "",
            total=float(cube.total(m.name)),
            per_callpath={str(k): float(v) for k, v in cube.per_callpath(m.name).items()},
            per_location=per_loc,
        )
    return Result(source=source, kind="cube", metrics=metrics, cube=cube)


def from_json_summary(doc, source: str) -> Result:
    if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict):
        raise ResultError(f"{source}: not a JSON summary (expected an object with a 'metrics' object)")
    metrics: dict[str, MetricSummary] = {}
    for name, m in doc["metrics"].items():
        if not isinstance(m, dict):
            raise ResultError(f"{source}: metrics.{name} is not an object")
        try:
            per_cp = {str(k): float(v) for k, v in (m.get("per_callpath") or {}).items()}
            per_loc: dict[Loc, float] = {}
            for k, v in (m.get("per_location") or {}).items():
                loc = parse_loc_key(k, source)
                per_loc[loc] = per_loc.get(loc, 0.0) + float(v)
            total = float(m["total"]) if "total" in m else float(sum(per_cp.values()))
        except (TypeError, ValueError) as e:
            raise ResultError(f"{source}: metrics.{name}: non-numeric value ({e})") from None
        metrics[name] = MetricSummary(
            name=name,
            display_name=str(m.get("display_name") or name),
            unit=str(m.get("unit") or ""),
            parent=m.get("parent") or None,
            description=str(m.get("description") or ""),
            diagnosis=str(m.get("diagnosis") or ""),
            total=total,
            per_callpath=per_cp,
            per_location=per_loc,
        )
    return Result(source=source, kind="json", metrics=metrics)


def read_cube_file(path: str):
    """Read a ``.cubex`` (ours or Scalasca's) with the project's reader; ResultError on failure."""
    try:
        from analyzer.cube import read_cubex
    except ImportError as e:  # pragma: no cover - the cube module is part of the package
        raise ResultError(f"{path}: cannot read CUBE files: {e}") from None
    try:
        return read_cubex(path)
    except ResultError:
        raise
    except Exception as e:  # the reader's own errors: report them in one line
        raise ResultError(f"{path}: not a readable CUBE4 file: {e}") from None


def load_result(src) -> Result:
    """A Result from a Cube, a Result, a JSON-summary dict, or a path to a .cubex / .json file."""
    if isinstance(src, Result):
        return src
    if hasattr(src, "values") and hasattr(src, "metrics") and hasattr(src, "cnode_parent"):
        return from_cube(src)
    if isinstance(src, dict):
        return from_json_summary(src, "<json>")
    path = os.fspath(src)
    if not os.path.exists(path):
        raise ResultError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ResultError(f"{path}: is a directory, expected a .cubex or .json result")
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError as e:
        raise ResultError(f"{path}: cannot read: {e.strerror}") from None
    if not head:
        raise ResultError(f"{path}: empty file")
    if head.lstrip()[:1] in (b"{", b"["):
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ResultError(f"{path}: invalid JSON: {e}") from None
        return from_json_summary(doc, path)
    cube = read_cube_file(path)
    return from_cube(cube, source=path)


# --------------------------------------------------------------------------
# Differences
# --------------------------------------------------------------------------
@dataclass
class Change:
    key: str  # call path or "rank R thread T"
    base: float
    new: float

    @property
    def delta(self) -> float:
        return self.new - self.base

    @property
    def rel(self) -> float:
        return relative_change(self.base, self.new)


def relative_change(base: float, new: float) -> float:
    """(new - base) / |base|; +inf for growth from zero, 0 when both are zero."""
    if base == 0.0:
        return 0.0 if new == 0.0 else math.copysign(math.inf, new)
    return (new - base) / abs(base)


@dataclass
class MetricChange:
    name: str
    display_name: str
    unit: str
    base: float
    new: float
    presence: str  # "both", "base only", "new only"
    callpaths: list[Change] = field(default_factory=list)  # changed ones, largest |delta| first
    locations: list[Change] = field(default_factory=list)
    changed: bool = False  # moved by more than the floor, anywhere, or present on one side only

    @property
    def delta(self) -> float:
        return self.new - self.base

    @property
    def rel(self) -> float:
        return relative_change(self.base, self.new)


@dataclass
class Diff:
    base: Result
    new: Result
    metrics: list[MetricChange]

    @property
    def changed(self) -> list[MetricChange]:
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


def _changes(base: dict, new: dict, floor: float, fmt_key) -> list[Change]:
    out = []
    for k in list(base) + [k for k in new if k not in base]:
        b, n = float(base.get(k, 0.0)), float(new.get(k, 0.0))
        if abs(n - b) > floor:
            out.append(Change(fmt_key(k), b, n))
    out.sort(key=lambda c: (-abs(c.delta), c.key))
    return out


def diff(base, new, floor: float = 0.0) -> Diff:
    """Per-metric changes between two results; call paths and locations whose value moved by more than ``floor``."""
    b, n = load_result(base), load_result(new)
    names = list(n.metrics) + [m for m in b.metrics if m not in n.metrics]
    out = []
    for name in names:
        mb, mn = b.metrics.get(name), n.metrics.get(name)
        meta = mn or mb
        presence = "both" if (mb and mn) else ("new only" if mn else "base only")
        bt = mb.total if mb else 0.0
        nt = mn.total if mn else 0.0
        mc = MetricChange(name, meta.display_name, meta.unit, bt, nt, presence)
        mc.callpaths = _changes(mb.per_callpath if mb else {}, mn.per_callpath if mn else {}, floor, str)
        mc.locations = _changes(mb.per_location if mb else {}, mn.per_location if mn else {}, floor, format_loc)
        mc.changed = presence != "both" or abs(mc.delta) > floor or bool(mc.callpaths) or bool(mc.locations)
        out.append(mc)
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
def diff_cube(base, new):
    """A Cube holding new - base over the union of metrics, call paths and locations (both inputs must be cubes)."""
    from analyzer.cube import Cube

    b, n = load_result(base), load_result(new)
    for r in (b, n):
        if r.cube is None:
            raise ResultError(f"{r.source}: a difference cube needs cube inputs (.cubex), not a JSON summary")
    cb, cn = b.cube, n.cube

    # metrics: new's order, then base-only ones (their parents exist in base, so in the union)
    metrics = list(cn.metrics) + [m for m in cb.metrics if m.name not in n.metrics]

    # call tree: union of region-name paths, as tuples so names containing "/" stay intact
    def tuples(cube):
        names = [r.name for r in cube.regions]
        parent = np.asarray(cube.cnode_parent)
        region = np.asarray(cube.cnode_region)
        memo: dict[int, tuple] = {}

        def path(c: int) -> tuple:
            if c not in memo:
                p = int(parent[c])
                memo[c] = (path(p) if p >= 0 else ()) + (names[int(region[c])],)
            return memo[c]

        return [path(c) for c in range(len(parent))]

    tb, tn = tuples(cb), tuples(cn)
    children: dict[tuple, list[tuple]] = {(): []}
    for p in tn + tb:
        for i in range(1, len(p) + 1):
            node = p[:i]
            if node not in children:
                children[node] = []
                children[node[:-1]].append(node)
    order: list[tuple] = []
    stack = list(reversed(children[()]))
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(children[node]))
    index = {p: i for i, p in enumerate(order)}

    region_info = {}
    for cube in (cn, cb):
        for r in cube.regions:
            region_info.setdefault(r.name, r)
    region_names = list(region_info)
    region_id = {name: i for i, name in enumerate(region_names)}
    cnode_parent = np.array([index[p[:-1]] if len(p) > 1 else -1 for p in order], dtype=np.int64)
    cnode_region = np.array([region_id[p[-1]] for p in order], dtype=np.int64)

    loc_info = {}
    for cube in (cn, cb):
        for li in cube.locations:
            loc_info.setdefault((int(li.rank), int(li.thread)), li)
    loc_keys = sorted(loc_info)
    loc_index = {k: i for i, k in enumerate(loc_keys)}

    def scatter(cube, paths, name) -> np.ndarray:
        out = np.zeros((len(order), len(loc_keys)))
        if name not in cube.values:
            return out
        vals = np.asarray(cube.values[name], dtype=np.float64)
        rows = np.array([index[p] for p in paths], dtype=np.int64)
        cols = np.array([loc_index[(int(li.rank), int(li.thread))] for li in cube.locations], dtype=np.int64)
        np.add.at(out, (rows[:, None], cols[None, :]), vals)
        return out

    values = {m.name: scatter(cn, tn, m.name) - scatter(cb, tb, m.name) for m in metrics}
    attrs = {"expert.diff.base": b.source, "expert.diff.new": n.source}
    return Cube(metrics, [region_info[nm] for nm in region_names], cnode_parent, cnode_region,
                [loc_info[k] for k in loc_keys], values, attrs=attrs, strict=False)
