"""Rounds: one stage run over and over until every share says it is done (the replays whose shares wait
for each other: the delay costs, the critical path and the ideal-network replay of the root-cause analysis).

A *step* ``step(share, state, inbox, stuck) -> (state, outbox, status)`` runs as far as its share can
with what has arrived (``inbox``: the outboxes of the previous round, as for a stage) and posts what the
others wait for.  ``status`` is a :class:`Status`: the share's work left, whether it moved at all this
round, and the lowest global location it is blocked on.  After each round every share sees every
share's status combined (``Network.agree``: a maximum, an allreduce under MPI), so every process decides
alike whether to go on:

* every share done (``left == 0``): the rounds end;
* nobody moved and nothing was posted, but work is left: the shares wait for each other in a cycle (an
  inconsistent trace).  The next round's ``stuck`` is the lowest location any share is blocked on; the share
  owning it lets one blocked step pass (as the serial replays do on such traces), the others ignore it.

``run_rounds`` returns the local shares' final states and the number of rounds.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .network import Network, run_stages

__all__ = ["Status", "run_rounds", "NOT_STUCK"]

_NONE = 1 << 62  # no location waited on
#: ``stuck`` when the shares are not waiting for each other in a cycle
NOT_STUCK = -1


class Status(NamedTuple):
    """What a share tells every share after a round."""

    left: int  # work left (touches, cut points, ...); 0: done
    moved: bool  # did anything this round (took a step or posted something)
    blocked_on: int  # lowest global location it waits on (NOT_STUCK if none)


def run_rounds(net: Network, step, limit: int | None = None) -> tuple[dict[int, Any], int]:
    """Run ``step`` round after round over every share of ``net`` (see the module docstring).  ``limit``:
    a RuntimeError after that many rounds (a safeguard for a step that never finishes)."""
    stuck = NOT_STUCK
    rounds = 0
    with net.small_payloads():
        while True:
            mine: dict[int, np.ndarray] = {}

            def stage(s, state, inbox, stuck=stuck):
                state, outbox, status = step(s, state, inbox, stuck)
                left, moved, at = int(status.left), bool(status.moved), int(status.blocked_on)
                mine[s] = np.array([left > 0, moved, -at if left > 0 and at != NOT_STUCK else -_NONE], np.int64)
                return state, outbox

            states = run_stages(net, [stage])
            rounds += 1
            # every share's status, combined alike on every process (a maximum): any work left, anybody moved,
            # the lowest location waited on
            left, moved, at = (int(x) for x in net.agree(mine)) if net.local else (0, 0, -_NONE)
            if not left:  # what the last round posted nobody waits for
                return states, rounds
            if moved:
                stuck = NOT_STUCK
            else:
                if at == -_NONE:
                    raise RuntimeError("rounds: work is left but no share is blocked on a location")
                stuck = -at
            if limit is not None and rounds >= limit:
                raise RuntimeError(f"rounds: not done after {rounds} rounds")
