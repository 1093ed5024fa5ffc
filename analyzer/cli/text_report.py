"""The text report of ``expert-analyze``: the property tree, then the worst properties with their call paths and
locations.

By default the property tree leaves out the rows that say nothing about the program: properties of a
paradigm the trace never uses (MPI properties of an OpenMP program, OpenMP properties of a pure MPI one: zero
by construction) and properties the trace cannot measure (``cube.not_measured``, e.g. False Sharing without
cache counters).  One line says how many were left out and why; ``show_all`` (``--all``) prints every row, an
unmeasured property as ``n/a``, never as 0.
"""

from __future__ import annotations

import sys

import numpy as np

from analyzer.analyze import ABSENT_ATTR, NOT_MEASURED_ATTR, SALVAGED_ATTR, TRACE_ATTR
from analyzer.cube.dimensions import absent_locations

__all__ = ["report", "hidden_properties"]

#: how the hidden-rows line names a paradigm without calls
_PARADIGM_WORDS = {"mpi": ("MPI", "the trace has no MPI call"),
                   "openmp": ("OpenMP", "the trace has no OpenMP construct"),
                   "pthread": ("POSIX threads", "the trace has no POSIX threads call")}
#: values whose magnitude is below this are printed and ranked as zero (float rounding of sums and differences)
_TINY = 1e-12
_LABEL = 62


def _fmt_val(v: float, unit: str) -> str:
    if abs(v) < _TINY:
        v = 0.0  # no "-0.000000"
    if unit == "sec":
        return f"{v:12.6f} s"
    return f"{v:12.0f} {'B' if unit == 'bytes' else ' '}"


def hidden_properties(cube) -> tuple[dict[str, str], dict[str, str]]:
    """``(absent, not_measured)``: unique name -> paradigm of the properties that are zero because the trace has
    no call of their paradigm, and unique name -> reason of those it cannot measure (from ``cube.not_measured``
    and, for a cube read from a file, its ``expert-analyze::not-measured::`` attributes)."""
    absent = {}
    for key, names in cube.attrs.items():
        if key.startswith(ABSENT_ATTR):
            for n in names.split():
                absent[n] = key[len(ABSENT_ATTR):]
    not_measured = {name: why for name, (_, why) in cube.not_measured.items()}
    for key, why in cube.attrs.items():
        if key.startswith(NOT_MEASURED_ATTR):
            not_measured.setdefault(key[len(NOT_MEASURED_ATTR):], why)
    return absent, not_measured


def _rows(cube):
    """(MetricInfo, depth, measured) in tree order, the unmeasured properties at their place in the tree."""
    infos = list(cube.metrics) + [m for m, _ in cube.not_measured.values()]
    measured = set(cube.metric_names)
    known = {m.name for m in infos}
    children: dict[str | None, list] = {}
    for m in infos:
        children.setdefault(m.parent if m.parent in known else None, []).append(m)
    out = []

    def walk(parent, depth):
        for m in children.get(parent, ()):
            out.append((m, depth, m.name in measured))
            walk(m.name, depth + 1)

    walk(None, 0)
    return out


def _hidden_line(absent, not_measured, n_hidden) -> str:
    parts = []
    for par in dict.fromkeys(absent.values()):
        word, why = _PARADIGM_WORDS.get(par, (par, f"the trace has no {par} call"))
        parts.append(f"{sum(1 for p in absent.values() if p == par)} {word} ({why})")
    if not_measured:
        reasons: dict[str, list[str]] = {}
        for name, why in not_measured.items():
            reasons.setdefault(why, []).append(name)
        parts.append(f"{len(not_measured)} not measured ("
                     + "; ".join(f"{', '.join(names)}: {why}" for why, names in reasons.items()) + ")")
    return f"{n_hidden} {'property' if n_hidden == 1 else 'properties'} hidden: {', '.join(parts)}; --all shows them\n"


def report(cube, top: int = 5, out=None, show_all: bool = False) -> None:
    """The property tree (severity, % of total time), then for the worst properties their call paths and locations.

    ``show_all``: also the properties of absent paradigms and the unmeasured ones (as ``n/a``).
    """
    out = sys.stdout if out is None else out
    w = out.write
    total_time = cube.total("time") if "time" in cube.metric_names else 0.0
    absent, not_measured = hidden_properties(cube)
    if SALVAGED_ATTR in cube.attrs:
        _salvaged(cube, w)
    gone = absent_locations(cube.attrs)
    if gone:  # nothing was measured there: every value of theirs is n/a, not the 0 the cube holds
        w(f"ABSENT: {len(gone)} location{'s' if len(gone) != 1 else ''} without events (values n/a):\n")
        for key, why in gone.items():
            w(f"  - {key}: {why}\n")
        w("\n")
    if TRACE_ATTR + "openmp_runtime" in cube.attrs:  # a GCC program on libomp is not its libgomp runs
        w(f"OpenMP runtime: {cube.attrs[TRACE_ATTR + 'openmp_runtime']}\n\n")
    w("Performance properties (severity, % of total time)\n")
    n_hidden = 0
    for m, depth, measured in _rows(cube):
        hide = m.name in absent or m.name in not_measured or not measured
        if hide and not show_all:
            n_hidden += 1
            continue
        label = f"{'  ' * depth}{m.display_name} ({m.name})"
        if not measured:
            why = not_measured.get(m.name, "not measured")
            w(f"  {label:<{_LABEL}s}{'n/a':>12s}    {'':8s}  (not measured: {why})\n")
            continue
        v = cube.total(m.name)
        pct = f"{100.0 * v / total_time:6.2f} %" if (m.unit == "sec" and total_time > 0) else " " * 8
        w(f"  {label:<{_LABEL}s}{_fmt_val(v, m.unit)}  {pct}\n")
    if n_hidden:
        w(_hidden_line({n: p for n, p in absent.items() if n not in not_measured}, not_measured, n_hidden))
    _worst(cube, top, total_time, set(absent), w)


def _salvaged(cube, w) -> None:
    """What a --salvage analysis lost or repaired, before any number (from the cube's problem attributes)."""
    probs = [v for k, v in sorted(cube.attrs.items(), key=lambda kv: _problem_index(kv[0])) if _problem_index(k) >= 0]
    w(f"SALVAGED: the trace is damaged, incomplete or out of time order; the results below cover what survived "
      f"({len(probs)} problem{'s' if len(probs) != 1 else ''}):\n")
    for p in probs:
        w(f"  - {p}\n")
    w("\n")


def _problem_index(key: str) -> int:
    head = "expert-analyze::problem"
    return int(key[len(head):]) if key.startswith(head) and key[len(head):].isdigit() else -1


def _time_tree(cube) -> set[str] | None:
    """The metrics under ``time`` (None without one)."""
    if "time" not in cube.metric_names:
        return None
    out, todo = set(), ["time"]
    while todo:
        name = todo.pop()
        out.add(name)
        todo.extend(cube.metric_children(name))
    return out


def _worst(cube, top, total_time, skip, w) -> None:
    """Wait states and time categories ranked by their own share (exclusive along the metric tree); every figure
    under a property is a part of that same own share."""
    in_time = _time_tree(cube)  # parts of the run time (not the delay or critical-path trees)
    sec = [m for m in cube.metrics if m.unit == "sec" and m.name not in ("time", "execution")
           and not m.name.startswith("imbalance") and m.name not in skip and (in_time is None or m.name in in_time)]
    own = {m.name: cube.exclusive_in_metric(m.name) for m in sec}
    share = {n: float(v.sum()) for n, v in own.items()}
    worst = sorted((n for n in share if share[n] > _TINY), key=lambda n: -share[n])[:top]
    if not worst:
        return
    w("\nWorst properties by their own share of time (a property without its sub-properties), "
      "with the call paths and locations that hold that share\n")
    for name in worst:
        m = cube.metric(name)
        pct = 100.0 * share[name] / total_time if total_time > 0 else 0.0
        w(f"\n  {m.display_name} ({name}): own share {share[name]:.6f} s, {pct:.2f} % of time\n")
        per_c = own[name].sum(axis=1)
        rows = [int(c) for c in np.argsort(-per_c, kind="stable")[:top] if per_c[c] > _TINY]
        if rows:
            w(f"    {'own share':>12s}  {'% of time':>9s}  call path\n")
        for c in rows:
            cpct = f"{100.0 * per_c[c] / total_time:7.2f} %" if total_time > 0 else " " * 9
            w(f"    {per_c[c]:10.6f} s  {cpct}  {cube.callpath(c)}\n")
        per_l = own[name].sum(axis=0)
        locs = [int(l) for l in np.argsort(-per_l, kind="stable")[:top] if per_l[l] > _TINY]
        if locs:
            gone = absent_locations(cube.attrs)
            w("    own share by location: "
              + ", ".join(f"{cube.locations[l].key} {per_l[l]:.6f} s" for l in locs)
              + "".join(f", {key} n/a" for key in gone) + "\n")
