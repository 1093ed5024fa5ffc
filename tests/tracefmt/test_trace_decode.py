"""The event decoder: the numba kernel against the numpy path, hand-built records, checksums, column memory."""

import struct
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tracefmt
from tracefmt import column_memory, layout, reader
from tracefmt.errors import TraceFormatError
from tracefmt.kernels import decode_records
from tracefmt.writer import to_bytes, write_trace

COLUMN_ORDER = ("ticks", "time", "type", "flags", "a", "b", "c", "d", "e")
FIELDS = ("type", "flags", "a", "b", "c", "d", "e")


def empty_columns(n):
    return {name: np.zeros(n, dt) for name, dt in column_memory.COLUMNS}


def run_kernel(raw: bytes, swap: bool, origin: int, rate: float):
    words = np.frombuffer(raw, "<u8").reshape(-1, 5)
    cols = empty_columns(words.shape[0])
    decode_records(words, swap, np.uint64(origin), rate, 0, *(cols[c] for c in COLUMN_ORDER))
    return cols


# ---------------------------------------------------------------------- the kernel on hand-built records
RECORD = "QBBHIIIQQ"  # time type flags reserved a b c d e, as layout.event_dtype


@pytest.mark.parametrize("order,swap", [("<", False), (">", True)])
def test_kernel_decodes_hand_built_records_in_both_byte_orders(order, swap):
    rows = [
        (1500, 1, 0, 0, 7, 3, 0xFFFFFFFF, 2, 0),  # ENTER region 7 callsite 3
        (0x0102030405060708, 3, 0x05, 0, 0x11223344, 0xA0B0C0D0, 42, 0x8877665544332211, 0xDEADBEEFCAFEF00D),
        (400, 2, 0xFF, 0, 0, 0, 0, 0, 2**64 - 1),  # before the origin: negative local time
    ]
    raw = b"".join(struct.pack(order + RECORD, *r) for r in rows)
    cols = run_kernel(raw, swap, origin=500, rate=1000.0)
    for f, col in zip(("ticks", "type", "flags", None, "a", "b", "c", "d", "e"), zip(*rows)):
        if f is not None:
            assert cols[f].tolist() == list(col), f
    # (ticks - origin) / rate, by hand: 1000/1000, (0x0102030405060708 - 500)/1000, -100/1000
    assert cols["time"][0] == 1.0
    assert cols["time"][1] == float(0x0102030405060708 - 500) / 1000.0
    assert cols["time"][2] == -0.1


def test_kernel_writes_only_its_rows():
    raw = struct.pack("<" + RECORD, 10, 1, 2, 0, 3, 4, 5, 6, 7) * 2
    words = np.frombuffer(raw, "<u8").reshape(-1, 5)
    cols = empty_columns(5)
    for c in cols.values():
        c[...] = 9
    decode_records(words, False, np.uint64(0), 1.0, 2, *(cols[c] for c in COLUMN_ORDER))
    assert cols["a"].tolist() == [9, 9, 3, 3, 9] and cols["e"].tolist() == [9, 9, 7, 7, 9]
    assert cols["time"].tolist() == [9.0, 9.0, 10.0, 10.0, 9.0]


# ---------------------------------------------------------------------- kernel == numpy path on random traces
def random_trace(rng, order, clocks, offsets, sizes, blocks_per_location):
    """Definitions and per-location lists of record arrays (each list entry is written as one block)."""
    defs = tracefmt.Definitions()
    defs.machines[0] = tracefmt.Machine(0, "m")
    defs.nodes[0] = tracefmt.Node(0, 0, "n")
    events = {}
    for loc, n in enumerate(sizes):
        proc = loc // 2
        defs.processes.setdefault(proc, tracefmt.Process(proc, 0, f"rank {proc}"))
        defs.locations[loc] = tracefmt.Location(loc, proc, loc % 2, f"loc {loc}")
        rec = np.zeros(n, layout.EVENT_DTYPE)
        rec["time"] = np.sort(rng.integers(0, 2**62, n, dtype=np.uint64))
        rec["type"] = rng.integers(0, 256, n)
        rec["flags"] = rng.integers(0, 256, n)
        for f in ("a", "b", "c"):
            rec[f] = rng.integers(0, 2**32, n, dtype=np.uint64)
        for f in ("d", "e"):
            rec[f] = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
        cuts = np.sort(rng.integers(0, n + 1, blocks_per_location - 1)) if n else []
        events[loc] = np.split(rec, cuts)
    for proc, clock in clocks.items():
        defs.clocks[proc] = clock
    for proc, offs in offsets.items():
        defs.offsets[proc] = offs
    return defs, events


def write_blocks(path_or_buf, defs, events, order):
    with tracefmt.TraceWriter(path_or_buf, byte_order=order) as w:
        w.write_definitions(defs)
        for loc, parts in events.items():
            for part in parts:
                if len(part):
                    w.write_events(loc, part)


def decode_both(trace, loc, monkeypatch):
    """(kernel, numpy) decodes of one location, each path forced."""
    with monkeypatch.context() as m:
        m.setattr(reader, "_KERNEL_MIN_RECORDS", 0)
        by_kernel = trace.events(loc)
    with monkeypatch.context() as m:
        m.setattr(reader, "_KERNEL_MIN_RECORDS", 2**62)
        m.setattr(reader, "_KERNEL_MODULE", "no such module")
        by_numpy = trace.events(loc)
    return by_kernel, by_numpy


CLOCKS = [
    {},  # the default: 1e9 ticks/s from 0
    {0: tracefmt.Clock(0, 2.5e9, 2**40), 1: tracefmt.Clock(1, 1e6, 0)},
    {0: tracefmt.Clock(0, 3.3e9, 2**61), 1: tracefmt.Clock(1, 1.0, 2**62 + 12345)},  # many ticks before origin
]
OFFSETS = [
    {},
    {0: [tracefmt.Offset(0.0, 1e-3)]},
    {0: [tracefmt.Offset(0.5, -2e-3), tracefmt.Offset(100.0, 4e-3), tracefmt.Offset(1e9, 1e-2)],
     1: [tracefmt.Offset(3.0, 0.25), tracefmt.Offset(3.0, 0.75)]},
]


@pytest.mark.parametrize("order", [layout.BYTE_ORDER_LITTLE, layout.BYTE_ORDER_BIG])
@pytest.mark.parametrize("case", range(3))
def test_kernel_and_numpy_paths_agree_bit_for_bit(tmp_path, monkeypatch, order, case):
    rng = np.random.default_rng(1000 * order + case)
    # empty, one-event, just under / over a chunk, several chunks in several blocks
    sizes = [0, 1, column_memory.CHUNK_RECORDS - 1, column_memory.CHUNK_RECORDS + 1, 3 * column_memory.CHUNK_RECORDS + 17]
    defs, events = random_trace(rng, order, CLOCKS[case], OFFSETS[case], sizes, blocks_per_location=1 + case)
    path = tmp_path / "t.elg"
    write_blocks(str(path), defs, events, order)
    for source in (str(path), path.read_bytes()):  # pread from a file, and in-memory bytes
        with tracefmt.open(source) as t:
            assert t.complete and t.header.byte_order == order
            for loc, parts in events.items():
                rec = np.concatenate(parts) if parts else np.zeros(0, layout.EVENT_DTYPE)
                k, p = decode_both(t, loc, monkeypatch)
                assert len(k) == len(p) == len(rec)
                assert np.array_equal(k.ticks, rec["time"]) and np.array_equal(p.ticks, rec["time"])
                for f in FIELDS:
                    assert np.array_equal(getattr(k, f), rec[f]), f
                    assert np.array_equal(getattr(p, f), rec[f]), f
                    assert getattr(k, f).dtype == getattr(p, f).dtype == rec[f].dtype.newbyteorder("=")
                assert np.array_equal(k.time.view(np.uint64), p.time.view(np.uint64))  # identical bits
                clock = t.defs.clock(t.defs.locations[loc].process)
                local = (rec["time"] - np.uint64(clock.origin)).view(np.int64) / clock.ticks_per_second
                expect = reader.local_to_global(local, t.defs.offsets.get(t.defs.locations[loc].process, []))
                assert np.array_equal(k.time, expect)


def test_threads_decoding_the_same_trace_at_once_get_their_own_events(tmp_path):
    rng = np.random.default_rng(11)
    sizes = [2 * column_memory.CHUNK_RECORDS + 3 * i for i in range(6)]
    defs, events = random_trace(rng, layout.BYTE_ORDER_LITTLE, {}, {}, sizes, 2)
    write_blocks(str(tmp_path / "t.elg"), defs, events, layout.BYTE_ORDER_LITTLE)
    with tracefmt.open(str(tmp_path / "t.elg")) as t, ThreadPoolExecutor(3) as pool:
        got = list(pool.map(t.events, [loc for _ in range(4) for loc in events]))
    for ev in got:
        rec = np.concatenate(events[ev.location])
        assert np.array_equal(ev.ticks, rec["time"]) and np.array_equal(ev.e, rec["e"])


# ---------------------------------------------------------------------- checksums
def test_crc_function_is_zlibs_crc32():
    data = np.random.default_rng(5).integers(0, 256, 100_003, dtype=np.uint8)
    assert reader._crc32(data) == zlib.crc32(data)
    assert reader._crc32(data[50_000:], reader._crc32(data[:50_000])) == zlib.crc32(data)
    assert reader._crc32(b"") == 0


@pytest.mark.parametrize("kernel", [True, False])
def test_damage_in_a_later_chunk_of_a_long_block_is_caught(tmp_path, monkeypatch, kernel):
    rng = np.random.default_rng(7)
    defs, events = random_trace(rng, layout.BYTE_ORDER_LITTLE, {}, {}, [3 * column_memory.CHUNK_RECORDS + 5, 10], 1)
    path = tmp_path / "t.elg"
    write_blocks(str(path), defs, events, layout.BYTE_ORDER_LITTLE)
    with tracefmt.open(str(path)) as t:
        b = t._blocks_of[0][0]
    data = bytearray(path.read_bytes())
    data[b.payload_offset + 2 * column_memory.CHUNK_RECORDS * 40 + 77] ^= 0x10  # inside the third chunk
    path.write_bytes(bytes(data))
    monkeypatch.setattr(reader, "_KERNEL_MIN_RECORDS", 0 if kernel else 2**62)
    if not kernel:
        monkeypatch.setattr(reader, "_KERNEL_MODULE", "no such module")
    with tracefmt.open(str(path)) as t:
        with pytest.raises(TraceFormatError) as e:
            t.events(0)
        assert f"(location 0, block {b.number}, byte {b.offset})" in str(e.value)
        assert "checksum mismatch" in str(e.value)
        assert len(t.events(1)) == 10  # the other location is intact
    with tracefmt.open(str(path), verify=False) as t:
        assert len(t.events(0)) == 3 * column_memory.CHUNK_RECORDS + 5


# ---------------------------------------------------------------------- column memory
@pytest.mark.parametrize("threshold", ["POPULATED_COLUMNS_BYTES", "HUGE_PAGE_COLUMNS_BYTES"])
def test_large_locations_get_one_mapping_with_aligned_disjoint_columns(threshold):
    n = getattr(column_memory, threshold) // column_memory.BYTES_PER_EVENT + 1
    cols = column_memory.new_columns(n)
    owners = {id(c.base.obj) for c in cols.values()}  # each column views the same mapping
    assert len(owners) == 1 and all(c.flags.writeable and c.flags.c_contiguous for c in cols.values())
    for i, (name, c) in enumerate(cols.items()):
        assert len(c) == n and c.ctypes.data % c.itemsize == 0
        c[...] = i + 1
    for i, (name, c) in enumerate(cols.items()):  # no column overlaps another
        assert np.all(c == i + 1), name
    small = column_memory.new_columns(column_memory.POPULATED_COLUMNS_BYTES // column_memory.BYTES_PER_EVENT - 1)
    assert all(c.base is None for c in small.values())


def test_columns_outlive_the_trace_and_each_other(tmp_path):
    n = column_memory.HUGE_PAGE_COLUMNS_BYTES // column_memory.BYTES_PER_EVENT + 100
    rec = np.zeros(n, layout.EVENT_DTYPE)
    rec["time"] = np.arange(n, dtype=np.uint64) * np.uint64(1000)
    rec["a"] = np.arange(n) % 13
    defs = tracefmt.Definitions()
    defs.processes[0] = tracefmt.Process(0, layout.NO_ID, "p")
    defs.locations[0] = tracefmt.Location(0, 0, 0, "l")
    write_trace(str(tmp_path / "t.elg"), defs, {0: rec})
    with tracefmt.open(str(tmp_path / "t.elg")) as t:
        ev = t.events(0)
    a, time = ev.a, ev.time
    del ev
    assert np.array_equal(a, rec["a"]) and time[-1] == (n - 1) * 1e-6
    assert np.array_equal(tracefmt.open(to_bytes(defs, {0: rec})).events(0).a, a)


def test_load_decoder_makes_short_locations_use_the_kernel(monkeypatch):
    reader.load_decoder()
    calls = []
    real = reader._kernel_decoder
    monkeypatch.setattr(reader, "_kernel_decoder", lambda *a: calls.append(1) or real(*a))
    b = tracefmt.TraceBuilder()
    r0 = b.location(rank=0, thread=0)
    b.enter(r0, 0.0, "main")
    b.exit(r0, 1.0, "main")
    ev = b.build().events(r0)
    assert calls == [1] and ev.time.tolist() == [0.0, 1.0]
