"""Gate a run against stored baselines: ``expert-check``.

A threshold names a metric (unique name) and a limit:

* ``--max-increase METRIC=SPEC`` fails when the new total exceeds the
  baseline mean by more than SPEC allows.  SPEC is one or more parts joined by
  ``,``: ``10%`` (of the baseline mean), ``0.5s`` / ``200ms`` / ``3MiB`` / ``12``
  (an absolute amount in the metric's unit) or ``2sd`` (standard deviations of
  the baselines, needs two or more of them).  Several parts allow the most
  lenient of them, e.g. ``time=5%,2sd``; give the option twice to require both.
* ``--max-value METRIC=QUANTITY`` fails when the new total exceeds QUANTITY.
* ``--max-decrease METRIC=SPEC`` and ``--min-value METRIC=QUANTITY``: the same for
  values that must not fall, such as the POP efficiencies (``parallel_efficiency``,
  ``load_balance``, ``communication_efficiency``, ``serialisation_efficiency``,
  ``transfer_efficiency``: ratios of the run from the result's ``efficiencies``,
  ``analyzer.ci.efficiency``); totals only, not per call path.
* ``--abs-floor QUANTITY`` or ``--abs-floor METRIC=QUANTITY``: an increase
  not larger than this never fails (noise floor); a bare QUANTITY applies to
  every metric whose unit it fits (time to time metrics, bytes to byte metrics).

With ``per_callpath`` every call path of the metric is held to the same
threshold against its own baseline.  A failed check names the call paths and
locations that grew most, so the CI log points at the culprit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from xml.sax.saxutils import escape as xml_escape, quoteattr

import numpy as np

from analyzer.cube.compare import Change, MetricSummary, Summary, format_loc

from .compare import ResultError, format_delta, format_value, is_time_unit
from .efficiency import load_with_efficiencies

# --------------------------------------------------------------------------
# Quantities and thresholds
# --------------------------------------------------------------------------
_TIME = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0}
_BYTES = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 1024, "mib": 1024**2, "gib": 1024**3}
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµ%]*)\s*$")


@dataclass(frozen=True)
class Quantity:
    value: float
    kind: str  # "time", "bytes", "number", "percent", "sd"
    text: str


def parse_quantity(text: str) -> Quantity:
    m = _QUANTITY.match(text)
    if not m:
        raise ResultError(f"cannot read {text!r} as an amount (examples: 10%, 2sd, 0.5s, 1ms, 4MiB, 12)")
    num, suffix = float(m.group(1)), m.group(2)
    low = suffix.lower()
    if suffix == "":
        return Quantity(num, "number", text)
    if suffix == "%":
        return Quantity(num / 100.0, "percent", text)
    if low == "sd":
        return Quantity(num, "sd", text)
    if suffix in _TIME or low in ("sec", "min"):
        return Quantity(num * _TIME[low if low in _TIME else suffix], "time", text)
    if low in _BYTES:
        return Quantity(num * _BYTES[low], "bytes", text)
    raise ResultError(f"unknown unit {suffix!r} in {text!r} (time: s ms us ns; bytes: B KiB MiB GiB KB MB GB; % ; sd)")


def unit_kind(unit: str) -> str:
    u = unit.strip().lower()
    if is_time_unit(u):
        return "time"
    if u in ("bytes", "byte", "b"):
        return "bytes"
    return "number"


def fits(q: Quantity, unit: str) -> bool:
    """Does an absolute quantity fit a metric's unit?  Bare numbers fit every unit."""
    return q.kind == "number" or q.kind == unit_kind(unit)


@dataclass
class Threshold:
    kind: str  # "increase", "value", "decrease" (a value that must not fall) or "min"
    metric: str
    parts: list[Quantity]
    text: str  # as given, for messages

    @property
    def option(self) -> str:
        return f"{OPTIONS[self.kind]} {self.text}"

    @property
    def falling(self) -> bool:
        """A limit on a value that must not fall (``--max-decrease``, ``--min-value``)."""
        return self.kind in ("decrease", "min")


#: the expert-check option of each threshold kind
OPTIONS = {"increase": "--max-increase", "value": "--max-value", "decrease": "--max-decrease", "min": "--min-value"}


def parse_threshold(kind: str, text: str) -> Threshold:
    opt = OPTIONS[kind]
    if "=" not in text:
        raise ResultError(f"{opt} {text!r}: expected METRIC=LIMIT, e.g. mpi_latesender=10%")
    metric, spec = text.split("=", 1)
    metric = metric.strip()
    if not metric:
        raise ResultError(f"{opt} {text!r}: no metric name before '='")
    parts = [parse_quantity(p) for p in spec.split(",") if p.strip()]
    if not parts:
        raise ResultError(f"{opt} {text!r}: no limit after '='")
    if kind in ("value", "min"):
        if len(parts) != 1 or parts[0].kind in ("percent", "sd"):
            raise ResultError(f"{opt} {text!r}: the limit must be one absolute amount such as 0.5s or 0.8")
    return Threshold(kind, metric, parts, text)


def parse_floor(text: str) -> tuple[str | None, Quantity]:
    """``1ms`` -> (None, q) for every metric it fits; ``metric=1ms`` -> (metric, q)."""
    metric = None
    if "=" in text:
        metric, text = (s.strip() for s in text.split("=", 1))
    q = parse_quantity(text)
    if q.kind in ("percent", "sd"):
        raise ResultError(f"--abs-floor {text!r}: the floor must be an absolute amount such as 1ms")
    return metric, q


# --------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------
@dataclass
class Outcome:
    threshold: Threshold
    scope: str  # "total" or a call path
    passed: bool
    new: float
    baseline_mean: float | None
    baseline_sd: float | None
    limit: float
    unit: str
    message: str
    callpaths: list[Change] = field(default_factory=list)  # largest growth first (base = the baselines' mean)
    locations: list[Change] = field(default_factory=list)

    @property
    def name(self) -> str:
        where = "" if self.scope == "total" else f" @ {self.scope}"
        return f"{self.threshold.metric}{where}: {self.threshold.option.split(' ', 1)[0]} {self.threshold.text.split('=', 1)[1]}"


@dataclass
class CheckReport:
    new: Summary
    baselines: list[Summary]
    outcomes: list[Outcome]
    warnings: list[str] = field(default_factory=list)  # one line each, for stderr

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.passed]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def _stats(values: list[float]) -> tuple[float, float | None]:
    arr = np.asarray(values, dtype=np.float64)
    mean = float(arr.mean())
    sd = float(arr.std(ddof=1)) if len(arr) >= 2 else None
    return mean, sd


def _allowance(th: Threshold, mean: float, sd: float | None, unit: str, where: str) -> float:
    """How much above the baseline mean the value may go: the most lenient part."""
    best = -math.inf
    for q in th.parts:
        if q.kind == "percent":
            a = abs(mean) * q.value
        elif q.kind == "sd":
            if sd is None:
                raise ResultError(f"{th.option}: a limit in standard deviations needs at least two baselines{where}")
            a = sd * q.value
        else:
            if not fits(q, unit):
                raise ResultError(f"{th.option}: {q.text} is a {q.kind} amount but metric {th.metric!r} is in {unit!r}")
            a = q.value
        best = max(best, a)
    return best


def _floor_for(metric: str, unit: str, floors: list[tuple[str | None, Quantity]]) -> float:
    value = 0.0
    for m, q in floors:  # a metric-specific floor overrides a general one
        if m == metric:
            if not fits(q, unit):
                raise ResultError(f"--abs-floor {metric}={q.text}: {q.kind} amount for a metric in {unit!r}")
            return q.value
        if m is None and fits(q, unit):
            value = q.value
    return value


def _contributors(new: dict, bases: list[dict], fmt, top: int, floor: float = 0.0) -> list[Change]:
    keys = list(new) + [k for b in bases for k in b if k not in new]
    seen = set()
    out = []
    for k in keys:
        if k in seen:
            continue
        seen.add(k)
        mean = float(np.mean([b.get(k, 0.0) for b in bases]))
        c = Change(fmt(k), mean, float(new.get(k, 0.0)))
        # rounding noise in sums of many values is no growth
        if c.delta > floor and c.delta > 1e-9 * max(abs(c.new), abs(c.base)):
            out.append(c)
    out.sort(key=lambda c: (-c.delta, c.key))
    return out[:top]


def _metric(r: Summary, name: str, why: str) -> MetricSummary:
    try:
        return r.metrics[name]
    except KeyError:
        avail = ", ".join(r.metrics) or "none"
        raise ResultError(f"{r.source}: no metric {name!r} (named by {why}); metrics present: {avail}") from None


def _evaluate(th: Threshold, scope: str, new_v: float, base_vs: list[float], unit: str, floor: float) -> Outcome:
    where = "" if scope == "total" else f" (call path {scope})"
    if th.falling:
        return _evaluate_falling(th, new_v, base_vs, unit, floor)
    if th.kind == "value":
        limit = th.parts[0].value
        if not fits(th.parts[0], unit):
            raise ResultError(f"{th.option}: {th.parts[0].text} is a {th.parts[0].kind} amount "
                              f"but metric {th.metric!r} is in {unit!r}")
        mean, sd = _stats(base_vs) if base_vs else (None, None)
        passed = new_v <= limit
        msg = (f"{th.metric}{where} = {format_value(new_v, unit)}, "
               f"{'within' if passed else 'above'} the maximum {format_value(limit, unit)}")
        return Outcome(th, scope, passed, new_v, mean, sd, limit, unit, msg)
    mean, sd = _stats(base_vs)
    allowance = _allowance(th, mean, sd, unit, where)
    limit = mean + allowance
    increase = new_v - mean
    passed = new_v <= limit or increase <= floor
    rel = f" ({increase / abs(mean) * 100:+.1f}%)" if mean != 0 else ""
    spread = f" ± {format_value(sd, unit)}" if sd is not None else ""
    msg = (f"{th.metric}{where} = {format_value(new_v, unit)}, baseline {format_value(mean, unit)}{spread}: "
           f"change {format_delta(increase, unit)}{rel}, allowed up to {format_value(limit, unit)}")
    if not passed:
        msg = "REGRESSION " + msg
    elif new_v > limit:
        msg += f" (increase below the floor {format_value(floor, unit)})"
    return Outcome(th, scope, passed, new_v, mean, sd, limit, unit, msg)


def _evaluate_falling(th: Threshold, new_v: float, base_vs: list[float], unit: str, floor: float) -> Outcome:
    """``--min-value`` and ``--max-decrease``: the mirror image of ``--max-value`` and ``--max-increase``."""
    if th.kind == "min":
        limit = th.parts[0].value
        if not fits(th.parts[0], unit):
            raise ResultError(f"{th.option}: {th.parts[0].text} is a {th.parts[0].kind} amount "
                              f"but metric {th.metric!r} is in {unit!r}")
        mean, sd = _stats(base_vs) if base_vs else (None, None)
        passed = new_v >= limit
        msg = (f"{th.metric} = {format_value(new_v, unit)}, "
               f"{'within' if passed else 'below'} the minimum {format_value(limit, unit)}")
        return Outcome(th, "total", passed, new_v, mean, sd, limit, unit, msg)
    mean, sd = _stats(base_vs)
    limit = mean - _allowance(th, mean, sd, unit, "")
    decrease = mean - new_v
    passed = new_v >= limit or decrease <= floor
    rel = f" ({-decrease / abs(mean) * 100:+.1f}%)" if mean != 0 else ""
    spread = f" ± {format_value(sd, unit)}" if sd is not None else ""
    msg = (f"{th.metric} = {format_value(new_v, unit)}, baseline {format_value(mean, unit)}{spread}: "
           f"change {format_delta(-decrease, unit)}{rel}, allowed down to {format_value(limit, unit)}")
    if not passed:
        msg = "REGRESSION " + msg
    elif new_v < limit:
        msg += f" (decrease below the floor {format_value(floor, unit)})"
    return Outcome(th, "total", passed, new_v, mean, sd, limit, unit, msg)


def check(new, baselines, thresholds: list[Threshold], floors=(), per_callpath: bool = False,
          top: int = 3) -> CheckReport:
    """Evaluate every threshold; raises ResultError for unusable input (missing metric, wrong unit)."""
    new_r = load_with_efficiencies(new)
    bases = [load_with_efficiencies(b) for b in baselines]
    relative = [t for t in thresholds if t.kind in ("increase", "decrease")]
    if relative and not bases:
        raise ResultError(f"{OPTIONS[relative[0].kind]} needs at least one --baseline")
    floors = list(floors)
    outcomes, warnings = [], []
    for th in thresholds:
        m = _metric(new_r, th.metric, th.option)
        against = bases and th.kind in ("increase", "decrease")
        bms = [_metric(b, th.metric, th.option) for b in bases] if against else [
            b.metrics[th.metric] for b in bases if th.metric in b.metrics]
        floor = _floor_for(th.metric, m.unit, floors)
        grew = bms and not th.falling  # the culprits of an increase: where it grew most
        cps = _contributors(m.per_callpath, [b.per_callpath for b in bms], str, top, floor) if grew else []
        locs = _contributors(m.per_location, [b.per_location for b in bms], format_loc, top, floor) if grew else []
        o = _evaluate(th, "total", float(m.total), [float(b.total) for b in bms], m.unit, floor)
        o.callpaths, o.locations = cps, locs
        outcomes.append(o)
        warnings.extend(_bare_number_warnings(th, o, m.unit))
        if per_callpath and not th.falling:
            paths = list(m.per_callpath) + [p for b in bms for p in b.per_callpath if p not in m.per_callpath]
            for p in dict.fromkeys(paths):
                oc = _evaluate(th, p, float(m.per_callpath.get(p, 0.0)),
                               [float(b.per_callpath.get(p, 0.0)) for b in bms], m.unit, floor)
                if not oc.passed:  # passing call paths would flood the report
                    outcomes.append(oc)
    return CheckReport(new_r, bases, outcomes, warnings)


def _bare_number_warnings(th: Threshold, o: Outcome, unit: str) -> list[str]:
    """A limit given without a unit is taken in the metric's unit; say so when that looks like a forgotten % or
    unit: the baseline is less than 1 % of the allowed increase."""
    if th.kind != "increase" or o.baseline_mean is None:
        return []
    out = []
    for q in th.parts:
        if q.kind == "number" and q.value > 0 and abs(o.baseline_mean) < 0.01 * q.value:
            taken = format_value(q.value, unit)
            out.append(f"{th.option}: {q.text} has no unit and was taken as {taken} ({th.metric!r} is in "
                       f"{unit!r}), over 100x its baseline {format_value(o.baseline_mean, unit)}; "
                       f"write {q.text}% for a relative limit or give the unit")
    return out


# --------------------------------------------------------------------------
# Output for people and CI systems
# --------------------------------------------------------------------------
def _culprits(o: Outcome) -> list[str]:
    lines = []
    if o.callpaths:
        lines.append("  grew most at call path: " + "; ".join(
            f"{c.key} ({format_delta(c.delta, o.unit)})" for c in o.callpaths))
    if o.locations:
        lines.append("  grew most at location: " + "; ".join(
            f"{c.key} ({format_delta(c.delta, o.unit)})" for c in o.locations))
    return lines


def format_text(rep: CheckReport) -> str:
    lines = [f"expert-check: {rep.new.source} against "
             + (", ".join(b.source for b in rep.baselines) if rep.baselines else "no baseline")]
    for o in rep.outcomes:
        lines.append(("PASS  " if o.passed else "FAIL  ") + o.message)
        if not o.passed:
            lines += _culprits(o)
    n_fail = len(rep.failures)
    lines.append(f"{len(rep.outcomes) - n_fail} passed, {n_fail} failed")
    return "\n".join(lines)


def format_markdown(rep: CheckReport) -> str:
    def cell(s: str) -> str:  # names come from traces: keep them from breaking the table or the markup
        return s.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")

    status = "✅ passed" if rep.passed else f"❌ {len(rep.failures)} regression(s)"
    lines = [f"### expert-check: {status}", "",
             f"New run `{cell(rep.new.source)}` against {len(rep.baselines)} baseline run(s).", "",
             "| | check | new | baseline | limit | where it grew most |",
             "|---|---|---:|---:|---:|---|"]
    for o in rep.outcomes:
        base = "" if o.baseline_mean is None else format_value(o.baseline_mean, o.unit)
        if o.baseline_sd is not None:
            base += f" ± {format_value(o.baseline_sd, o.unit)}"
        grew = "<br>".join(f"`{cell(c.key)}` {format_delta(c.delta, o.unit)}" for c in o.callpaths[:3])
        lines.append(f"| {'✅' if o.passed else '❌'} | {cell(o.name)} | {format_value(o.new, o.unit)} | "
                     f"{base} | {format_value(o.limit, o.unit)} | {grew} |")
    return "\n".join(lines) + "\n"


def format_junit(rep: CheckReport) -> str:
    """JUnit XML: one testsuite, one testcase per check; failures carry the message and the culprits."""
    cases = []
    for o in rep.outcomes:
        body = ""
        if not o.passed:
            detail = "\n".join([o.message] + _culprits(o))
            body = f"<failure message={quoteattr(o.message)} type=\"regression\">{xml_escape(detail)}</failure>"
        cases.append(f"  <testcase classname={quoteattr('expert-check.' + o.threshold.metric)} "
                     f"name={quoteattr(o.name)} time=\"0\">{body}</testcase>")
    head = (f"<testsuite name=\"expert-check\" tests=\"{len(rep.outcomes)}\" failures=\"{len(rep.failures)}\" "
            f"errors=\"0\" skipped=\"0\">")
    return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>", head, *cases, "</testsuite>",
                      "</testsuites>"]) + "\n"


def junit_error(message: str) -> str:
    """JUnit XML for a check that could not run (bad input, exit 2): one errored testcase."""
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>",
        '<testsuite name="expert-check" tests="1" failures="0" errors="1" skipped="0">',
        f'  <testcase classname="expert-check" name="input" time="0"><error message={quoteattr(message)} '
        f'type="bad-input">{xml_escape(message)}</error></testcase>',
        "</testsuite>", "</testsuites>"]) + "\n"
