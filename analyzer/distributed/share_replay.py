"""The share replay: the stages that turn a trace and K shares of whole processes into one
:class:`~patterns.context.AnalysisContext` per share.

Share ``s`` owns the locations ``shares[s]`` (``engine.partition``: contiguous runs of the walk order).
Its context keeps GLOBAL location ids: ``n_locations`` is every location, ``calltree`` is the serial
tree (every share merges all shares' builder trees the same way), ``visits``/``excl_time``/``incl_time``/
``counters`` hold the owned columns (zeros elsewhere), ``owned`` the owned ids; each table holds the
serial table's rows that touch an owned location plus the halo rows the wait states of owned locations
need, in the serial table's relative order.  So a "location" pattern's value in an owned column is the
serial value bit for bit.

Stages (``share_stages``; each ``stage(share, state, inbox) -> (state, outbox)``, network.py):

1. walk: ``walk_share`` over the share's locations.  Posts ``"tree"`` (the builder tree) to every share,
   ``"sends"`` (send rows, the walking share's builder ids) to the share owning the destination process,
   the collective summary to every share, and ``"fallback"`` (the walked Share with only the fragment
   kinds of ``fallback_tables``) to share 0.
2. match: every share merges the trees in share order (``merge_trees`` + ``freeze``: the same ids on
   every share), remaps its own fragments and the received sends (with the sending share's map), builds
   the process-local tables, and matches its processes' receives with the sends routed to it
   (``matching.match_messages``: every receive of a channel lives in its destination process, so the pairs
   are the serial ones); matched rows whose send location is foreign go back to the sender's share.
   Collective candidates go to each instance's owner share; one-sided rows to every share.
3. reduce: the message halo rows are merged with the own rows (serial order: receiving location, then
   the order on it); instance owners reduce the collective candidates and post the winners back.
4. context: the share's AnalysisContext; the final state is a :class:`ShareResult` (``.context``,
   ``.problems``: the parts :func:`merge_problems` turns into the serial ``ctx.problems`` on share 0).

Collectives and ``mpi_rma_ops`` live in ``analyzer.distributed.share_collectives`` (called only when those
tables are wanted).  The hooks this module calls there (cnode columns of every row handed over are merged
BUILDER ids, the same on every share; this module maps the tables it gets back to final ids):

* ``collective_summary(trace, rows) -> payload`` (stage 1; ``rows``: the share's own collectives rows as
  one dict of columns, possibly empty); posted to every share.
* ``collective_candidates(trace, shares, s, rows, summaries) -> (coll_state, {dest: payload})`` (stage 2;
  ``summaries``: one payload per source share, None for none).
* ``reduce_candidates(trace, shares, s, coll_state, received) -> (coll_state, {dest: payload})`` (stage 3).
* ``collective_table(trace, shares, s, coll_state, received) -> (Table, problems_part)`` (stage 4).
* ``collective_problems(parts) -> list[str]`` (on share 0: every share's ``problems_part``, in share order;
  the serial texts of ``build_collectives``).
* ``rma_rows(trace, rows) -> payload`` (stage 2, to every share) and ``rma_table(trace, payloads) -> Table``
  (stage 3; every share gets all rows, in the serial order).
"""
