"""The package's layers (docs/architecture.md): imports run from the command line and the applications down to
the units and the architectures, never up. The imports are read from the sources (every `import` and
`from ... import`, at module level or inside a function). The few upward imports that remain are listed
here with why; the test fails on any other, and on a listed one that is gone (so the list only shrinks)."""
from __future__ import annotations

import ast
import os

import jaxsimt

ROOT = os.path.dirname(os.path.abspath(jaxsimt.__file__))

# lowest first; a module may import its own layer and the layers below it. A layer is a folder of the package
# (`jaxsimt/units/`, ...), except the base and the front ends, which are top-level modules and `jaxsimt/ptx/`.
LAYERS = {
    "base": "errors types exact arch demangle ptx.errors",
    "program": "program",
    "units": "units",
    "machine": "machine",
    "timing": "timing",
    "run": "run",
    "front ends": "dsl tensor cuda ptx",
    "api": "",  # the package itself (jaxsimt/__init__.py): the public names
    "applications": "apps kernels",
    "cli": "cli",
}

# Upward imports still there: (importer, imported): why.
KNOWN = {
    ("jaxsimt.run.launch", "jaxsimt.apps.html_report"): "LaunchResult.report, the HTML report of a result",
}


def _modules() -> dict:
    out = {}
    for dirpath, dirnames, files in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in ("data", "__pycache__")]
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(dirpath, f)
    return out


def _imports(name: str, path: str, known: dict) -> set:
    pkg = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "jaxsimt"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            if base.split(".")[0] != "jaxsimt":
                continue
            for a in node.names:  # `from jaxsimt import alu` imports the module jaxsimt.units.alu
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return out


def _layer_of() -> dict:
    layer = {"jaxsimt": list(LAYERS).index("api")}
    for i, mods in enumerate(LAYERS.values()):
        for m in mods.split():
            layer["jaxsimt." + m] = i
    return layer


def _find(layer: dict, mod: str):
    while mod not in layer and "." in mod:
        mod = mod.rsplit(".", 1)[0]
    return layer.get(mod)


def test_every_module_has_a_layer():
    layer = _layer_of()
    assert [m for m in _modules() if _find(layer, m) is None or (m not in layer and m.count(".") == 1)] == []


def test_imports_run_down_the_layers():
    mods, layer = _modules(), _layer_of()
    up = set()
    for name, path in mods.items():
        for dep in _imports(name, path, mods):
            if _find(layer, dep) > _find(layer, name):
                up.add((name, dep))
    names = list(LAYERS)
    assert up - set(KNOWN) == set(), [f"{a} ({names[_find(layer, a)]}) imports {b} ({names[_find(layer, b)]})"
                                      for a, b in sorted(up - set(KNOWN))]
    assert set(KNOWN) - up == set(), "no longer imported upward: remove from KNOWN"
