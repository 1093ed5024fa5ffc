"""``expert-analyze --memory LIMIT``: how many shares keep one analysis within a memory limit.

The analysis of one share holds its processes' table rows and what the patterns derive from them, so its
peak grows with the share's events; the shares run one after another with their data on disk between
stages (``spill.SpillNetwork``).  The estimate is per event, with constants measured on the analysis
benchmark (docs/performance.md, "Bounded memory"): a share may not get smaller than one process, and the
patterns that need whole tables on share 0 (``pipeline.plan``: plugins without a scope) need them for the
whole trace whatever the number of shares.  The root-cause analysis (delay, critical path, POP) runs by
shares too, its data mapped to the spill folder between steps (``mapped.py``): a share costs more then.  When those do not fit,
the run is refused with one line saying so, never started to fail later.
"""

from __future__ import annotations

import math
import os
import re

__all__ = ["parse_size", "default_limit", "MemoryPlan", "plan_memory", "BASE_BYTES", "ROOT_CAUSE_BASE_BYTES",
           "ROOT_CAUSE_BUDGET", "WHOLE_BYTES_PER_EVENT", "SHARE_BYTES_PER_EVENT", "FALLBACK_BYTES_PER_EVENT"]

#: interpreter, numpy, numba, the compiled kernels and the shares' exchange (measured: about 100 MB for
#: an analysis of a tiny trace in one piece, 150-180 MB by shares)
BASE_BYTES = 180 << 20
#: the same with the root-cause analysis by shares, which keeps every share's context in the one process (mapped:
#: what stays is the heap of their small arrays and objects, and the code of some 20 more kernels; measured
#: between its stages, every mapped page released: 221-239 MB for 16 shares of a 10^7-event trace)
ROOT_CAUSE_BASE_BYTES = 240 << 20
#: the part of the limit the root-cause analysis by shares plans for and keeps its mapped pages under
#: (``MappedStore`` budget): the rest absorbs a step that grows more than the steps before it (at 10^8 events a
#: share that waited in the delay replay's first round faulted in 553 MiB in its second, 380 more than expected)
ROOT_CAUSE_BUDGET = 0.8
#: peak bytes per event of the analysis in one piece without the global patterns (10^7-event benchmark
#: trace: 565 MB)
WHOLE_BYTES_PER_EVENT = 50.0
#: peak bytes per event of a share computing the location patterns (walk fragments, tables, instance
#: tables, the reused decode buffer, the spilled state read back; benchmark trace, one process of
#: 2.5 M events per share: 334 MB)
SHARE_BYTES_PER_EVENT = 75.0
#: peak bytes per event of the tables the global patterns read, built on share 0 for the whole trace (the
#: analysis in one piece with every pattern: about 1.2 GB at 10^7 events)
FALLBACK_BYTES_PER_EVENT = 120.0
#: with the root-cause analysis (delay, critical path, POP): the analysis in one piece (10^7-event benchmark
#: trace: 1030 MB), and a share's step over its data mapped from the spill folder (share_root_cause, mapped.py:
#: the delay replay's first round faults in most of its share's inputs; measured 106-125 MiB above the process
#: for a share of 625 k events, 16 x 4 benchmark trace)
WHOLE_ROOT_CAUSE_BYTES_PER_EVENT = 105.0
SHARE_ROOT_CAUSE_BYTES_PER_EVENT = 200.0

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}


def parse_size(text: str) -> int:
    """``"4G"``, ``"512MiB"``, ``"1.5g"``, ``"2000000000"`` or ``"50%"`` (of the memory available now) in bytes;
    ValueError with the accepted forms otherwise."""
    t = str(text).strip().lower()
    m = re.fullmatch(r"(\d+(?:\.\d*)?)\s*(%|[kmgt]?i?b?)", t)
    if not m:
        raise ValueError(f"--memory {text!r}: give a size such as 4G, 512M, 2000000000 (bytes) or 50% (of the "
                         f"memory available now)")
    value, unit = float(m.group(1)), m.group(2)
    size = value / 100.0 * available_bytes() if unit == "%" else value * _UNITS[unit]
    if size <= 0:
        raise ValueError(f"--memory {text!r}: the limit must be more than 0")
    return int(size)


def available_bytes() -> int:
    """MemAvailable of /proc/meminfo (what can be allocated without swapping), or the physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def default_limit() -> int:
    """Half of the memory available now: room for the page cache and whatever else runs."""
    return available_bytes() // 2


class MemoryPlan:
    """``n_shares`` for a run within ``limit`` bytes; ``estimate`` is the unbounded run's peak estimate."""

    def __init__(self, n_shares: int, limit: int, estimate: int, largest_share: int):
        self.n_shares, self.limit, self.estimate, self.largest_share = n_shares, limit, estimate, largest_share

    @property
    def bounded(self) -> bool:
        """True when the trace does not fit unbounded and runs in shares."""
        return self.n_shares > 1


def _events_by_process(trace) -> list[int]:
    by_proc: dict[int, int] = {}
    defs = trace.defs.locations
    for loc in trace.location_ids:
        d = defs.get(int(loc))
        p = int(d.process) if d is not None else -1
        by_proc[p] = by_proc.get(p, 0) + int(trace.n_events(int(loc)))
    return list(by_proc.values())


def _gb(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def plan_memory(trace, limit: int, global_patterns=(), root_cause: bool = False) -> MemoryPlan:
    """The number of shares for ``limit``; ValueError (one line: what does not fit and what to do) when no
    number of shares fits.  ``global_patterns``: names of the selected patterns that run on share 0 over
    the whole trace's tables; ``root_cause``: the root-cause patterns are selected (run by shares)."""
    counts = _events_by_process(trace)
    events = sum(counts)
    fallback = FALLBACK_BYTES_PER_EVENT * events if global_patterns else 0.0
    whole = WHOLE_ROOT_CAUSE_BYTES_PER_EVENT if root_cause else WHOLE_BYTES_PER_EVENT
    per_share = SHARE_ROOT_CAUSE_BYTES_PER_EVENT if root_cause else SHARE_BYTES_PER_EVENT
    estimate = int(BASE_BYTES + whole * events + fallback)
    if estimate <= limit:
        return MemoryPlan(1, limit, estimate, events)
    base = ROOT_CAUSE_BASE_BYTES if root_cause else BASE_BYTES
    usable = ROOT_CAUSE_BUDGET if root_cause else 1.0  # the part of the limit the shares are sized for
    room = usable * limit - base - fallback
    names = ", ".join(sorted(global_patterns))
    if global_patterns and room < per_share * max(counts) and BASE_BYTES + fallback >= limit / 2:
        raise ValueError(f"--memory {_gb(limit)}: the patterns that need the whole trace's tables at once ({names}) "
                         f"need about {_gb(BASE_BYTES + fallback)} for {events} events; give more memory, or leave "
                         f"them out with --without {','.join(sorted(global_patterns))}")
    biggest = per_share * max(counts)
    if room < biggest:
        raise ValueError(f"--memory {_gb(limit)}: the largest process alone has {max(counts)} events and needs "
                         f"about {_gb((base + biggest) / usable)}; an analysis "
                         f"share holds at least one whole process")
    # the fewest shares whose largest (whole processes, as engine.partition cuts them) fits the room
    from analyzer.replay.engine import partition

    k = max(2, math.ceil(per_share * events / room))
    while True:
        largest = max(sum(int(trace.n_events(l)) for l in share) for share in partition(trace, k))
        if per_share * largest <= room or k >= len(counts):
            return MemoryPlan(k, limit, estimate, largest)
        k += 1
