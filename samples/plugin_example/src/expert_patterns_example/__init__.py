"""Late Sender waiting time of short messages: an example expert-analyze plugin.

A receive that waits for a short message waits for the sender to *start*,
not for bytes to arrive, so this wait cannot be cut by faster networks or
larger buffers, only by reordering or aggregating communication.  The
pattern splits that part out of Late Sender.

It follows the Late Sender rule of Scalasca's SCOUT so that its values are
a subset of ``mpi_latesender`` (its parent) cell by cell:

* wait = min(ENTER of the send call, EXIT of the receiving call) - ENTER of
  the receiving call, if positive, on the receiving call's call path;
* MPI_Test* calls never wait;
* a call that completes several messages (MPI_Waitall, MPI_Waitsome) counts
  only its largest wait once; here it counts when that largest wait belongs
  to a short message.
"""

from __future__ import annotations

import numpy as np

from patterns.api import Pattern, Severity

__all__ = ["ShortMessagesWait"]


class ShortMessagesWait(Pattern):
    name = "mpi_short_messages_wait"
    parent = "mpi_latesender"
    display_name = "Short Messages"
    unit = "sec"
    description = (
        "Late Sender waiting time of messages shorter than 4096 bytes: time a receive call waits because "
        "the matching send started late, for messages so small that the wait is about the sender's timing, "
        "not about the transfer."
    )
    diagnosis = (
        "Short-message waits are latency-bound: fewer, larger messages (aggregating small ones), posting "
        "receives earlier with non-blocking calls, or sending earlier on the producer side reduce them; "
        "a faster network barely helps."
    )
    requires = ("messages",)

    #: messages with fewer bytes than this are short (subclass to change it)
    max_bytes = 4096

    def compute(self, ctx):
        m = ctx.table("messages")
        if len(m) == 0:
            return Severity.empty()
        recv_region = np.asarray(m["recv_region"], np.int64)
        names = np.asarray(ctx.region_name, dtype=object)
        is_test = np.zeros(len(m), bool)
        known = recv_region >= 0
        is_test[known] = [str(n).startswith("MPI_Test") for n in names[recv_region[known]]]
        cnode = np.asarray(m["recv_cnode"], np.int64)
        ok = known & ~is_test & (cnode >= 0)

        enter = np.asarray(m["recv_enter"], np.float64)
        wait = np.minimum(np.asarray(m["send_enter"], np.float64), np.asarray(m["recv_exit"], np.float64)) - enter
        wait = np.where(ok & (wait > 0), wait, 0.0)

        # the largest wait of each receiving call (ties: any one of them)
        call = np.asarray(m["recv_call"], np.int64)
        order = np.lexsort((-wait, call))
        first = np.ones(order.shape[0], bool)
        first[1:] = call[order][1:] != call[order][:-1]
        winner = order[first]
        short = np.asarray(m["bytes"], np.int64)[winner] < self.max_bytes
        winner = winner[short & (wait[winner] > 0)]
        return Severity(cnode[winner], np.asarray(m["recv_loc"], np.int64)[winner], wait[winner])
