"""How shares exchange data between stages: one :class:`Network` API, three carriers.

The analysis is a sequence of *stages* (``stage(share, state, inbox) -> (state, outbox)``); between
two stages every share's outbox is delivered.  An outbox maps a *kind* (``"sends"``, ``"tree"``, ...)
to one payload per destination share (None: nothing for that share) or, under the key
:data:`EVERY`, one payload for all shares.  An inbox maps a kind to the payloads sent to this share,
one per source share in source order (None where a source sent nothing).

* :class:`MemoryNetwork`: every share in this process, payloads and states kept in memory (tests,
  and the reference the other carriers must equal);
* ``MpiNetwork`` (``analyzer.distributed.mpi_network``): one share per MPI rank;
* ``SpillNetwork`` (``analyzer.distributed.spill``): every share in this process one after another,
  payloads and states on disk, so only one share's data is in memory at a time (``--memory``).

Payloads are dicts of numpy arrays (columns) or small picklable objects.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

#: outbox key of a payload for every share (the same object to each)
EVERY = "*"

Payload = Any
Outbox = dict[str, Any]  # kind -> list[Payload | None] (one per destination) or {EVERY: Payload}
Inbox = dict[str, list]  # kind -> [Payload | None] per source share
Stage = Callable[[int, Any, Inbox], tuple[Any, Outbox]]


class ShareFailed(RuntimeError):
    """A stage failed on some share; raised where the failure is reported (rank 0, or the only process)."""


class Network(ABC):
    """The carrier between stages (abstract: the three carriers implement it).  ``n_shares`` shares in
    all; this process runs ``local`` of them."""

    n_shares: int
    local: list[int]
    #: whether a share's state stays in this process's memory between stages (not so under ``--memory``): the
    #: exchanges of the root-cause analysis by shares keep every local share's context across many rounds
    keeps_states: bool = True

    @abstractmethod
    def post(self, share: int, outbox: Outbox) -> None:
        """Queue ``share``'s outbox for the next :meth:`flush`."""

    @abstractmethod
    def flush(self, error: BaseException | None = None) -> None:
        """Deliver every queued outbox (collective over all processes).  ``error``: this process's
        stage failed; every process then raises instead of delivering (one process: that error itself;
        under MPI the first failure's, in share order, on rank 0 and :class:`ShareFailed` elsewhere), so
        no process waits forever."""

    @abstractmethod
    def inbox(self, share: int) -> Inbox:
        """What the last :meth:`flush` delivered to ``share`` (an empty dict before the first)."""

    @abstractmethod
    def keep(self, share: int, state: Any) -> None:
        """Hold ``share``'s state until the next stage (in memory, or on disk for ``--memory``)."""

    @abstractmethod
    def state(self, share: int) -> Any:
        """The state :meth:`keep` held for ``share`` (None before the first stage)."""

    def agree(self, values: dict) -> np.ndarray:
        """The elementwise maximum of the small int64 vectors every share gives (``values``: this process's
        shares'), the same on every process: what all shares decide alike after a round
        (``rounds.run_rounds``).  One process holds every share here; ``MpiNetwork`` runs an allreduce."""
        return np.max(np.stack([np.asarray(v, np.int64) for v in values.values()]), axis=0)

    def small_payloads(self):
        """A context in which every flush carries few and small payloads (the rounds of ``rounds.run_rounds``);
        ``MpiNetwork`` then sends only the payloads that exist instead of an all-to-all."""
        return contextlib.nullcontext()

    def close(self) -> None:
        """Free what the network holds (files of a spill directory)."""


def route(n_shares: int, kind_payloads: dict[str, dict[int, Payload]]) -> Outbox:
    """An outbox from ``{kind: {destination: payload}}`` (absent destinations get None)."""
    out: Outbox = {}
    for kind, by_dest in kind_payloads.items():
        lst = [None] * n_shares
        for d, p in by_dest.items():
            lst[int(d)] = p
        out[kind] = lst
    return out


def deliver(outboxes: dict[int, Outbox], n_shares: int) -> dict[int, Inbox]:
    """Every share's inbox from all shares' outboxes (the in-memory delivery every carrier must equal)."""
    inboxes: dict[int, Inbox] = {d: {} for d in range(n_shares)}
    for src in sorted(outboxes):
        for kind, payloads in outboxes[src].items():
            for d in range(n_shares):
                if isinstance(payloads, dict):
                    p = payloads.get(EVERY)
                else:
                    p = payloads[d]
                inboxes[d].setdefault(kind, [None] * n_shares)[src] = p
    return inboxes


class MemoryNetwork(Network):
    """All shares in this process, everything in memory."""

    def __init__(self, n_shares: int):
        self.n_shares = int(n_shares)
        self.local = list(range(self.n_shares))
        self._posted: dict[int, Outbox] = {}
        self._inboxes: dict[int, Inbox] = {}
        self._states: dict[int, Any] = {}

    def post(self, share, outbox):
        self._posted[share] = outbox

    def flush(self, error=None):
        if error is not None:  # one process: the stage's own error, with its file and location
            raise error
        self._inboxes = deliver(self._posted, self.n_shares)
        self._posted = {}

    def inbox(self, share):
        return self._inboxes.get(share, {})

    def keep(self, share, state):
        self._states[share] = state

    def state(self, share):
        return self._states.get(share)


def run_stages(net: Network, stages: list[Stage]) -> dict[int, Any]:
    """Run ``stages`` over every share of ``net`` (the local ones here), delivering outboxes between
    stages; returns the final state of each local share.  A stage failing on a local share stops
    every process at the next delivery (:meth:`Network.flush`)."""
    for stage in stages:
        error = None
        for s in net.local:
            try:
                state, outbox = stage(s, net.state(s), net.inbox(s))
            except Exception as exc:  # reported at the delivery, so the other processes do not wait forever
                error = exc
                break
            net.keep(s, state)
            net.post(s, outbox)
        net.flush(error)
    return {s: net.state(s) for s in net.local}
