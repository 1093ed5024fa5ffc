"""numba's cache recompiles a kernel when a module it imports changes (tracefmt/jitcache.py)."""

import glob
import os
import re
import subprocess
import sys
import textwrap

import pytest

from tracefmt import jitcache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))


def kernel_package(tmp_path, value, helper_add):
    """``pkgx``: ``kern.f`` (cached) returns ``pkgx.consts.K`` plus what ``pkgx.helpers.add`` (njit) adds."""
    write(str(tmp_path / "pkgx" / "__init__.py"), "")
    write(str(tmp_path / "pkgx" / "consts.py"), f"K = {value}\n")
    write(str(tmp_path / "pkgx" / "helpers.py"), f"""\
        import numba

        @numba.njit(cache=True)
        def add(x):
            return x + {helper_add}
        """)
    write(str(tmp_path / "pkgx" / "kern.py"), f"""\
        import numba

        from tracefmt.jitcache import track_dependencies

        from . import helpers
        from .consts import (  # a comment (with parentheses)
            K,
        )

        @numba.njit(cache=True)
        def f():
            return helpers.add(K)

        track_dependencies(globals(), packages=("pkgx",), root={str(tmp_path)!r})
        """)


def run_kernel(tmp_path):
    """``kern.f()`` in a new process, and whether it came from the cache."""
    code = "import pkgx.kern as k; v = k.f(); print(v, sum(k.f.stats.cache_hits.values()))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    value, hits = out.split()
    return int(value), int(hits) > 0


@pytest.mark.parametrize("change", ["constant", "helper"])
def test_a_cached_kernel_is_recompiled_when_an_imported_module_changes(tmp_path, change):
    kernel_package(tmp_path, 1, 10)
    assert run_kernel(tmp_path) == (11, False)
    assert run_kernel(tmp_path) == (11, True)  # unchanged: from the cache
    if change == "constant":
        kernel_package(tmp_path, 2, 10)
        expected = 12
    else:
        kernel_package(tmp_path, 1, 20)
        expected = 21
    assert run_kernel(tmp_path) == (expected, False)
    assert run_kernel(tmp_path) == (expected, True)
    assert glob.glob(str(tmp_path / "pkgx" / "__pycache__" / "kern.f-*.nbi"))


def test_dependencies_follow_imports_transitively(tmp_path):
    write(str(tmp_path / "pk" / "__init__.py"), "from .a import A\n")
    write(str(tmp_path / "pk" / "a.py"), "from pk.b import B  # noqa\nimport os\nA = B\n")
    write(str(tmp_path / "pk" / "b.py"), "B = 1\n")
    write(str(tmp_path / "pk" / "sub" / "__init__.py"), "")
    write(str(tmp_path / "pk" / "sub" / "c.py"), "from .. import a\nfrom ..b import B\nimport numpy\n")
    write(str(tmp_path / "pk" / "sub" / "d.py"), "from . import c as cc\n")
    deps = jitcache.dependencies(str(tmp_path / "pk" / "sub" / "d.py"), "pk.sub", ("pk",), str(tmp_path))
    assert {os.path.relpath(d, tmp_path) for d in deps} == {
        os.path.join("pk", "sub", "c.py"), os.path.join("pk", "a.py"), os.path.join("pk", "b.py")}
    # ``from pk import name`` where name is no submodule depends on the package's __init__
    write(str(tmp_path / "pk" / "e.py"), "from pk import A\n")
    deps = jitcache.dependencies(str(tmp_path / "pk" / "e.py"), "pk", ("pk",), str(tmp_path))
    assert {os.path.relpath(d, tmp_path) for d in deps} == {
        os.path.join("pk", "__init__.py"), os.path.join("pk", "a.py"), os.path.join("pk", "b.py")}


def test_the_project_kernels_track_their_dependencies():
    """Every module of the project that defines cached kernels calls track_dependencies (a new kernel module that
    forgets it would be loaded stale after a change of what it imports)."""
    missing = []
    for pkg in jitcache.PACKAGES:
        for path in glob.glob(os.path.join(ROOT, pkg, "**", "*.py"), recursive=True):
            with open(path) as f:
                text = f.read()
            if re.search(r"njit\([^)]*cache=True", text) and "track_dependencies(globals())" not in text:
                missing.append(os.path.relpath(path, ROOT))
    assert missing == []


def test_unreadable_sources_leave_numba_s_own_check(tmp_path):
    """A module whose file cannot be read (imported from a zip, say) keeps its kernels' stamps as numba made them."""
    import numba

    @numba.njit(cache=True)
    def kernel():
        return 1

    stamp = kernel._cache._cache_file._source_stamp
    namespace = {"__name__": kernel.py_func.__module__, "__file__": str(tmp_path / "gone.py"), "kernel": kernel}
    jitcache.track_dependencies(namespace)
    assert kernel._cache._cache_file._source_stamp == stamp


def test_this_module_is_no_dependency():
    """Every kernel module imports track_dependencies: a change of jitcache.py must not recompile them all."""
    deps = jitcache.dependencies(os.path.join(ROOT, "tracefmt", "kernels.py"), "tracefmt")
    assert deps and os.path.join(ROOT, "tracefmt", "jitcache.py") not in deps
