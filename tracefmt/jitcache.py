"""Numba's on-disk cache, invalidated when a kernel's dependencies change, not only its own file.

numba (``cache=True``) keys a cached kernel by the hash of the file that defines it.  A kernel also
contains what it calls from other modules (their njit functions are compiled into it) and the global
constants it reads (frozen at compile time): change ``idtable.py`` or an event code in
``event_codes.py`` and every kernel using them is still loaded as compiled before, silently.  That hits
an upgrade (pip leaves the ``__pycache__`` files numba wrote) as much as a developer's edit.

:func:`track_dependencies`, called at the end of every module that defines kernels, adds to each of
its kernels' cache stamp a digest of the project files the module imports, directly or through them
(found by reading their import lines, as numba freezes whatever a module imported).  A cached kernel
whose dependencies changed no longer matches its stamp, and numba compiles it afresh.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re

#: the top-level packages whose files count as dependencies (the rest is installed software)
PACKAGES = ("tracefmt", "analyzer", "patterns")
_THIS = os.path.abspath(__file__)
_ROOT = os.path.dirname(os.path.dirname(_THIS))
_IMPORT = re.compile(r"^\s*(?:from\s+(\.*)([\w.]*)\s+import\s+(\([^)]*\)|.*)|import\s+([\w.]+))", re.MULTILINE)


def track_dependencies(namespace: dict, packages: tuple[str, ...] = PACKAGES, root: str = _ROOT) -> None:
    """Make the cache of every kernel defined in the module ``namespace`` (its ``globals()``) depend on the
    files that module imports from ``packages`` (top-level packages under ``root``), transitively.  Kernels
    without a cache are left alone, and so is a numba whose cache objects are not shaped as expected (the
    kernels then keep numba's own check)."""
    name, path = namespace.get("__name__"), namespace.get("__file__")
    if not name or not path:
        return
    kernels = [v for v in namespace.values() if getattr(v, "_cache", None) is not None
               and getattr(getattr(v, "py_func", None), "__module__", None) == name]
    if not kernels:
        return
    try:
        digest = dependency_digest(os.path.abspath(path), namespace.get("__package__") or "", packages, root)
    except (OSError, UnicodeDecodeError):  # sources not readable as files (a zip import): numba's own check only
        return
    for k in kernels:
        cache_file = getattr(k._cache, "_cache_file", None)
        stamp = getattr(cache_file, "_source_stamp", None)
        if stamp is not None:
            cache_file._source_stamp = (stamp, digest)


def dependency_digest(path: str, package: str, packages: tuple[str, ...] = PACKAGES, root: str = _ROOT) -> str:
    """sha256 over the contents of the files of ``packages`` that ``path`` imports, directly or transitively."""
    files = sorted(dependencies(path, package, packages, root))
    h = hashlib.sha256()
    for f in files:
        h.update(os.path.relpath(f, root).encode())
        h.update(_file_hash(f, *_stat(f)))
    return h.hexdigest()


def dependencies(path: str, package: str, packages: tuple[str, ...] = PACKAGES, root: str = _ROOT) -> set[str]:
    """The files of ``packages`` (under ``root``) that the module at ``path`` in ``package`` imports, transitively
    (``path`` itself only where it imports itself through others)."""
    seen: set[str] = set()
    todo = [(path, package)]
    while todo:
        p, pkg = todo.pop()
        for dep in _imports(p, pkg, packages, root, *_stat(p)):
            if dep not in seen and dep != path and dep != _THIS:  # this module compiles into no kernel
                seen.add(dep)
                todo.append((dep, _package_of(dep, root)))
    return seen


def _stat(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


@functools.cache
def _file_hash(path: str, mtime_ns: int, size: int) -> bytes:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).digest()


@functools.cache
def _imports(path: str, package: str, packages: tuple[str, ...], root: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    """The project files the import statements of ``path`` name (a ``from X import a, b`` also names the
    submodules ``X.a`` and ``X.b`` where those are files)."""
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"#[^\n]*", "", f.read())  # comments may hold parentheses
    out = []
    for dots, mod, names, plain in _IMPORT.findall(text):
        base = _absolute(dots, mod, package) if not plain else plain
        if base is None or base.split(".")[0] not in packages:
            continue
        # ``from X import a as b, c``: the submodules X.a and X.c where those are files, else X itself
        names = [n.split()[0] for n in names.strip("() \n").split(",") if n.strip()]
        subs = [_module_file(f"{base}.{n}", root) for n in names]
        out += [s for s in subs if s]
        if plain or not subs or not all(subs):
            found = _module_file(base, root)
            if found:
                out.append(found)
    return tuple(out)


def _absolute(dots: str, mod: str, package: str) -> str | None:
    if not dots:
        return mod
    parts = package.split(".") if package else []
    up = len(dots) - 1
    if up > len(parts):
        return None
    base = parts[:len(parts) - up]
    return ".".join(base + ([mod] if mod else []))


def _module_file(name: str, root: str) -> str | None:
    rel = os.path.join(root, *name.split("."))
    for cand in (rel + ".py", os.path.join(rel, "__init__.py")):
        if os.path.isfile(cand):
            return cand
    return None


def _package_of(path: str, root: str) -> str:
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    return ".".join(rel[:-1])
