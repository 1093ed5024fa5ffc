"""analyzer/distributed/rounds.py: rounds until every share is done, and the way out of a cycle of waits."""

from __future__ import annotations

import pytest

from analyzer.distributed.network import MemoryNetwork
from analyzer.distributed.rounds import NOT_STUCK, Status, run_rounds
from analyzer.distributed.spill import SpillNetwork


def _ring(hops: int):
    """A token passed around the shares ``hops`` times; each share counts the visits it got (and knows how
    many it will get: its work left)."""
    def step(s, state, inbox, stuck):
        state = state or {"visits": 0, "expected": sum(1 for t in range(hops) if t % K == s)}
        tokens = [t for t in inbox.get("token", []) if t is not None]
        if s == 0 and state["visits"] == 0 and hops:
            tokens = [0]  # share 0 starts
        out = {}
        for t in tokens:
            state["visits"] += 1
            if t + 1 < hops:
                out["token"] = [t + 1 if d == (s + 1) % K else None for d in range(K)]
        return state, out, Status(state["expected"] - state["visits"], bool(tokens), NOT_STUCK)
    return step


K = 3


@pytest.mark.parametrize("net", ["memory", "spill"])
def test_rounds_run_until_every_share_is_done(tmp_path, net):
    network = MemoryNetwork(K) if net == "memory" else SpillNetwork(str(tmp_path), K)
    states, rounds = run_rounds(network, _ring(7))
    assert [states[s]["visits"] for s in range(K)] == [3, 2, 2]
    assert rounds == 7


def test_a_cycle_of_waits_is_broken_at_the_lowest_location():
    """Two shares each wait for the other: nobody moves; the next round tells both the lowest location
    waited on, and only its owner passes."""
    passed = []

    def step(s, state, inbox, stuck):
        state = state or {"done": False}
        if state["done"]:
            return state, {}, Status(0, False, NOT_STUCK)
        mine = 10 + s  # the location this share waits on
        if stuck == mine:
            passed.append(s)
            state["done"] = True
            return state, {"go": [True if d != s else None for d in range(2)]}, Status(0, True, NOT_STUCK)
        if any(x for x in inbox.get("go", []) if x):
            state["done"] = True
            return state, {}, Status(0, True, NOT_STUCK)
        return state, {}, Status(1, False, mine)

    states, rounds = run_rounds(MemoryNetwork(2), step)
    assert passed == [0] and all(states[s]["done"] for s in range(2)) and rounds == 3


def test_a_step_that_never_ends_is_stopped():
    with pytest.raises(RuntimeError, match="not done after 5 rounds"):
        run_rounds(MemoryNetwork(2), lambda s, st, inbox, stuck: (st, {}, Status(1, True, NOT_STUCK)), limit=5)
