"""expert-trace info / dump / check: output and exit codes."""

import os
import shutil
import subprocess
import sys

import pytest

import tracefmt
from tracefmt.cli import main


@pytest.fixture
def pingpong(tmp_path):
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(0), b.location(1)
    b.enter(r0, 0.0, "main")
    b.enter(r1, 0.0, "main")
    b.enter(r0, 1.0, "MPI_Send")
    b.send(r0, 1.0, dest=1, tag=7, nbytes=64)
    b.exit(r0, 1.5)
    b.enter(r1, 0.2, "MPI_Recv")
    b.recv(r1, 1.4, source=0, tag=7, nbytes=64)
    b.exit(r1, 1.5)
    b.exit(r0, 2.0)
    b.exit(r1, 3.0)
    path = tmp_path / "pp.elg"
    b.write(path)
    return str(path)


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_info(capsys, pingpong):
    rc, out, err = run(capsys, "info", pingpong)
    assert rc == 0 and err == ""
    assert f"({os.path.getsize(pingpong)} bytes)" in out
    assert f".elg 2.{tracefmt.layout.VERSION_MINOR}, little-endian, finished" in out
    assert "2 processes, 2 locations" in out
    lines = out.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("location"))
    assert header.split()[-4:] == ["enter", "exit", "mpi_send", "mpi_recv"]
    row1 = next(line for line in lines if line.split()[:3] == ["1", "1", "0"])
    # events, first, last, duration, enter, exit, send, recv
    assert row1.split()[3:] == ["5", "0.000000", "3.000000", "3.000000", "2", "2", "0", "1"]
    total = next(line for line in lines if line.startswith("   total"))
    assert total.split()[1:] == ["10", "0.000000", "3.000000", "3.000000", "4", "4", "1", "1"]


def test_dump_with_location_and_time_window(capsys, pingpong):
    rc, out, _ = run(capsys, "dump", pingpong, "--location", "1", "--start", "0.1", "--end", "1.45")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == "# location 1 (rank 1, thread 0, rank 1 thread 0): 2 of 5 events"
    assert lines[1].split() == ["1", "1", "0.200000000", "ENTER", "MPI_Recv"]
    assert lines[2].split() == ["1", "2", "1.400000000", "MPI_RECV", "source=0", "comm=MPI_COMM_WORLD", "tag=7",
                                "bytes=64"]
    assert len(lines) == 3


def test_dump_unknown_location_is_a_clear_error(capsys, pingpong):
    rc, out, err = run(capsys, "dump", pingpong, "--location", "9")
    assert rc == 2 and "no location 9" in err and "Traceback" not in err


def test_check_clean_and_with_problems(capsys, pingpong, tmp_path):
    rc, out, _ = run(capsys, "check", pingpong)
    assert rc == 0 and "ok (2 locations, 10 events)" in out
    b = tracefmt.TraceBuilder()
    loc = b.location()
    b.enter(loc, 0.0, "main")
    bad = tmp_path / "bad.elg"
    b.write(bad)
    rc, out, err = run(capsys, "check", str(bad))
    assert rc == 1
    assert out.splitlines() == ["location 0, event 0 at 0.000000000 s: region 'main' entered at event 0 is never left"]
    assert "1 problem in 1 events" in err


@pytest.mark.parametrize("command", ["info", "dump", "check"])
def test_unreadable_inputs_give_one_line_and_exit_2(capsys, pingpong, tmp_path, command):
    with open(pingpong, "rb") as f:
        data = f.read()
    cases = {
        "missing.elg": None,
        "empty.elg": b"",
        "text.elg": b"hello world, this is not a trace at all\n" * 3,
        "truncated.elg": data[: len(data) // 2],
        "flipped.elg": data[:700] + bytes([data[700] ^ 0x10]) + data[701:],
        "version.elg": data[:10] + b"\x03\x00" + data[12:],
    }
    for name, content in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        rc, out, err = run(capsys, command, str(path))
        assert rc == 2, (name, out, err)
        assert len(err.strip().splitlines()) == 1, (name, err)
        assert err.startswith("expert-trace: error: ") and str(path) in err, (name, err)


def test_salvage_reads_the_complete_blocks(capsys, pingpong, tmp_path):
    with open(pingpong, "rb") as f:
        data = f.read()
    with tracefmt.open(pingpong) as t:
        second = [b for b in t.blocks if b.kind == tracefmt.layout.BlockKind.EVENTS][1]
    cut = tmp_path / "cut.elg"
    cut.write_bytes(data[: second.offset + 40])  # the second location's block is cut short
    rc, out, err = run(capsys, "info", str(cut), "--salvage")
    assert rc == 0
    assert "warning:" in err and "truncated" in err
    row0 = next(line for line in out.splitlines() if line.split()[:3] == ["0", "0", "0"])
    row1 = next(line for line in out.splitlines() if line.split()[:3] == ["1", "1", "0"])
    assert row0.split()[3] == "5" and row1.split()[3] == "0"


def test_console_script(pingpong):
    exe = shutil.which("expert-trace") or os.path.join(os.path.dirname(sys.executable), "expert-trace")
    assert os.path.exists(exe), "console script expert-trace not installed (./dev setup: pip install -e .)"
    r = subprocess.run([exe, "check", pingpong], capture_output=True, text=True)
    assert r.returncode == 0 and "ok" in r.stdout


def test_module_entry_point_never_prints_a_traceback(tmp_path):
    bad = tmp_path / "bad.elg"
    bad.write_bytes(b"\x89ELG\r\n\x1a\n" + b"\xff" * 100)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-m", "tracefmt.cli", "info", str(bad)], capture_output=True, text=True,
                       cwd=root)
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.startswith("expert-trace: error:")


def test_directory_and_fifo_are_refused_without_blocking(capsys, tmp_path):
    fifo = tmp_path / "pipe.elg"
    os.mkfifo(fifo)  # opening a FIFO for reading would wait for a writer forever
    for path in (tmp_path, fifo):
        rc, _, err = run(capsys, "info", str(path))
        assert rc == 2 and err.count("\n") == 1 and str(path) in err


def test_foreign_formats_are_read_like_expert_analyze_reads_them(capsys, pingpong, tmp_path):
    # an OTF2 archive written by our exporter: info / dump / check take the directory or its anchor
    from tracefmt.convert import convert

    convert(pingpong, str(tmp_path / "pp-otf2"), "otf2")
    for path in (tmp_path / "pp-otf2", tmp_path / "pp-otf2" / "traces.otf2"):
        rc, out, err = run(capsys, "check", str(path))
        assert rc == 0 and "ok (2 locations, 10 events)" in out, (path, out, err)
        rc, out, err = run(capsys, "info", str(path))
        assert rc == 0 and "format      OTF2, converted in memory" in out
        total = next(line for line in out.splitlines() if line.startswith("   total"))
        assert total.split()[1:] == ["10", "0.000000", "3.000000", "3.000000", "4", "4", "1", "1"]
        rc, out, err = run(capsys, "dump", str(path), "--location", "1")
        assert rc == 0 and out.splitlines()[3].split()[3:5] == ["MPI_RECV", "source=0"]


def test_format_detection_refuses_a_fifo_without_blocking(tmp_path):
    # detection (used by expert-analyze and expert-trace) sniffed the first bytes and hung on a FIFO
    import threading

    from tracefmt.detect import detect
    from tracefmt.errors import TraceFormatError

    fifo = tmp_path / "pipe.elg"
    os.mkfifo(fifo)
    result = []

    def sniff():
        try:
            detect(fifo)
        except TraceFormatError as e:
            result.append(str(e))

    t = threading.Thread(target=sniff, daemon=True)
    t.start()
    t.join(5)
    assert result and "not a regular file" in result[0] and str(fifo) in result[0]
