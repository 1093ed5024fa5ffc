"""The JSON summary of a cube, for scripts and CI gates.

Schema (``docs/cube.md`` has the full description)::

    {"format": "expert-analyze-summary", "version": 1,
     "metrics": {
        "<unique name>": {
            "display_name": "...", "parent": "<unique name>" | null, "unit": "sec" | "occ" | "bytes",
            "total": <value over the whole run>,
            "per_location": {"rank R thread T": value, ...},
            "per_callpath": {"main/foo/MPI_Recv": value, ...}}, ...},
     "not_measured": {"<unique name>": {"display_name": "...", "parent": ..., "unit": ..., "reason": "..."}},
     "efficiencies": {"parallel_efficiency": 0.6, "load_balance": 0.75, "communication_efficiency": 0.8,
                      "serialisation_efficiency": 1.0, "transfer_efficiency": 0.8}}

``not_measured`` is there only when the analysis left properties out because the trace cannot
measure them (``cube.not_measured``); they have no entry in ``metrics``.  ``efficiencies`` (the
POP efficiencies of the run, ratios in [0, 1]; ``patterns.pop``) is there only when the analysis
computed the ``pop_*`` metrics; it comes from the cube attributes ``EFFICIENCY_ATTR + name``
that ``analyzer.analyze`` sets, so a summary of a stored ``.cubex`` has it too.

Values are inclusive along the metric tree (as in the cube) and, per call
path, exclusive along the call tree.  Zero entries are left out of
``per_location`` and ``per_callpath``; INTEGER metrics are written as JSON
integers, others with Python's shortest round-trip float ``repr``.  Key order
follows the cube (metric tree order, location order, call-tree order), so two
identical analyses give byte-identical files.

``absent_locations`` (``{"rank R thread T": why}``) is there only when locations of the trace
have no events at all (an OTF2 location file missing): their values were not measured (n/a),
though ``per_location`` leaves them out like zeros.
"""

from __future__ import annotations

import json
from pathlib import Path

from .dimensions import absent_locations
from .model import Cube, CubeFormatError

FORMAT = "expert-analyze-summary"
VERSION = 1
#: cube attribute of a POP efficiency of the run: ``EFFICIENCY_ATTR + name`` = the ratio (``repr`` of a float)
EFFICIENCY_ATTR = "expert-analyze::efficiency::"


def efficiencies(cube: Cube) -> dict[str, float]:
    """The POP efficiencies recorded in the cube's attributes, by name (empty when none were computed)."""
    out = {}
    for key, text in cube.attrs.items():
        if key.startswith(EFFICIENCY_ATTR):
            try:
                out[key[len(EFFICIENCY_ATTR):]] = float(text)
            except ValueError:
                raise CubeFormatError(f"cube attribute {key!r}: {text!r} is not a number") from None
    return out


def _num(v: float, integer: bool):
    if integer:
        return int(round(v))
    v = float(v)
    return 0.0 if v == 0 else v  # no "-0.0"


def to_json_dict(cube: Cube) -> dict:
    metrics = {}
    keys = [loc.key for loc in cube.locations]
    for m in cube.metrics:
        integer = m.dtype == "INTEGER"
        per_loc = {}
        for key, v in zip(keys, cube.per_location(m.name).tolist()):
            if v != 0:
                per_loc[key] = per_loc.get(key, 0) + _num(v, integer)
        per_path = {p: _num(v, integer) for p, v in cube.per_callpath(m.name, nonzero=True).items()}
        metrics[m.name] = {
            "display_name": m.display_name,
            "parent": m.parent,
            "unit": m.unit,
            "total": _num(cube.total(m.name), integer),
            "per_location": per_loc,
            "per_callpath": per_path,
        }
    doc = {"format": FORMAT, "version": VERSION, "metrics": metrics}
    gone = absent_locations(cube.attrs)
    if gone:  # locations whose events the trace lacks: nothing measured there, n/a (not the 0 omitted above)
        doc["absent_locations"] = gone
    if cube.not_measured:  # properties the trace could not measure: named, never written as 0
        doc["not_measured"] = {
            name: {"display_name": m.display_name, "parent": m.parent, "unit": m.unit, "reason": why}
            for name, (m, why) in cube.not_measured.items()
        }
    eff = efficiencies(cube)
    if eff:
        doc["efficiencies"] = {name: _num(v, False) for name, v in eff.items()}
    return doc


def dumps(cube: Cube) -> str:
    return json.dumps(to_json_dict(cube), indent=1, allow_nan=False) + "\n"


def write_json(cube: Cube, path) -> None:
    Path(path).write_text(dumps(cube), encoding="utf-8")


#: integers with more digits than this are read as floats (and one beyond float's range is refused)
_INT_DIGITS = 18


def _int(text: str):
    return int(text) if len(text.lstrip("-")) <= _INT_DIGITS else float(text)


def loads(text: str, source: str, syntax: str = "invalid JSON"):
    """The JSON document in ``text``, refusing what no summary holds with one :class:`CubeFormatError` line:
    NaN and Infinity, numbers beyond a float's range (a 400- or 5,000-digit number), nesting deeper than
    Python's recursion limit, and syntax errors (naming line and column)."""

    def constant(name: str):
        raise ValueError(f"{name} is not a number a summary holds")

    def number(text: str):
        v = float(text)
        if v in (float("inf"), float("-inf")):
            raise ValueError(f"number {text[:20]}{'...' if len(text) > 20 else ''} ({len(text)} characters) is "
                             f"beyond a float's range")
        return v

    def integer(text: str):
        v = _int(text)
        return v if isinstance(v, int) else number(text)

    try:
        return json.loads(text, parse_int=integer, parse_float=number, parse_constant=constant)
    except json.JSONDecodeError as e:
        raise CubeFormatError(f"{source}: {syntax}: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except RecursionError:
        raise CubeFormatError(f"{source}: JSON nested too deeply (deeper than any summary)") from None
    except ValueError as e:
        raise CubeFormatError(f"{source}: {e}") from None


def read_json(path) -> dict:
    """Load a summary written by :func:`write_json`; checks its shape.

    Raises:
        CubeFormatError: naming the file and the line/column or key at fault.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CubeFormatError(f"{path}: cannot read: {e}") from None
    data = loads(text, str(path), "not JSON")
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
        raise CubeFormatError(f"{path}: not a cube summary (no 'metrics' object at the top level)")
    for name, m in data["metrics"].items():
        if not isinstance(m, dict):
            raise CubeFormatError(f"{path}: metrics[{name!r}] is not an object")
        for key in ("unit", "total", "per_location", "per_callpath"):
            if key not in m:
                raise CubeFormatError(f"{path}: metrics[{name!r}] lacks {key!r}")
        for key in ("per_location", "per_callpath"):
            if not isinstance(m[key], dict):
                raise CubeFormatError(f"{path}: metrics[{name!r}][{key!r}] is not an object")
    return data
