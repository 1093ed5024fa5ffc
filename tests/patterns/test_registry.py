"""patterns.registry: discovery, validation, selection and ordering.

Built-in modules and entry points are replaced by small fake ones so each
test controls exactly what is installed (as pluggy's own tests do).
"""

from __future__ import annotations

import sys
import types

import pytest

from patterns import registry
from patterns.api import Pattern, PatternError, pattern


def make(name, parent=None, depends=(), **extra):
    attrs = dict(
        name=name, parent=parent, display_name=name.title(), description=f"what {name} measures",
        diagnosis=f"what to do about {name}", depends=tuple(depends), compute=lambda self, ctx: None,
    )
    attrs.update(extra)
    return type(f"P_{name}", (Pattern,), attrs)


def fake_module(monkeypatch, modname, *classes, listed=True):
    mod = types.ModuleType(modname)
    for cls in classes:
        cls.__module__ = modname
        setattr(mod, cls.__name__, cls)
    if listed:
        mod.PATTERNS = classes
    monkeypatch.setitem(sys.modules, modname, mod)
    return mod


class FakeDist:
    def __init__(self, name, version="1.0"):
        self.metadata = {"Name": name}
        self.version = version


class FakeEntryPoint:
    def __init__(self, name, obj, dist="some-plugin", value=None):
        self.name, self._obj = name, obj
        self.value = value or f"some_plugin.mod:{name}"
        self.group = "expert.patterns"
        self.dist = FakeDist(dist) if dist else None

    def load(self):
        if isinstance(self._obj, BaseException):
            raise self._obj
        return self._obj


@pytest.fixture
def builtins(monkeypatch):
    """A small built-in tree: time > {execution > omp_time, idle}, visits; time depends on idle."""
    time_ = make("time", depends=("idle",))
    execution = make("execution", "time")
    visits = make("visits", unit="occ")
    fake_module(monkeypatch, "fake_generic", time_, execution, visits)
    omp_time = make("omp_time", "execution")
    idle = make("idle", "time")
    fake_module(monkeypatch, "fake_omp", omp_time, idle)
    monkeypatch.setattr(registry, "BUILTIN_MODULES", ("fake_generic", "fake_missing_module", "fake_omp"))
    monkeypatch.setattr(registry, "_entry_points", lambda: [])


def names(pats):
    return [p.name for p in pats]


def test_builtins_load_in_parent_and_depends_first_order(builtins):
    got = names(registry.load_patterns())
    assert sorted(got) == ["execution", "idle", "omp_time", "time", "visits"]
    # idle is time's child but time depends on it, so idle comes first; every other parent comes first
    assert got.index("idle") < got.index("time") < got.index("execution") < got.index("omp_time")


def test_origin_names_the_builtin_module(builtins):
    by = {p.name: p for p in registry.load_patterns()}
    assert by["omp_time"].origin == "built-in fake_omp"


def test_names_select_parents_and_dependencies(builtins):
    got = names(registry.load_patterns(["omp_time"]))
    assert got == ["idle", "time", "execution", "omp_time"]
    assert names(registry.load_patterns("visits")) == ["visits"]
    assert set(names(registry.load_patterns("visits, execution"))) == {"visits", "execution", "time", "idle"}


def test_unknown_name_suggests_close_ones(builtins):
    with pytest.raises(PatternError, match=r"unknown pattern 'omp_tim'.*'omp_time'"):
        registry.load_patterns(["omp_tim"])


def test_dependency_on_a_pattern_that_is_not_loaded_is_skipped(monkeypatch, builtins):
    extra = make("late_extra", "time", depends=("not_installed_anywhere",))
    fake_module(monkeypatch, "fake_extra", extra)
    monkeypatch.setattr(registry, "BUILTIN_MODULES", registry.BUILTIN_MODULES + ("fake_extra",))
    assert "late_extra" in names(registry.load_patterns(["late_extra"]))


def test_module_without_list_exposes_its_own_named_subclasses(monkeypatch, builtins):
    base = make("", None, display_name="Base")  # an abstract helper base: no name, not a pattern
    sub = type("Sub", (base,), {"name": "sub_thing", "parent": "time"})
    imported = make("imported_elsewhere", "time")  # defined in another module
    mod = fake_module(monkeypatch, "fake_unlisted", base, sub, listed=False)
    mod.Imported = imported
    monkeypatch.setattr(registry, "BUILTIN_MODULES", registry.BUILTIN_MODULES + ("fake_unlisted",))
    got = names(registry.load_patterns())
    assert "sub_thing" in got and "imported_elsewhere" not in got


def test_broken_builtin_import_is_not_hidden(monkeypatch, builtins):
    # a module that exists but imports something missing must fail loudly
    class Finder:
        def find_spec(self, fullname, path=None, target=None):
            if fullname == "fake_broken":
                raise ModuleNotFoundError("No module named 'numpy_typo'", name="numpy_typo")
            return None

    monkeypatch.setattr(sys, "meta_path", [Finder()] + sys.meta_path)
    monkeypatch.setattr(registry, "BUILTIN_MODULES", ("fake_generic", "fake_broken"))
    with pytest.raises(ModuleNotFoundError, match="numpy_typo"):
        registry.load_patterns()


# --------------------------------------------------------------------------
# plugins
# --------------------------------------------------------------------------
def test_entry_points_may_name_class_instance_module_or_iterable(monkeypatch, builtins):
    a, b, c, d = (make(n, "execution") for n in ("plug_a", "plug_b", "plug_c", "plug_d"))
    mod = fake_module(monkeypatch, "fake_plugin_mod", c)
    eps = [
        FakeEntryPoint("a", a),
        FakeEntryPoint("b", b()),
        FakeEntryPoint("c", mod),
        FakeEntryPoint("d", [d]),
    ]
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    by = {p.name: p for p in registry.load_patterns()}
    assert {"plug_a", "plug_b", "plug_c", "plug_d"} <= set(by)
    assert by["plug_a"].origin == "plugin some-plugin 1.0, entry point a = some_plugin.mod:a"
    assert "plug_a" not in names(registry.load_patterns(plugins=False))


def test_function_patterns_from_the_decorator_load(monkeypatch, builtins):
    @pattern(name="fn_pat", parent="time", display_name="Fn", description="d", diagnosis="x")
    def fn_pat(ctx):
        return None

    monkeypatch.setattr(registry, "_entry_points", lambda: [FakeEntryPoint("fn", fn_pat)])
    assert "fn_pat" in names(registry.load_patterns())


def test_plugin_that_fails_to_import_names_distribution_and_entry_point(monkeypatch, builtins):
    ep = FakeEntryPoint("bad", ImportError("No module named 'scipy'"), dist="expert-bad", value="expert_bad:P")
    monkeypatch.setattr(registry, "_entry_points", lambda: [ep])
    with pytest.raises(PatternError, match=r"plugin expert-bad 1.0, entry point bad = expert_bad:P: loading failed: "
                                           r"ImportError: No module named 'scipy'"):
        registry.load_patterns()


@pytest.mark.parametrize(
    "obj, message",
    [
        (42, r"expected a Pattern subclass.*got int"),
        (type("NotAPattern", (), {}), r"is not a subclass of patterns.api.Pattern"),
        (make("Bad Name", "time"), r"name must be a non-empty lower-case identifier"),
        (make("no_text", "time", description=""), r"'no_text' \(from plugin .*\): description must be"),
        (make("bad_unit", "time", unit="ms"), r"'bad_unit' .*unit must be one of"),
        (type("BadDep", (make("bad_dep", "time"),), {"depends": "time"}),
         r"'bad_dep' .*depends must be a tuple of names"),
        (make("bad_opt", "time", optional_depends="idle"), r"'bad_opt' .*optional_depends must be a tuple of names"),
        (make("bad_req", "time", requires=("mesages",)),
         r"'bad_req' \(from plugin .*\): requires names an unknown replay table 'mesages'; did you mean 'messages'"),
        (make("orphan", "exection"), r"'orphan' \(from plugin .*\): unknown parent 'exection'; did you mean "
                                     r"'execution'\?"),
        (make("time", None), r"pattern 'time' is defined twice: by built-in fake_generic and by plugin"),
    ],
)
def test_invalid_plugins_are_rejected_with_their_origin(monkeypatch, builtins, obj, message):
    monkeypatch.setattr(registry, "_entry_points", lambda: [FakeEntryPoint("x", obj)])
    with pytest.raises(PatternError, match=message):
        registry.load_patterns()


def test_plugin_constructor_errors_are_reported(monkeypatch, builtins):
    def boom(self):
        raise RuntimeError("needs a config file")

    cls = make("needs_cfg", "time", __init__=boom)
    monkeypatch.setattr(registry, "_entry_points", lambda: [FakeEntryPoint("cfg", cls)])
    with pytest.raises(PatternError, match=r"creating P_needs_cfg\(\) failed: RuntimeError: needs a config file"):
        registry.load_patterns()


def test_hierarchy_cycle_is_reported(monkeypatch, builtins):
    eps = [FakeEntryPoint("x", [make("loop_a", "loop_b"), make("loop_b", "loop_a")])]
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    with pytest.raises(PatternError, match=r"cycle in the metric hierarchy: loop_a -> loop_b -> loop_a"):
        registry.load_patterns()


def test_dependency_cycle_is_reported(monkeypatch, builtins):
    eps = [FakeEntryPoint("x", [make("dep_a", "time", depends=("dep_b",)),
                                make("dep_b", "time", depends=("dep_a",))])]
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    with pytest.raises(PatternError, match=r"cycle in pattern dependencies: 'dep_a' \(from plugin"):
        registry.load_patterns()


def test_self_dependency_is_reported(monkeypatch, builtins):
    monkeypatch.setattr(registry, "_entry_points", lambda: [FakeEntryPoint("x", make("selfish", depends=("selfish",)))])
    with pytest.raises(PatternError, match=r"'selfish' .*depends on itself"):
        registry.load_patterns()


def test_plugin_depending_on_builtin_result_runs_after_it(monkeypatch, builtins):
    eps = [FakeEntryPoint("x", make("ratio_thing", "visits", depends=("omp_time",)))]
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    got = names(registry.load_patterns(["ratio_thing"]))
    assert got.index("omp_time") < got.index("ratio_thing")
    assert got.index("visits") < got.index("ratio_thing")


# --------------------------------------------------------------------------
# reports
# --------------------------------------------------------------------------
def test_hierarchy_is_preorder_with_depths(builtins):
    tree = [(d, p.name) for d, p in registry.hierarchy()]
    assert tree == [(0, "time"), (1, "execution"), (2, "omp_time"), (1, "idle"), (0, "visits")]
    text = registry.format_hierarchy()
    assert text.splitlines()[2] == "    omp_time [sec]  Omp_Time  (built-in fake_omp)"
    assert registry.format_hierarchy(origins=False).splitlines()[4] == "visits [occ]  Visits"


def test_optional_dependency_orders_but_is_not_pulled_in(monkeypatch, builtins):
    user = make("uses_idle_if_there", "visits", optional_depends=("idle",))
    monkeypatch.setattr(registry, "_entry_points", lambda: [FakeEntryPoint("x", user)])
    assert names(registry.load_patterns(["uses_idle_if_there"])) == ["visits", "uses_idle_if_there"]
    got = names(registry.load_patterns())
    assert got.index("idle") < got.index("uses_idle_if_there")


def test_all_patterns_equals_loading_everything(builtins):
    assert names(registry.all_patterns()) == names(registry.load_patterns())


def test_real_builtins_load_together():
    """Whatever built-in modules exist today load, validate and order together."""
    pats = registry.load_patterns(plugins=False)
    got = names(pats)
    assert len(got) == len(set(got))
    for i, p in enumerate(pats):
        if p.parent in got and p.name not in registry._order_deps(pats[got.index(p.parent)]):
            assert got.index(p.parent) < i, p.name
        for d in registry._order_deps(p):
            if d in got:
                assert got.index(d) < i, (p.name, d)


def test_a_pattern_without_compute_is_refused_when_loaded():
    from patterns.api import validate_pattern

    class NoCompute(Pattern):
        name = "no_compute"
        display_name = "No compute"
        description = "A pattern that forgot its compute step."
        diagnosis = "None."

    with pytest.raises(PatternError, match=r"'no_compute'.*no compute step"):
        validate_pattern(NoCompute())
