"""Plausibility of a trace's definitions: what no correct measurement writes, though a reader can go on.

The reader replaces or drops only values it cannot compute with (a tick
rate outside ``definitions.TICK_RATE_LIMITS``, a non-finite or huge clock
offset) and says so in ``defs.repairs``.  :func:`definition_warnings` lists
those and what is readable but physically implausible, one line each: ``expert-trace check`` reports
these lines as problems, ``expert-analyze`` prints them as warnings.
"""

from __future__ import annotations

from .definitions import Definitions, max_offset_slope
from .dense import INT32_LIMIT, duplicate_threads, id_slack

__all__ = ["definition_warnings", "PLAUSIBLE_TICK_RATES", "PLAUSIBLE_OFFSET", "PLAUSIBLE_DRIFT"]

#: clocks slower than 1 kHz or faster than 1 THz (ticks per second) exist on no machine we trace
PLAUSIBLE_TICK_RATES = (1e3, 1e12)
#: clock offsets (seconds) larger than this are no clock difference between the nodes of one run
PLAUSIBLE_OFFSET = 600.0
#: offset drift (seconds per second) beyond 1000 ppm: no quartz clock drifts that fast
PLAUSIBLE_DRIFT = 1e-3
#: offsets measured by message exchange are this uncertain on a loaded machine (the runtime's ping-pong: up to
#: a few ms): a change of offset below it says nothing about drift, however short the run
OFFSET_NOISE = 5e-3


def definition_warnings(defs: Definitions, ids: bool = True) -> list[str]:
    """One line per implausible fact in ``defs``: tick rates, clock offsets and their drift, and (with
    ``ids``) location ids that are not ``0..L-1`` and process ids that no MPI rank can have."""
    out = list(defs.repairs)  # what the reader could not compute with (definitions.TICK_RATE_LIMITS, ...)
    lo, hi = PLAUSIBLE_TICK_RATES
    for proc, clock in sorted(defs.clocks.items()):
        if not lo <= clock.ticks_per_second <= hi:
            out.append(f"clock of process {proc} ticks {clock.ticks_per_second:g} times per second, outside the "
                       f"plausible {lo:g}..{hi:g}")
    for proc, offs in sorted(defs.offsets.items()):
        worst = max((abs(o.offset) for o in offs), default=0.0)
        if worst > PLAUSIBLE_OFFSET:
            out.append(f"clock offset of process {proc} is {worst:g} s (more than {PLAUSIBLE_OFFSET:g} s: no clock "
                       f"difference between the nodes of one run)")
        drift = max_offset_slope(offs)
        change = max((o.offset for o in offs), default=0.0) - min((o.offset for o in offs), default=0.0)
        if drift > PLAUSIBLE_DRIFT and change > OFFSET_NOISE:
            out.append(f"clock offsets of process {proc} drift by {drift:.3g} s per second (more than "
                       f"{PLAUSIBLE_DRIFT:g}: no clock drifts that fast)")
    if ids:
        gap = id_slack(defs.locations)
        if gap:
            out.append(f"location ids are not dense: {len(defs.locations)} locations, the largest id "
                       f"{max(defs.locations)} (the format numbers locations 0..L-1)")
        dup = duplicate_threads(defs)
        if dup:
            a, b, proc, thread = dup[0]
            out.append(f"locations {a} and {b} are both thread {thread} of process {proc}"
                       + (f" (and {len(dup) - 1} more such pairs)" if len(dup) > 1 else ""))
        big = sorted(p for p in defs.processes if p >= INT32_LIMIT)
        if big:
            out.append(f"process id {big[0]} is no MPI rank (2^31 or more)"
                       + (f", and {len(big) - 1} more" if len(big) > 1 else ""))
    return out
