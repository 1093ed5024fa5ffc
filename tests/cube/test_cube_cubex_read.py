"""CUBE4/CUBE3 reader against files written by cubelib and Score-P, with cubelib's own
``cube_dump -s csv2`` output as the oracle, plus hand-made variants of our files
(big-endian, INCLUSIVE, dense, compressed, odd tar) and bad input."""

import gzip
import io
import struct
import tarfile
import zlib

import numpy as np
import pytest
from cube_helpers import fixture, oracle_matrix, read_dump_csv, small_cube

from analyzer.cube import CubeFormatError, diff_cubes, read_cube3, read_cubex, write_cubex

RTOL = 1e-5  # cube_dump prints 6 significant digits for some values


def assert_oracle(cube, csv_name, matrix_of, metrics=None, encoding="utf-8"):
    names, _ = read_dump_csv(fixture(csv_name), encoding)
    for name in metrics or names:
        want = oracle_matrix(fixture(csv_name), name, (cube.n_cnodes, cube.n_locations), encoding)
        np.testing.assert_allclose(matrix_of(name), want, rtol=RTOL, atol=1e-12, err_msg=f"{csv_name}: {name}")


# ---------------------------------------------------------------- cubelib oracles
def test_mini_prototype_all_three_views():
    """Scrambled cnode ids (root is 3), an INCLUSIVE metric, a child metric."""
    c = read_cubex(fixture("generated__mini_prototype.cubex"))
    assert c.problems == []
    assert c.roots() == [3] and c.callpath(2) == "main/bar/MPI_Recv"
    assert c.metric("late_sender").parent == "time"
    assert_oracle(c, "generated__mini_prototype.cubelib_dump_zexcl_xincl.csv", lambda n: c.values[n])
    assert_oracle(c, "generated__mini_prototype.cubelib_dump_zexcl_xexcl.csv", c.exclusive_in_metric)
    assert_oracle(c, "generated__mini_prototype.cubelib_dump_zincl_xincl.csv", c.inclusive)


def test_scorep_call_tree_test_exclusive_and_inclusive():
    """Score-P 8.4 profile: INCLUSIVE time, MINDOUBLE/MAXDOUBLE, metrics without data, remapping.spec member."""
    c = read_cubex(fixture("pycubexr__call_tree_test.cubex"))
    assert c.n_cnodes == 18 and c.n_locations == 1
    assert c.metric("time").unit == "sec" and c.metric("min_time").aggregation == "min"
    assert any("'bytes_put' (id 4) has no data members" in p for p in c.problems)
    assert_oracle(c, "pycubexr__call_tree_test.cubelib_dump_zexcl.csv", lambda n: c.values[n])
    # pycubexr's expected-value files (made with cube_dump, too)
    assert_oracle(c, "pycubexr__call_tree_test.excl.csv", lambda n: c.values[n])
    assert_oracle(c, "pycubexr__call_tree_test.incl.csv", c.inclusive)


def test_kripke_big_endian_profile():
    c = read_cubex(fixture("pycubexr__kripke_bigendian_profile.cubex"))
    assert c.n_cnodes == 14 and c.n_locations == 8
    assert c.locations[0].machine == "machine Blue Gene/Q" and c.locations[0].node == "nodecard 30"
    assert_oracle(c, "pycubexr__kripke_bigendian_profile.cubelib_dump_zexcl.csv", lambda n: c.values[n])
    # the reference note's figure: time (INCLUSIVE) at the root over all locations
    assert c.inclusive("time")[0].sum() == pytest.approx(148.63, abs=0.01)


def test_cube_values_example_scalar_types():
    """One metric per CUBE data type; locations listed in document order 0, 2, 1, 3."""
    c = read_cubex(fixture("pycubexr__cube-values_example.cubex"))
    skipped = {"RATE", "TAU_ATOMIC", "HISTOGRAM5", "NDOUBLES10", "SCALE_FUNC3", "COMPLEX", "TAU_ATOMIC2"}
    assert skipped.isdisjoint(c.metric_names)
    assert len([p for p in c.problems if "left out" in p]) == len(skipped)
    csv = "pycubexr__cube-values_example.cubelib_dump_zexcl.csv"
    assert_oracle(c, csv, lambda n: c.values[n], ["INT16", "INT32", "INT64", "DOUBLE", "MINDOUBLE", "MAXDOUBLE"],
                  encoding="latin-1")
    # Unsigned INCLUSIVE metrics with a negative exclusive value at the root: cubelib subtracts in the
    # unsigned type and wraps around; we subtract in float64 (documented).  Children agree exactly,
    # the root agrees modulo 2**bits.
    for name, bits in (("UINT16", 16), ("UINT32", 32)):
        want = oracle_matrix(fixture(csv), name, (3, 4), "latin-1")
        np.testing.assert_array_equal(c.values[name][1:], want[1:])
        np.testing.assert_array_equal(np.mod(c.values[name][0], 2**bits), want[0])
    # INT8/UINT8 are printed by cube_dump as raw characters
    _, rows = read_dump_csv(fixture(csv), "latin-1")
    for (cn, t), fields in rows.items():
        ch = fields[0]
        if len(ch) == 1:
            assert c.values["INT8"][cn, t] == np.int8(np.uint8(ord(ch)))


def test_cube4_with_cube3_system_tree_against_its_cube3_twin():
    """cubelib's smallest pair: same experiment as .cubex (CUBE3-style system tree, INTEGER data,
    metrics without type, data files with more rows than indexed) and as .cube."""
    c4 = read_cubex(fixture("cubelib__test0.0.cubex"))
    c3 = read_cube3(fixture("cubelib__test0.0_cube3.cube"))
    assert diff_cubes(c3, c4) == []
    # hand-read from the CUBE3 text
    np.testing.assert_array_equal(c4.values["Uniq_name1"], [[4, 0], [5, 9], [0, 0]])
    np.testing.assert_array_equal(c4.values["Uniq_name3"], [[0, 0], [0, 323], [0, 0]])
    assert [(loc.machine, loc.node, loc.rank, loc.thread) for loc in c4.locations] == [
        ("MSC", "Athena", 0, 0), ("MSC", "Athena", 1, 1)]
    assert c4.attrs["description"] == "a simple example"
    assert any("more than the index lists" in p for p in c4.problems)


def test_dense_index_and_several_roots():
    """cubelib test file pycubexr cannot open: dense indexes, 8 root cnodes."""
    path = fixture("cubelib__proxy_denseindex_multiroot.cubex")
    c = read_cubex(path)
    assert len(c.roots()) == 8 and c.n_cnodes == 236 and c.n_locations == 1
    # independent oracle: the dense data file holds all 236 rows in DFS order; their sum is the total
    with tarfile.open(path) as t:
        raw = t.extractfile("0.data").read()
    assert raw[:10] == b"CUBEX.DATA"
    assert c.total("time") == pytest.approx(sum(struct.unpack("<236d", raw[10:])))


def test_cube3_template_with_sloppy_xml():
    c = read_cube3(fixture("cubelib__cube_cmp_template.cube"))
    assert c.n_locations == 32 and c.n_cnodes == 21
    assert any("unescaped '&'" in p for p in c.problems)
    other = read_cube3(fixture("cubelib__cube_cmp_not_equal1.cube"))
    assert diff_cubes(c, other) != []


# ---------------------------------------------------------------- hand-made variants of our own file
def _members(path):
    with tarfile.open(path) as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers()}


def _tar(members: dict[str, bytes], fmt=tarfile.USTAR_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def ours(tmp_path):
    p = tmp_path / "ours.cubex"
    write_cubex(small_cube(), p)
    return p


def test_big_endian_variant(ours, tmp_path):
    ms = _members(ours)
    for name in list(ms):
        if name.endswith(".index"):
            b = ms[name]
            n = struct.unpack("<I", b[18:22])[0]
            pos = struct.unpack(f"<{n}I", b[22:])
            ms[name] = b[:11] + struct.pack(">IHBI", 1, 0, 1, n) + struct.pack(f">{n}I", *pos)
        elif name.endswith(".data"):
            d = ms[name]
            code = "Q" if name == "3.data" else "d"  # visits is UINT64
            vals = struct.unpack(f"<{(len(d) - 10) // 8}{code}", d[10:])
            ms[name] = d[:10] + struct.pack(f">{len(vals)}{code}", *vals)
    p = tmp_path / "be.cubex"
    p.write_bytes(_tar(ms))
    assert diff_cubes(small_cube(), read_cubex(p)) == []


def test_inclusive_metric_uses_sibling_block_positions(tmp_path):
    """main{foo{send}, bar{recv, foo2}}: INCLUSIVE rows are main, foo, bar, send, recv, foo2."""
    from analyzer.cube import Cube, LocationInfo, MetricInfo, RegionInfo

    regions = [RegionInfo(n) for n in ("main", "foo", "bar", "send", "recv", "foo2")]
    parent = [-1, 0, 1, 0, 3, 3]  # DFS ids: main0 foo1 send2 bar3 recv4 foo2_5
    region = [0, 1, 3, 2, 4, 5]
    excl = np.array([[1.0], [2.0], [4.0], [8.0], [16.0], [32.0]])
    cube = Cube([MetricInfo("time")], regions, parent, region, [LocationInfo()], {"time": excl})
    p = tmp_path / "e.cubex"
    write_cubex(cube, p)
    ms = _members(p)
    incl = cube.inclusive("time")[:, 0]  # by DFS id
    wide = [0, 1, 3, 2, 4, 5]  # sibling-block order, as DFS ids
    ms["0.index"] = b"CUBEX.INDEX" + struct.pack("<IHBI", 1, 0, 1, 6) + struct.pack("<6I", *range(6))
    ms["0.data"] = b"CUBEX.DATA" + struct.pack("<6d", *[incl[i] for i in wide])
    ms["anchor.xml"] = ms["anchor.xml"].replace(b'type="EXCLUSIVE"', b'type="INCLUSIVE"')
    q = tmp_path / "i.cubex"
    q.write_bytes(_tar(ms))
    back = read_cubex(q)
    np.testing.assert_allclose(back.values["time"], excl)
    np.testing.assert_allclose(incl, [63, 6, 4, 56, 16, 32])


def test_dense_compressed_and_gzip_variants(ours, tmp_path):
    ms = _members(ours)
    # metric 0 (time): dense index, all 4 rows, compressed in two blocks
    d = ms["0.data"]
    assert len(d) == 10 + 4 * 3 * 8  # time has no zero row
    rows = d[10:]
    blocks = [zlib.compress(rows[:48]), zlib.compress(rows[48:])]
    table = struct.pack("<Q", 2) + struct.pack("<6Q", 0, 0, len(blocks[0]), 48, len(blocks[0]), len(blocks[1]))
    ms["0.data"] = b"ZCUBEX.DATA" + table + blocks[0] + blocks[1]
    ms["0.index"] = b"CUBEX.INDEX" + struct.pack("<IHB", 1, 0, 3)
    ms["anchor.xml"] = gzip.compress(ms["anchor.xml"])
    p = tmp_path / "v.cubex"
    p.write_bytes(gzip.compress(_tar(ms)))
    back = read_cubex(p)
    assert diff_cubes(small_cube(), back) == []
    assert any("gzip-compressed" in x for x in back.problems)


def test_cubelib_style_tar_with_padding_block_and_bad_checksum(ours, tmp_path):
    """cubelib adds a zero block after a member of 512*k bytes; CubeW 4.8 wrote wrong checksums."""
    ms = _members(ours)
    ms["remapping.spec"] = b"x" * 1024
    order = ["remapping.spec"] + [n for n in ms if n != "remapping.spec"]
    raw = bytearray(_tar({n: ms[n] for n in order}))
    # insert the extra zero block after remapping.spec's data (header 512 + data 1024)
    raw[1536:1536] = b"\0" * 512
    # spoil the checksum of the anchor's header (now right after the extra block)
    assert raw[2048:2058] == b"anchor.xml"
    raw[2048 + 148 : 2048 + 156] = b"0000001\0"
    p = tmp_path / "cl.cubex"
    p.write_bytes(bytes(raw))
    back = read_cubex(p)
    assert diff_cubes(small_cube(), back) == []
    assert any("wrong checksum" in x for x in back.problems)


def test_pax_and_gnu_tar_formats(ours, tmp_path):
    ms = _members(ours)
    for fmt in (tarfile.PAX_FORMAT, tarfile.GNU_FORMAT):
        p = tmp_path / f"f{fmt}.cubex"
        p.write_bytes(_tar(ms, fmt))
        assert diff_cubes(small_cube(), read_cubex(p)) == []


# ---------------------------------------------------------------- bad input: clear errors
def _bad(tmp_path, data: bytes, match: str):
    p = tmp_path / "bad.cubex"
    p.write_bytes(data)
    with pytest.raises(CubeFormatError, match=match):
        read_cubex(p)


def test_not_a_tar(tmp_path):
    _bad(tmp_path, b"hello" * 200, "bad.cubex: not a tar archive")


def test_missing_file(tmp_path):
    with pytest.raises(CubeFormatError, match="nope.cubex: cannot read"):
        read_cubex(tmp_path / "nope.cubex")


def test_truncated(ours, tmp_path):
    raw = ours.read_bytes()
    _bad(tmp_path, raw[:700], r"claims \d+ bytes but the file ends at byte 700 \(truncated")


def test_no_anchor(ours, tmp_path):
    ms = _members(ours)
    del ms["anchor.xml"]
    _bad(tmp_path, _tar(ms), "no anchor.xml member")


def test_xml_error_names_line_and_column(ours, tmp_path):
    ms = _members(ours)
    ms["anchor.xml"] = ms["anchor.xml"].replace(b"<metrics>", b"<metrics", 1)
    _bad(tmp_path, _tar(ms), "anchor.xml: XML syntax error at line 7, column 4: not well-formed \\(invalid token\\)$")


def test_bad_index_names_member_and_offset(ours, tmp_path):
    ms = _members(ours)
    ms["1.index"] = b"CUBEX.INDEY" + ms["1.index"][11:]
    _bad(tmp_path, _tar(ms), r"metric 'mpi': index member at byte \d+: does not start with b'CUBEX.INDEX'")
    ms = _members(ours)
    ms["1.index"] = ms["1.index"][:11] + b"\x02\x00\x00\x00" + ms["1.index"][15:]
    _bad(tmp_path, _tar(ms), "endianness probe at offset 11")
    ms = _members(ours)
    ms["1.index"] = ms["1.index"][:22] + struct.pack("<I", 40) + ms["1.index"][26:]
    _bad(tmp_path, _tar(ms), "row position 40 but the call tree has 4 cnodes")


def test_short_data(ours, tmp_path):
    ms = _members(ours)
    ms["0.data"] = ms["0.data"][:-8]
    _bad(tmp_path, _tar(ms), r"metric 'time': data member at byte \d+: holds 11 values .* 4 rows x 3 locations")


def test_id_gaps(ours, tmp_path):
    ms = _members(ours)
    ms["anchor.xml"] = ms["anchor.xml"].replace(b'<cnode id="3"', b'<cnode id="7"')
    _bad(tmp_path, _tar(ms), r"cnode ids are not dense 0..3 \(missing \[3\]\)")
    ms = _members(ours)
    ms["anchor.xml"] = ms["anchor.xml"].replace(b'<location Id="2">', b'<location Id="5">')
    _bad(tmp_path, _tar(ms), r"location Ids are not dense 0..2 \(missing \[2\]\)")
    ms = _members(ours)
    ms["anchor.xml"] = ms["anchor.xml"].replace(b'calleeId="2"', b'calleeId="9"', 1)
    _bad(tmp_path, _tar(ms), "calleeId 9 is not a region id")


def test_system_tree_errors_in_walk_order(ours, tmp_path):
    """The system tree is walked for its Ids and errors before its locations are built: the first error in
    document order is the one named, as when they were built in one walk."""
    ms = _members(ours)
    ms["anchor.xml"] = ms["anchor.xml"].replace(b'<location Id="2">', b'<location Id="1">')
    _bad(tmp_path, _tar(ms), "location Id 1 used twice")
    # a repeated Id (the second location's) before a bad rank (the third's): the repeat
    a = _members(ours)["anchor.xml"]
    last = b"<rank>0</rank>\n            <type>thread</type>\n          </location>\n        </locationgroup>"
    assert a.count(last) == 1
    ms["anchor.xml"] = a.replace(b'<location Id="1">', b'<location Id="0">').replace(last, last.replace(b"0", b"x"))
    _bad(tmp_path, _tar(ms), "location Id 0 used twice")
    # a bad rank (the second location's) before a repeated Id (the third's): the rank
    second = b"<rank>1</rank>\n            <type>thread</type>"
    assert a.count(second) == 1
    ms["anchor.xml"] = a.replace(b'<location Id="2">', b'<location Id="0">').replace(second, second.replace(b"1", b"y"))
    _bad(tmp_path, _tar(ms), r"<location>/<rank> 'y' is not an integer")
    ms = _members(ours)
    ms["anchor.xml"] = ms["anchor.xml"].replace(b'<location Id="2">', b'<location Id="99999999999999999999">')
    _bad(tmp_path, _tar(ms), r"location Ids are not dense 0..2 \(missing \[2\]\)")


def test_a_file_refused_for_its_dense_size_is_refused_before_its_locations_are_built(ours, tmp_path, monkeypatch):
    import analyzer.cube.cubex_read as cr

    built = []

    class Counting:
        __wrapped__ = cr.LocationInfo

        def __new__(cls, *args, **kwargs):
            built.append(args)
            return Counting.__wrapped__(*args, **kwargs)

    monkeypatch.setattr(cr, "LocationInfo", Counting)
    assert read_cubex(ours).n_locations == 3 and len(built) == 3
    built.clear()
    monkeypatch.setattr(cr, "ONE_METRIC_FLOOR", 16)
    monkeypatch.setattr(cr, "ONE_METRIC_RATIO", 0)
    with pytest.raises(CubeFormatError, match="4 call paths x 3 locations need 0 MiB per metric as dense values"):
        read_cubex(ours)
    assert built == []
    # a system tree at fault is named first, as before
    ms = _members(ours)
    ms["anchor.xml"] = ms["anchor.xml"].replace(b'<location Id="2">', b'<location Id="5">')
    _bad(tmp_path, _tar(ms), r"location Ids are not dense 0..2 \(missing \[2\]\)")


def test_metrics_beyond_what_the_file_can_declare_are_refused_while_parsing(tmp_path, monkeypatch):
    """At most max(16384, one per 512 bytes) metrics: 26,000 of the smallest <metric> elements in 2 MB are
    refused before the rest of the anchor is built."""
    import tracemalloc

    from hostile_cubes import hostile_cubex

    import analyzer.cube.cube_xml as cx

    p = tmp_path / "m.cubex"
    size = hostile_cubex(p, "tiny_metrics", 2 << 20)
    tracemalloc.start()
    with pytest.raises(CubeFormatError, match=rf"anchor.xml: declares more than 16384 metrics, more than this reader "
                                              rf"takes from a file of {size} bytes \(max\(16384, one per 512 bytes\)\)"):
        read_cubex(p)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10 * size
    # the bound grows with the file: one metric per 512 bytes
    monkeypatch.setattr(cx, "MAX_METRICS_FLOOR", 1)
    small = tmp_path / "s.cubex"
    size = hostile_cubex(small, "tiny_metrics", 256 << 10)
    with pytest.raises(CubeFormatError, match=rf"declares more than {size // 512} metrics"):
        read_cubex(small)
    sane = tmp_path / "sane.cubex"
    hostile_cubex(sane, "sane", 256 << 10)
    assert len(read_cubex(sane).metrics) > 1  # each metric with values brings 1 kB of archive headers at least


def test_derived_metric_left_out_with_note(ours, tmp_path):
    ms = _members(ours)
    ms["anchor.xml"] = ms["anchor.xml"].replace(b'<metric id="1" type="EXCLUSIVE">',
                                                b'<metric id="1" type="POSTDERIVED">')
    p = tmp_path / "d.cubex"
    p.write_bytes(_tar(ms))
    back = read_cubex(p)
    assert back.metric_names == ["time", "visits"]  # mpi and its child late_sender are gone
    assert any("derived metric (POSTDERIVED" in x for x in back.problems)


def test_what_the_reader_does_not_read_is_not_kept_and_what_it_reads_reads_as_written(ours, tmp_path):
    """The anchor is parsed into only what the reader reads: elements it never looks up (here inside an unknown
    element, a second <program>) change nothing, a region's name is the text before its first child."""
    ms = _members(ours)
    a = ms["anchor.xml"].decode()
    start = a.index("<region")
    end = a.index("</region>", start) + len("</region>")
    region = a[start:end]
    name = region[region.index("<name>") : region.index("</name>") + len("</name>")]
    odd = region.replace(name, "<x><name>no</name></x><name>ma<b>zz</b>in\n</name><name>second</name>")
    a = a[:start] + odd + a[end:]
    a = a.replace("</cube>", '<program><region id="0"><name>zz</name></region><cnode id="0" calleeId="0"/></program>'
                  '<attr key="late" value="1"/><zz><attr key="hidden" value="2"/></zz></cube>')
    ms["anchor.xml"] = a.encode()
    (tmp_path / "odd.cubex").write_bytes(_tar(ms))
    back, plain = read_cubex(tmp_path / "odd.cubex"), read_cubex(ours)
    assert back.regions[0].name == "ma" and back.regions[1:] == plain.regions[1:]
    assert back.attrs == dict(plain.attrs, late="1")
    assert np.array_equal(back.cnode_parent, plain.cnode_parent) and back.n_cnodes == plain.n_cnodes
    assert all(np.array_equal(back.values[m.name], plain.values[m.name]) for m in plain.metrics)


def test_an_anchor_of_many_small_elements_costs_a_few_times_its_size():
    """2 million bytes of elements the reader never reads, and 40,000 minimal call paths: as elements they took
    25 and 20 times their bytes."""
    import tracemalloc

    from analyzer.cube.cube_xml import parse_xml

    cnodes = "".join(f'<cnode id="{k}" calleeId="0"/>' for k in range(40_000))
    xml = ('<cube><metrics/><program><region id="0"><name>main</name></region>' + cnodes +
           "</program><system/>" + "<x/>" * 500_000 + "</cube>").encode()
    tracemalloc.start()
    root, streamed = parse_xml(xml)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(streamed.ids) == 40_000 and streamed.regions[0].name == "main"
    assert [el.tag for el in root[3]] == ["metrics", "program", "system"]  # (tag, attributes, text, children)
    assert peak < 2 * len(xml)
