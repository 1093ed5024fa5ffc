"""An OTF2 archive as a Trace: our definitions, and the native reader's decoded columns as its events.

``Otf2Trace`` offers what :class:`tracefmt.reader.Trace` offers the analysis
(``defs``, ``location_ids``, ``events``, ``n_events``, ``decode_into``,
``time_range``, ``problems``, ``notes``, ``header``) without writing the
events into our format and decoding them again: the columns the OTF2 kernel
wrote are the columns the analysis reads (docs/performance.md, "OTF2").

The definitions do go through our format's encoder and reader (they are
small), so they are checked and resolved exactly as those of an ``.elg``
file: the same definitions, problems and clocks as the converted trace.
"""

from __future__ import annotations

import numpy as np

from .clock import ticks_to_seconds
from .column_memory import COLUMNS, new_columns
from .dense import dense_view
from .reader import Events
from .reader import open as open_native
from .writer import to_bytes


class Otf2Trace:
    """Definitions of our format over in-memory event columns (``otf2_native.open_otf2`` builds it).

    ``columns[loc]`` maps every name of ``column_memory.COLUMNS`` to one
    location's array; ``time`` must hold ``ticks`` in seconds of the
    location's clock as this trace's definitions give it (recomputed here
    where they differ from what the decoder assumed).  ``absent_locations``:
    {location id: why} of the locations whose events are missing altogether
    (their file missing or unreadable; the analysis marks them in the cube).
    """

    def __init__(self, asm, columns: dict[int, dict[str, np.ndarray]], absent: dict[int, str] | None = None):
        self._defs_trace = open_native(to_bytes(asm.definitions(), {}, creator=asm.creator))
        self.defs = self._defs_trace.defs
        self.header = self._defs_trace.header
        self.location_ids = self._defs_trace.location_ids
        self.path = asm.source
        self.verify = True
        self.problems = list(asm.problems) + self._defs_trace.problems
        self.notes = list(asm.notes) + self._defs_trace.notes
        self.absent_locations = dict(absent or {})
        self._columns = {}
        for lid in self.location_ids.tolist():
            cols = columns.get(lid)
            if cols is None or len(cols["type"]) == 0:
                continue
            self._check_seconds(lid, cols, float(asm.ticks_per_second))
            self._columns[lid] = cols
        # where the analysis renumbers ids (tracefmt.dense rewrites event columns in place), it gets copies
        self._shared = dense_view(self) is self

    def _check_seconds(self, lid: int, cols: dict, rate: float) -> None:
        loc = self.defs.locations[lid]
        clock = self.defs.clock(loc.process)
        offsets = self.defs.offsets.get(loc.process, [])
        if clock.origin != 0 or clock.ticks_per_second != rate or offsets:
            ticks_to_seconds(cols["ticks"], clock, offsets, out=cols["time"])

    def __repr__(self) -> str:
        return f"<Otf2Trace {self.path}: {len(self.location_ids)} locations>"

    @property
    def complete(self) -> bool:
        return not self.problems

    def close(self) -> None:
        """Nothing to release (the columns go with the trace)."""

    def __enter__(self) -> "Otf2Trace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ events
    def check_location(self, location: int) -> None:
        self._defs_trace.check_location(location)

    def n_events(self, location: int) -> int:
        self.check_location(location)
        cols = self._columns.get(int(location))
        return 0 if cols is None else len(cols["type"])

    def events(self, location: int) -> Events:
        """A location's events as independent arrays (a copy of its columns)."""
        self.check_location(location)
        cols = self._columns.get(int(location))
        if cols is None:
            return Events.empty(int(location))
        return Events(int(location), **{name: col.copy() for name, col in cols.items()})

    def new_column_buffer(self, n: int) -> dict[str, np.ndarray]:
        """No buffer where :meth:`decode_into` hands out the trace's own columns, else one of n events."""
        return {} if self._shared else new_columns(n)

    def decode_into(self, location: int, buffer: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """A location's columns: the trace's own arrays (no copy; the replay's buffer-reuse protocol of
        ``tracefmt.Trace.decode_into``, whose caller may only clamp times in place), or copies in `buffer`."""
        cols = self._columns.get(int(location))
        if cols is None:
            return {name: np.zeros(0, dt) for name, dt in COLUMNS}
        if self._shared:
            return cols
        n = len(cols["type"])
        if n > len(buffer["time"]):
            raise ValueError(f"column buffer of {len(buffer['time'])} events is too small for location "
                             f"{location} ({n} events)")
        out = {name: buffer[name][:n] for name, _ in COLUMNS}
        for name in out:
            out[name][...] = cols[name]
        return out

    def time_range(self, location: int) -> tuple[float, float] | None:
        """(first, last) event time of a location in seconds, None without events."""
        cols = self._columns.get(int(location))
        if cols is None:
            return None
        return float(cols["time"][0]), float(cols["time"][-1])


__all__ = ["Otf2Trace"]
