"""Where the tests find the repository and the shared fixtures and tools beside it.

CI clones ``shared/`` next to the repository (``../shared``); the tests expect it there and fail with
a clear message when it is missing rather than skipping.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


def shared(*parts: str) -> Path:
    """A path under ../shared that must exist."""
    path = SHARED.joinpath(*parts)
    assert path.exists(), f"{path} is missing: the tests expect ../shared beside the repository (CI clones it there)"
    return path


#: Score-P OTF2 trace of a two-rank ping-pong (pipit's test data)
OTF2_PING_PONG = SHARED / "fixtures" / "otf2" / "pipit-ping-pong"
#: writes small hybrid OTF2 traces and their expected wait-state totals
OTF2_SYNTH_GEN = SHARED / "tools" / "gen_otf2_synth.py"
