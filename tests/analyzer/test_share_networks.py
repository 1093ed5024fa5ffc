"""The carriers between the stages of the analysis per share deliver what ``network.deliver`` does.

Random stage pipelines (column dicts of several dtypes with empty and 2-D columns, None entries, payloads
for every share, pickled objects, shares that send nothing, one share sending a large payload to one
other) run through MemoryNetwork (the reference), SpillNetwork and, under mpiexec with 1-4 ranks on
Open MPI and MPICH, MpiNetwork with messages of at most 64 bytes so every buffer crosses many.  Each
stage checks its inbox against ``deliver`` of the regenerated outboxes and its state against the one
it kept; the digests of everything a share saw must be the same on every carrier.  A failing stage:
one clear error on rank 0 (its file and location), ShareFailed elsewhere, no hang.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import pickle
import re
import weakref

import numpy as np
import pytest

from analyzer.distributed.network import EVERY, MemoryNetwork, deliver, run_stages
from mpi_launch import launch
from analyzer.distributed.spill import SpillNetwork, read_payload, write_payload

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ["sends", "tree", "halo", "blocks", "misc"]
PAIR = np.dtype([("loc", "<i8"), ("time", "<f8"), ("flag", "u1")])
DTYPES = [np.int64, np.int32, np.float64, np.bool_, np.uint8, np.int16, PAIR]


# --------------------------------------------------------------------------
# Random pipelines (also imported by the MPI ranks below)
# --------------------------------------------------------------------------
def _column(rng, dtype, n):
    if dtype == PAIR:
        a = np.zeros(n, PAIR)
        a["loc"] = rng.integers(-5, 1 << 40, n)
        a["time"] = rng.normal(size=n)
        a["flag"] = rng.integers(0, 255, n)
        return a
    if np.dtype(dtype).kind == "f":
        return rng.normal(size=n).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.random(n) < 0.5
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def columns(rng, n=None):
    """A dict of columns of one length (0 sometimes), some 2-D, one maybe not contiguous."""
    if n is None:
        n = 0 if rng.random() < 0.25 else int(rng.integers(1, 60))
    cols = {}
    for j in range(int(rng.integers(0, 6))):
        cols[f"c{j}"] = _column(rng, DTYPES[int(rng.integers(len(DTYPES)))], n)
    if rng.random() < 0.3:
        cols["xy"] = rng.normal(size=(n, 3))
    if rng.random() < 0.2:
        cols["strided"] = np.arange(2 * n, dtype=np.int64)[::2]
    if rng.random() < 0.1:
        cols["fortran"] = np.asfortranarray(rng.normal(size=(n, 2)))
    return cols


def payload(rng):
    r = rng.random()
    if r < 0.2:
        return None
    if r < 0.7:
        return columns(rng)
    if r < 0.85:  # a small python object, pickled whole
        return ("summary", int(rng.integers(1 << 50)), [str(rng.random()) for _ in range(int(rng.integers(4)))],
                {"x": float(rng.random()), "none": None})
    return {"rows": columns(rng), "note": f"share note {rng.random()}"}  # arrays inside an object


def outbox(seed: int, stage: int, share: int, k: int) -> dict:
    """Share ``share``'s outbox after stage ``stage`` of pipeline ``seed`` (a pure function of its arguments).
    Seed 0 is the uneven one: share 0 sends a large payload to the last share, the others nothing."""
    if seed == 0:
        if share != 0:
            return {}
        big = columns(np.random.default_rng([stage, 99]), n=5000)
        big["t"] = np.linspace(0.0, 1.0, 5000)
        return {"sends": [None] * (k - 1) + [big], "empty": [columns(np.random.default_rng(1), n=0)] * k}
    rng = np.random.default_rng([seed, stage, share, k])
    if rng.random() < 0.15:
        return {}  # a share with nothing to say (an empty share)
    out = {}
    for kind in rng.permutation(KINDS)[: int(rng.integers(1, len(KINDS) + 1))]:
        if rng.random() < 0.3:
            out[str(kind)] = {EVERY: payload(rng)}
        else:
            out[str(kind)] = [payload(rng) for _ in range(k)]
    return out


def kept(seed: int, stage: int, share: int) -> dict:
    rng = np.random.default_rng([seed, stage, share, 7])
    return {"cols": columns(rng), "stage": stage}


def assert_same(a, b, where="payload"):
    """``a`` and ``b`` equal in type, structure, dtype, shape and bytes (NaN equal to itself)."""
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, (where, a.dtype, b.dtype, a.shape, b.shape)
        if a.dtype.hasobject:
            assert a.tolist() == b.tolist(), where
        else:
            assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), where
    elif isinstance(a, dict):
        assert list(a) == list(b), (where, list(a), list(b))
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


def digest(obj) -> str:
    h = hashlib.sha256()

    def feed(o):
        if isinstance(o, np.ndarray):
            h.update(repr(("nd", o.dtype.descr, o.shape)).encode())
            h.update(np.ascontiguousarray(o).tobytes())
        elif isinstance(o, dict):
            h.update(b"{")
            for key, v in o.items():
                feed(key)
                feed(v)
            h.update(b"}")
        elif isinstance(o, (list, tuple)):
            h.update(b"[" if isinstance(o, list) else b"(")
            for v in o:
                feed(v)
            h.update(b"]")
        else:
            h.update(repr((type(o).__name__, o)).encode())

    feed(obj)
    return h.hexdigest()


def stages(seed: int, k: int, n_stages: int = 3):
    """Stages that check their inbox and kept state, and keep the digests of all they saw."""

    def make(i):
        def stage(share, state, inbox):
            if i == 0:
                assert state is None and inbox == {}
                seen = []
            else:
                want = deliver({s: outbox(seed, i - 1, s, k) for s in range(k)}, k)[share]
                assert_same(inbox, want, f"inbox of share {share} at stage {i}")
                assert_same(state["kept"], kept(seed, i - 1, share), "state")
                seen = state["seen"] + [digest(inbox)]
            return {"seen": seen, "kept": kept(seed, i, share)}, outbox(seed, i, share, k)

        return stage

    return [make(i) for i in range(n_stages)]


def run_pipeline(net, seed: int, n_stages: int = 3) -> dict[int, list[str]]:
    """Digests of every inbox each local share saw, the final one (after the last flush) included."""
    k = net.n_shares
    final = run_stages(net, stages(seed, k, n_stages))
    out = {}
    for s in net.local:
        last = net.inbox(s)
        assert_same(last, deliver({src: outbox(seed, n_stages - 1, src, k) for src in range(k)}, k)[s], "final")
        out[s] = final[s]["seen"] + [digest(last)]
    return out


SEEDS = [0, 1, 2, 3, 4, 5]


# --------------------------------------------------------------------------
# SpillNetwork
# --------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 2, 3, 5])
@pytest.mark.parametrize("seed", SEEDS)
def test_spill_delivers_as_memory(tmp_path, seed, k):
    want = run_pipeline(MemoryNetwork(k), seed)
    with SpillNetwork(tmp_path, k) as net:
        got = run_pipeline(net, seed)
        folder = net.directory
        assert net.spilled_bytes > 0 and net.read_bytes > 0 and net.spill_seconds > 0
    assert got == want
    assert not os.path.exists(folder) and os.listdir(tmp_path) == []  # close() removed its files


def test_spill_keeps_no_data_in_memory(tmp_path):
    # after post/keep the network holds no reference to the arrays; what state()/inbox() return is the caller's
    net = SpillNetwork(tmp_path, 2)
    a, b = np.arange(1000), np.ones(10)
    refs = [weakref.ref(a), weakref.ref(b)]
    net.post(0, {"sends": [None, {"a": a}], "tree": {EVERY: {"b": b}}})
    net.keep(0, {"a": a})
    del a, b
    gc.collect()
    assert [r() for r in refs] == [None, None]
    net.flush()
    got = net.inbox(1)
    st = net.state(0)
    np.testing.assert_array_equal(got["sends"][0]["a"], np.arange(1000))
    assert got["tree"] == [{"b": got["tree"][0]["b"]}, None]
    refs = [weakref.ref(got["sends"][0]["a"]), weakref.ref(st["a"])]
    del got, st
    gc.collect()
    assert [r() for r in refs] == [None, None]
    assert net.state(1) is None
    assert_same(net.inbox(0), {"sends": [None, None], "tree": [{"b": np.ones(10)}, None]})
    net.close()


def test_spill_stage_error_is_raised_as_it_is(tmp_path):
    class Boom(ValueError):
        pass

    def bad(share, state, inbox):
        if share == 1:
            raise Boom("share 1 broke")
        return None, {}

    with SpillNetwork(tmp_path, 3) as net, pytest.raises(Boom, match="share 1 broke"):
        run_stages(net, [bad])


def test_spill_rejects_an_outbox_of_the_wrong_length(tmp_path):
    with SpillNetwork(tmp_path, 3) as net, pytest.raises(ValueError, match="2 payloads for 3 shares"):
        net.post(0, {"sends": [None, {}]})


def test_a_payload_file_reads_back_exactly(tmp_path):
    rng = np.random.default_rng(3)
    obj = {"cols": columns(rng, n=7), "objects": np.array([1, "x", None], dtype=object),
           "f": np.asfortranarray(rng.normal(size=(4, 3))), "view": np.arange(20)[3:15:3],
           "empty": np.zeros((0, 4), np.int32), "scalar": np.float32(1.5), "text": "é"}
    path = str(tmp_path / "p.bin")
    n = write_payload(path, obj)
    got, m = read_payload(path)
    assert n == m == os.path.getsize(path)
    assert_same(got, obj)
    for col in got["cols"].values():  # each array owns fresh writable memory
        assert col.flags.writeable


# --------------------------------------------------------------------------
# MpiNetwork under mpiexec
# --------------------------------------------------------------------------
def _launch(mpi: str, k: int, script: str, tmp, *args: str):
    return launch(mpi, k, ["-c", script, *args], tmp, extra_path=[HERE], timeout=120)


PIPELINES = """
import json, sys
from mpi4py import MPI
import analyzer.distributed.mpi_network as M
import test_share_networks as T
M.CHUNK = 64  # every buffer over 64 bytes crosses in several messages
M.INLINE = int(sys.argv[2])  # 0: nothing travels inside the all-to-all
out = {}
total = [0, 0, 0]
try:
    for seed in T.SEEDS:
        net = M.MpiNetwork(MPI.COMM_WORLD)
        out[seed] = T.run_pipeline(net, seed)[net.rank]
        assert net.largest_message <= 64, net.largest_message
        stats = (net.messages, net.sent_bytes)
        total = [total[0] + net.sent_bytes, total[1] + net.received_bytes, total[2] + net.messages]
        net.close()
    # the process's counters sum its networks' (3 stages: 3 flushes each)
    t = M.TRAFFIC
    assert [t["bytes_sent"], t["bytes_received"], t["messages"], t["flushes"]] == total + [3 * len(T.SEEDS)], t
except BaseException:  # a check failing on one rank only: end them all now rather than at the timeout
    import traceback
    traceback.print_exc()
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(1)
with open(f"{sys.argv[1]}/rank{MPI.COMM_WORLD.rank}.json", "w") as f:  # the ranks' stdout lines may interleave
    json.dump({"rank": MPI.COMM_WORLD.rank, "seen": out, "messages": stats[0], "bytes": stats[1], "total": total}, f)
"""


@pytest.mark.runtime
@pytest.mark.parametrize("mpi,k", [("openmpi", 1), ("openmpi", 2), ("openmpi", 3), ("openmpi", 4), ("mpich", 2),
                                   ("mpich", 4)])
@pytest.mark.parametrize("inline", [0, 1 << 16])
def test_mpi_delivers_as_memory(tmp_path, mpi, k, inline):
    """Payloads in pieces of at most 64 bytes, or (inline) the small ones inside the all-to-all."""
    r = _launch(mpi, k, PIPELINES, tmp_path, str(tmp_path), str(inline))
    assert r.returncode == 0, r.stderr
    ranks = [json.loads((tmp_path / f"rank{i}.json").read_text()) for i in range(k)]
    for seed in SEEDS:
        want = run_pipeline(MemoryNetwork(k), seed)
        assert [d["seen"][str(seed)] for d in ranks] == [want[s] for s in range(k)], seed
    assert sum(d["total"][0] for d in ranks) == sum(d["total"][1] for d in ranks)  # bytes sent = received
    if k > 1 and not inline:  # the last pipeline's bytes went in pieces of at most 64 bytes
        assert all(d["messages"] * 64 >= d["bytes"] for d in ranks)
        assert sum(d["messages"] for d in ranks) > 0
    if k > 1 and inline:  # small payloads: no message apart
        assert sum(d["total"][2] for d in ranks) < sum(d["total"][0] for d in ranks) // 64


FAILURES = """
import sys
from mpi4py import MPI
from analyzer.distributed.mpi_network import MpiNetwork
from analyzer.distributed.network import ShareFailed, run_stages
from analyzer.replay import ReplayError
comm = MPI.COMM_WORLD
k = comm.size

def ok(share, state, inbox):
    return None, {"x": {"*": {"share": share}}}

def fails_on(*bad, exc=lambda s: ReplayError(f"time goes backwards on share {s}", path="t.elg", location=s)):
    def stage(share, state, inbox):
        if share in bad:
            raise exc(share)
        return None, {}
    return stage

def unpicklable(share, state, inbox):  # the last share sends share 0 what pickle cannot carry
    return None, {"x": [(lambda: share) if share == k - 1 else None] + [None] * (k - 1)}

def report(name, run):
    # run(net) on a fresh network; each rank writes what it raised
    net = MpiNetwork(comm)
    try:
        run(net)
        got = "none"
    except ShareFailed as exc:
        got = f"ShareFailed: {exc}"
    except Exception as exc:
        got = f"{type(exc).__name__}: {exc}"
    net.close()
    with open(f"{sys.argv[1]}/rank{comm.rank}.txt", "a") as f:  # the ranks' stdout lines may interleave
        print(f"{name} rank {comm.rank}: {got}", file=f)

# the first failing share (in share order) is the one rank 0 reports, the others say ShareFailed
report("later", lambda net: run_stages(net, [ok, fails_on(k - 1, k - 2), ok]))
report("own", lambda net: run_stages(net, [ok, fails_on(0, k - 1, exc=lambda s: KeyError(f"k{s}"))]))
report("pickle", lambda net: run_stages(net, [unpicklable, ok]))
# in rounds (the sparse exchange of few, small payloads): share k - 2 fails in the third round
from analyzer.distributed.rounds import NOT_STUCK, Status, run_rounds

def rounds_failing(share, state, inbox, stuck):
    state = (state or 0) + 1
    if state == 3 and share == k - 2:
        raise ReplayError(f"time goes backwards on share {share}", path="t.elg", location=share)
    return state, {"x": [state if d == (share + 1) % k else None for d in range(k)]}, Status(1, True, NOT_STUCK)

report("rounds", lambda net: run_rounds(net, rounds_failing, limit=10))
# the last one is not caught: rank 0 prints one error line and every rank exits non-zero
net = MpiNetwork(comm)
try:
    run_stages(net, [ok, fails_on(k - 1)])
except ShareFailed:
    sys.exit(3)
except ReplayError as exc:
    print(f"expert-analyze: error: {exc}", file=sys.stderr)
    sys.exit(2)
"""


@pytest.mark.runtime
@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_mpi_a_failing_share_is_one_error_on_rank_0(tmp_path, mpi):
    k = 3
    r = _launch(mpi, k, FAILURES, tmp_path, str(tmp_path))  # a hang would end in the subprocess timeout
    assert r.returncode != 0
    lines = sorted(line for i in range(k) for line in (tmp_path / f"rank{i}.txt").read_text().splitlines())
    want = [f"later rank 0: ReplayError: t.elg (location {k - 2}): time goes backwards on share {k - 2}"]
    want += [f"later rank {i}: ShareFailed: analysis rank {k - 2} failed" for i in range(1, k)]
    want += ["own rank 0: KeyError: 'k0'"] + [f"own rank {i}: ShareFailed: analysis rank 0 failed"
                                              for i in range(1, k)]
    want += [f"pickle rank {i}: ShareFailed: analysis rank {k - 1} failed" for i in range(1, k)]
    want += [f"rounds rank 0: ReplayError: t.elg (location {k - 2}): time goes backwards on share {k - 2}"]
    want += [f"rounds rank {i}: ShareFailed: analysis rank {k - 2} failed" for i in range(1, k)]
    assert [line for line in lines if not line.startswith("pickle rank 0")] == sorted(want), r.stdout
    pickled = [line for line in lines if line.startswith("pickle rank 0")]
    # (PicklingError or AttributeError, by the Python version)
    assert len(pickled) == 1 and re.match(
        rf"pickle rank 0: RuntimeError: analysis rank {k - 1} failed: \w+Error: Can't pickle", pickled[0]), pickled
    errors = [line for line in r.stderr.splitlines() if "expert-analyze" in line]
    assert errors == [f"expert-analyze: error: t.elg (location {k - 1}): time goes backwards on share {k - 1}"], \
        r.stderr


def test_the_portable_error_keeps_file_and_location():
    from analyzer.replay import ReplayError
    from analyzer.distributed.payload import portable_error, raise_portable
    from tracefmt.errors import TraceFormatError

    for exc in [ReplayError("bad", path="a.elg", location=3), TraceFormatError("short", path="b.otf2", offset=8)]:
        err = pickle.loads(pickle.dumps(portable_error(exc)))
        with pytest.raises(type(exc)) as got:
            raise_portable(err, 2)
        assert str(got.value) == str(exc) and type(got.value) is type(exc)
    with pytest.raises(RuntimeError, match="analysis rank 2 failed: KeyError: 'x'"):
        raise_portable(portable_error(KeyError("x")), 2)
