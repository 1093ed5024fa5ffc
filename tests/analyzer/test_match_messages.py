"""match_messages: the receive rows taken as they are (every receive matched, grouped by location) give the table
the general path gives for the same receives in another row order."""

from __future__ import annotations

import numpy as np

from analyzer.replay.matching import match_messages

SEND_COLS = ("send_region", "send_cnode", "send_enter", "send_exit", "send_flags", "send_request", "sendc_region",
             "sendc_cnode", "sendc_enter", "sendc_exit", "bytes")
RECV_COLS = ("recv_time", "recv_region", "recv_cnode", "recv_enter", "recv_exit", "recv_call", "recvp_region",
             "recvp_cnode", "recvp_enter", "recvp_exit", "recv_request", "recv_flags", "recv_bytes", "recv_seq")


def _messages(seed, n=60, ranks=3):
    """n messages on random channels between ranks (one location each), sent at 1, 2, ...; each receive posted
    after its send, in channel order, so the FIFO matching pairs them as drawn."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, ranks, n), rng.integers(0, ranks, n)
    tag = rng.integers(0, 2, n)
    t = np.arange(1.0, n + 1)
    S = {"send_rank": src, "send_loc": src.astype(np.int32), "dest": dst, "comm": np.zeros(n, np.int64),
         "tag": tag, "send_time": t, "send_pos": np.arange(n)}
    S.update({k: np.arange(n) * 7 + j for j, k in enumerate(SEND_COLS)})
    o = np.lexsort((np.arange(n), dst))  # receive rows grouped by location, each in posting order
    R = {"source": src[o], "recv_rank": dst[o], "recv_loc": dst[o].astype(np.int32), "comm": np.zeros(n, np.int64),
         "tag": tag[o], "post_time": t[o] + 0.5, "post_pos": np.arange(n)}
    R.update({k: (np.arange(n) * 11 + j)[o] for j, k in enumerate(RECV_COLS)})
    return S, R


def test_rows_as_they_are_equal_the_sorted_rows():
    for seed in range(5):
        S, R = _messages(seed)
        fast, counts = match_messages(S, R)
        assert counts == (60, 60, 60)
        # the same receives interleaved across locations (each location's rows still in their order): sorted back
        loc = R["recv_loc"]
        nth = np.arange(len(loc)) - np.searchsorted(loc, loc)  # each row's place within its location's run
        k = np.lexsort((loc, nth))
        shuffled = {c: v[k] for c, v in R.items()}
        assert (np.diff(shuffled["recv_loc"]) < 0).any()
        slow, counts2 = match_messages(S, shuffled)
        assert counts2 == counts and list(fast) == list(slow)
        for c in fast:
            assert np.array_equal(fast[c], slow[c]) and fast[c].dtype == slow[c].dtype, c


def test_an_unmatched_receive_leaves_its_row_out():
    S, R = _messages(1)
    S = {c: v[1:] for c, v in S.items()}  # the first send is missing: its receive stays unmatched
    table, (ns, nr, n) = match_messages(S, R)
    assert (ns, nr, n) == (59, 60, 59) and len(table["recv_loc"]) == 59
