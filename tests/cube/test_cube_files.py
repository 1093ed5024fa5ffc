"""Reading a result file by its content (analyzer.cube.files)."""

import gzip

import pytest
from cube_helpers import fixture, small_cube

from analyzer.cube import (
    CubeFormatError,
    ResultFileError,
    diff_cubes,
    open_cube,
    read_cube3,
    read_result,
    write_cubex,
    write_hdf5,
    write_json,
)
from analyzer.cube.files import result_kind


def test_every_cube_format_by_content(tmp_path):
    cube = small_cube()
    cubex, h5, js = tmp_path / "a.bin", tmp_path / "b.bin", tmp_path / "c.bin"
    write_cubex(cube, tmp_path / "a.cubex")
    cubex.write_bytes((tmp_path / "a.cubex").read_bytes())
    write_hdf5(cube, h5)
    write_json(cube, js)
    assert diff_cubes(cube, open_cube(cubex)) == []
    assert diff_cubes(cube, read_result(h5)) == []
    assert read_result(js)["metrics"]["time"]["total"] == cube.total("time")
    c3 = fixture("cubelib__test0.0_cube3.cube")
    gz = tmp_path / "c3.gz"
    gz.write_bytes(gzip.compress(c3.read_bytes()))
    assert result_kind(c3.read_bytes()[:512]) == "cube3" and result_kind(gz.read_bytes()[:512]) == "cube3"
    assert diff_cubes(read_cube3(c3), open_cube(gz)) == []


@pytest.mark.parametrize("content,message", [
    (None, "no such file"),
    (b"", "empty file"),
    (b"{not json", "invalid JSON"),
    (b"not a cube at all", "not a readable CUBE4 file"),
    (b"\x89HDF\r\n\x1a\nnot really", "not a readable HDF5 cube"),
    (b"<cube version='3.0'>", "not a readable CUBE3 file"),
])
def test_bad_files_say_what_is_wrong(tmp_path, content, message):
    p = tmp_path / "r.cubex"
    if content is not None:
        p.write_bytes(content)
    with pytest.raises(ResultFileError, match=message) as err:
        read_result(p)
    assert isinstance(err.value, CubeFormatError) and str(err.value).startswith(str(p))
    with pytest.raises(ResultFileError, match=r"is a directory, expected a trace"):
        read_result(tmp_path, expected="a trace")
