"""POP efficiencies as values ``expert-check`` can gate on.

A result carries the run's POP efficiencies (parallel efficiency, load balance, communication,
serialisation and transfer efficiency; ``patterns.pop``) as the ``efficiencies`` object of its
JSON summary, or as cube attributes (``analyzer.cube.json_summary.EFFICIENCY_ATTR``).  Here they
join the result's metrics as metrics of unit ``ratio`` with a total and no call paths or
locations, so every threshold of ``analyzer.ci.check`` applies to them by name; a falling
efficiency is what ``--min-value`` and ``--max-decrease`` catch.
"""

from __future__ import annotations

import dataclasses
import os

from analyzer.cube import Cube, CubeError
from analyzer.cube.compare import MetricSummary, Summary, summarize, summary_from_json
from analyzer.cube.files import read_result
from analyzer.cube.json_summary import efficiencies as cube_efficiencies

from .compare import ResultError, load_result

NAMES = ("parallel_efficiency", "load_balance", "communication_efficiency", "serialisation_efficiency",
         "transfer_efficiency")
UNIT = "ratio"


def efficiencies_of(data) -> dict[str, float]:
    """The efficiencies a loaded result holds: a Cube, a JSON-summary dict, or a Summary of a cube."""
    if isinstance(data, Summary):
        data = data.cube
    if isinstance(data, Cube):
        return cube_efficiencies(data)
    if isinstance(data, dict):
        eff = data.get("efficiencies", {})
        if not isinstance(eff, dict):
            raise ResultError("'efficiencies' is not an object")
        out = {}
        for k, v in eff.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ResultError(f"efficiencies.{k} is not a number")
            out[str(k)] = float(v)
        return out
    return {}


def load_with_efficiencies(src) -> Summary:
    """:func:`analyzer.ci.compare.load_result`, its metrics followed by the result's efficiencies (unit
    ``ratio``); a file is read once."""
    if isinstance(src, (str, os.PathLike)):
        path = os.fspath(src)
        try:
            data = read_result(path, expected="a .cubex or .json result")
            summary = summarize(data, source=path) if isinstance(data, Cube) else summary_from_json(data, path)
        except CubeError as e:
            raise ResultError(str(e)) from None
    else:
        data, summary = src, load_result(src)
    try:
        eff = efficiencies_of(data)
    except (ResultError, CubeError) as e:
        raise ResultError(f"{summary.source}: {e}") from None
    metrics = dict(summary.metrics)
    for name, v in eff.items():
        if name not in metrics:
            metrics[name] = MetricSummary(name=name, display_name=name.replace("_", " "), unit=UNIT, parent=None,
                                          description="POP efficiency of the run (patterns.pop)", diagnosis="",
                                          total=v, per_callpath={}, per_location={})
    return dataclasses.replace(summary, metrics=metrics)
