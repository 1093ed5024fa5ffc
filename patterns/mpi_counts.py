"""MPI counts: synchronisations, communications and bytes (Scalasca's ``syncs``, ``comms`` and ``bytes`` trees).

Each property is the sum of a few *terms*, functions ``ctx -> Severity`` that count (or weigh by bytes)
rows of the ``messages`` and ``collectives`` tables or of the Late Sender / Late Receiver instance
tables (:mod:`patterns.instances`): a point-to-point message counts at both ends (the sending call on
the sender, the receiving call on the receiver), a collective at every member's call; zero-byte
transfers are synchronisations, the others communications.

The classes are listed by :data:`patterns.mpi.PATTERNS` (the built-in module the registry loads, so
they are reported as ``built-in patterns.mpi``).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .api import Pattern, Severity
from .instances import late_receiver_instances, late_sender_instances
from .rma_epochs import rma_bytes, rma_comm_count, rma_sync_count


def _at(cnode, loc, value) -> Severity:
    return Severity(np.asarray(cnode, np.int64), np.asarray(loc, np.int64), np.asarray(value, np.float64))


# --------------------------------------------------------------------------
# terms
# --------------------------------------------------------------------------
def _messages(ctx, side: str, which: str) -> Severity:
    """Messages at the ``side`` ("send" or "recv") call: ``which`` "zero" / "data" counts, "bytes" weighs."""
    M = ctx.table("messages")
    m = {"zero": M["bytes"] == 0, "data": M["bytes"] > 0, "bytes": np.ones(len(M), bool)}[which]
    c, loc = (M["send_cnode"], M["send_loc"]) if side == "send" else (M["recv_cnode"], M["recv_loc"])
    val = M["bytes"][m].astype(np.float64) if which == "bytes" else np.ones(int(m.sum()))
    return _at(c[m], loc[m], val)


def _collectives(ctx, kind: str) -> Severity:
    """Collective calls by what the member transfers: sync (nothing), cxch (both ways), csrc, cdst."""
    T = ctx.table("collectives")
    s, r = T["sent"] > 0, T["recvd"] > 0
    m = {"sync": ~s & ~r, "cxch": s & r, "csrc": s & ~r, "cdst": ~s & r}[kind]
    return _at(T["cnode"][m], T["loc"][m], np.ones(int(m.sum())))


def _collective_bytes(ctx, col: str) -> Severity:
    T = ctx.table("collectives")
    return _at(T["cnode"], T["loc"], T[col].astype(np.float64))


def _instances(ctx, instances, zero: bool, wrong_order_only: bool = False) -> Severity:
    """Count of the rows of ``instances(ctx)`` on zero-byte (or data-carrying) messages."""
    inst = instances(ctx)
    m = (inst["bytes"] == 0) if zero else (inst["bytes"] > 0)
    if wrong_order_only:
        m &= inst["wrong_order"]
    return _at(inst["cnode"][m], inst["loc"][m], np.ones(int(m.sum())))


zero_byte_sends = partial(_messages, side="send", which="zero")
zero_byte_receives = partial(_messages, side="recv", which="zero")
data_sends = partial(_messages, side="send", which="data")
data_receives = partial(_messages, side="recv", which="data")
bytes_sent = partial(_messages, side="send", which="bytes")
bytes_received = partial(_messages, side="recv", which="bytes")
collective_syncs = partial(_collectives, kind="sync")
collective_exchanges = partial(_collectives, kind="cxch")
collective_sources = partial(_collectives, kind="csrc")
collective_destinations = partial(_collectives, kind="cdst")
collective_bytes_out = partial(_collective_bytes, col="sent")
collective_bytes_in = partial(_collective_bytes, col="recvd")
zero_byte_late_receivers = partial(_instances, instances=late_receiver_instances, zero=True)
data_late_receivers = partial(_instances, instances=late_receiver_instances, zero=False)
zero_byte_late_senders = partial(_instances, instances=late_sender_instances, zero=True)
data_late_senders = partial(_instances, instances=late_sender_instances, zero=False)
zero_byte_wrong_order = partial(_instances, instances=late_sender_instances, zero=True, wrong_order_only=True)
data_wrong_order = partial(_instances, instances=late_sender_instances, zero=False, wrong_order_only=True)


# --------------------------------------------------------------------------
# patterns
# --------------------------------------------------------------------------
class _Count(Pattern):
    """The sum of ``terms`` (functions ``ctx -> Severity``)."""

    scope = "location"
    terms: tuple = ()

    def compute(self, ctx):
        if len(self.terms) == 1:
            return self.terms[0](ctx)
        return sum(term(ctx).to_dense(ctx.n_cnodes, ctx.n_locations) for term in self.terms)


_SYNC_HINT = ("Zero-byte messages only synchronise; many of them may be replaced by fewer collective operations or "
              "removed when the ordering they enforce is not needed.")
_COMM_HINT = "Compare with the time spent in communication: many small messages are better aggregated into fewer."
_BYTES_HINT = "Compare the volume with the communication time to judge the achieved bandwidth."


class Syncs(_Count):
    name = "syncs"
    parent = None
    paradigm = "mpi"
    display_name = "Synchronizations"
    unit = "occ"
    description = (
        "Number of synchronisation operations: zero-byte point-to-point messages (each end) and collectives that "
        "transfer no data, and (format 2.3) one-sided synchronisations."
    )
    diagnosis = _SYNC_HINT
    requires = ("messages", "collectives", "mpi_rma_ops")
    depends = ()
    terms = (zero_byte_sends, zero_byte_receives, collective_syncs, rma_sync_count)


class SyncsP2p(_Count):
    name = "syncs_p2p"
    parent = "syncs"
    display_name = "Point-to-point"
    unit = "occ"
    description = (
        "Number of zero-byte point-to-point sends and receives."
    )
    diagnosis = _SYNC_HINT
    requires = ("messages",)
    depends = ()
    terms = (zero_byte_sends, zero_byte_receives)


class SyncsSend(_Count):
    name = "syncs_send"
    parent = "syncs_p2p"
    display_name = "Sends"
    unit = "occ"
    description = (
        "Number of zero-byte sends, at the sending call."
    )
    diagnosis = _SYNC_HINT
    requires = ("messages",)
    depends = ()
    terms = (zero_byte_sends,)


class MpiSlrCount(_Count):
    name = "mpi_slr_count"
    parent = "syncs_send"
    display_name = "Late Receivers"
    unit = "occ"
    description = (
        "Number of Late Receiver instances on zero-byte messages (at the sender)."
    )
    diagnosis = _SYNC_HINT
    requires = ("messages",)
    depends = ()
    terms = (zero_byte_late_receivers,)


class SyncsRecv(_Count):
    name = "syncs_recv"
    parent = "syncs_p2p"
    display_name = "Receives"
    unit = "occ"
    description = (
        "Number of zero-byte receives (size from the matching send), at the receiving call."
    )
    diagnosis = _SYNC_HINT
    requires = ("messages",)
    depends = ()
    terms = (zero_byte_receives,)


class MpiSlsCount(_Count):
    name = "mpi_sls_count"
    parent = "syncs_recv"
    display_name = "Late Senders"
    unit = "occ"
    description = (
        "Number of Late Sender instances on zero-byte messages."
    )
    diagnosis = _SYNC_HINT
    requires = ("messages",)
    depends = ()
    terms = (zero_byte_late_senders,)


class MpiSlswoCount(_Count):
    name = "mpi_slswo_count"
    parent = "mpi_sls_count"
    display_name = "Messages in wrong order"
    unit = "occ"
    description = (
        "Number of wrong-order Late Sender instances on zero-byte messages."
    )
    diagnosis = _SYNC_HINT
    requires = ("messages",)
    depends = ()
    terms = (zero_byte_wrong_order,)


class SyncsColl(_Count):
    name = "syncs_coll"
    parent = "syncs"
    display_name = "Collective"
    unit = "occ"
    description = (
        "Number of collective operations that transfer no data (barriers)."
    )
    diagnosis = _SYNC_HINT
    requires = ("collectives",)
    depends = ()
    terms = (collective_syncs,)


class Comms(_Count):
    name = "comms"
    parent = None
    paradigm = "mpi"
    display_name = "Communications"
    unit = "occ"
    description = (
        "Number of communication operations: point-to-point messages with data (each end) and collectives that "
        "transfer data, and (format 2.3) one-sided transfers."
    )
    diagnosis = _COMM_HINT
    requires = ("messages", "collectives", "mpi_rma_ops")
    depends = ()
    terms = (data_sends, data_receives, collective_exchanges, collective_sources, collective_destinations,
             rma_comm_count)


class CommsP2p(_Count):
    name = "comms_p2p"
    parent = "comms"
    display_name = "Point-to-point"
    unit = "occ"
    description = (
        "Number of point-to-point sends and receives that carry data."
    )
    diagnosis = _COMM_HINT
    requires = ("messages",)
    depends = ()
    terms = (data_sends, data_receives)


class CommsSend(_Count):
    name = "comms_send"
    parent = "comms_p2p"
    display_name = "Sends"
    unit = "occ"
    description = (
        "Number of sends carrying data, at the sending call."
    )
    diagnosis = _COMM_HINT
    requires = ("messages",)
    depends = ()
    terms = (data_sends,)


class MpiClrCount(_Count):
    name = "mpi_clr_count"
    parent = "comms_send"
    display_name = "Late Receivers"
    unit = "occ"
    description = (
        "Number of Late Receiver instances on messages with data (at the sender)."
    )
    diagnosis = _COMM_HINT
    requires = ("messages",)
    depends = ()
    terms = (data_late_receivers,)


class CommsRecv(_Count):
    name = "comms_recv"
    parent = "comms_p2p"
    display_name = "Receives"
    unit = "occ"
    description = (
        "Number of receives of messages carrying data, at the receiving call."
    )
    diagnosis = _COMM_HINT
    requires = ("messages",)
    depends = ()
    terms = (data_receives,)


class MpiClsCount(_Count):
    name = "mpi_cls_count"
    parent = "comms_recv"
    display_name = "Late Senders"
    unit = "occ"
    description = (
        "Number of Late Sender instances on messages with data."
    )
    diagnosis = _COMM_HINT
    requires = ("messages",)
    depends = ()
    terms = (data_late_senders,)


class MpiClswoCount(_Count):
    name = "mpi_clswo_count"
    parent = "mpi_cls_count"
    display_name = "Messages in wrong order"
    unit = "occ"
    description = (
        "Number of wrong-order Late Sender instances on messages with data."
    )
    diagnosis = _COMM_HINT
    requires = ("messages",)
    depends = ()
    terms = (data_wrong_order,)


class CommsColl(_Count):
    name = "comms_coll"
    parent = "comms"
    display_name = "Collective"
    unit = "occ"
    description = (
        "Number of collective operations that transfer data."
    )
    diagnosis = _COMM_HINT
    requires = ("collectives",)
    depends = ()
    terms = (collective_exchanges, collective_sources, collective_destinations)


class CommsCxch(_Count):
    name = "comms_cxch"
    parent = "comms_coll"
    display_name = "Exchange"
    unit = "occ"
    description = (
        "Number of collectives in which the location both sends and receives data."
    )
    diagnosis = _COMM_HINT
    requires = ("collectives",)
    depends = ()
    terms = (collective_exchanges,)


class CommsCsrc(_Count):
    name = "comms_csrc"
    parent = "comms_coll"
    display_name = "As source"
    unit = "occ"
    description = (
        "Number of collectives in which the location only sends data."
    )
    diagnosis = _COMM_HINT
    requires = ("collectives",)
    depends = ()
    terms = (collective_sources,)


class CommsCdst(_Count):
    name = "comms_cdst"
    parent = "comms_coll"
    display_name = "As destination"
    unit = "occ"
    description = (
        "Number of collectives in which the location only receives data."
    )
    diagnosis = _COMM_HINT
    requires = ("collectives",)
    depends = ()
    terms = (collective_destinations,)


class Bytes(_Count):
    name = "bytes"
    parent = None
    paradigm = "mpi"
    display_name = "Bytes transferred"
    unit = "bytes"
    description = (
        "Bytes sent and received in point-to-point messages, collectives and (format 2.3) one-sided transfers."
    )
    diagnosis = _BYTES_HINT
    requires = ("messages", "collectives", "mpi_rma_ops")
    depends = ()
    terms = (bytes_sent, bytes_received, collective_bytes_out, collective_bytes_in, rma_bytes)


class BytesP2p(_Count):
    name = "bytes_p2p"
    parent = "bytes"
    display_name = "Point-to-point"
    unit = "bytes"
    description = (
        "Bytes sent and received in point-to-point messages."
    )
    diagnosis = _BYTES_HINT
    requires = ("messages",)
    depends = ()
    terms = (bytes_sent, bytes_received)


class BytesSent(_Count):
    name = "bytes_sent"
    parent = "bytes_p2p"
    display_name = "Sent"
    unit = "bytes"
    description = (
        "Bytes sent in point-to-point messages, at the sending call."
    )
    diagnosis = _BYTES_HINT
    requires = ("messages",)
    depends = ()
    terms = (bytes_sent,)


class BytesRcvd(_Count):
    name = "bytes_rcvd"
    parent = "bytes_p2p"
    display_name = "Received"
    unit = "bytes"
    description = (
        "Bytes received in point-to-point messages (as sent), at the receiving call."
    )
    diagnosis = _BYTES_HINT
    requires = ("messages",)
    depends = ()
    terms = (bytes_received,)


class BytesColl(_Count):
    name = "bytes_coll"
    parent = "bytes"
    display_name = "Collective"
    unit = "bytes"
    description = (
        "Bytes sent and received in collective operations."
    )
    diagnosis = _BYTES_HINT
    requires = ("collectives",)
    depends = ()
    terms = (collective_bytes_out, collective_bytes_in)


class BytesCout(_Count):
    name = "bytes_cout"
    parent = "bytes_coll"
    display_name = "Outgoing"
    unit = "bytes"
    description = (
        "Bytes each location sent in collective operations."
    )
    diagnosis = _BYTES_HINT
    requires = ("collectives",)
    depends = ()
    terms = (collective_bytes_out,)


class BytesCin(_Count):
    name = "bytes_cin"
    parent = "bytes_coll"
    display_name = "Incoming"
    unit = "bytes"
    description = (
        "Bytes each location received in collective operations."
    )
    diagnosis = _BYTES_HINT
    requires = ("collectives",)
    depends = ()
    terms = (collective_bytes_in,)


#: in report order (listed by patterns.mpi.PATTERNS)
COUNT_PATTERNS = [
    Syncs, SyncsP2p, SyncsSend, MpiSlrCount, SyncsRecv, MpiSlsCount, MpiSlswoCount, SyncsColl,
    Comms, CommsP2p, CommsSend, MpiClrCount, CommsRecv, MpiClsCount, MpiClswoCount, CommsColl, CommsCxch, CommsCsrc,
    CommsCdst,
    Bytes, BytesP2p, BytesSent, BytesRcvd, BytesColl, BytesCout, BytesCin,
]
