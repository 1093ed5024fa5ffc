"""Reproducers of the hostile-input findings (issue 18's table) that no other test file keeps: each builds the
input of its row and runs the command of its row.  The other rows are kept where their subject is tested
(docs/robustness.md, "Testing")."""

import math

import pytest
from hostile import hostile_bytes, small_builder

import tracefmt
from analyzer.cli.analyze import main as analyze_main
from analyzer.cli.tools import profile_main
from tracefmt.cli import main as trace_main
from tracefmt.layout import BlockKind, EventType


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_expert_profile_on_a_trace_with_a_damaged_block_is_one_line(tmp_path, capsys):
    """Row: ``expert-profile`` on a trace with a damaged block was a TraceFormatError traceback."""
    data = small_builder().to_bytes()
    block = [b for b in tracefmt.open(data).blocks if b.kind == BlockKind.EVENTS][0]
    bad = bytearray(data[: len(data) - 16])  # without the trailer's index the reader scans the blocks
    bad[block.offset + 5] ^= 1
    path = tmp_path / "damaged.elg"
    path.write_bytes(bytes(bad))
    assert tracefmt.open(bytes(bad)).problems
    assert profile_main([str(path)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "damaged or incomplete trace" in line and "--salvage" in line
    assert analyze_main([str(path), "-q", "-o", str(tmp_path / "x.cubex")]) == 2  # the same answer
    capsys.readouterr()
    assert profile_main([str(path), "--salvage"]) == 0


def _undefined_region(path):
    b = small_builder()
    loc = b.location(2)
    b.enter(loc, 0.0, "main")
    b.event(loc, 1.0, EventType.EXIT, a=12345)  # leaves a region no definition names
    b.exit(loc, 2.0)
    b.write(path)


def _undefined_comm(path):
    b = small_builder()
    r0 = b.location(2)
    b.enter(r0, 0.0, "main")
    b.event(r0, 1.0, EventType.MPI_SEND, 0, 0, 12345, 0, 4, 0)  # a send on a communicator never defined
    b.exit(r0, 2.0)
    b.write(path)


def _nan_offset(path):
    path.write_bytes(hostile_bytes("offset", math.nan))


@pytest.mark.parametrize("make", [_undefined_region, _undefined_comm, _nan_offset])
def test_convert_to_otf2_of_a_trace_check_flags_is_a_result_or_one_line(tmp_path, capfd, make):
    """Row: ``expert-trace convert --to otf2`` on traces ``check`` flags was exit 3, internal error (KeyError: 12345,
    ValueError: cannot convert float NaN)."""
    make(tmp_path / "t.elg")
    assert trace_main(["check", str(tmp_path / "t.elg")]) == 1
    capfd.readouterr()
    rc = trace_main(["convert", str(tmp_path / "t.elg"), str(tmp_path / "out"), "--to", "otf2"])
    out, err = capfd.readouterr()
    assert rc in (0, 2), (rc, out, err)
    assert "internal error" not in err and "Traceback" not in err and "[OTF2]" not in err, err
    if rc == 2:
        line = _one_line(err)
        assert "t.elg: cannot be written as otf2" in line and "expert-trace check" in line
    else:
        assert (tmp_path / "out" / "traces.otf2").is_file()


def test_check_names_the_members_of_a_collective_of_different_operations(tmp_path, capsys):
    """Row: a Bcast on one rank matched with a Reduce on the other gave 0.5 s of Early Reduce and no warning;
    ``check`` names each member (the analysis warning is tested in tests/analyzer/test_hostile_ids.py)."""
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(0), b.location(1)
    b.enter(r0, 0.0, "main")
    b.enter(r1, 0.0, "main")
    b.collective(r0, 1.0, 2.0, "MPI_Bcast", root=0)
    b.collective(r1, 1.5, 2.0, "MPI_Reduce", root=0)
    b.exit(r0, 3.0)
    b.exit(r1, 3.0)
    b.write(tmp_path / "mixed.elg")
    assert trace_main(["check", str(tmp_path / "mixed.elg")]) == 1
    out, err = capsys.readouterr()
    text = out + err
    assert "Traceback" not in err
    assert "is 'MPI_Reduce' here but 'MPI_Bcast' on rank 0" in text, text
