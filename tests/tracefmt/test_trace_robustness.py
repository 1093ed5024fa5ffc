"""Damaged input: truncation anywhere, bit flips, hostile sizes, random traces round-trip."""

import random
import struct
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracefmt
import tracefmt.validate
from tracefmt import layout
from tracefmt.cli import main
from tracefmt.layout import BlockKind, EventType
from tracefmt.writer import encode_block_header


def small_trace_bytes() -> bytes:
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(0), b.location(1)
    for loc in (r0, r1):
        b.enter(loc, 0.0, "main")
        for k in range(5):
            b.enter(loc, 0.1 + k, "work")
            b.exit(loc, 0.5 + k)
    b.enter(r0, 6.0, "MPI_Send")
    b.send(r0, 6.0, dest=1, nbytes=4)
    b.exit(r0, 6.1)
    b.enter(r1, 6.0, "MPI_Recv")
    b.recv(r1, 6.2, source=0, nbytes=4)
    b.exit(r1, 6.3)
    b.exit(r0, 7.0)
    b.exit(r1, 7.0)
    return b.to_bytes()


DATA = small_trace_bytes()
FULL = tracefmt.open(DATA)


def read_everything(trace):
    for loc in trace.location_ids.tolist():
        trace.events(loc)


def test_truncation_at_every_offset_keeps_every_complete_block():
    ev_blocks = [b for b in FULL.blocks if b.kind == BlockKind.EVENTS]
    for cut in range(len(DATA)):
        try:
            t = tracefmt.open(DATA[:cut])
        except tracefmt.TraceFormatError as e:
            # only a file without a header or without complete definitions is unusable
            defs_end = FULL.blocks[0].end
            assert cut < defs_end, (cut, str(e))
            assert "<bytes>" in str(e)
            continue
        assert not t.complete and t.problems, cut
        for b in ev_blocks:
            whole = b.end <= cut
            got = t.events(b.location)
            if whole:
                ref = FULL.events(b.location)
                assert np.array_equal(got.ticks, ref.ticks) and np.array_equal(got.a, ref.a)
            else:
                assert len(got) == 0, cut


def test_truncated_message_names_the_cut_block():
    second = [b for b in FULL.blocks if b.kind == BlockKind.EVENTS][1]
    t = tracefmt.open(DATA[: second.offset + 100])
    assert any(f"block 2 (EVENTS of location 1, at byte {second.offset}) is truncated" in p for p in t.problems)


def test_unfinished_file_without_index_is_read_by_scanning():
    # what a crashed writer leaves: header without the finished flag, blocks, no index
    t_idx = [b for b in FULL.blocks][-1].end
    from tracefmt.writer import encode_file_header

    unfinished = encode_file_header(layout.BYTE_ORDER_LITTLE, 0, FULL.header.creator)
    t = tracefmt.open(unfinished + DATA[layout.FILE_HEADER_SIZE : t_idx])
    assert not t.header.finished and not t.complete
    assert any("did not finish" in p for p in t.problems)
    for loc in (0, 1):
        assert np.array_equal(t.events(loc).ticks, FULL.events(loc).ticks)


def test_damaged_index_falls_back_to_scanning_with_the_same_result():
    data = bytearray(DATA)
    index_at = struct.unpack_from("<Q", data, len(data) - 16)[0]
    data[index_at + 32 + 10] ^= 0xFF  # inside the index payload
    t = tracefmt.open(bytes(data))
    assert any("footer index unusable" in p and "checksum" in p for p in t.problems)
    for loc in (0, 1):
        assert np.array_equal(t.events(loc).ticks, FULL.events(loc).ticks)


def test_damaged_block_header_is_skipped_and_reported():
    first_events = [b for b in FULL.blocks if b.kind == BlockKind.EVENTS][0]
    data = bytearray(DATA[: len(DATA) - 16])  # no trailer: force scanning
    data[first_events.offset + 5] ^= 1
    t = tracefmt.open(bytes(data))
    assert any(f"damaged block header at byte {first_events.offset}" in p for p in t.problems)
    assert len(t.events(0)) == 0 and len(t.events(1)) == FULL.n_events(1)


def test_checksum_mismatch_names_location_block_and_offset():
    b = [b for b in FULL.blocks if b.kind == BlockKind.EVENTS][1]
    data = bytearray(DATA)
    data[b.payload_offset + 41] ^= 0x80
    t = tracefmt.open(bytes(data))
    t.events(0)  # untouched location still reads
    with pytest.raises(tracefmt.TraceFormatError) as e:
        t.events(1)
    assert str(e.value) == f"<bytes> (location 1, block {b.number}, byte {b.offset}): checksum mismatch: " \
                           "the block's data is damaged"
    assert (e.value.location, e.value.block, e.value.offset) == (1, b.number, b.offset)
    assert len(tracefmt.open(bytes(data), verify=False).events(1)) == FULL.n_events(1)


def test_header_errors():
    with pytest.raises(tracefmt.TraceFormatError, match="EPILOG 1.x"):
        tracefmt.open(b"EPILOG\0\x01\x09\x01" + b"\0" * 100)
    with pytest.raises(tracefmt.TraceFormatError, match=rf"unsupported format version 3\.{layout.VERSION_MINOR}"):
        tracefmt.open(DATA[:10] + struct.pack("<H", 3) + DATA[12:])
    with pytest.raises(tracefmt.TraceFormatError, match="bad magic"):
        tracefmt.open(b"x" + DATA[1:])
    with pytest.raises(tracefmt.TraceFormatError, match="byte-order"):
        tracefmt.open(DATA[:8] + b"\x07" + DATA[9:])
    with pytest.raises(tracefmt.TraceFormatError, match="truncated file header"):
        tracefmt.open(DATA[:20])


def test_every_bit_flip_in_the_file_header_is_detected(capsys):
    # the creator text and the flags are covered by the header CRC, so no flip
    # anywhere in the 64 header bytes goes unnoticed
    for bit in range(layout.FILE_HEADER_SIZE * 8):
        damaged = bytearray(DATA)
        damaged[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(tracefmt.TraceFormatError):
            tracefmt.open(bytes(damaged))


def hostile_file(count: int, payload_length: int) -> bytes:
    """A valid header followed by one EVENTS block header claiming huge sizes."""
    from tracefmt.writer import encode_file_header

    head = encode_file_header(layout.BYTE_ORDER_LITTLE, layout.FLAG_FINISHED, "evil")
    return head + encode_block_header(layout.BYTE_ORDER_LITTLE, BlockKind.EVENTS, 0, 0, payload_length, count)


def test_hostile_sizes_are_checked_before_allocation():
    for count, length in [(2**32 - 1, (2**32 - 1) * 40), (10, 2**63), (2**31, 400)]:
        with pytest.raises(tracefmt.TraceFormatError, match=r"no complete definitions block .*truncated"):
            tracefmt.open(hostile_file(count, length))


def test_hostile_index_entry_count():
    data = bytearray(DATA)
    index_at = struct.unpack_from("<Q", data, len(data) - 16)[0]
    # claim 2**31 entries in the index; fix the header checksum so only the size is wrong
    struct.pack_into("<I", data, index_at + 24, 2**31)
    struct.pack_into("<I", data, index_at + 28, zlib.crc32(bytes(data[index_at : index_at + 28])))
    t = tracefmt.open(bytes(data))
    assert any("footer index unusable" in p for p in t.problems)
    assert t.n_events(1) == FULL.n_events(1)


def test_fuzzed_files_fail_only_with_trace_format_error(tmp_path, capsys):
    rng = random.Random(20240601)
    path = tmp_path / "fuzz.elg"
    outcomes = {"ok": 0, "error": 0}
    for i in range(300):
        data = bytearray(DATA)
        for _ in range(rng.choice([1, 1, 2, 4, 16])):
            kind = rng.random()
            pos = rng.randrange(len(data))
            if kind < 0.6:
                data[pos] ^= 1 << rng.randrange(8)
            elif kind < 0.8:
                data[pos] = rng.choice([0, 0xFF, 0x7F, 0x80])
            elif kind < 0.9:
                del data[pos : pos + rng.randrange(1, 64)]
            else:
                data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        blob = bytes(data)
        try:
            t = tracefmt.open(blob)
            read_everything(t)
            tracefmt.validate.validate(t)
            outcomes["ok"] += 1
        except tracefmt.TraceFormatError:
            outcomes["error"] += 1
        if i % 3 == 0:  # the CLI on a third of them: exit 0/1/2 and never an internal error
            path.write_bytes(blob)
            for cmd in ("info", "check"):
                rc = main([cmd, str(path)])
                err = capsys.readouterr().err
                assert rc in (0, 1, 2), err
                assert "internal error" not in err and "Traceback" not in err
    assert outcomes["error"] > 0


# ---------------------------------------------------------------------- property-based round trip
names = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
field32 = st.integers(0, 2**32 - 1)
field64 = st.integers(0, 2**64 - 1)
event = st.tuples(st.integers(0, 2**62), st.sampled_from([int(t) for t in EventType]), st.integers(0, 255),
                  field32, field32, field32, field64, field64)


@st.composite
def random_traces(draw):
    n_loc = draw(st.integers(1, 4))
    defs = tracefmt.Definitions()
    defs.machines[0] = tracefmt.Machine(0, draw(names))
    defs.nodes[0] = tracefmt.Node(0, 0, draw(names))
    events = {}
    for loc in range(n_loc):
        defs.processes.setdefault(loc // 2, tracefmt.Process(loc // 2, 0, draw(names)))
        defs.locations[loc] = tracefmt.Location(loc, loc // 2, loc % 2, draw(names))
        rows = sorted(draw(st.lists(event, max_size=30)))
        rec = np.zeros(len(rows), layout.EVENT_DTYPE)
        for j, (t, typ, fl, a, b, c, d, e) in enumerate(rows):
            rec[j] = (t, typ, fl, 0, a, b, c, d, e)
        events[loc] = rec
    for rid, name in enumerate(draw(st.lists(names, max_size=5))):
        defs.regions[rid] = tracefmt.Region(rid, name, layout.NO_ID, draw(field32), draw(field32),
                                            draw(st.sampled_from(list(layout.Paradigm))),
                                            draw(st.sampled_from(list(layout.Role))))
    for gid, ranks in enumerate(draw(st.lists(st.lists(field32, max_size=6), max_size=3))):
        defs.groups[gid] = tuple(ranks)
        defs.comms[gid] = tracefmt.Comm(gid, gid, draw(names), layout.NO_ID, tuple(ranks))
    for k, v in draw(st.dictionaries(names, names, max_size=3)).items():
        defs.attributes[k] = v
    order = draw(st.sampled_from([layout.BYTE_ORDER_LITTLE, layout.BYTE_ORDER_BIG]))
    return defs, events, order


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_traces())
def test_random_traces_round_trip(case):
    defs, events, order = case
    from tracefmt.writer import to_bytes

    t = tracefmt.open(to_bytes(defs, events, byte_order=order))
    assert t.complete and t.header.byte_order == order
    got = t.defs
    assert got.regions == defs.regions and got.comms == defs.comms and got.groups == defs.groups
    assert got.locations == defs.locations and got.attributes == defs.attributes
    for loc, rec in events.items():
        ev = t.events(loc)
        assert t.n_events(loc) == len(rec) == len(ev)
        assert np.array_equal(ev.ticks, rec["time"])
        for f in ("type", "flags", "a", "b", "c", "d", "e"):
            assert np.array_equal(getattr(ev, f), rec[f]), f
        assert np.array_equal(ev.time, rec["time"].astype(np.int64) / 1e9)
