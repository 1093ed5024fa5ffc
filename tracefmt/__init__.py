"""Reading, writing, building and checking ``.elg`` event traces (format 2.0).

See ``docs/format.md`` for the format and ``docs/architecture.md`` for the API.
"""

from . import conventions, layout
from .builder import BuilderError, TraceBuilder
from .conventions import classify
from .definitions import (
    Callsite,
    Clock,
    Comm,
    Definitions,
    Location,
    Lock,
    Machine,
    Metric,
    Node,
    Offset,
    Process,
    Region,
    Window,
)
from .errors import TraceFormatError
from .reader import Events, Header, Trace, open
from .writer import TraceWriter, write_trace

__all__ = [
    "BuilderError",
    "Callsite",
    "Clock",
    "Comm",
    "Definitions",
    "Events",
    "Header",
    "Location",
    "Lock",
    "Machine",
    "Metric",
    "Node",
    "Offset",
    "Process",
    "Region",
    "Trace",
    "TraceBuilder",
    "TraceFormatError",
    "TraceWriter",
    "Window",
    "classify",
    "conventions",
    "layout",
    "open",
    "write_trace",
]
