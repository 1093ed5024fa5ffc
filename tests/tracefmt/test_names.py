"""Names that are not UTF-8 or hold control characters (issue 18, item 1, Python side).

A STRING record with a Latin-1 byte made the whole ``.elg`` unreadable; names
with escape sequences or newlines reached the terminal raw.
"""

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracefmt
from tracefmt.cli import main as trace_main
from tracefmt.layout import DefType
from tracefmt.names import TerminalWriter, decode, encode, escape_bytes, printable

HOSTILE = ["caf\udce9.dat", "evil\x1b[31mRED\x1b[0m\nforged line\r", " spaced\tname ", "nul\x00\x7f\x9bc1"]


def names_trace(tmp_path):
    b = tracefmt.TraceBuilder()
    loc = b.location(0)
    b.enter(loc, 0.0, "main")
    for k, name in enumerate(HOSTILE):
        b.enter(loc, 1.0 + k, name)
        b.exit(loc, 1.5 + k)
    b.exit(loc, 9.0)
    b.attribute("argv", "./a.out caf\udce9.dat")
    path = tmp_path / "names.elg"
    b.write(path)
    return path


def test_a_string_record_that_is_not_utf8_reads_losslessly(tmp_path):
    path = names_trace(tmp_path)
    raw = path.read_bytes()
    assert b"caf\xe9.dat" in raw  # the writer wrote the byte itself
    t = tracefmt.open(path)
    assert t.problems == []
    assert [r.name for r in t.defs.regions.values()][1:] == HOSTILE
    # a round trip through the writer gives the same bytes back
    out = tmp_path / "again.elg"
    assert trace_main(["convert", str(path), str(out)]) == 0
    assert tracefmt.open(out).defs.strings == t.defs.strings


@given(st.binary(max_size=40))
@settings(max_examples=200, deadline=None)
def test_decode_encode_round_trip_any_bytes(raw):
    assert encode(decode(raw)) == raw
    shown = printable(decode(raw))
    assert shown.isprintable()
    shown.encode("utf-8")  # no lone surrogate left
    escape_bytes(decode(raw)).encode("utf-8")


def test_each_medium_escapes_what_it_cannot_carry():
    assert escape_bytes("caf\udce9") == "caf\\xe9"
    assert escape_bytes("a\x1bb\x00") == "a\\x1bb\\x00"  # XML 1.0 forbids these even as references
    assert escape_bytes("tab\tnl\ncr\r") == "tab\tnl\ncr\r"  # results keep what XML can carry
    assert printable("tab\tnl\ncr\r\x1b[2J\x9b") == "tab\\tnl\\ncr\\r\\x1b[2J\\x9b"
    assert printable("plain é ü") == "plain é ü"


def test_terminal_writer_keeps_lines_and_escapes_the_rest():
    class Sink:
        text = ""

        def write(self, s):
            self.text += s
            return len(s)

    sink = Sink()
    TerminalWriter(sink).write("a\x1b[1mb\udce9\nnext\r\n")
    assert sink.text == "a\\x1b[1mb\\xe9\nnext\\r\n"


def test_dump_and_info_print_no_control_character(tmp_path, capsys):
    path = names_trace(tmp_path)
    assert trace_main(["dump", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\udce9" not in out and "\x9b" not in out
    assert "ENTER caf\\xe9.dat" in out and "ENTER evil\\x1b[31mRED\\x1b[0m\\nforged line\\r" in out
    assert not any(line.startswith("forged line") for line in out.splitlines())
    assert trace_main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "argv = ./a.out caf\\xe9.dat" in out


def test_profile_prints_no_control_character(tmp_path, capsys):
    from analyzer.cli.tools import profile_main

    path = names_trace(tmp_path)
    assert profile_main([str(path), "--json", str(tmp_path / "p.json")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\udce9" not in out
    assert "caf\\xe9.dat" in out
    json.loads((tmp_path / "p.json").read_text(encoding="ascii"))  # valid JSON, plain ASCII


def test_results_carry_names_in_valid_encodings(tmp_path):
    from analyzer.analyze import analyze
    from analyzer.cube import read_cubex, write_cubex, write_json
    from analyzer.report.html import render

    cube = analyze(names_trace(tmp_path))
    names = {r.name for r in cube.regions}
    assert {"caf\\xe9.dat", "evil\\x1b[31mRED\\x1b[0m\nforged line\r", " spaced\tname ", "nul\\x00\x7f\x9bc1"} <= names
    write_cubex(cube, tmp_path / "n.cubex")
    write_json(cube, tmp_path / "n.json")
    back = read_cubex(tmp_path / "n.cubex")
    assert [r.name for r in back.regions] == [r.name for r in cube.regions]  # every character survives
    assert set(back.callpaths) == set(cube.callpaths)
    assert set(json.loads((tmp_path / "n.json").read_text())["metrics"]["time"]["per_callpath"]) <= set(cube.callpaths)
    render(cube).encode("utf-8")  # HTML: valid UTF-8 (names travel as JSON text nodes)


def test_cube_round_trip_keeps_whitespace_at_the_ends_of_names(tmp_path):
    from analyzer.cube import LocationInfo, MetricInfo, RegionInfo, read_cubex, write_cubex
    from analyzer.cube.model import Cube
    import numpy as np

    names = [" lead", "trail ", "a\rb", "\r", "x\ny", "\tt"]
    regions = [RegionInfo("main")] + [RegionInfo(n) for n in names]
    parent = [-1] + [0] * len(names)
    cube = Cube([MetricInfo("time", "Time", None, "sec")], regions, parent, list(range(len(regions))),
                [LocationInfo(name=" loc\r")], {"time": np.ones((len(regions), 1))}, attrs={"k\r\n": "v\t\r\n"})
    write_cubex(cube, tmp_path / "w.cubex")
    back = read_cubex(tmp_path / "w.cubex")
    assert [r.name for r in back.regions] == ["main"] + names
    assert back.locations[0].name == " loc\r"
    assert back.attrs["k\r\n"] == "v\t\r\n"


def test_a_non_utf8_string_in_an_epilog_file_reads_losslessly(tmp_path):
    from elgwrite import ElgWriter

    w = ElgWriter(lids=True)
    w.raw(1, struct.pack("<IB", 0, 0) + b"caf\xe9\0")  # STRING id 0, no continuation, the chars
    w.machine(0, 1, 0)
    w.last_def()
    path = w.save(tmp_path / "e.elg")
    from tracefmt.epilog_records import EpilogFile, read_definitions

    defs, _ = read_definitions(EpilogFile.open(str(path)))
    assert defs.strings[0] == "caf\udce9"


def test_string_records_decode_without_an_error():
    # what the record decoder accepted before: every byte string, now losslessly
    from tracefmt.definitions import RawDefinitions, decode_definitions

    raw = RawDefinitions()
    for k, body in enumerate([b"\xff\xfe", b"ok", b"\xc3"]):
        rec = struct.pack("<HHI", int(DefType.STRING), 0, 4 + len(body)) + struct.pack("<I", k) + body
        decode_definitions(rec, 1, 1, raw, lambda m, o: AssertionError(m))
    assert [encode(raw.strings[k]) for k in range(3)] == [b"\xff\xfe", b"ok", b"\xc3"]


@pytest.mark.parametrize("text", ["x\ny", "a\x1b]0;title\x07b"])
def test_error_lines_stay_one_line(tmp_path, text, capsys):
    from analyzer.cli.tools import diff_main

    missing = str(tmp_path / f"no{text}.cubex")
    assert diff_main([missing, missing]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err and "no such file" in err
    assert trace_main(["info", missing]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err
