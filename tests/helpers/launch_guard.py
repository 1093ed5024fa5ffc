"""Which subprocesses only a test marked ``runtime`` may start, and the guard that enforces it.

``python -m pytest -m "not runtime and not slow"`` is the fast inner loop: it must start no MPI
launcher, compiler, C-runtime launcher or browser.  tests/conftest.py wraps every test without the
``runtime`` marker in :class:`LaunchGuard`, so such a test fails as soon as it starts one of them.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest

#: programs only a test marked ``runtime`` may start: the executable's basename, with an optional
#: version or flavour suffix (mpiexec.openmpi, gcc-12, clang-16)
RUNTIME_PROGRAMS = re.compile(
    r"(mpiexec|mpirun|orterun|prterun|mpicc|mpicxx|mpic\+\+|mpif77|mpif90|mpifort|"
    r"gcc|g\+\+|cc|c\+\+|clang|clang\+\+|gfortran|make|"
    r"expert-run|expert-cc|chromium|chromium-browser|chrome|google-chrome)([.-][\w.]+)?")
_SHELLS = {"sh", "bash", "dash"}


def _words(args) -> list[str]:
    if isinstance(args, (str, bytes, os.PathLike)):
        text = os.fsdecode(args)
        try:
            return shlex.split(text)
        except ValueError:
            return text.split()
    return [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in args]


def runtime_program(args, executable=None) -> str | None:
    """The program of a subprocess command line that needs the ``runtime`` marker, or None.

    Looks at the executable and, for ``sh/bash -c SCRIPT``, at every word of the script.
    """
    words = _words(args)
    if not words and executable is None:
        return None
    exe = os.path.basename(os.fsdecode(executable) if executable is not None else words[0])
    if RUNTIME_PROGRAMS.fullmatch(exe):
        return exe
    if exe in _SHELLS and "-c" in words[1:]:
        i = words.index("-c", 1)
        script = words[i + 1] if i + 1 < len(words) else ""
        for word in re.split(r"[\s;&|()<>`$'\"]+", script):
            if RUNTIME_PROGRAMS.fullmatch(os.path.basename(word)):
                return os.path.basename(word)
    return None


class LaunchGuard:
    """While active, ``subprocess.Popen`` refuses (test failure) to start a runtime program."""

    def __init__(self, nodeid: str):
        self.nodeid = nodeid
        self.original = None

    def __enter__(self) -> "LaunchGuard":
        original = self.original = subprocess.Popen.__init__
        nodeid = self.nodeid

        def guarded_init(popen, args, *a, **kw):
            program = runtime_program(args, kw.get("executable"))
            if program is not None:
                pytest.fail(f"{nodeid} starts {program!r} but is not marked @pytest.mark.runtime (the fast "
                            "subset -m 'not runtime and not slow' starts no MPI launcher, compiler, C runtime "
                            "or browser)", pytrace=False)
            original(popen, args, *a, **kw)

        subprocess.Popen.__init__ = guarded_init
        return self

    def __exit__(self, *exc) -> None:
        subprocess.Popen.__init__ = self.original
