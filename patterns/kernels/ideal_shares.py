"""What the ideal-network replay by shares (``analyzer.distributed.share_pop``) exchanges each round, packed per
destination share into one buffer of 8-byte words, and the kernels that pack and unpack it around the walk of
``patterns.kernels.ideal``.  One payload per destination (sent as bytes: a pickled array costs some 120 bytes
of header, more than a round's few records) and one kernel call each way: a round costs few messages and few
Python calls, and rounds are many (one per collective instance).

A share's payload to another: int64 words, the number of records of each kind (:data:`CLOCKS`,
:data:`REPORTS`, :data:`RESULTS`, :data:`OWNED`, :data:`REVOKED`, :data:`PREDICTED`), then the records'
ints, kind after kind, then their float64 values in the same order (the predicted clocks last: theirs vary
in number).  A message is named by its receiver (global location) and the receiver's sequence number of it
(the same on both shares), an instance by its id over all shares.

==========  =================================================  =======================================
kind        ints                                               floats
==========  =================================================  =======================================
clock       receiver, sequence number                          the send's clock
report      instance, own members, last own root (global       their latest arrival, the root's
            location, -1: none), last own member, its type     (-inf: none)
result      as a report, over every member share (members:     as a report
            all of them)
owned       as a report                                        as a report
revoked     receiver, sequence number
predicted   receiver, sequence number, instance, whether the   the sender's arrival, then the n
            sender is the root, n                              computations up to the send
==========  =================================================  =======================================

* a *report* goes, once the own members of an instance have all arrived, to every other share with members
  of it where those shares number at most ``direct`` (one round per instance: the share whose members
  arrive last goes on in the same round); each member share folds them (:func:`ideal_receive`) into the
  instance's part elsewhere: its members, the latest arrival, and the root and type of the member last in
  location order (what the serial replay takes);
* where more shares hold members (m of them: m (m - 1) reports per instance the direct way, some 10^6 for a
  world communicator over 1024 shares), the report goes to the instance's owner share (``instance % K``) as
  an *owned* record instead; the owner folds the reports as a member share does and, once every member share
  reported, sends each other member share the fold as a *result* (folded there as a report on every member
  not its own): at most 2 m records per instance, two rounds;
* a *predicted* clock goes with the report (either way), to the receiver's share where that share is a
  member too, for each send an own member reaches after the instance before anything could make it wait
  (:func:`ideal_lookahead`): that share computes the clock when the instance ends there
  (``ideal.release_predicted``), bit for bit the walk's, and its receiver goes on in that round; the walk
  does not send it again;
* a *revoked* clock: its sender was let pass at the instance (a cycle of waits on an inconsistent trace), so
  it leaves at its arrival, not at the instance's end; nobody used the prediction (the instance was complete
  nowhere while everything waited: an owner with every report sends the result at once), and the walk sends
  the clock when it gets there.
"""

from __future__ import annotations

import numba
import numpy as np

from tracefmt.jitcache import track_dependencies

from .ideal import (COLLECTIVE, FORK, OMP_BARRIER, PG, PN, PNEXT, PROOT, PSTART, RECV, SEND, USED, WAITING,
                    finish_collective, queue_location, release_predicted)

__all__ = ["CLOCKS", "KINDS", "OWNED", "PREDICTED", "RECEIVE_ERRORS", "REPORTS", "RESULTS", "REVOKED",
           "ideal_lookahead", "ideal_pack", "ideal_receive", "owner_state"]

#: positions of the record counts at the start of ``ints`` (the predicted clocks last: their floats vary)
CLOCKS, REPORTS, RESULTS, OWNED, REVOKED, PREDICTED = range(6)
KINDS = 6
#: ints and floats of a record of each kind (a predicted clock: 1 + n floats)
_INTS = (2, 5, 5, 5, 2, 5)
_FLOATS = (1, 2, 2, 2, 0, 1)
#: columns of an owner's ``o_int`` and ``o_flt`` (:func:`owner_state`)
O_REPORTS, O_MEMBERS, O_ROOT, O_LAST, O_TYPE = range(5)
O_LATEST, O_ROOT_AT = range(2)
#: what a non-zero return of :func:`ideal_receive` means
RECEIVE_ERRORS = {1: "a send clock arrived for a message no own location receives",
                  2: "a report or predicted clock arrived for a collective instance with no own member",
                  3: "a predicted send clock was taken back after its use",
                  4: "a report arrived at a share that does not own its collective instance"}


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


def owner_state(n: int):
    """What an owner share holds of ``n`` instances it owns (:data:`OWNED` reports): per instance the reports
    and members so far, the last root's and last member's locations (-1: none yet) and that member's type
    (``o_int``, columns :data:`O_REPORTS` .. :data:`O_TYPE`), the latest arrival and the root's (``o_flt``)."""
    o_int = np.full((n, 5), -1, np.int64)
    o_int[:, O_REPORTS] = o_int[:, O_MEMBERS] = 0
    return o_int, np.full((n, 2), -np.inf)


@numba.njit(cache=True, nogil=True)
def _put(ints, floats, at_i, at_f, d, k, inst, n, root_loc, last_loc, typ, latest, root):
    """A record of kind ``k`` (a report's layout) for share ``d``."""
    a, f = at_i[d, k], at_f[d, k]
    ints[a], ints[a + 1], ints[a + 2], ints[a + 3], ints[a + 4] = inst, n, root_loc, last_loc, typ
    floats[f], floats[f + 1] = latest, root
    at_i[d, k] += 5
    at_f[d, k] += 2


@numba.njit(cache=True, nogil=True)
def ideal_pack(K, s, direct, msg_rows, rev_rows, coll, done, m_dest, m_rloc, m_seq, sent, p_set, p_off, p_share,
               o_instance, o_set, o_off, o_share, o_int, o_flt, c_off, c_loc, c_rows, c_root, c_inst, c_instance, c_need,
               c_arr, c_got, c_at, own_count, own_last_loc, own_type, glob, cut_off, kind, row, comp, b_inst, m_team,
               m_master, m_remote, ptr, pred_inst):
    """Share ``s``'s round's records (see the module docstring) for each of the ``K`` shares: the clocks of the
    messages rows ``msg_rows`` and the revoked ``rev_rows`` (``m_dest``: the receiver's share, ``m_rloc`` its
    global location, ``m_seq`` the sequence number), a report on each instance of ``coll`` (own members all
    arrived) for each other member share (``p_share[p_off[k]:p_off[k + 1]]``, ``k = p_set[g]``: instances of a
    communicator share one set) where the member shares number at most ``direct``, else for the owner share;
    as the owner, a result for the instances ``done`` (rows of ``o_instance``: every member share reported) to
    each member share but ``s`` (``o_share[o_off[k]:o_off[k + 1]]``, ``k = o_set[j]``); for the instances not
    ended here, the predicted clocks (those messages rows are marked: ``m_remote`` cleared, ``pred_inst`` the
    instance).  Returns ``(seg, buf)``: share d's payload is ``buf[seg[d]:seg[d + 1]]`` (none: an empty
    range), its floats written through a float64 view of ``buf``."""
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
    # records per destination and kind, and the predicted clocks' computations
    cnt = np.zeros((K, KINDS), np.int64)
    n_f = np.zeros(K, np.int64)
    for r in msg_rows:
        cnt[m_dest[r], CLOCKS] += 1
    for g in coll:
        k = p_set[g]
        if p_off[k + 1] - p_off[k] < direct:  # the other member shares and this one: at most direct
            for t in range(p_off[k], p_off[k + 1]):
                cnt[p_share[t], REPORTS] += 1
        else:
            cnt[c_instance[g] % K, OWNED] += 1
    for j in done:
        for t in range(o_off[o_set[j]], o_off[o_set[j] + 1]):
            if o_share[t] != s:  # the owner took the result itself
                cnt[o_share[t], RESULTS] += 1
    for j in range(p_rows.shape[0]):
        if keep[j]:
            cnt[m_dest[p_rows[j]], PREDICTED] += 1
            n_f[m_dest[p_rows[j]]] += p_off_c[j + 1] - p_off_c[j]
    for r in rev_rows:
        cnt[m_dest[r], REVOKED] += 1
    seg = np.zeros(K + 1, np.int64)
    at_i, at_f = np.zeros((K, KINDS), np.int64), np.zeros((K, KINDS), np.int64)  # where each kind's next record goes
    for d in range(K):
        n_i, n_fl = 0, n_f[d]
        for k in range(KINDS):
            n_i += cnt[d, k] * _INTS[k]
            n_fl += cnt[d, k] * _FLOATS[k]
        n_i += KINDS if n_i else 0
        seg[d + 1] = seg[d] + n_i + n_fl
        at_i[d, 0], at_f[d, 0] = seg[d] + KINDS, seg[d] + n_i
        for k in range(1, KINDS):
            at_i[d, k] = at_i[d, k - 1] + cnt[d, k - 1] * _INTS[k - 1]
            at_f[d, k] = at_f[d, k - 1] + cnt[d, k - 1] * _FLOATS[k - 1]
    ints = np.empty(seg[K], np.int64)
    floats = ints.view(np.float64)  # the same words
    for d in range(K):
        if seg[d + 1] > seg[d]:
            ints[seg[d]:seg[d] + KINDS] = cnt[d]
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
        k = p_set[g]
        if p_off[k + 1] - p_off[k] < direct:
            for t in range(p_off[k], p_off[k + 1]):
                _put(ints, floats, at_i, at_f, p_share[t], REPORTS, c_instance[g], own_count[g], root_loc,
                     own_last_loc[g], own_type[g], latest, root)
        else:
            _put(ints, floats, at_i, at_f, c_instance[g] % K, OWNED, c_instance[g], own_count[g], root_loc,
                 own_last_loc[g], own_type[g], latest, root)
    for j in done:
        for t in range(o_off[o_set[j]], o_off[o_set[j] + 1]):
            if o_share[t] != s:
                _put(ints, floats, at_i, at_f, o_share[t], RESULTS, o_instance[j], o_int[j, O_MEMBERS],
                     o_int[j, O_ROOT], o_int[j, O_LAST], o_int[j, O_TYPE], o_flt[j, O_LATEST], o_flt[j, O_ROOT_AT])
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
    return seg, ints


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
def _fold(g, n, latest, root_loc, root_t, last_loc, typ, c_got, c_rmax, c_rroot, c_root_own, r_root_loc, r_last_loc,
          c_type):
    """A report on ``n`` members elsewhere into instance ``g``'s part there: their count, the latest arrival, and
    the root and type of the member last in location order (``r_root_loc``/``r_last_loc``: the locations of the
    latest so far).  Locations are unique, so the order of the reports does not change the fold."""
    c_got[g] += n
    c_rmax[g] = max(c_rmax[g], latest)
    if root_loc > r_root_loc[g]:
        r_root_loc[g], c_rroot[g], c_root_own[g] = root_loc, root_t, False
    if last_loc > r_last_loc[g]:
        r_last_loc[g], c_type[g] = last_loc, typ


@numba.njit(cache=True, nogil=True)
def ideal_receive(ints, floats, seg, glob, seq_span, imp_keys, imp_rows, c_instance, c_off, c_loc, c_rows,
                  c_type, c_root, c_need, c_root_own, r_root_loc, r_last_loc, o_instance, o_set, o_off, o_int, o_flt,
                  o_done, o_done_n, sent, msg_wait, c_arr, c_got, c_at, c_leave, c_rmax, c_rroot, queue, inq, ctr,
                  c_pred, pred, pred_at, pool, pool_ctr):
    """The records other shares sent this share (``ints[seg[j]:seg[j + 1]]``: source after source, in share
    order; ``floats``: the same words as float64) into the walk's state: revoked clocks first (their predictions leave the lists),
    then predicted clocks (kept until their instance ends here, or used at once if it has; ``pool`` must have
    room for every float received after its ``USED`` ones), clocks (their waiting receivers queued), then the
    reports and results, folded in share order into each instance's part elsewhere (``c_got``, ``c_rmax``; the
    root and type of the member last in location order: ``r_root_loc``/``r_last_loc`` hold the locations of the
    latest so far, the own last root's and last member's to begin with): once every member has arrived the
    instance ends (own members and waiting receivers queued).  Last the reports to this share as the owner,
    folded alike into ``o_int``/``o_flt`` (rows of ``o_instance``; :func:`owner_state`): an instance whose
    member shares (``o_off[o_set[j] + 1] - o_off[o_set[j]]``) have all reported is appended to
    ``o_done[:o_done_n[0]]`` and, if this share holds members, taken here as a result.  Returns 0, or a key
    of :data:`RECEIVE_ERRORS`."""
    if pool_ctr[WAITING] == 0:
        pool_ctr[USED] = 0
    for phase in (REVOKED, PREDICTED, CLOCKS, REPORTS, RESULTS, OWNED):
        for src in range(seg.shape[0] - 1):
            i0 = seg[src]
            if i0 == seg[src + 1]:
                continue
            a = f = i0 + KINDS
            for k in range(KINDS):  # the floats follow every record's ints
                f += ints[i0 + k] * _INTS[k]
            for k in range(phase):
                a += ints[i0 + k] * _INTS[k]
                f += ints[i0 + k] * _FLOATS[k]
            for _ in range(ints[i0 + phase]):
                if phase == REPORTS or phase == RESULTS or phase == OWNED:
                    inst, n, root_loc, last_loc, typ = ints[a], ints[a + 1], ints[a + 2], ints[a + 3], ints[a + 4]
                    latest, root_t = floats[f], floats[f + 1]
                    a += 5
                    f += 2
                    if phase == OWNED:
                        j = _instance(inst, o_instance)
                        if j < 0:
                            return 4
                        o_int[j, O_REPORTS] += 1
                        o_int[j, O_MEMBERS] += n
                        o_flt[j, O_LATEST] = max(o_flt[j, O_LATEST], latest)
                        if root_loc > o_int[j, O_ROOT]:
                            o_int[j, O_ROOT], o_flt[j, O_ROOT_AT] = root_loc, root_t
                        if last_loc > o_int[j, O_LAST]:
                            o_int[j, O_LAST], o_int[j, O_TYPE] = last_loc, typ
                        if o_int[j, O_REPORTS] < o_off[o_set[j] + 1] - o_off[o_set[j]]:
                            continue
                        o_done[o_done_n[0]] = j
                        o_done_n[0] += 1
                        g = _instance(inst, c_instance)
                        if g < 0:  # no own member: the result goes to the member shares only
                            continue
                        n, root_loc, last_loc, typ = o_int[j, O_MEMBERS], o_int[j, O_ROOT], o_int[j, O_LAST], \
                            o_int[j, O_TYPE]
                        latest, root_t = o_flt[j, O_LATEST], o_flt[j, O_ROOT_AT]
                    else:
                        g = _instance(inst, c_instance)
                        if g < 0:
                            return 2
                    if phase != REPORTS:  # a result counts every member, the own ones arrived already
                        n -= c_arr[g] + c_got[g]
                    _fold(g, n, latest, root_loc, root_t, last_loc, typ, c_got, c_rmax, c_rroot, c_root_own,
                          r_root_loc, r_last_loc, c_type)
                    # every report counts at least one member: the sum reaches c_need at the last one only
                    if c_arr[g] + c_got[g] == c_need[g]:
                        finish_collective(g, c_type[g], c_off, c_rows, c_root, c_at, c_leave, c_rmax, c_rroot,
                                          c_root_own[g])
                        for q in range(c_off[g], c_off[g + 1]):
                            queue_location(c_loc[q], queue, inq, ctr)
                        release_predicted(g, c_type, c_rmax, c_rroot, c_pred, pred, pred_at, pool, pool_ctr, sent,
                                          msg_wait, queue, inq, ctr)
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


track_dependencies(globals())  # recompile the cached kernels when a module they import changes
