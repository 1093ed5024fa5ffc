"""The pattern step of the analysis per share of processes: which patterns a share computes, computing
them for the locations it owns, and putting the shares' columns back together on rank 0.

``Pattern.scope`` (patterns/api.py, docs/writing-patterns.md "Scope") says what a pattern's value in one
location's column needs: ``"location"`` patterns run on every share's context (global location ids,
the owned columns filled, the tables' rows that touch owned locations plus halo rows) and are exact in
the owned columns; ``"row"`` and ``"global"`` ones run on rank 0 after the reduction.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from patterns.api import compute_results

__all__ = ["GROUPS", "split_by_scope", "compute_owned", "scatter_owned", "nonzero_rows", "gather_rows"]

#: the groups in the order they are computed: on every share, then on rank 0 from the gathered
#: results, then on rank 0 over the gathered tables
GROUPS = ("location", "row", "global")


def split_by_scope(pats, scopes: dict | None = None) -> tuple[list, list, list]:
    """``(location, row, global)``: the patterns of each group, each list in the order of ``pats``.

    A pattern's group is its ``scope`` (``"global"`` if it has none), moved to a later group when one of
    its ``depends`` (or ``optional_depends`` that are in ``pats``) is there: a share cannot read a result
    computed only on rank 0.  A pattern moved into ``"row"`` that reads tables goes to ``"global"``
    (the row step has no tables).
    """
    pats = list(pats)
    rank = {}
    for p in pats:
        scope = (scopes or {}).get(p.name, getattr(p, "scope", "global"))
        rank[p.name] = GROUPS.index(scope) if scope in GROUPS else len(GROUPS) - 1
    changed = True
    while changed:  # to a fixed point, whatever the order of ``pats``
        changed = False
        for p in pats:
            deps = tuple(getattr(p, "depends", ())) + tuple(getattr(p, "optional_depends", ()))
            g = max([rank[p.name]] + [rank[d] for d in deps if d in rank])
            if g == 1 and tuple(getattr(p, "requires", ())):
                g = 2
            if g != rank[p.name]:
                rank[p.name], changed = g, True
    groups: tuple[list, list, list] = ([], [], [])
    for p in pats:
        groups[rank[p.name]].append(p)
    return groups


def _owned(ctx) -> np.ndarray:
    owned = getattr(ctx, "owned", None)
    return np.arange(ctx.n_locations, dtype=np.int64) if owned is None else np.asarray(owned, np.int64)


def compute_owned(ctx, pats, scopes: dict | None = None) -> dict[str, np.ndarray]:
    """Compute the ``"location"`` group of ``pats`` (:func:`split_by_scope`) on a share's context, as
    ``analyzer.analyze.compute_patterns`` does (``patterns.api.compute_results``: same checks and
    errors; the subset rule is checked later over the full results), and return each result's owned
    columns: name -> float64 ``[C, len(ctx.owned)]``, in computation order.

    A result stays in ``ctx.results`` only while a later pattern of the group reads it (``depends``,
    ``optional_depends``): a share holds one ``[C, L]`` array per pattern at most that long.  ``scopes``: as
    for :func:`split_by_scope`.
    """
    loc = split_by_scope(pats, scopes)[0]
    owned = _owned(ctx)
    last_read = {}
    for i, p in enumerate(loc):
        for d in tuple(p.depends) + tuple(p.optional_depends):
            last_read[d] = i
    blocks: dict[str, np.ndarray] = {}
    for i, p in enumerate(loc):
        compute_results(ctx, [p])
        blocks[p.name] = np.ascontiguousarray(ctx.results[p.name][:, owned])
        for q in loc[: i + 1]:
            if last_read.get(q.name, -1) <= i:
                ctx.results.pop(q.name, None)
    return blocks


def scatter_owned(blocks_by_share: Sequence[dict[str, np.ndarray]], owned_by_share: Sequence[np.ndarray],
                  C: int, L: int) -> dict[str, np.ndarray]:
    """The full float64 ``[C, L]`` result of every pattern from the shares' owned columns.

    ``blocks_by_share[s][name]`` is ``[C, len(owned_by_share[s])]`` (:func:`compute_owned` on share s);
    every location must be owned by exactly one share, so each cell comes from exactly one share.  A
    share that owns no location may leave out its blocks.
    """
    if len(blocks_by_share) != len(owned_by_share):
        raise ValueError(f"{len(blocks_by_share)} shares of blocks but {len(owned_by_share)} of owned locations")
    owned_by_share = [np.asarray(o, np.int64) for o in owned_by_share]
    count = np.zeros(L, np.int64)
    for o in owned_by_share:
        if len(o) and (o.min() < 0 or o.max() >= L):
            raise ValueError(f"owned location ids must lie in 0..{L - 1}")
        np.add.at(count, o, 1)
    if L and (count != 1).any():
        bad = int(np.flatnonzero(count != 1)[0])
        raise ValueError(f"location {bad} is owned by {int(count[bad])} shares; each must be owned by exactly one")
    names: list[str] = []
    for blocks in blocks_by_share:
        names.extend(n for n in blocks if n not in names)
    out = {n: np.zeros((C, L), np.float64) for n in names}
    for s, (blocks, o) in enumerate(zip(blocks_by_share, owned_by_share)):
        if not len(o):
            continue
        for n in names:
            if n not in blocks:
                raise ValueError(f"share {s} owns {len(o)} location(s) but sent no columns of pattern {n!r}")
            b = blocks[n]
            if b.shape != (C, len(o)):
                raise ValueError(f"share {s}: pattern {n!r} columns have shape {b.shape}, expected {(C, len(o))}")
            out[n][:, o] = b
    return out


def nonzero_rows(blocks: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each block's call-path rows with a nonzero value: name -> (rows, block[rows]); what a share sends
    share 0 (a metric is zero on most call paths: an MPI wait outside MPI calls, ...)."""
    out = {}
    for n, b in blocks.items():
        rows = np.flatnonzero(np.any(b != 0, axis=1))
        out[n] = (rows, np.ascontiguousarray(b[rows]))
    return out


def gather_rows(rows_by_share: Sequence[dict[str, tuple[np.ndarray, np.ndarray]]],
                owned_by_share: Sequence[np.ndarray], C: int, L: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """:func:`scatter_owned` for the shares' :func:`nonzero_rows`: per pattern, the call paths nonzero on some
    share (ascending) and their values at every location, ``(rows, [len(rows), L])``; nothing else of the
    ``[C, L]`` array is held.  Each cell comes from the one share owning its location."""
    scatter_owned([{} for _ in owned_by_share], owned_by_share, C, L)  # the ownership checks only
    names: list[str] = []
    for got in rows_by_share:
        names.extend(n for n in got if n not in names)
    out = {}
    for n in names:
        parts = [(got[n], np.asarray(o, np.int64)) for got, o in zip(rows_by_share, owned_by_share)
                 if n in got and len(o)]
        rows = np.unique(np.concatenate([r for (r, _), _ in parts])) if parts else np.zeros(0, np.int64)
        data = np.zeros((len(rows), L), np.float64)
        for (r, d), o in parts:
            if d.shape != (len(r), len(o)) or (len(r) and (r.min() < 0 or r.max() >= C)):
                raise ValueError(f"pattern {n!r}: rows of shape {d.shape} for {len(o)} owned location(s)")
            data[np.ix_(np.searchsorted(rows, r), o)] = d
        out[n] = (rows, data)
    return out
