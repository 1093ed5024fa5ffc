"""``expert-profile``: an ompP-style per-region profile of a trace (:mod:`.ompp`, numba pass in :mod:`.kernel`)."""

from .ompp import COLUMNS, OVERHEADS, PROGRAM, Profile, RegionRow, collective_volume, format_profile, open_trace, \
    profile_trace, write_charts

__all__ = ["COLUMNS", "OVERHEADS", "PROGRAM", "Profile", "RegionRow", "collective_volume", "format_profile",
           "open_trace", "profile_trace", "write_charts"]
