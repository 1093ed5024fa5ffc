"""ENTER/EXIT nesting: the status codes of every stack walker, and the words for them.

Three jitted passes walk a location's region stack, each fused with its own
per-event work and its own tolerance:

* ``analyzer.replay.kernels.location.replay_location`` (call tree and table
  rows): every exit must name the innermost open region; a truncated
  location (regions still open at the end) is closed and reported, not fatal;
* ``analyzer.profile.kernel.profile_location`` (``expert-profile``): as the
  original ompP-style loop, a plain EXIT closes the innermost region whatever
  it names, a collective exit must name it, and nothing may stay open;
* :func:`tracefmt.kernels.nesting_status` (the validator's fast path).

They report problems with the codes below, so a code means the same thing
whichever pass found it, and :func:`message` words it the same way for every
tool.  The codes are plain ints: numba treats module-level ints as
compile-time constants.  Keep their values: numba's on-disk cache is keyed
on each kernel's own source file, so a changed value here would not reach
cached kernels until their caches are cleared.
"""

from __future__ import annotations

from .layout import EventType

OK = 0
#: an exit event (EXIT, MPI_COLLEXIT, OMP_COLLEXIT) while no region is open
EXIT_EMPTY_STACK = 1
#: an exit event names another region than the innermost open one
EXIT_MISMATCH = 2
#: an ENTER names a region the definitions do not define
UNDEFINED_REGION = 3
#: a worker thread enters the parallel region of a team no thread of its process forked
UNKNOWN_TEAM = 4
#: regions are still open after the location's last event
UNCLOSED = 5
#: not a problem: the replay must walk this worker after its team's master (nothing was changed)
DEFER = 6

_EXIT_WORDS = {int(EventType.EXIT): "exit", int(EventType.MPI_COLLEXIT): "collective exit",
               int(EventType.OMP_COLLEXIT): "collective exit"}


def message(code: int, *, event: int = -1, time: float = 0.0, event_type: int = int(EventType.EXIT),
            region: str = "", open_region: str = "") -> str:
    """The words for a nesting problem, without the location (the caller's error type adds where).

    ``event``/``time``: the offending event's index and time (for
    :data:`UNCLOSED` the time the innermost open region was entered);
    ``event_type``: the type of a mismatched exit event (a collective exit
    is called one); ``region``: how the caller shows the region the event
    names, ``open_region`` the innermost open one (for example ``'main'``,
    or a region id where no name is known).
    """
    at = f"at {time:.9f} s (event {event})"
    if code == EXIT_EMPTY_STACK:
        return f"exit {at} without an open region"
    if code == EXIT_MISMATCH:
        exit_word = _EXIT_WORDS.get(int(event_type), "exit")
        return f"{exit_word} {at} names region {region} but region {open_region} is open"
    if code == UNDEFINED_REGION:
        return f"enter {at} names region {region}, which the definitions do not define"
    if code == UNKNOWN_TEAM:
        return f"enter {at}: a worker enters parallel region {region} of a team that no thread of its process forked"
    if code == UNCLOSED:
        return f"region {open_region} entered at {time:.9f} s is never left"
    raise ValueError(f"nesting status {code} is not a problem")
