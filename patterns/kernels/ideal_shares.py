"""What the ideal-network replay by shares (``analyzer.distributed.share_pop``) exchanges each round, packed per
destination share into one int64 and one float64 array, and the kernels that pack and unpack it around the
walk of ``patterns.kernels.ideal``.  One payload of two arrays per destination and one kernel call each way:
a round costs few messages and few Python calls, and rounds are many (one per collective instance).

A share's payload to another: ``ints`` starts with the number of records of each kind (:data:`CLOCKS`,
:data:`REPORTS`, :data:`PREDICTED`, :data:`REVOKED`), then the records, kind after kind; ``floats`` holds
their values in the same order.  A message is named by its receiver (global location) and the receiver's
sequence number of it (the same on both shares), an instance by its id over all shares.

==========  =================================================  =======================================
kind        ints                                               floats
==========  =================================================  =======================================
clock       receiver, sequence number                          the send's clock
report      instance, own members, last own root (global       their latest arrival, the root's
            location, -1: none), last own member, its type     (-inf: none)
predicted   receiver, sequence number, instance, whether the   the sender's arrival, then the n
            sender is the root, n                              computations up to the send
revoked     receiver, sequence number
==========  =================================================  =======================================

* a *report* goes to every other share with members of the instance once the own members have all arrived;
  each member share folds them (:func:`ideal_receive`) into the instance's part elsewhere: its members, the
  latest arrival, and the root and type of the member last in location order (what the serial replay takes);
* a *predicted* clock goes with it, to the receiver's share where that share is a member too, for each send an
  own member reaches after the instance before anything could make it wait (:func:`ideal_lookahead`): that
  share computes the clock when the instance ends there (``ideal.release_predicted``), bit for bit the
  walk's, and its receiver goes on in that round; the walk does not send it again;
* a *revoked* clock: its sender was let pass at the instance (a cycle of waits on an inconsistent trace), so
  it leaves at its arrival, not at the instance's end; nobody used the prediction (the instance was complete
  nowhere while everything waited), and the walk sends the clock when it gets there.
"""

from __future__ import annotations

import numba
import numpy as np

from .ideal import (COLLECTIVE, FORK, OMP_BARRIER, PG, PN, PNEXT, PROOT, PSTART, RECV, SEND, USED, WAITING,
                    finish_collective, queue_location, release_predicted)

__all__ = ["CLOCKS", "PREDICTED", "RECEIVE_ERRORS", "REPORTS", "REVOKED", "ideal_lookahead", "ideal_pack",
           "ideal_receive"]

#: positions of the record counts at the start of ``ints``
CLOCKS, REPORTS, PREDICTED, REVOKED = range(4)
#: ints of a record of each kind (floats: 1, 2, 1 + n, 0)
_INTS = (2, 5, 5, 2)
#: what a non-zero return of :func:`ideal_receive` means
RECEIVE_ERRORS = {1: "a send clock arrived for a message no own location receives",
                  2: "a report or predicted clock arrived for a collective instance with no own member",
                  3: "a predicted send clock was taken back after its use"}


@numba.njit(cache=True, nogil=True)
def ideal_lookahead(inst, c_off, c_loc, c_rows, c_inst, cut_off, kind, row, comp, b_inst, m_team, m_master, m_remote,
                    ptr):
    """The sends to remote receivers that the own members of instances ``inst`` (dense ids; every own member
    arrived, some elsewhere not yet) reach after leaving them before anything could make them wait (a matched
    receive, a collective instance, an OpenMP barrier, a worker's fork): the clock of such a send is the
    member's leave time plus the computation before each cut point up to the send, added one after the other
    as ``ideal_advance`` will add them.  Returns per send its messages row, the member's position in ``c_rows``
    and those computations ``comps[off[j]:off[j + 1]]``.  A member no longer at its collective (let pass on
    an inconsistent trace) has none."""
    n_pred, n_comp = 0, 0
    rows, qs = np.empty(0, np.int64), np.empty(0, np.int64)
    off, comps = np.zeros(1, np.int64), np.empty(0)
    for fill in range(2):  # count, then fill
        if fill:
            rows, qs = np.empty(n_pred, np.int64), np.empty(n_pred, np.int64)
            off, comps = np.empty(n_pred + 1, np.int64), np.empty(n_comp)
            off[0] = 0
        n_pred, n_comp = 0, 0
        for j in range(inst.shape[0]):
            g = inst[j]
            for q in range(c_off[g], c_off[g + 1]):
                l = c_loc[q]
                i = ptr[l]
                if i >= cut_off[l + 1] or kind[i] != COLLECTIVE or row[i] != c_rows[q]:
                    continue
                for s in range(i + 1, cut_off[l + 1]):
                    k, r = kind[s], row[s]
                    if r >= 0 and (k == RECV or (k == COLLECTIVE and c_inst[r] >= 0) or
                                   (k == OMP_BARRIER and b_inst[r] >= 0) or
                                   (k == FORK and m_team[r] >= 0 and not m_master[r])):
                        break
                    if k == SEND and r >= 0 and m_remote[r]:
                        if fill:
                            rows[n_pred], qs[n_pred] = r, q
                            comps[n_comp:n_comp + s - i] = comp[i + 1:s + 1]
                            off[n_pred + 1] = n_comp + s - i
                        n_pred += 1
                        n_comp += s - i
    return rows, qs, off, comps


@numba.njit(cache=True, nogil=True)
def _is_peer(g, d, p_set, p_off, p_share):
    for t in range(p_off[p_set[g]], p_off[p_set[g] + 1]):
        if p_share[t] == d:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def ideal_pack(K, msg_rows, rev_rows, coll, m_dest, m_rloc, m_seq, sent, p_set, p_off, p_share, c_off, c_loc, c_rows,
               c_root, c_inst, c_instance, c_need, c_arr, c_got, c_at, own_count, own_last_loc, own_type, glob, cut_off,
               kind, row, comp, b_inst, m_team, m_master, m_remote, ptr, pred_inst):
    """A round's records (see the module docstring) for each of the ``K`` shares: the clocks of the messages
    rows ``msg_rows`` and the revoked ``rev_rows`` (``m_dest``: the receiver's share, ``m_rloc`` its global
    location, ``m_seq`` the sequence number), a report on each instance of ``coll`` (own members all arrived)
    for each other member share (``p_share[p_off[k]:p_off[k + 1]]``, ``k = p_set[g]``: instances of a
    communicator share one set) and, for the instances not ended here, the predicted clocks (those messages
    rows are marked: ``m_remote`` cleared, ``pred_inst`` the instance).
    Returns ``(i_off, ints, f_off, floats)``: share d's records are ``ints[i_off[d]:i_off[d + 1]]``, and so on
    (none: an empty range)."""
    n_open = 0
    for g in coll:
        if c_arr[g] + c_got[g] < c_need[g]:
            n_open += 1
    still = np.empty(n_open, np.int64)
    n_open = 0
    for g in coll:
        if c_arr[g] + c_got[g] < c_need[g]:
            still[n_open] = g
            n_open += 1
    p_rows, p_q, p_off_c, p_comps = ideal_lookahead(still, c_off, c_loc, c_rows, c_inst, cut_off, kind, row, comp,
                                                    b_inst, m_team, m_master, m_remote, ptr)
    keep = np.zeros(p_rows.shape[0], np.bool_)
    for j in range(p_rows.shape[0]):  # only a member share ends the instance
        keep[j] = _is_peer(c_inst[c_rows[p_q[j]]], m_dest[p_rows[j]], p_set, p_off, p_share)
    # records and floats per destination and kind
    cnt = np.zeros((K, 4), np.int64)
    n_f = np.zeros(K, np.int64)
    for r in msg_rows:
        cnt[m_dest[r], CLOCKS] += 1
    for g in coll:
        for t in range(p_off[p_set[g]], p_off[p_set[g] + 1]):
            cnt[p_share[t], REPORTS] += 1
    for j in range(p_rows.shape[0]):
        if keep[j]:
            cnt[m_dest[p_rows[j]], PREDICTED] += 1
            n_f[m_dest[p_rows[j]]] += p_off_c[j + 1] - p_off_c[j]
    for r in rev_rows:
        cnt[m_dest[r], REVOKED] += 1
    i_off, f_off = np.zeros(K + 1, np.int64), np.zeros(K + 1, np.int64)
    at_i, at_f = np.zeros((K, 4), np.int64), np.zeros((K, 4), np.int64)  # where each kind's next record goes
    for d in range(K):
        n_i = 0
        for k in range(4):
            n_i += cnt[d, k] * _INTS[k]
        n_i += 4 if n_i else 0
        i_off[d + 1] = i_off[d] + n_i
        f_off[d + 1] = f_off[d] + (cnt[d, CLOCKS] + 2 * cnt[d, REPORTS] + cnt[d, PREDICTED] + n_f[d] if n_i else 0)
        at_i[d, 0] = i_off[d] + 4
        at_f[d, 0] = f_off[d]
        for k in range(1, 4):
            at_i[d, k] = at_i[d, k - 1] + cnt[d, k - 1] * _INTS[k - 1]
        at_f[d, 1] = at_f[d, 0] + cnt[d, CLOCKS]
        at_f[d, 2] = at_f[d, 1] + 2 * cnt[d, REPORTS]
    ints, floats = np.empty(i_off[K], np.int64), np.empty(f_off[K])
    for d in range(K):
        if i_off[d + 1] > i_off[d]:
            ints[i_off[d]:i_off[d] + 4] = cnt[d]
    for r in msg_rows:
        d = m_dest[r]
        a = at_i[d, CLOCKS]
        ints[a], ints[a + 1] = m_rloc[r], m_seq[r]
        at_i[d, CLOCKS] += 2
        floats[at_f[d, CLOCKS]] = sent[r]
        at_f[d, CLOCKS] += 1
    for g in coll:
        latest, root_loc, root = -np.inf, -1, -np.inf
        for q in range(c_off[g], c_off[g + 1]):
            latest = max(latest, c_at[c_rows[q]])
            if c_root[c_rows[q]]:
                root_loc, root = glob[c_loc[q]], c_at[c_rows[q]]
        for t in range(p_off[p_set[g]], p_off[p_set[g] + 1]):
            d = p_share[t]
            a = at_i[d, REPORTS]
            ints[a], ints[a + 1], ints[a + 2] = c_instance[g], own_count[g], root_loc
            ints[a + 3], ints[a + 4] = own_last_loc[g], own_type[g]
            at_i[d, REPORTS] += 5
            floats[at_f[d, REPORTS]], floats[at_f[d, REPORTS] + 1] = latest, root
            at_f[d, REPORTS] += 2
    for j in range(p_rows.shape[0]):
        if not keep[j]:
            continue
        r, q = p_rows[j], p_q[j]
        d, g, n = m_dest[r], c_inst[c_rows[q]], p_off_c[j + 1] - p_off_c[j]
        a = at_i[d, PREDICTED]
        ints[a], ints[a + 1], ints[a + 2] = m_rloc[r], m_seq[r], c_instance[g]
        ints[a + 3], ints[a + 4] = c_root[c_rows[q]], n
        at_i[d, PREDICTED] += 5
        a = at_f[d, PREDICTED]
        floats[a] = c_at[c_rows[q]]
        floats[a + 1:a + 1 + n] = p_comps[p_off_c[j]:p_off_c[j + 1]]
        at_f[d, PREDICTED] += 1 + n
        m_remote[r] = False  # the receiver's share computes it: the walk does not send it
        pred_inst[r] = g
    for r in rev_rows:
        d = m_dest[r]
        a = at_i[d, REVOKED]
        ints[a], ints[a + 1] = m_rloc[r], m_seq[r]
        at_i[d, REVOKED] += 2
    return i_off, ints, f_off, floats


@numba.njit(cache=True, nogil=True)
def _message(loc, seq, glob, seq_span, imp_keys, imp_rows):
    """The messages row received here at global location ``loc`` with sequence number ``seq`` (-1: none)."""
    l = np.searchsorted(glob, loc)
    if l >= glob.shape[0] or glob[l] != loc:
        return -1
    key = l * seq_span + seq
    a = np.searchsorted(imp_keys, key)
    return imp_rows[a] if a < imp_keys.shape[0] and imp_keys[a] == key else -1


@numba.njit(cache=True, nogil=True)
def _instance(inst, c_instance):
    a = np.searchsorted(c_instance, inst)
    return a if a < c_instance.shape[0] and c_instance[a] == inst else -1


@numba.njit(cache=True, nogil=True)
def ideal_receive(ints, floats, i_seg, f_seg, glob, seq_span, imp_keys, imp_rows, c_instance, c_off, c_loc, c_rows,
                  c_type, c_root, c_need, c_root_own, r_root_loc, r_last_loc, sent, msg_wait, c_arr, c_got, c_at,
                  c_leave, c_rmax, c_rroot, queue, inq, ctr, c_pred, pred, pred_at, pool, pool_ctr):
    """The records other shares sent this share (``ints[i_seg[j]:i_seg[j + 1]]`` and so on: source after
    source, in share order) into the walk's state: revoked clocks first (their predictions leave the lists),
    then predicted clocks (kept until their instance ends here, or used at once if it has; ``pool`` must have
    room for every float received after its ``USED`` ones), clocks (their waiting receivers queued), then the
    reports, folded in share order into each instance's part elsewhere (``c_got``, ``c_rmax``; the root and
    type of the member last in location order: ``r_root_loc``/``r_last_loc`` hold the locations of the latest
    so far, the own last root's and last member's to begin with): once every member has arrived the instance
    ends (own members and waiting receivers queued).  Returns 0, or a key of :data:`RECEIVE_ERRORS`."""
    if pool_ctr[WAITING] == 0:
        pool_ctr[USED] = 0
    for phase in (REVOKED, PREDICTED, CLOCKS, REPORTS):
        for src in range(i_seg.shape[0] - 1):
            i0, f = i_seg[src], f_seg[src]
            if i0 == i_seg[src + 1]:
                continue
            a = i0 + 4
            for k in range(phase):
                a += ints[i0 + k] * _INTS[k]
                f += ints[i0 + k] if k != REPORTS else 2 * ints[i0 + k]
            for _ in range(ints[i0 + phase]):
                if phase == REPORTS:
                    g = _instance(ints[a], c_instance)
                    if g < 0:
                        return 2
                    c_got[g] += ints[a + 1]
                    c_rmax[g] = max(c_rmax[g], floats[f])
                    if ints[a + 2] > r_root_loc[g]:
                        r_root_loc[g], c_rroot[g], c_root_own[g] = ints[a + 2], floats[f + 1], False
                    if ints[a + 3] > r_last_loc[g]:
                        r_last_loc[g], c_type[g] = ints[a + 3], ints[a + 4]
                    # every report counts at least one member: the sum reaches c_need at the last one only
                    if c_arr[g] + c_got[g] == c_need[g]:
                        finish_collective(g, c_type[g], c_off, c_rows, c_root, c_at, c_leave, c_rmax, c_rroot,
                                          c_root_own[g])
                        for q in range(c_off[g], c_off[g + 1]):
                            queue_location(c_loc[q], queue, inq, ctr)
                        release_predicted(g, c_type, c_rmax, c_rroot, c_pred, pred, pred_at, pool, pool_ctr, sent,
                                          msg_wait, queue, inq, ctr)
                    a += 5
                    f += 2
                    continue
                r = _message(ints[a], ints[a + 1], glob, seq_span, imp_keys, imp_rows)
                if r < 0:
                    return 1
                if phase == CLOCKS:
                    sent[r] = floats[f]
                    if msg_wait[r] >= 0:
                        queue_location(msg_wait[r], queue, inq, ctr)
                    a += 2
                    f += 1
                elif phase == REVOKED:
                    g = pred[r, PG]
                    if g < 0:
                        return 3
                    if c_pred[g] == r:
                        c_pred[g] = pred[r, PNEXT]
                    else:
                        p = c_pred[g]
                        while pred[p, PNEXT] != r:
                            p = pred[p, PNEXT]
                        pred[p, PNEXT] = pred[r, PNEXT]
                    pred[r, PG], pred[r, PNEXT] = -1, -1
                    pool_ctr[WAITING] -= 1
                    a += 2
                else:
                    g = _instance(ints[a + 2], c_instance)
                    if g < 0:
                        return 2
                    n, u = ints[a + 4], pool_ctr[USED]
                    pool[u:u + n] = floats[f + 1:f + 1 + n]
                    pred[r, PG], pred[r, PNEXT], pred[r, PROOT], pred[r, PSTART], pred[r, PN] = g, c_pred[g], \
                        ints[a + 3], u, n
                    pred_at[r] = floats[f]
                    c_pred[g] = r
                    pool_ctr[USED] += n
                    pool_ctr[WAITING] += 1
                    if c_arr[g] + c_got[g] == c_need[g]:  # it has ended here already
                        release_predicted(g, c_type, c_rmax, c_rroot, c_pred, pred, pred_at, pool, pool_ctr, sent,
                                          msg_wait, queue, inq, ctr)
                    a += 5
                    f += 1 + n
    return 0
