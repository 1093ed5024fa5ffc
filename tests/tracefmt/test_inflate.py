"""tracefmt.inflate: gzip and zlib streams inflated up to a cap, one error type, no copy of the output."""

import gzip
import tracemalloc
import zlib

import pytest

from tracefmt.inflate import InflateError, gzip_cap, inflate


def test_streams_inflate_to_their_content():
    a, b = b"abc" * 1000, bytes(range(256)) * 40
    assert inflate(gzip.compress(a), 10**6) == a
    assert inflate(gzip.compress(a) + gzip.compress(b), 10**6) == a + b  # several members
    assert inflate(gzip.compress(a) + b"\0" * 7, 10**6) == a  # padding after the stream
    assert inflate(zlib.compress(b), 10**6, gzip=False) == b
    assert inflate(gzip.compress(b""), 0) == b""
    assert gzip_cap(10, 64, 100) == 640 and gzip_cap(1, 64, 100) == 100


def test_damaged_truncated_and_too_long_streams_are_one_error():
    z = gzip.compress(b"x" * 5000)
    with pytest.raises(InflateError, match="more than 4999 bytes") as e:
        inflate(z, 4999)
    assert e.value.bomb
    assert inflate(z, 5000) == b"x" * 5000
    with pytest.raises(InflateError, match="truncated"):
        inflate(z[:-12], 10**6)
    with pytest.raises(InflateError, match="damaged compressed stream"):
        inflate(z[:10] + b"\xff" * 20 + z[30:], 10**6)
    with pytest.raises(InflateError, match="garbage after the compressed stream"):
        inflate(z + b"garbage", 10**6)


def test_the_output_is_not_copied_at_the_end():
    """The peak is the output (and the input), not twice the output: bytes(out) at the end doubled it."""
    size = 32 << 20
    z = gzip.compress(bytes(size), 1)
    tracemalloc.start()
    out = inflate(z, size)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(out) == size and not any(out[:: 1 << 16])
    assert peak < 1.5 * size
