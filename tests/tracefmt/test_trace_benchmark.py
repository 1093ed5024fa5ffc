"""The trace_io benchmark runs end to end on a tiny size and prints its table."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_trace_io_benchmark_prints_a_table(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "benchmarks", "trace_io", "--sizes", "4096", "--locations", "4", "--repeat", "1",
         "--dir", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].split()[:3] == ["operation", "events", "file"]
    ops = [line.split()[0] for line in lines[2:5]]
    assert ops == ["write", "read", "read"]
    assert lines[5].startswith("not in the reads above: loading the decoder")
    read = lines[3].split()
    assert read[2] == "4096"  # events read back
    assert list(tmp_path.iterdir()) == []  # the temporary trace is removed


def test_unknown_benchmark_is_refused():
    r = subprocess.run([sys.executable, "-m", "benchmarks", "no_such"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "unknown benchmark" in r.stderr
