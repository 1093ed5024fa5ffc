"""``expert-analyze --timeline OUT.json``: the trace on a timeline with its wait states, their causes and the
critical path, as Chrome/Perfetto trace-event JSON (open it in https://ui.perfetto.dev or chrome://tracing).

``waits.py`` places every wait-state instance on the time line and names its cause, ``critical.py`` cuts
the critical path into pieces of time, ``chrome_events.py`` turns both into trace events beside the trace's
own (``tracefmt.chrome``) and writes the file.  docs/reports.md, "Timeline", says what each element means.
"""

from .chrome_events import timeline_events, write_timeline
from .critical import critical_path_pieces
from .waits import WaitStates, wait_states

__all__ = ["timeline_events", "write_timeline", "critical_path_pieces", "wait_states", "WaitStates"]
