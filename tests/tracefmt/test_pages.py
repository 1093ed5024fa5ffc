"""Huge pages only where they pay: detecting free page reporting, the switch, NumPy's advice, the column mappings."""

import importlib
import os
import sys
import warnings

import numpy as np
import pytest

from tracefmt import column_memory, pages

analyze_module = importlib.import_module("analyzer.analyze")  # the package binds the name to the function
THP = os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled")


def _device(root, name, device_id, features):
    d = root / name
    d.mkdir()
    (d / "device").write_text(f"0x{device_id:04x}\n")
    (d / "features").write_text(features + "\n")


def _bits(*on, width=64):
    return "".join("1" if i in on else "0" for i in range(width))


def test_a_balloon_that_reports_free_pages_is_detected(tmp_path):
    _device(tmp_path, "virtio0", 1, _bits(5))  # a network device with bit 5: not a balloon
    assert not pages.reports_free_pages(str(tmp_path))
    _device(tmp_path, "virtio1", pages.BALLOON_DEVICE_ID, _bits(1, 2))  # a balloon without reporting
    assert not pages.reports_free_pages(str(tmp_path))
    _device(tmp_path, "virtio2", pages.BALLOON_DEVICE_ID, _bits(1, 2, 5))
    assert pages.reports_free_pages(str(tmp_path))


def test_no_virtio_bus_or_unreadable_devices_mean_no_reporting(tmp_path):
    assert not pages.reports_free_pages(str(tmp_path / "absent"))
    (tmp_path / "virtio0").mkdir()  # no device file
    d = tmp_path / "virtio1"
    d.mkdir()
    (d / "device").write_text("not hex\n")
    (d / "features").write_text(_bits(5))
    _device(tmp_path, "virtio2", pages.BALLOON_DEVICE_ID, "")  # features too short
    assert not pages.reports_free_pages(str(tmp_path))


@pytest.mark.parametrize("value, pay", [("on", True), ("1", True), ("off", False), ("0", False)])
def test_the_environment_decides_over_the_detection(monkeypatch, value, pay):
    monkeypatch.setenv("EXPERT_HUGE_PAGES", value)
    monkeypatch.setattr(pages, "_detected", lambda: not pay)
    assert pages.huge_pages_pay() is pay


@pytest.mark.parametrize("reporting", [True, False])
def test_auto_follows_the_detection(monkeypatch, reporting):
    monkeypatch.delenv("EXPERT_HUGE_PAGES", raising=False)
    monkeypatch.setattr(pages, "_detected", lambda: not reporting)
    assert pages.huge_pages_pay() is (not reporting)


def _numpy_advice():
    switch = pages._numpy_switch()
    now = switch(True)
    switch(now)
    return now


needs_switch = pytest.mark.skipif(pages._numpy_switch() is None, reason="this NumPy has no huge-page switch")


@needs_switch
def test_numpy_advice_is_off_inside_and_restored_after(monkeypatch):
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    monkeypatch.setenv("EXPERT_HUGE_PAGES", "off")
    before = _numpy_advice()
    with pages.numpy_page_advice():
        assert _numpy_advice() is False
    assert _numpy_advice() is before
    with pytest.raises(RuntimeError):
        with pages.numpy_page_advice():
            raise RuntimeError("the block failed")
    assert _numpy_advice() is before


@needs_switch
@pytest.mark.parametrize("env", [{"EXPERT_HUGE_PAGES": "on"}, {"EXPERT_HUGE_PAGES": "off", "NUMPY_MADVISE_HUGEPAGE": "1"}])
def test_numpy_advice_is_left_alone_where_pages_pay_or_the_user_chose(monkeypatch, env):
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    switch = pages._numpy_switch()
    before = switch(True)
    try:
        with pages.numpy_page_advice():
            assert _numpy_advice() is True
    finally:
        switch(before)


@needs_switch
def test_analyze_runs_under_the_advice(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    monkeypatch.setenv("EXPERT_HUGE_PAGES", "off")
    seen = []
    monkeypatch.setattr(analyze_module, "_analyze", lambda *a: seen.append(_numpy_advice()))
    before = _numpy_advice()
    analyze_module.analyze(str(tmp_path / "any.elg"))
    assert seen == [False] and _numpy_advice() is before


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of the mapping holding ``address`` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.skipif(not (sys.platform.startswith("linux") and THP), reason="needs Linux with transparent huge pages")
@pytest.mark.parametrize("setting, advised", [("on", True), ("off", False)])
def test_large_column_mappings_ask_for_huge_pages_only_where_they_pay(monkeypatch, setting, advised):
    monkeypatch.setenv("EXPERT_HUGE_PAGES", setting)
    n = 4 * column_memory.HUGE_PAGE // column_memory.BYTES_PER_EVENT
    cols = column_memory.new_columns(n)
    time = cols["time"]  # the first column starts at a 2 MiB boundary
    assert time.ctypes.data % column_memory.HUGE_PAGE == 0
    assert ("hg" in _vm_flags(time.ctypes.data)) is advised
    time[:] = np.arange(n)  # usable either way
    assert time[-1] == n - 1


@needs_switch
def test_overlapping_blocks_restore_the_setting_when_the_last_ends(monkeypatch):
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    monkeypatch.setenv("EXPERT_HUGE_PAGES", "off")
    before = _numpy_advice()
    first, second = pages.numpy_page_advice(), pages.numpy_page_advice()
    first.__enter__()
    second.__enter__()  # as two threads' analyses overlapping
    first.__exit__(None, None, None)
    assert _numpy_advice() is False  # the second still runs
    second.__exit__(None, None, None)
    assert _numpy_advice() is before


def test_an_unknown_setting_is_said_once_and_taken_as_auto(monkeypatch):
    monkeypatch.setenv("EXPERT_HUGE_PAGES", "sometimes")
    monkeypatch.setattr(pages, "_detected", lambda: False)
    pages._warn_once.cache_clear()
    with pytest.warns(UserWarning, match="EXPERT_HUGE_PAGES='sometimes'.*auto"):
        assert pages.huge_pages_pay() is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pages.huge_pages_pay() is False  # not again


def test_the_fresh_pages_benchmark_prints_its_table():
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-m", "benchmarks", "fresh_pages", "--mb", "4", "--repeat", "1", "--gap", "0"],
                       capture_output=True, text=True, cwd=root, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("free page reporting to a host: ")
    rows = [line.split("|")[1:3] for line in lines[3:]]
    assert [(p.strip(), m.strip()) for p, m in rows] == [("2 MiB", "just freed"), ("2 MiB", "after 0 s"),
                                                          ("4 KiB", "just freed"), ("4 KiB", "after 0 s")]
