"""Comparing two results by identity: the one cube comparator.

A result -- a :class:`Cube` (ours or read from Scalasca / Score-P files) or a
JSON summary (``expert-analyze --json``) -- is first summarised by names
that do not depend on how a file numbered things (:class:`Summary`):

* metrics by unique name (``mpi_latesender``),
* call paths by their region-name path (``main/foo/MPI_Recv``; call sites
  with the same path are added),
* locations by ``(rank, thread)``.

:func:`compare` matches two summaries and lists, per metric, the values
that differ: the total, per call path, per location and (for cubes, on
request) per (call path, location) cell.  Entries missing on one side count
as zero.  Two values differ unless ``|x - y| <= atol + rtol * max(|x|, |y|)``.

Everything that compares results is expressed through it: ``expert-diff``
and ``expert-check`` (:mod:`analyzer.ci`), and the readable difference lists
:func:`diff_cubes` (tests, round trips) and :func:`compare_json`.

Values follow the cube's convention: inclusive along the metric tree (a
metric's total contains its children's), exclusive along the call tree.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .model import Cube, CubeFormatError

Loc = tuple[int, int]  # (rank, thread)


# --------------------------------------------------------------------------
# Summaries: a result keyed by names
# --------------------------------------------------------------------------
class PerLocation(Mapping):
    """A cube metric's ``(rank, thread) -> value`` as one float64 per location, read through the summary's
    one location index: a dict per metric cost about 100 bytes per location and metric (a hostile cube of
    many metrics and locations took hundreds of MiB)."""

    __slots__ = ("_index", "values")

    def __init__(self, index: dict[Loc, int], values: np.ndarray):
        self._index, self.values = index, values

    def __getitem__(self, loc: Loc) -> float:
        return float(self.values[self._index[loc]])

    def __iter__(self):
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        return f"PerLocation({dict(self)!r})"


@dataclass(slots=True)  # slots: a cube may declare a hundred thousand metrics
class MetricSummary:
    name: str
    display_name: str
    unit: str
    parent: str | None
    description: str
    diagnosis: str
    total: float
    per_callpath: dict[str, float]  # cubes: the nonzero call paths only (a missing one is 0)
    per_location: Mapping[Loc, float]  # cubes: a PerLocation over every location
    #: cubes summarised with ``cells=True``: [len(Summary.callpaths), len(Summary.locations)]
    cells: np.ndarray | None = None


@dataclass
class Summary:
    """One analysis result, keyed by names rather than by file-local ids."""

    source: str  # file name, "<cube>" or "<json>"
    kind: str  # "cube" or "json"
    metrics: dict[str, MetricSummary]  # metric-tree order (parents before children)
    cube: Cube | None = None  # the Cube when the input was one
    callpaths: list[str] | None = None  # cubes: every call path of the call tree, in cnode order
    locations: list[Loc] | None = None  # cubes: every (rank, thread), in location order


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
    raise CubeFormatError(f"{source}: location key {key!r} names no rank/thread")


def summarize(cube: Cube, source: str = "<cube>", cells: bool = False) -> Summary:
    """A cube by names; with ``cells`` also every metric's values per (call path, location).

    A metric is built dense one at a time (the cube's values keep at most one); what stays is, per metric,
    its nonzero call paths and one float64 per location, and nothing for a metric without values."""
    locs = [(int(loc.rank), int(loc.thread)) for loc in cube.locations]
    paths = list(dict.fromkeys(cube.callpaths))
    index = {loc: i for i, loc in enumerate(dict.fromkeys(locs))}
    column = np.array([index[loc] for loc in locs], np.int64)
    zeros = np.zeros(len(index))
    zeros.flags.writeable = False
    metrics: dict[str, MetricSummary] = {}
    for m in cube.metrics:
        if m.name in cube.values:
            # locations with the same (rank, thread) added in location order, as a dict would
            per_loc = np.bincount(column, weights=cube.per_location(m.name), minlength=len(index))
            total = float(cube.total(m.name))
            per_cp = {str(k): float(v) for k, v in cube.per_callpath(m.name, nonzero=True).items()}  # 0 if absent
        else:  # no values stored: all zero, and no pass over cnodes x locations
            per_loc, total, per_cp = zeros, 0.0, {}
        metrics[m.name] = MetricSummary(
            name=m.name,
            display_name=m.display_name or m.name,
            unit=m.unit or "",
            parent=m.parent or None,
            description=m.description or "",
            diagnosis=m.diagnosis or "",
            total=total,
            per_callpath=per_cp,
            per_location=PerLocation(index, per_loc),
        )
    out = Summary(source, "cube", metrics, cube, paths, list(index))
    if cells:
        _add_cells(out, cube, locs)
    return out


def _add_cells(s: Summary, cube: Cube, locs: list[Loc]) -> None:
    """Values per (call path, location): cnodes with the same path and locations with the same key are added."""
    row = {p: i for i, p in enumerate(s.callpaths)}
    col = {k: i for i, k in enumerate(s.locations)}
    rows = np.array([row[p] for p in cube.callpaths], np.int64)
    cols = [col[k] for k in locs]
    for name, m in s.metrics.items():
        vals = np.asarray(cube.values[name], dtype=np.float64)
        if len(row) < rows.size:  # call sites with the same path: add their rows, in cnode order
            by_path = np.zeros((len(row), vals.shape[1]))
            np.add.at(by_path, rows, vals)
            vals = by_path
        if len(col) < len(cols):  # locations with the same (rank, thread): add their columns
            by_loc = np.zeros((vals.shape[0], len(col)))
            for j, c in enumerate(cols):
                by_loc[:, c] += vals[:, j]
            vals = by_loc
        m.cells = vals


def _number(v):
    """A JSON number as the file gives it (int or float); anything else is converted to float or refused,
    as is a number without a finite float value."""
    if isinstance(v, bool):
        raise ValueError(f"{v!r} is not a number")
    if not isinstance(v, (int, float)):
        v = float(v)
    if not math.isfinite(float(v)):
        raise ValueError(f"{v!r} is not a finite number")
    return v


def _object(m: dict, key: str, name: str, source: str) -> dict:
    v = m.get(key) or {}
    if not isinstance(v, dict):
        raise CubeFormatError(f"{source}: metrics.{name}.{key} is a {type(v).__name__}, not an object")
    return v


def summary_from_json(doc, source: str) -> Summary:
    """A JSON summary document by names, its numbers as given (shape errors raise :class:`CubeFormatError`)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict):
        raise CubeFormatError(f"{source}: not a JSON summary (expected an object with a 'metrics' object)")
    metrics: dict[str, MetricSummary] = {}
    for name, m in doc["metrics"].items():
        if not isinstance(m, dict):
            raise CubeFormatError(f"{source}: metrics.{name} is not an object")
        for key in ("display_name", "unit", "parent", "description", "diagnosis"):
            if m.get(key) is not None and not isinstance(m[key], str):
                raise CubeFormatError(f"{source}: metrics.{name}.{key} is a {type(m[key]).__name__}, not a string")
        cp_doc, loc_doc = _object(m, "per_callpath", name, source), _object(m, "per_location", name, source)
        try:
            per_cp = {str(k): _number(v) for k, v in cp_doc.items()}
            per_loc: dict[Loc, float] = {}
            for k, v in loc_doc.items():
                loc = parse_loc_key(k, source)
                per_loc[loc] = per_loc[loc] + _number(v) if loc in per_loc else _number(v)
            total = _number(m["total"]) if "total" in m else float(sum(per_cp.values()))
        except CubeFormatError:
            raise
        except (TypeError, ValueError, OverflowError) as e:
            raise CubeFormatError(f"{source}: metrics.{name}: non-numeric value ({e})") from None
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
    return Summary(source, "json", metrics)


# --------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------
def relative_change(base: float, new: float) -> float:
    """(new - base) / |base|; +inf for growth from zero, 0 when both are zero."""
    if base == 0.0:
        return 0.0 if new == 0.0 else math.copysign(math.inf, new)
    return (new - base) / abs(base)


@dataclass(slots=True)
class Change:
    """One value on both sides: ``key`` is a call path, a location or a (call path, location) cell.

    Values are as the summaries hold them: floats from cubes, the numbers
    of the file from JSON summaries (0 where a side lacks the entry).
    """

    key: object
    base: float
    new: float

    @property
    def delta(self) -> float:
        return self.new - self.base

    @property
    def rel(self) -> float:
        return relative_change(self.base, self.new)


@dataclass(slots=True)
class MetricDiff(Change):
    """One metric on both sides: ``base`` and ``new`` are its totals (0 on a side that lacks it)."""

    display_name: str = ""
    unit: str = ""
    presence: str = "both"  # "both", "base only", "new only"
    total_differs: bool = False
    callpaths: list[Change] = field(default_factory=list)  # those that differ, in key order
    locations: list[Change] = field(default_factory=list)
    cells: list[Change] = field(default_factory=list)  # with cells=True: (path, loc) keys, sorted
    base_info: MetricSummary | None = None
    new_info: MetricSummary | None = None

    @property
    def name(self) -> str:
        return self.key  # type: ignore[return-value]

    @property
    def changed(self) -> bool:
        """Present on one side only, or any of its values differs."""
        return self.presence != "both" or self.total_differs or bool(self.callpaths or self.locations or self.cells)


def differs(x: float, y: float, rtol: float = 0.0, atol: float = 0.0) -> bool:
    """Whether two values differ: not ``|x - y| <= atol + rtol * max(|x|, |y|)``."""
    return not math.fabs(x - y) <= atol + rtol * max(math.fabs(x), math.fabs(y))


def _keyed(base: dict, new: dict, rtol: float, atol: float) -> list[Change]:
    out = []
    for k in list(base) + [k for k in new if k not in base]:
        b, n = base.get(k, 0), new.get(k, 0)
        if differs(b, n, rtol, atol):
            out.append(Change(k, b, n))
    return out


def _location_alignment(base: Summary, new: Summary):
    """For two cube summaries: the union of their locations (base's, then new's others) and where each side's
    locations sit in it; None otherwise."""
    if base.locations is None or new.locations is None:
        return None
    keys = list(base.locations)
    at = {k: i for i, k in enumerate(keys)}
    for k in new.locations:
        if k not in at:
            at[k] = len(keys)
            keys.append(k)
    return keys, np.arange(len(base.locations)), np.array([at[k] for k in new.locations], np.int64)


def _on_union(m: MetricSummary | None, pos: np.ndarray, n: int) -> np.ndarray | None:
    out = np.zeros(n)
    if m is None or not m.per_location:
        return out
    if isinstance(m.per_location, PerLocation):
        out[pos] = m.per_location.values
        return out
    return None


def _keyed_locations(mb, mn, align, rtol: float, atol: float) -> list[Change] | None:
    """:func:`_keyed` over two cube summaries' locations as arrays (a Python loop per location and metric took
    seconds for thousands of each); None where a side is not a :class:`PerLocation`."""
    keys, pos_b, pos_n = align
    vb, vn = _on_union(mb, pos_b, len(keys)), _on_union(mn, pos_n, len(keys))
    if vb is None or vn is None:
        return None
    bad = ~(np.abs(vb - vn) <= atol + rtol * np.maximum(np.abs(vb), np.abs(vn)))
    # in _keyed's order: base's keys, then new's others; new's alone when base lacks the metric
    order = pos_n[bad[pos_n]] if mb is None else np.flatnonzero(bad)
    return [Change(keys[i], float(vb[i]), float(vn[i])) for i in order.tolist()]


def _cells(a: Summary, ma: MetricSummary, b: Summary, mb: MetricSummary, rtol: float, atol: float) -> list[Change]:
    """Cells that differ over the union of both sides' call paths and locations, sorted by path, then location."""
    paths = sorted(set(a.callpaths) | set(b.callpaths))
    locs = sorted(set(a.locations) | set(b.locations))

    def aligned(s: Summary, m: MetricSummary) -> np.ndarray:
        if s.callpaths == paths and s.locations == locs:
            return m.cells
        row = {p: i for i, p in enumerate(paths)}
        col = {k: i for i, k in enumerate(locs)}
        out = np.zeros((len(paths), len(locs)))
        out[np.ix_([row[p] for p in s.callpaths], [col[k] for k in s.locations])] = m.cells
        return out

    va, vb = aligned(a, ma), aligned(b, mb)
    bad = ~(np.abs(va - vb) <= atol + rtol * np.maximum(np.abs(va), np.abs(vb)))
    return [Change((paths[r], locs[c]), float(va[r, c]), float(vb[r, c])) for r, c in np.argwhere(bad).tolist()]


def compare(base: Summary, new: Summary, rtol: float = 0.0, atol: float = 0.0, names=None,
            cells: bool = False) -> list[MetricDiff]:
    """Per metric (``names``, default: base's then new's others), the values of ``new`` that differ from ``base``.

    Metrics match by unique name, call paths by path string, locations by
    (rank, thread); a value missing on one side is zero.  ``cells`` also
    compares every (call path, location) of metrics that both sides hold as
    cubes summarised with ``cells=True``.
    """
    if names is None:
        names = list(base.metrics) + [n for n in new.metrics if n not in base.metrics]
    align = _location_alignment(base, new)
    out = []
    for name in names:
        mb, mn = base.metrics.get(name), new.metrics.get(name)
        meta = mn or mb
        d = MetricDiff(
            name,
            mb.total if mb else 0.0,
            mn.total if mn else 0.0,
            display_name=meta.display_name,
            unit=meta.unit,
            presence="both" if (mb and mn) else ("new only" if mn else "base only"),
            base_info=mb,
            new_info=mn,
        )
        d.total_differs = differs(d.base, d.new, rtol, atol)
        d.callpaths = _keyed(mb.per_callpath if mb else {}, mn.per_callpath if mn else {}, rtol, atol)
        d.locations = _keyed_locations(mb, mn, align, rtol, atol) if align else None
        if d.locations is None:
            d.locations = _keyed(mb.per_location if mb else {}, mn.per_location if mn else {}, rtol, atol)
        if cells and mb is not None and mn is not None and mb.cells is not None and mn.cells is not None:
            d.cells = _cells(base, mb, new, mn, rtol, atol)
        out.append(d)
    return out


# --------------------------------------------------------------------------
# Readable difference lists
# --------------------------------------------------------------------------
def diff_cubes(a: Cube, b: Cube, rtol: float = 1e-12, atol: float = 0.0, limit: int = 20) -> list[str]:
    """Differences between two cubes, matched by identity, not by id.

    First the structure (metrics, their parent and unit, call paths,
    locations); when it agrees, every value per (metric, call path,
    location).  Returns at most ``limit`` human-readable lines; empty when the
    cubes agree.
    """
    sa, sb = summarize(a, cells=True), summarize(b, cells=True)
    out: list[str] = []
    ma, mb = set(sa.metrics), set(sb.metrics)
    for name in sorted(ma - mb):
        out.append(f"metric {name!r} only in the first cube")
    for name in sorted(mb - ma):
        out.append(f"metric {name!r} only in the second cube")
    for name in sorted(ma & mb):
        ia, ib = sa.metrics[name], sb.metrics[name]
        if (ia.parent, ia.unit) != (ib.parent, ib.unit):
            out.append(f"metric {name!r}: parent/unit {ia.parent}/{ia.unit} vs {ib.parent}/{ib.unit}")
    pa, pb = set(sa.callpaths), set(sb.callpaths)
    for p in sorted(pa - pb)[:limit]:
        out.append(f"call path {p!r} only in the first cube")
    for p in sorted(pb - pa)[:limit]:
        out.append(f"call path {p!r} only in the second cube")
    la, lb = set(sa.locations), set(sb.locations)
    if la != lb:
        out.append(f"locations differ: {sorted(la ^ lb)[:10]}")
    if out:
        return out[:limit]
    for d in compare(sa, sb, rtol, atol, names=sorted(ma & mb), cells=True):
        for c in d.cells[: max(0, limit - len(out))]:
            path, (rank, thread) = c.key
            out.append(f"metric {d.name!r} at {path!r}, rank {rank} thread {thread}: {c.base!r} vs {c.new!r}")
        if len(out) >= limit:
            break
    return out


def compare_json(a: dict, b: dict, rtol: float = 1e-9, atol: float = 0.0, metrics=None) -> list[str]:
    """Differences between two JSON summaries (as returned by :func:`~analyzer.cube.read_json`).

    Entries missing on one side count as zero; ``metrics`` limits the
    comparison to some unique names.  Returns readable lines, empty if equal.
    """
    sa, sb = summary_from_json(a, "first"), summary_from_json(b, "second")
    names = list(sa.metrics) + [n for n in sb.metrics if n not in sa.metrics]
    if metrics is not None:
        names = [n for n in names if n in set(metrics)]
    out: list[str] = []
    for d in compare(sa, sb, rtol, atol, names=names):
        if d.presence != "both":
            out.append(f"{d.name}: only in the {'second' if d.presence == 'new only' else 'first'} summary")
            continue
        if d.base_info.unit != d.new_info.unit:
            out.append(f"{d.name}: unit {d.base_info.unit!r} vs {d.new_info.unit!r}")
        if d.total_differs:
            out.append(f"{d.name}: total {d.base!r} vs {d.new!r}")
        for part, changes, key in (("per_location", d.locations, format_loc), ("per_callpath", d.callpaths, str)):
            for c in changes:
                out.append(f"{d.name} {part}[{key(c.key)!r}]: {c.base!r} vs {c.new!r}")
    return out
