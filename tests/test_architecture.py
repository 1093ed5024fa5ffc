"""The layering that docs/architecture.md describes, checked against the code's own imports.

Every import statement of the installed packages is read with ``ast`` (also
imports inside functions, which run lazily but are dependencies all the same)
and resolved to a module of ours.  The rules:

* the data flow is ``tracefmt`` <- ``patterns`` <- ``analyzer``: ``tracefmt``
  imports neither of the others, ``patterns`` does not import ``analyzer``;
* inside ``analyzer`` each subpackage imports only the layers below it
  (:data:`ANALYZER_MAY_IMPORT`); the cube model knows none of its file formats;
* the C runtime's Python tools (instrumenter, wrapper generator) are apart:
  they import none of our packages;
* no module imports or reaches a private (``_name``) of another module of ours;
* no module is longer than :data:`MAX_LINES` lines unless its docstring says why
  it is one cohesive thing (a line starting with ``Size:``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tracefmt", "patterns", "analyzer")
MAX_LINES = 600

#: analyzer subpackage (or top-level module) -> what of ours it may import.
#: "analyzer.x" allows analyzer.x and everything below it.
ANALYZER_MAY_IMPORT = {
    "analyzer.replay": {"tracefmt", "patterns", "analyzer.replay"},
    "analyzer.cube": {"tracefmt", "analyzer.cube"},
    "analyzer.ci": {"tracefmt", "analyzer.cube", "analyzer.ci"},
    "analyzer.report": {"tracefmt", "analyzer.cube", "analyzer.ci", "analyzer.report", "analyzer.analyze"},
    "analyzer.profile": {"tracefmt", "analyzer.profile", "analyzer.replay.kernels"},
    "analyzer.distributed": {"tracefmt", "patterns", "analyzer.replay", "analyzer.distributed"},
    "analyzer.analyze": {"tracefmt", "patterns", "analyzer.replay", "analyzer.cube", "analyzer.distributed",
                         "analyzer.analyze"},
    "analyzer.timeline": {"tracefmt", "patterns", "analyzer.timeline"},
    "analyzer.warmup": {"tracefmt", "analyzer.analyze", "analyzer.profile"},
    "analyzer.cli": {"tracefmt", "patterns", "analyzer"},
    "analyzer": {"analyzer.analyze", "analyzer.cube"},  # analyzer/__init__.py
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(*top: str) -> list[tuple[str, Path]]:
    out = []
    for pkg in top:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if "__pycache__" not in path.parts:
                out.append((_module_name(path), path))
    return out


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _ours(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


class _Import:
    """One imported module (and, for ``from m import a``, the names taken from it)."""

    def __init__(self, module: str, names: list[str], line: int):
        self.module, self.names, self.line = module, names, line


def _imports(name: str, path: Path) -> list[_Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    here = name if _is_package(path) else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(_Import(a.name, [], node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append(_Import(mod, [a.name for a in node.names], node.lineno))
    return out


def _allowed(importer: str, imported: str, rules: dict[str, set[str]]) -> bool:
    """Whether ``importer`` (a module name) may import ``imported`` under the longest matching rule."""
    key = max((k for k in rules if importer == k or importer.startswith(k + ".")), key=len, default=None)
    if key is None:
        return True
    return any(imported == a or imported.startswith(a + ".") for a in rules[key])


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _violations(extra: dict[str, Path] | None = None) -> dict[str, list[str]]:
    """Rule violations by rule; ``extra`` adds modules (name -> file) to those found in the packages."""
    found: dict[str, list[str]] = {"layers": [], "analyzer": [], "runtime": [], "private": []}
    mods = dict(_modules(*PACKAGES)) | (extra or {})
    for name, path in mods.items():
        top = name.split(".")[0]
        for imp in _imports(name, path):
            where = f"{_rel(path)}:{imp.line}"
            if not _ours(imp.module):
                continue
            target = imp.module.split(".")[0]
            if (top == "tracefmt" and target != "tracefmt") or (top == "patterns" and target == "analyzer"):
                found["layers"].append(f"{where}: {name} imports {imp.module}")
            if top == "analyzer" and not _allowed(name, imp.module, ANALYZER_MAY_IMPORT):
                found["analyzer"].append(f"{where}: {name} imports {imp.module}")
            # a private name taken from another module of ours (a submodule of a package is not a name)
            for n in imp.names:
                if n.startswith("_") and not n.startswith("__") and imp.module != name \
                        and f"{imp.module}.{n}" not in mods:
                    found["private"].append(f"{where}: {name} imports {n} from {imp.module}")
        found["private"].extend(_private_attribute_uses(name, path, mods))
    for path in sorted((ROOT / "runtime").rglob("*.py")):
        for imp in _imports(_module_name(path), path):
            if _ours(imp.module):
                found["runtime"].append(f"{_rel(path)}:{imp.line}: imports {imp.module}")
    return found


def _private_attribute_uses(name: str, path: Path, mods: dict[str, Path]) -> list[str]:
    """``alias._private`` where ``alias`` is bound to another module of ours by an import."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    aliases: dict[str, str] = {}
    here = name if _is_package(path) else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _ours(a.name):
                    aliases[a.asname or a.name.split(".")[0]] = a.asname and a.name or a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in mods:  # a module, not a name
                    aliases[a.asname or a.name] = full
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            attr = node.attr
            if attr.startswith("_") and not attr.startswith("__") and aliases[node.value.id] != name:
                out.append(f"{_rel(path)}:{node.lineno}: {name} uses "
                           f"{aliases[node.value.id]}.{attr}")
    return out


VIOLATIONS = _violations()


def test_data_flows_tracefmt_to_patterns_to_analyzer():
    assert VIOLATIONS["layers"] == []


def test_analyzer_subpackages_import_only_layers_below():
    assert VIOLATIONS["analyzer"] == []


def test_runtime_tools_are_apart():
    assert VIOLATIONS["runtime"] == []


def test_no_private_name_of_another_module():
    assert VIOLATIONS["private"] == []


def test_cube_model_knows_no_file_format():
    """The model and its dimension records import nothing of the analyzer but each other."""
    own = {"analyzer.cube.model", "analyzer.cube.dimensions"}
    for name in own:
        imported = {imp.module for imp in _imports(name, ROOT / (name.replace(".", "/") + ".py"))}
        assert not {m for m in imported if m.startswith("analyzer")} - own, name


@pytest.mark.parametrize("name,path", _modules(*PACKAGES), ids=lambda v: str(v) if isinstance(v, str) else "")
def test_module_size(name, path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    if n <= MAX_LINES:
        return
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert any(line.startswith("Size:") for line in doc.splitlines()), (
        f"{_rel(path)} has {n} lines (> {MAX_LINES}): split it by responsibility or say in its "
        "docstring, on a line starting with 'Size:', why it is one cohesive thing")


def test_the_checks_see_violations(tmp_path):
    """The rules are not vacuous: each kind of violation in a probe module is reported."""
    probe = tmp_path / "probe.py"
    probe.write_text("from analyzer.replay.engine import _location_meta\n"
                     "import tracefmt.reader as R\n"
                     "R._private_helper()\n", encoding="utf-8")
    found = _violations({"patterns.probe": probe, "analyzer.cube.probe": probe})
    assert any("patterns.probe imports analyzer" in v for v in found["layers"])
    assert any("analyzer.cube.probe imports analyzer.replay" in v for v in found["analyzer"])
    assert any("imports _location_meta" in v for v in found["private"])
    assert any("uses tracefmt.reader._private_helper" in v for v in found["private"])
