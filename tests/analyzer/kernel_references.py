"""A slow, obviously correct replay in plain Python, for testing the fast one.

It follows the definitions event by event with dicts and lists: call paths
are tuples of region ids, matching is done with explicit FIFO queues.  It
returns the same call tree, per-(call path, location) visits and times and
the same tables (as lists of row dicts) as ``analyzer.replay.replay``; the
tests compare the two on random traces.  Never use it on real traces.
"""

from __future__ import annotations

from collections import defaultdict, deque

from tracefmt.layout import NO_ID, EventType as E, Role


def _events(trace, loc):
    ev = trace.events(loc)
    return [
        (int(ev.type[i]), int(ev.a[i]), int(ev.b[i]), int(ev.c[i]), int(ev.d[i]), int(ev.e[i]), int(ev.flags[i]),
         float(ev.time[i]))
        for i in range(len(ev))
    ]


def reference_replay(trace) -> dict:
    defs = trace.defs
    role = {rid: int(r.role) for rid, r in defs.regions.items()}
    locs = [int(l) for l in trace.location_ids]
    proc = {l: defs.locations[l].process for l in locs}
    evs = {l: _events(trace, l) for l in locs}

    # ---- 1. call paths of every call, resolving forks until all workers are placed
    fork_path: dict[tuple[int, int], tuple] = {}
    calls: dict[int, list[dict]] = {}
    todo = list(locs)
    while todo:
        progress = False
        for l in list(todo):
            try:
                calls[l] = _walk(evs[l], role, proc[l], fork_path, l)
            except KeyError:
                continue
            todo.remove(l)
            progress = True
        if not progress:
            raise ValueError("unresolvable team")

    # ---- 2. the tree: all paths (and their prefixes), first-visit order, DFS pre-order
    first: dict[tuple, float] = {}
    for l in locs:
        for c in calls[l]:
            p = c["path"]
            for k in range(1, len(p) + 1):
                q = p[:k]
                t = c["enter"] if k == len(p) else first.get(q, float("inf"))
                first[q] = min(first.get(q, float("inf")), t)
    roots = sorted({p[:1] for p in first}, key=lambda q: (first[q], q))
    children = defaultdict(list)
    for p in first:
        if len(p) > 1:
            children[p[:-1]].append(p)
    # ties in first-visit time: any fixed order; the tests use distinct times
    for k in children:
        children[k].sort(key=lambda q: (first[q], q))
    order: list[tuple] = []

    def dfs(p):
        order.append(p)
        for ch in children[p]:
            dfs(ch)

    synthetic = len(roots) != 1
    for r in roots:
        dfs(r)
    if synthetic:
        order.insert(0, ())
    cid = {p: i for i, p in enumerate(order)}
    parent = [-1 if (p == () or (len(p) == 1 and not synthetic)) else cid[p[:-1]] for p in order]
    region = [p[-1] if p else None for p in order]

    # ---- 3. visits, inclusive and exclusive time
    visits, incl, excl = defaultdict(int), defaultdict(float), defaultdict(float)
    for l in locs:
        for c in calls[l]:
            k = (cid[c["path"]], l)
            visits[k] += 1
            d = c["exit"] - c["enter"]
            incl[k] += d
            excl[k] += d
            if c["parent"] is not None:
                pc = calls[l][c["parent"]]
                excl[(cid[pc["path"]], l)] -= d

    def call_of(l, i):
        """innermost call open at event i of location l (index into calls[l]) or None"""
        best = None
        for j, c in enumerate(calls[l]):
            if c["enter_pos"] <= i <= c["exit_pos"]:
                best = j  # later ENTERs are deeper
        return best

    def cinfo(l, j, prefix):
        if j is None:
            return {prefix + "region": -1, prefix + "cnode": -1, prefix + "enter": None, prefix + "exit": None}
        c = calls[l][j]
        return {prefix + "region": c["path"][-1], prefix + "cnode": cid[c["path"]], prefix + "enter": c["enter"],
                prefix + "exit": c["exit"]}

    # ---- 4. messages
    sends, recvs = [], []
    for l in locs:
        open_send, open_recv = {}, {}
        for i, (t, a, b, c, d, e, fl, tm) in enumerate(evs[l]):
            if t == E.MPI_SEND:
                row = dict(send_loc=l, src=proc[l], dest=a, comm=b, tag=c, bytes=d, send_time=tm, pos=i)
                row.update(cinfo(l, call_of(l, i), "send_"))
                row.update(cinfo(l, call_of(l, i), "sendc_"))
                if e != 0:
                    open_send[e] = row
                sends.append(row)
            elif t == E.MPI_SEND_COMPLETE and e in open_send:
                open_send.pop(e).update(cinfo(l, call_of(l, i), "sendc_"))
            elif t == E.MPI_REQUEST_CANCELLED:
                if e in open_send:
                    sends.remove(open_send.pop(e))
                open_recv.pop(e, None)
            elif t == E.MPI_RECV_REQUEST:
                open_recv[e] = (i, tm)
            elif t == E.MPI_RECV:
                post_i, post_t = open_recv.pop(e) if e != 0 and e in open_recv else (i, tm)
                row = dict(recv_loc=l, dst=proc[l], source=a, comm=b, tag=c, recv_time=tm, post_time=post_t,
                           post_pos=post_i)
                row.update(cinfo(l, call_of(l, i), "recv_"))
                row.update(cinfo(l, call_of(l, post_i), "recvp_"))
                recvs.append(row)
    queues = defaultdict(deque)
    for s in sorted(sends, key=lambda s: (s["send_time"], s["send_loc"], s["pos"])):
        queues[(s["src"], s["dest"], s["comm"], s["tag"])].append(s)
    messages = []
    for r in sorted(recvs, key=lambda r: (r["post_time"], r["recv_loc"], r["post_pos"])):
        q = queues[(r["source"], r["dst"], r["comm"], r["tag"])]
        if q:
            s = q.popleft()
            m = {k: v for k, v in s.items() if k.startswith("send") or k == "bytes"}
            m.update({k: v for k, v in r.items() if k.startswith("recv")})
            messages.append(m)

    # ---- 5. collectives: the k-th collective of every rank on a comm is instance k
    per = defaultdict(list)
    for l in locs:
        for i, (t, a, b, c, d, e, fl, tm) in enumerate(evs[l]):
            if t == E.MPI_COLLEXIT:
                row = dict(loc=l, rank=proc[l], comm=b, root=-1 if c == NO_ID else c, sent=d, recvd=e)
                row.update(cinfo(l, call_of(l, i), ""))
                per[(b, proc[l])].append(row)
    collectives = []
    for (comm, rank), rows in per.items():
        for k, row in enumerate(sorted(rows, key=lambda r: (r["enter"], r["loc"]))):
            row["seq"] = k
            collectives.append(row)

    # ---- 6. OpenMP teams, members, barriers
    teams, members, barriers = {}, [], []
    for l in locs:
        for i, (t, a, b, c, d, e, fl, tm) in enumerate(evs[l]):
            if t == E.OMP_FORK:
                teams[(proc[l], a)] = dict(master_loc=l, fork_time=tm, size=c, join_time=None)
            elif t == E.OMP_JOIN:
                teams[(proc[l], a)]["join_time"] = tm
    for l in locs:
        seen = defaultdict(int)
        for j, cl in enumerate(calls[l]):
            r = cl["path"][-1]
            if role.get(r) == Role.OMP_PARALLEL and cl["team"] is not None and cl["team_here"]:
                members.append(dict(team=(proc[l], cl["team"]), loc=l, thread_num=cl["thread_num"],
                                    enter=cl["enter"], exit=cl["exit"], cnode=cid[cl["path"]]))
                if cl["thread_num"] == 0:
                    teams[(proc[l], cl["team"])]["parallel_cnode"] = cid[cl["path"]]
            if role.get(r) in (Role.OMP_BARRIER, Role.OMP_IMPLICIT_BARRIER) and cl["team"] is not None:
                key = (proc[l], cl["team"])
                barriers.append(dict(team=key, seq=seen[key], loc=l, cnode=cid[cl["path"]], enter=cl["enter"],
                                     exit=cl["exit"], implicit=role.get(r) == Role.OMP_IMPLICIT_BARRIER, call=j))
                seen[key] += 1
    tasks = _task_tables(locs, proc, evs, calls, cid, call_of, barriers)

    # ---- 7. locks: per (process, lock) in acquisition order
    acq = []
    for l in locs:
        held = defaultdict(list)
        for i, (t, a, b, c, d, e, fl, tm) in enumerate(evs[l]):
            if t == E.OMP_ACQUIRE_LOCK:
                row = dict(process=proc[l], lock=a, order=d, loc=l, acquire_time=tm, release_time=None)
                row.update(cinfo(l, call_of(l, i), ""))
                held[a].append(row)
                acq.append(row)
            elif t == E.OMP_RELEASE_LOCK and held[a]:
                held[a].pop()["release_time"] = tm
    acq.sort(key=lambda r: (r["process"], r["lock"], r["order"], r["acquire_time"]))
    for k, row in enumerate(acq):
        prev = acq[k - 1] if k else None
        same = prev is not None and (prev["process"], prev["lock"]) == (row["process"], row["lock"])
        row["prev_release_time"] = prev["release_time"] if same else None

    return dict(paths=order, parent=parent, region=region, visits=dict(visits), incl=dict(incl), excl=dict(excl),
                messages=messages, collectives=collectives, teams=teams, members=members, barriers=barriers,
                locks=acq, synthetic=synthetic, **tasks)


def _task_tables(locs, proc, evs, calls, cid, call_of, barriers):
    """OpenMP task fragments, tasks and threads (format 2.1), and every barrier row's ``task_busy``."""
    frags, creates, deps, thread_rows = [], [], [], defaultdict(dict)
    for l in locs:
        open_frags = []
        for i, (t, a, b, c, d, e, fl, tm) in enumerate(evs[l]):
            if t == E.OMP_TASK_BEGIN:
                j = call_of(l, i)
                cl = calls[l][j]
                host = calls[l][cl["parent"]] if cl["parent"] is not None else None
                row = dict(loc=l, process=proc[l], task=d, begin_how=c, end_how=-1, cnode=cid[cl["path"]],
                           enter=cl["enter"], exit=cl["exit"], call=(l, j),
                           host=(l, cl["parent"]) if host is not None else None,
                           host_cnode=cid[host["path"]] if host is not None else -1,
                           outer=open_frags[-1]["call"] if open_frags else None)
                frags.append(row)
                open_frags.append(row)
            elif t == E.OMP_TASK_END:
                for k in range(len(open_frags) - 1, -1, -1):
                    if open_frags[k]["task"] == d:
                        open_frags[k]["end_how"] = c
                        del open_frags[k:]
                        break
            elif t == E.OMP_TASK_DEPENDENCE:
                deps.append(dict(process=proc[l], loc=l, time=tm, predecessor=d, successor=e))
            elif t == E.OMP_TASK_CREATE:
                j = call_of(l, i)
                creates.append(dict(process=proc[l], task=d, parent=e, create_loc=l, create_time=tm,
                                    create_cnode=cid[calls[l][j]["path"]] if j is not None else -1))
            elif t in (E.THREAD_CREATE, E.THREAD_BEGIN, E.THREAD_END, E.THREAD_JOIN):
                row = thread_rows[(proc[l], d)]
                j = call_of(l, i)
                cnode = cid[calls[l][j]["path"]] if j is not None else -1
                if t == E.THREAD_CREATE:
                    row.update(process=proc[l], thread=d, create_loc=l, create_time=tm, create_cnode=cnode)
                elif t == E.THREAD_BEGIN:
                    row.update(loc=l, begin_time=tm)
                elif t == E.THREAD_END:
                    row["end_time"] = tm
                else:
                    row.update(join_loc=l, join_time=tm, join_cnode=cnode, join_enter=calls[l][j]["enter"],
                               join_exit=calls[l][j]["exit"])
    for f in frags:
        f["own_time"] = f["exit"] - f["enter"] - sum(g["exit"] - g["enter"] for g in frags if g["outer"] == f["call"])
    tasks = []
    for c in creates:
        mine = sorted((f for f in frags if (f["process"], f["task"]) == (c["process"], c["task"])),
                      key=lambda f: f["enter"])
        row = dict(c, n_fragments=len(mine), own_time=sum(f["own_time"] for f in mine),
                   cnode=mine[0]["cnode"] if mine else -1, start_time=mine[0]["enter"] if mine else None,
                   end_time=mine[-1]["exit"] if mine else None,
                   complete=bool(mine) and mine[-1]["end_how"] in (2, 4, 5))
        tasks.append(row)
    # ready: created, and every predecessor that completes in the trace completed
    for row in tasks:
        done = [p["end_time"] for p in tasks for dp in deps
                if (dp["process"], dp["successor"], dp["predecessor"]) == (row["process"], row["task"], p["task"])
                and p["process"] == row["process"] and p["complete"]]
        row["ready_time"] = max([row["create_time"]] + done)
    # a barrier's task_busy: its location's fragments in it, cut at the instance's last arrival
    latest = defaultdict(lambda: float("-inf"))
    for bar in barriers:
        latest[(bar["team"], bar["seq"])] = max(latest[(bar["team"], bar["seq"])], bar["enter"])
    for bar in barriers:
        cut = min(latest[(bar["team"], bar["seq"])], bar["exit"])
        bar["task_busy"] = sum(max(min(f["exit"], cut) - max(f["enter"], bar["enter"]), 0.0)
                               for f in frags if f["host"] == (bar["loc"], bar["call"]))
    return dict(task_fragments=frags, tasks=tasks, task_dependences=deps, threads=[r for r in thread_rows.values() if "thread" in r])


def _walk(events, role, process, fork_path, loc):
    """Calls of one location: path, enter/exit time and positions, parent call, team.

    A task fragment's path continues the innermost parallel region's call open here (else the outermost
    call); the top-level calls of a thread lifetime continue the path of the call that created the
    thread (``fork_path[("thread", process, id)]``, KeyError until its creator is walked)."""
    calls, stack = [], []
    graft = None
    for i, (t, a, b, c, d, e, fl, tm) in enumerate(events):
        if t == E.THREAD_BEGIN:
            graft = fork_path[("thread", process, d)]
        elif t == E.THREAD_END:
            graft = None
        elif t == E.THREAD_CREATE:
            fork_path[("thread", process, d)] = calls[stack[-1]]["path"] if stack else ()
        if t == E.ENTER:
            team = calls[stack[-1]]["team"] if stack else None
            base = calls[stack[-1]]["path"] if stack else ()
            if not stack and graft is not None:
                base = graft
            if role.get(a) == Role.OMP_TASK and stack:
                par = [j for j in stack if calls[j]["team_here"]]
                base = calls[par[-1] if par else stack[0]]["path"]
            here, tnum = False, None
            if role.get(a) == Role.OMP_PARALLEL and c != NO_ID:
                team, here, tnum = c, True, (0 if d == NO_ID else d)
                if tnum != 0:
                    base = fork_path[(process, c)]  # KeyError: master not walked yet
            calls.append(dict(path=base + (a,), enter=tm, exit=None, enter_pos=i, exit_pos=len(events),
                              parent=stack[-1] if stack else None, team=team, team_here=here, thread_num=tnum))
            stack.append(len(calls) - 1)
        elif t in (E.EXIT, E.MPI_COLLEXIT, E.OMP_COLLEXIT):
            j = stack.pop()
            calls[j]["exit"] = tm
            calls[j]["exit_pos"] = i
        elif t == E.OMP_FORK:
            fork_path[(process, a)] = calls[stack[-1]]["path"] if stack else ()
    for j in stack:
        calls[j]["exit"] = events[-1][7]
    return calls


def call_summary_reference(call_node, call_enter, call_exit, call_parent):
    """Slow counterpart of ``kernels.summary.call_summary``: a dict per node, then sorted."""
    visits: dict[int, int] = {}
    incl: dict[int, float] = {}
    child: dict[int, float] = {}
    for i in range(len(call_node)):
        node = int(call_node[i])
        d = float(call_exit[i]) - float(call_enter[i])
        visits[node] = visits.get(node, 0) + 1
        incl[node] = incl.get(node, 0.0) + d
    for i in range(len(call_node)):
        p = int(call_parent[i])
        if p >= 0:
            parent_node = int(call_node[p])
            child[parent_node] = child.get(parent_node, 0.0) + (float(call_exit[i]) - float(call_enter[i]))
    nodes = sorted(visits)
    return (nodes, [visits[b] for b in nodes], [incl[b] for b in nodes],
            [incl[b] - child.get(b, 0.0) for b in nodes])


def location_rows_reference(events, role, loc):
    """Slow counterpart of ``kernels.location.replay_location`` for one location without worker threads.

    ``events``: (type, a, b, c, d, e, flags, time) tuples; ``role``: region id
    -> role.  Returns the rows by kind (``"sends"``, ``"recvs"``, ...), each a
    list of dicts with the kernel's column names, where every ``*cnode``
    column holds the call path as a tuple of region ids instead of a node id.
    """
    calls, stack = [], []
    held: dict[int, list[dict]] = defaultdict(list)
    open_send, open_post = {}, {}
    forks = []
    rows: dict[str, list[dict]] = defaultdict(list)

    def call_cols(j, prefix="", enter="enter", exit_="exit"):
        if j is None:
            return {prefix + "region": -1, prefix + "cnode": None, prefix + enter: None, prefix + exit_: None}
        c = calls[j]
        return {prefix + "region": c["path"][-1], prefix + "cnode": c["path"], prefix + enter: c["enter"],
                prefix + exit_: c["exit"]}

    def ids(v):
        return -1 if v == NO_ID else v

    pending = []  # (row, kind-specific filler) resolved once every call has its exit
    for i, (t, a, b, c, d, e, fl, tm) in enumerate(events):
        top = stack[-1] if stack else None
        if t == E.ENTER:
            team = calls[top]["team"] if top is not None else -1
            ref = calls[top]["ref"] if top is not None else -1
            base = calls[top]["path"] if top is not None else ()
            j = len(calls)
            if role.get(a) == Role.OMP_PARALLEL and c != NO_ID:
                team = c
                own = [k for k, f in enumerate(forks) if f == c]
                ref = (loc << 32) | own[-1] if own else -1
                row = {"team_id": c, "team_ref": ref, "thread_num": 0 if d == NO_ID else d}
                rows["members"].append(row)
                pending.append((row, j, "", "enter", "exit"))
                barriers_in = defaultdict(int)
                calls.append(dict(path=base + (a,), enter=tm, exit=None, team=team, ref=ref, bars=barriers_in))
            else:
                if role.get(a) in (Role.OMP_BARRIER, Role.OMP_IMPLICIT_BARRIER) and team >= 0:
                    bars = calls[top]["bars"]
                    row = {"team_id": team, "team_ref": ref, "seq": bars[team],
                           "implicit": int(role.get(a) == Role.OMP_IMPLICIT_BARRIER), "call": j}
                    bars[team] += 1
                    rows["barriers"].append(row)
                    pending.append((row, j, "", "enter", "exit"))
                calls.append(dict(path=base + (a,), enter=tm, exit=None, team=team, ref=ref,
                                  bars=calls[top]["bars"] if top is not None else defaultdict(int)))
            stack.append(j)
        elif t in (E.EXIT, E.MPI_COLLEXIT, E.OMP_COLLEXIT):
            stack.pop()
            calls[top]["exit"] = tm
            if t == E.MPI_COLLEXIT:
                row = {"comm": ids(b), "root": ids(c), "sent": d, "recvd": e, "pos": i}
                rows["collectives"].append(row)
                pending.append((row, top, "", "enter", "exit"))
        elif t == E.MPI_SEND:
            row = {"dest": ids(a), "comm": ids(b), "tag": c, "bytes": d, "send_request": e, "send_flags": fl,
                   "send_pos": i, "send_time": tm, "_cancelled": False}
            rows["sends"].append(row)
            pending.append((row, top, "send_", "enter", "exit"))
            if e:
                open_send[e] = row
                row["_completion"] = None
            else:
                row["_completion"] = top
        elif t in (E.MPI_SEND_COMPLETE, E.MPI_REQUEST_CANCELLED) and e in open_send:
            row = open_send.pop(e)
            row["_completion"] = top
            row["_cancelled"] = t == E.MPI_REQUEST_CANCELLED
        elif t == E.MPI_RECV_REQUEST:
            open_post[e] = (i, tm, top)
        elif t == E.MPI_RECV:
            post_i, post_t, post_call = open_post.pop(e) if e and e in open_post else (i, tm, top)
            row = {"source": ids(a), "comm": ids(b), "tag": c, "recv_bytes": d, "recv_request": e, "recv_flags": fl,
                   "recv_seq": len(rows["recvs"]), "recv_call": (loc << 32) | (top if top is not None else 0),
                   "post_pos": post_i, "recv_time": tm, "post_time": post_t}
            rows["recvs"].append(row)
            pending.append((row, top, "recv_", "enter", "exit"))
            pending.append((row, post_call, "recvp_", "enter", "exit"))
        elif t == E.OMP_FORK:
            forks.append(a)
            rows["forks"].append({"team_id": a, "size": c, "fork_time": tm,
                                  "fork_path": calls[top]["path"] if top is not None else (),
                                  "parent_team_id": calls[top]["team"] if top is not None else -1,
                                  "parent_ref": calls[top]["ref"] if top is not None else -1})
        elif t == E.OMP_JOIN:
            own = [k for k, f in enumerate(forks) if f == a]
            rows["joins"].append({"team_id": a, "team_ref": (loc << 32) | own[-1] if own else -1, "join_time": tm})
        elif t == E.OMP_ACQUIRE_LOCK:
            row = {"lock": a if a != NO_ID else -1, "order": d, "acquire_time": tm, "release_time": None}
            held[a].append(row)
            rows["locks"].append(row)
            pending.append((row, top, "", "call_enter", "call_exit"))
        elif t == E.OMP_RELEASE_LOCK and held[a]:
            held[a].pop()["release_time"] = tm
    for j in stack:  # a truncated location: what is open closes at the last event
        calls[j]["exit"] = events[-1][7]
    for row, j, prefix, enter, exit_ in pending:
        row.update(call_cols(j, prefix, enter, exit_))
    for row in rows["sends"]:
        row.update(call_cols(row.pop("_completion"), "sendc_"))
    rows["sends"] = [r for r in rows["sends"] if not r.pop("_cancelled")]
    return dict(rows)


def channel_ids_reference(src, dst, comm, tag):
    """Slow counterpart of ``kernels.fifo.channel_ids``: a dict numbering keys by first appearance."""
    ids: dict[tuple, int] = {}
    out = [ids.setdefault((int(a), int(b), int(c), int(d)), len(ids)) for a, b, c, d in zip(src, dst, comm, tag)]
    return out, len(ids)


def fifo_pairs_reference(send_chan, send_order, recv_chan, recv_order):
    """Slow counterpart of ``kernels.fifo.fifo_pairs``: one FIFO queue of sends per channel."""
    queues = defaultdict(deque)
    for row in send_order:
        queues[int(send_chan[row])].append(int(row))
    partner = [-1] * len(recv_chan)
    for row in recv_order:
        q = queues[int(recv_chan[row])]
        if q:
            partner[int(row)] = q.popleft()
    return partner


def counter_increments_reference(trace) -> dict:
    """Slow counterpart of the replay's ``ctx.counters``: {metric name: {(call path, location): increment}}.

    Accumulated metrics only; call paths as tuples of region names; workers'
    paths start at their own parallel region (the tests compare per location
    and use the last names of a path).
    """
    import struct

    defs = trace.defs
    metrics = {mid: m for mid, m in defs.metrics.items() if int(m.mode) == 0}  # MetricMode.ACCUMULATED
    out: dict[str, dict] = {m.name: defaultdict(float) for m in metrics.values()}

    def value(mid, bits):
        if int(metrics[mid].dtype) == 1:  # MetricDtype.DOUBLE
            return struct.unpack("<d", struct.pack("<Q", bits))[0]
        return bits

    for loc in (int(l) for l in trace.location_ids):
        calls, stack, at = [], [], None  # at: (call, "first" | "last") the next reading belongs to
        for (t, a, b, c, d, e, fl, tm) in _events(trace, loc):
            if t == E.ENTER:
                path = (calls[stack[-1]]["path"] if stack else ()) + (defs.regions[a].name,)
                calls.append({"path": path, "parent": stack[-1] if stack else None, "first": {}, "last": {}})
                stack.append(len(calls) - 1)
                at = (len(calls) - 1, "first")
            elif t in (E.EXIT, E.MPI_COLLEXIT, E.OMP_COLLEXIT):
                at = (stack.pop(), "last")
            elif t == E.COUNTER:
                if at is not None and a in metrics:
                    calls[at[0]][at[1]][a] = value(a, d)
            else:
                at = None
        for call in calls:
            for mid, m in metrics.items():
                if mid in call["first"] and mid in call["last"]:
                    inc = call["last"][mid] - call["first"][mid]
                    out[m.name][(call["path"], loc)] += inc
                    if call["parent"] is not None:
                        out[m.name][(calls[call["parent"]]["path"], loc)] -= inc
    return {k: dict(v) for k, v in out.items()}


def file_io_rows_reference(ev) -> tuple[list, list, list, list]:
    """Slow counterpart of ``analyzer.replay.kernels.enclosing.events_in_calls`` with MPI_FILE_IO (and the flags, bytes and times it picks) on one location's events:
    (call index in ENTER order of the innermost open call or -1, flags, bytes, time) per MPI_FILE_IO."""
    call, flags, nbytes, time = [], [], [], []
    stack, entered = [], 0
    for i in range(len(ev)):
        t = int(ev.type[i])
        if t == E.ENTER:
            stack.append(entered)
            entered += 1
        elif t in (E.EXIT, E.MPI_COLLEXIT, E.OMP_COLLEXIT):
            if stack:
                stack.pop()
        elif t == E.MPI_FILE_IO:
            call.append(stack[-1] if stack else -1)
            flags.append(int(ev.flags[i]))
            nbytes.append(int(ev.d[i]))
            time.append(float(ev.time[i]))
    return call, flags, nbytes, time
