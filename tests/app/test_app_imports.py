"""app/ uses the engine only through its public names: no private module, no `_` name, no
probe of sys.modules (issue 13: the app holds no numerics and no engine internals)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import engine

APP = Path(__file__).resolve().parents[2] / "app"
# the engine's public modules besides the package itself (design.md and docs/architecture.md)
PUBLIC_MODULES = {"engine", "engine.cdm", "engine.comparative", "engine.datasets",
                  "engine.device", "engine.gwas"}


def public(name: str) -> bool:
    """A name of the engine package the app may use."""
    return (not name.startswith("_")
            and (name in engine.__all__ or f"engine.{name}" in PUBLIC_MODULES))


def engine_uses(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, module the code imports, name it takes from that module or "") for every use of
    the engine in a module's code; ``engine.x`` counts as the name x of module engine."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, "") for a in node.names
                      if a.name.split(".")[0] == "engine"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "engine":
            found += [(node.lineno, node.module, a.name) for a in node.names]
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "engine"):
            found.append((node.lineno, "engine", node.attr))
    return found


def violations(source: str) -> list[str]:
    bad = []
    for line, module, name in engine_uses(ast.parse(source)):
        if module not in PUBLIC_MODULES:
            bad.append(f"line {line}: imports the private module {module}")
        elif name.startswith("_") or (module == "engine" and name and not public(name)):
            bad.append(f"line {line}: uses {module}.{name}, not a public name")
    if "sys.modules" in source:
        bad.append("probes sys.modules")
    return bad


@pytest.mark.parametrize("path", sorted(APP.rglob("*.py")), ids=lambda p: str(p.relative_to(APP)))
def test_app_module_uses_only_public_engine_names(path):
    assert violations(path.read_text()) == []


@pytest.mark.parametrize("source", [
    "from engine.regression.backends import BACKENDS",
    "from engine.peers import naive_loglik",
    "import engine.fit",
    "import engine\nengine.backends.BACKENDS",
    "from engine import _private",
    "from engine.cdm import _helper",
    "import sys\nsys.modules.get('engine.fit')",
])
def test_the_check_catches_private_uses(source):
    assert violations(source)


def test_the_check_accepts_public_uses():
    assert violations("import engine\nfrom engine import cdm, datasets\n"
                      "from engine import naive_loglik\nengine.fit\nengine.L1\n"
                      "engine.SOLVERS\nengine.device.description()") == []
