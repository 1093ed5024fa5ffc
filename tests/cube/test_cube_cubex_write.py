"""CUBE4 writer: every trap of shared/reference/cube-format.md §1 and §7 has a test here.

Every file written is checked with ``check_cubex`` and read back both with our
reader and with pycubexr (the reader the Extra-P team maintains), which must
see the same numbers.
"""

import io
import struct
import tarfile

import numpy as np
import pytest
from cube_helpers import pycubexr_values, small_cube
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.cube import Cube, CubeError, LocationInfo, MetricInfo, RegionInfo, check_cubex, diff_cubes, read_cubex
from analyzer.cube import cubex_bytes, write_cubex


def write_and_verify(cube: Cube, path) -> Cube:
    """Write, self-check, read back with us and with pycubexr; return our reading."""
    write_cubex(cube, path)
    assert check_cubex(path) == []
    back = read_cubex(path)
    assert back.problems == []
    assert diff_cubes(cube, back) == []
    # pycubexr indexes by the file's cnode ids (DFS pre-order), we by the cube's: map through paths
    theirs = pycubexr_values(path)
    order = cube.dfs_order()
    for name in cube.metric_names:
        expected = np.asarray(cube.values[name])[order]
        if cube.metric(name).dtype == "INTEGER":
            expected = np.rint(expected)
        np.testing.assert_array_equal(theirs[name], expected, err_msg=name)
    return back


def members(path) -> dict[str, bytes]:
    with tarfile.open(path) as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers()}


def rewrite(path, out, changes: dict[str, bytes | None], mtime: int = 0):
    """Copy a .cubex replacing (or, with None, dropping) members, with a plain tar writer."""
    ms = members(path)
    ms.update(changes)
    with tarfile.open(out, "w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in ms.items():
            if data is None:
                continue
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = mtime
            t.addfile(info, io.BytesIO(data))


# ---------------------------------------------------------------- round trips
def test_round_trip_small_cube(tmp_path):
    back = write_and_verify(small_cube(), tmp_path / "r.cubex")
    c = small_cube()
    # our reader keeps the file's ids, which the writer made depth-first pre-order
    assert back.callpaths == [c.callpaths[i] for i in c.dfs_order()]
    assert back.metric("mpi").diagnosis == "Reduce MPI time."
    assert back.metric("visits").dtype == "INTEGER"
    assert back.regions[0] == c.regions[0]
    assert back.locations == c.locations[:0] + [
        LocationInfo("cluster", "n0", 0, 0, "thread 0", "rank 0"),
        LocationInfo("cluster", "n0", 0, 1, "thread 1", "rank 0"),
        LocationInfo("cluster", "n1", 1, 0, "thread 0", "rank 1"),
    ]
    assert back.attrs["Run"] == "small" and back.attrs["CUBE_CT_AGGR"] == "SUM"


def test_identical_cubes_give_identical_bytes(tmp_path):
    write_cubex(small_cube(), tmp_path / "a.cubex")
    write_cubex(small_cube(), tmp_path / "b.cubex")
    assert (tmp_path / "a.cubex").read_bytes() == (tmp_path / "b.cubex").read_bytes()
    with tarfile.open(tmp_path / "a.cubex") as t:
        for m in t.getmembers():
            assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (0, 0, 0, "", "")


def test_container_is_plain_ustar_tar(tmp_path):
    p = tmp_path / "c.cubex"
    write_cubex(small_cube(), p)
    raw = p.read_bytes()
    assert raw[257:263] == b"ustar\x00"  # what cubelib's layout detector looks for
    assert raw[:2] != b"\x1f\x8b"  # never compressed: cubelib rejects tar.gz
    names = list(members(p))
    assert names[0] == "anchor.xml"
    assert sorted(names[1:]) == sorted(f"{i}.{k}" for i in range(4) for k in ("index", "data"))


def test_anchor_prolog_and_version_are_literal(tmp_path):
    p = tmp_path / "c.cubex"
    write_cubex(small_cube(), p)
    text = members(p)["anchor.xml"].decode()
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<cube version="4.4">\n')
    assert "='" not in text  # double quotes only


def test_id_capitalisation_and_region_lines(tmp_path):
    p = tmp_path / "c.cubex"
    write_cubex(small_cube(), p)
    text = members(p)["anchor.xml"].decode()
    assert '<metric id="0" type="EXCLUSIVE">' in text
    assert '<region id="1" mod="app.c" begin="100" end="120">' in text
    assert '<region id="2" mod="" begin="-1" end="-1">' in text
    assert '<cnode id="0" calleeId="0">' in text
    assert '<systemtreenode Id="0">' in text and '<locationgroup Id="0">' in text and '<location Id="0">' in text
    assert "<type>thread</type>" in text and "<type>process</type>" in text
    assert ' id="' not in text.split("<system>")[1]  # system elements use capital Id only


def test_cnodes_renumbered_depth_first(tmp_path):
    """small_cube's ids are 0 main, 1 foo/MPI_Recv, 2 foo, 3 MPI_Recv: the file must say 0,1,2,3 = DFS."""
    p = tmp_path / "c.cubex"
    write_cubex(small_cube(), p)
    text = members(p)["anchor.xml"].decode()
    prog = text[text.index("<cnode") :]
    assert [int(x) for x in __import__("re").findall(r'<cnode id="(\d+)"', prog)] == [0, 1, 2, 3]
    assert '<cnode id="1" calleeId="1">' in prog  # foo comes second now
    assert '<cnode id="2" calleeId="2">' in prog  # its MPI_Recv third


def test_sparse_little_endian_index_with_ascending_positions(tmp_path):
    p = tmp_path / "c.cubex"
    write_cubex(small_cube(), p)
    ms = members(p)
    # late_sender (metric id 2) is non-zero at file cnodes 2 (foo/MPI_Recv) and 3 (MPI_Recv)
    idx = ms["2.index"]
    assert idx[:11] == b"CUBEX.INDEX"
    assert struct.unpack("<IHBI", idx[11:22]) == (1, 0, 1, 2)
    assert struct.unpack("<2I", idx[22:]) == (2, 3)
    data = ms["2.data"]
    assert data[:10] == b"CUBEX.DATA"
    assert struct.unpack("<6d", data[10:]) == (2.5, 0, 0, 0, 0, 1.5)


def test_all_zero_metric_stores_one_root_row(tmp_path):
    c = small_cube(values={"time": np.ones((4, 3))})
    p = tmp_path / "z.cubex"
    write_and_verify(c, p)
    idx = members(p)["1.index"]  # mpi: all zero
    assert struct.unpack("<I", idx[18:22]) == (1,) and struct.unpack("<I", idx[22:]) == (0,)
    assert len(members(p)["1.data"]) == 10 + 3 * 8


def test_integer_metrics_are_uint64_rounded(tmp_path):
    c = small_cube()
    v = {n: np.array(c.values[n]) for n in c.metric_names}
    v["visits"][0] = [2.4, 2.6, 7.0]
    p = tmp_path / "i.cubex"
    write_cubex(small_cube(values=v), p)
    assert check_cubex(p) == []
    text = members(p)["anchor.xml"].decode()
    assert "<uniq_name>visits</uniq_name>\n      <dtype>UINT64</dtype>" in text
    data = members(p)["3.data"]
    assert struct.unpack("<3Q", data[10:34]) == (2, 3, 7)
    np.testing.assert_array_equal(read_cubex(p).values["visits"][0], [2, 3, 7])
    np.testing.assert_array_equal(pycubexr_values(p)["visits"][0], [2, 3, 7])
    v["visits"][0, 0] = -1
    with pytest.raises(CubeError, match="'visits'.*-1.0 at call path 'main'"):
        write_cubex(small_cube(values=v), tmp_path / "neg.cubex")


def test_no_member_size_is_a_multiple_of_512(tmp_path):
    """cubelib skips one extra block after such a member and silently loses the rest."""
    base = len(cubex_bytes(small_cube(attrs={"pad": ""})))
    assert base  # find a padding that makes the anchor exactly 1024*k bytes long before the fix-up
    anchor_len = len(members_from_bytes(cubex_bytes(small_cube(attrs={"pad": ""})))["anchor.xml"])
    pad = (-anchor_len) % 512 or 512
    # the writer would produce exactly 512*k bytes of XML here without its trailing newline
    c = small_cube(attrs={"pad": "x" * pad})
    p = tmp_path / "p.cubex"
    write_and_verify(c, p)
    anchor = members(p)["anchor.xml"]
    assert len(anchor) % 512 == 1 and anchor.endswith(b"</cube>\n\n")


def members_from_bytes(raw: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(raw)) as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers()}


def test_single_root_system_tree_for_several_machines(tmp_path):
    locs = [LocationInfo("m1", "a", 0, 0), LocationInfo("m2", "b", 1, 0), LocationInfo("m1", "a", 2, 0)]
    c = small_cube(locations=locs)
    p = tmp_path / "m.cubex"
    back = write_and_verify(c, p)
    text = members(p)["anchor.xml"].decode()
    assert "<name>system</name>\n      <class>system</class>" in text
    assert [(loc.machine, loc.node, loc.rank) for loc in back.locations] == [("m1", "a", 0), ("m2", "b", 1),
                                                                             ("m1", "a", 2)]


def test_names_are_escaped_and_control_characters_replaced(tmp_path):
    regions = [RegionInfo('main<"&>'), RegionInfo("foo\x01bar"), RegionInfo("MPI_Recv")]
    c = small_cube(regions=regions, attrs={"k&": 'v"<'})
    p = tmp_path / "e.cubex"
    write_cubex(c, p)
    assert check_cubex(p) == []
    back = read_cubex(p)
    assert back.regions[0].name == 'main<"&>'
    assert back.regions[1].name == "foo\\x01bar"  # XML forbids \x01 even as a reference: written as text
    assert back.attrs["k&"] == 'v"<'
    pycubexr_values(p)  # opens


def test_refuses_other_suffixes_and_several_roots(tmp_path):
    with pytest.raises(CubeError, match="must end in .cubex"):
        write_cubex(small_cube(), tmp_path / "result.dat")
    multi = small_cube(cnode_parent=[-1, 2, 0, -1], strict=False)
    with pytest.raises(CubeError, match="2 root cnodes"):
        write_cubex(multi, tmp_path / "m.cubex")
    assert not (tmp_path / "m.cubex").exists() and not (tmp_path / "m.cubex.tmp").exists()


def test_min_max_metrics_keep_their_cube_type(tmp_path):
    metrics = [MetricInfo("time", unit="sec"), MetricInfo("min_time", unit="sec", aggregation="min")]
    c = small_cube(metrics=metrics, values={"time": np.ones((4, 3)), "min_time": np.full((4, 3), 0.5)})
    p = tmp_path / "mm.cubex"
    back = write_and_verify(c, p)
    assert "<dtype>MINDOUBLE</dtype>" in members(p)["anchor.xml"].decode()
    assert back.metric("min_time").aggregation == "min"
    assert back.total("min_time") == 0.5


# ---------------------------------------------------------------- the self-check catches each trap
@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good.cubex"
    write_cubex(small_cube(), p)
    return p


def _violations(good, tmp_path, changes, name="bad.cubex"):
    out = tmp_path / name
    rewrite(good, out, changes)
    return check_cubex(out)


def _anchor(good) -> str:
    return members(good)["anchor.xml"].decode()


def test_check_flags_unsorted_index(good, tmp_path):
    idx = members(good)["2.index"]
    swapped = idx[:22] + idx[26:30] + idx[22:26]
    assert any("not strictly ascending" in v for v in _violations(good, tmp_path, {"2.index": swapped}))


def test_check_flags_empty_and_dense_index(good, tmp_path):
    empty = b"CUBEX.INDEX" + struct.pack("<IHBI", 1, 0, 1, 0)
    assert any("need >= 1 row" in v for v in _violations(good, tmp_path, {"2.index": empty}))
    dense = b"CUBEX.INDEX" + struct.pack("<IHB", 1, 0, 3)
    assert any("format 3 without row count" in v for v in _violations(good, tmp_path, {"2.index": dense}))


def test_check_flags_big_endian(good, tmp_path):
    idx = members(good)["2.index"]
    be = b"CUBEX.INDEX" + struct.pack(">IHBI", 1, 0, 1, 2) + struct.pack(">2I", 2, 3)
    assert idx != be
    assert any("little-endian" in v for v in _violations(good, tmp_path, {"2.index": be}))


def test_check_flags_512_multiple_member(good, tmp_path):
    a = _anchor(good)
    a = a + " " * ((-len(a.encode())) % 512)
    assert len(a.encode()) % 512 == 0
    assert any("multiple of 512" in v for v in _violations(good, tmp_path, {"anchor.xml": a.encode()}))


def test_check_flags_prolog_version_and_quotes(good, tmp_path):
    a = _anchor(good)
    v = _violations(good, tmp_path, {"anchor.xml": a.replace('version="1.0"', "version='1.0'", 1).encode()})
    assert any("literal <?xml" in x for x in v) and any("single-quoted" in x for x in v)
    v = _violations(good, tmp_path, {"anchor.xml": a.replace('<cube version="4.4">', '<cube version="4.6">').encode()})
    assert any('not literally <cube version="4.4">' in x for x in v)


def test_check_flags_id_spelling_and_missing_lines(good, tmp_path):
    a = _anchor(good)
    v = _violations(good, tmp_path, {"anchor.xml": a.replace("<location Id=", "<location id=").encode()})
    assert any("capital Id" in x for x in v)
    v = _violations(good, tmp_path, {"anchor.xml": a.replace(' begin="-1" end="-1"', "", 1).encode()})
    assert any("missing attribute begin" in x for x in v)


def test_check_flags_several_roots_and_non_dfs_ids(good, tmp_path):
    a = _anchor(good)
    # move the last cnode (main/MPI_Recv) out of main: two roots
    two_roots = a.replace('      <cnode id="3" calleeId="2">\n      </cnode>\n    </cnode>\n',
                          '    </cnode>\n    <cnode id="3" calleeId="2">\n    </cnode>\n')
    assert two_roots != a
    assert any("2 root cnodes" in x for x in _violations(good, tmp_path, {"anchor.xml": two_roots.encode()}))
    scrambled = a.replace('<cnode id="1"', '<cnode id="X"').replace('<cnode id="2"', '<cnode id="1"')
    scrambled = scrambled.replace('<cnode id="X"', '<cnode id="2"')
    assert any("pre-order" in x for x in _violations(good, tmp_path, {"anchor.xml": scrambled.encode()}))


def test_check_flags_metric_types_and_missing_data(good, tmp_path):
    a = _anchor(good)
    v = _violations(good, tmp_path, {"anchor.xml": a.replace('type="EXCLUSIVE"', 'type="POSTDERIVED"', 1).encode()})
    assert any("expected EXCLUSIVE" in x for x in v)
    v = _violations(good, tmp_path, {"3.data": None})
    assert any("3.data missing" in x for x in v)
    v = _violations(good, tmp_path, {"3.data": members(good)["3.data"][:-8]})
    assert any("3.data:" in x and "bytes, expected" in x for x in v)


def test_check_flags_system_tree_order_and_types(good, tmp_path):
    a = _anchor(good)
    v = _violations(good, tmp_path, {"anchor.xml": a.replace("<type>thread</type>", "<type>cpu thread</type>", 1)
                                     .encode()})
    assert any("type=thread" in x for x in v)
    swapped = a.replace("<name>cluster</name>\n      <class>machine</class>",
                        "<class>machine</class>\n      <name>cluster</name>")
    assert any("expected ['name', 'class']" in x for x in _violations(good, tmp_path, {"anchor.xml": swapped.encode()}))


def test_check_flags_container_problems(good, tmp_path):
    import gzip

    gz = tmp_path / "g.cubex"
    gz.write_bytes(gzip.compress(good.read_bytes()))
    assert any("gzip" in v for v in check_cubex(gz))
    other = tmp_path / "x.tar"
    other.write_bytes(good.read_bytes())
    assert any("does not end in .cubex" in v for v in check_cubex(other))
    plain = tmp_path / "plain.cubex"
    rewrite(good, plain, {}, mtime=1_700_000_000)  # a plain tar writer stamps the clock
    assert any("mtime/uid" in v for v in check_cubex(plain))


# ---------------------------------------------------------------- random cubes
@st.composite
def random_cubes(draw):
    n = draw(st.integers(1, 12))
    parent = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    # shuffle ids so that they are not depth-first (the writer must renumber)
    perm = draw(st.permutations(range(n)))
    inv = {old: new for new, old in enumerate(perm)}
    new_parent = [0] * n
    for old in range(n):
        new_parent[inv[old]] = -1 if parent[old] < 0 else inv[parent[old]]
    n_regions = draw(st.integers(1, 4))
    region = [draw(st.integers(0, n_regions - 1)) for _ in range(n)]
    n_ranks = draw(st.integers(1, 3))
    n_threads = draw(st.integers(1, 3))
    locs = [LocationInfo("m", f"node{r % 2}", r, t) for r in range(n_ranks) for t in range(n_threads)]
    vals = st.one_of(st.just(0.0), st.floats(0, 1e6, allow_nan=False), st.integers(0, 100).map(float))
    shape = (n, len(locs))

    def arr():
        return np.array(draw(st.lists(vals, min_size=n * len(locs), max_size=n * len(locs)))).reshape(shape)

    metrics = [MetricInfo("time"), MetricInfo("wait", parent="time"), MetricInfo("visits", unit="occ",
                                                                                   dtype="INTEGER")]
    values = {"time": arr(), "wait": arr(), "visits": np.rint(arr())}
    return Cube(metrics, [RegionInfo(f"r{i}") for i in range(n_regions)], new_parent, region, locs, values)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cube=random_cubes())
def test_random_cubes_round_trip(tmp_path, cube):
    write_and_verify(cube, tmp_path / "rand.cubex")
