"""Late Sender waiting time of short messages: an example expert-analyze plugin.

A receive that waits for a short message waits for the sender to *start*,
not for bytes to arrive, so this wait cannot be cut by faster networks or
larger buffers, only by reordering or aggregating communication.  The
pattern splits that part out of Late Sender.

It is a filter over the public Late Sender instances
(``patterns.late_sender_instances``: one row per waiting receive, with the
call path, location, wait and message size), so it follows the built-in
``mpi_latesender`` rule exactly and its values are a part of its parent's
cell by cell: ``MPI_Test*`` calls never wait, and an ``MPI_Waitall`` counts
only its largest wait, here when that wait is a short message's.
"""

from __future__ import annotations

from patterns import Pattern, late_sender_instances, wait_severity

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
    requires = ("messages",)  # late_sender_instances reads the messages table
    # exact on a share of the processes (it filters the built-in instance table): computed per share
    # under --mpi and --memory instead of on rank 0 (docs/writing-patterns.md, "Scope")
    scope = "location"
    depends = ()

    #: messages with fewer bytes than this are short (subclass to change it)
    max_bytes = 4096

    def compute(self, ctx):
        ls = late_sender_instances(ctx)
        return wait_severity(ls, ls["bytes"] < self.max_bytes)
