"""Whether fresh memory should ask for 2 MiB pages on this machine, and NumPy's advice while analysing.

A virtual machine whose balloon device reports free pages to its host (virtio-balloon free page
reporting, as Firecracker and QEMU's ``free-page-reporting=on`` offer it) hands every free
2 MiB block back to the host about two seconds after it was freed.  Its next use as a transparent
huge page is then 512 faults on the host: 2.3-4.3 ms per 2 MiB page written once on the project's VMs,
against 0.7 ms for one the guest freed a moment ago and 1.1 ms for the same 2 MiB as 4 KiB pages, which
the guest takes from the small blocks it did not report (``python -m benchmarks fresh_pages``;
docs/performance.md, "Fresh memory and huge pages").  An analysis allocates its large tables fresh, so
there huge pages cost three times what small ones do.

:func:`huge_pages_pay` says which case this machine is (``EXPERT_HUGE_PAGES=on|off`` decides instead);
the reader's column mappings (``tracefmt.column_memory``) ask for huge pages only where they pay, and
:func:`numpy_page_advice` turns NumPy's own advice (``madvise(MADV_HUGEPAGE)`` on each array of 4 MiB
or more) off while an analysis runs where they do not.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import warnings

#: virtio device id of a memory balloon, and its feature bit VIRTIO_BALLOON_F_REPORTING (Linux uapi virtio_ids.h,
#: virtio_balloon.h)
BALLOON_DEVICE_ID = 5
FREE_PAGE_REPORTING_BIT = 5

VIRTIO_DEVICES = "/sys/bus/virtio/devices"


def reports_free_pages(devices: str = VIRTIO_DEVICES) -> bool:
    """Whether a virtio balloon of this (Linux) machine negotiated free page reporting with its host."""
    try:
        names = os.listdir(devices)
    except OSError:  # not Linux, no virtio bus: bare metal or another hypervisor's devices
        return False
    for name in names:
        try:
            with open(os.path.join(devices, name, "device")) as f:
                device = int(f.read().strip(), 16)
            with open(os.path.join(devices, name, "features")) as f:
                features = f.read().strip()  # one character per feature bit, bit 0 first
        except (OSError, ValueError):
            continue
        if device == BALLOON_DEVICE_ID and features[FREE_PAGE_REPORTING_BIT:FREE_PAGE_REPORTING_BIT + 1] == "1":
            return True
    return False


def huge_pages_pay() -> bool:
    """Whether fresh memory should ask for transparent huge pages here: not on a guest that reports its free
    pages to the host (module docstring), unless ``EXPERT_HUGE_PAGES`` says ``on`` or ``off``."""
    choice = os.environ.get("EXPERT_HUGE_PAGES", "auto").strip().lower()
    if choice in ("on", "1", "yes"):
        return True
    if choice in ("off", "0", "no"):
        return False
    if choice not in ("auto", ""):
        _warn_once(choice)
    return _detected()


@functools.lru_cache(maxsize=None)
def _warn_once(choice: str) -> None:
    warnings.warn(f"EXPERT_HUGE_PAGES={choice!r} is none of on, off, auto: taken as auto", stacklevel=3)


@functools.lru_cache(maxsize=None)
def _detected() -> bool:
    return not reports_free_pages()


@contextlib.contextmanager
def numpy_page_advice():
    """While the block runs, NumPy asks for huge pages for its large arrays only where they pay; its setting is
    restored when the last such block (of any thread) ends.  Left alone where the user chose it
    (``NUMPY_MADVISE_HUGEPAGE``) or this NumPy has no such switch.  Process-wide, like NumPy's switch: other
    threads' arrays meanwhile get the same advice, which changes their speed, never their contents."""
    switch = _numpy_switch()
    if switch is None or "NUMPY_MADVISE_HUGEPAGE" in os.environ or huge_pages_pay():
        yield
        return
    with _advice_lock:
        if _advice["blocks"] == 0:
            _advice["before"] = switch(False)
        _advice["blocks"] += 1
    try:
        yield
    finally:
        with _advice_lock:
            _advice["blocks"] -= 1
            if _advice["blocks"] == 0:
                switch(_advice["before"])


_advice_lock = threading.Lock()
_advice = {"blocks": 0, "before": True}  # blocks running (of all threads), NumPy's setting before the first


def _numpy_switch():
    """NumPy's ``_set_madvise_hugepage`` (sets the advice, returns the previous one), or None."""
    try:
        from numpy._core import multiarray  # NumPy 2
    except ImportError:
        try:
            from numpy.core import multiarray  # NumPy 1.x
        except ImportError:
            return None
    return getattr(multiarray, "_set_madvise_hugepage", None)
