"""The floors of docs/architecture.md, checked on the source: each engine family imports only
the families beneath it, each app folder only the shell, the data floor and the pages it names,
no import circle in engine/ or app/, no module reaching for another package's private (_) names,
the engine free of GUI packages, and ``import engine`` light (the app on the engine's public
names only: tests/app/test_app_imports.py)."""
from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
GUI = {"panel", "bokeh", "holoviews", "param"}


def _modules(package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = {**_modules("engine"), **_modules("app")}


@functools.cache
def _imports(name: str, path: Path) -> tuple[tuple[str, list[str]], ...]:
    """(imported module, imported names) for every import statement, nested ones included;
    each module parsed once for all the tests."""
    return tuple(_each_import(name, path))


def _each_import(name: str, path: Path):
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            yield base, [a.name for a in node.names]


def _edges():
    """module -> the engine/app modules it imports (``from pkg import mod`` counts as mod)."""
    graph = {}
    for name, path in MODULES.items():
        targets = set()
        for base, names in _imports(name, path):
            subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in MODULES]
            targets.update(subs or ([base] if base in MODULES else []))
        graph[name] = targets - {name}
    return graph


# Each family of engine/ and the families it may import (docs/architecture.md's floors, bottom
# up).  A family not listed here fails the test: a new folder takes its floor explicitly.
FLOORS = {
    "core": set(),
    "data": {"core"},
    "sccs": {"core", "data"},
    "descriptive": {"core", "data"},
    "regression": {"core", "data", "sccs"},
    "inference": {"core", "data", "regression"},
    "prediction": {"core", "data", "descriptive", "regression", "inference"},
    "missing": {"core", "data", "regression"},
    "bayes": {"core", "data"},
    "gwas": {"core", "data"},
    "comparative": {"core", "data", "descriptive", "regression", "inference"},
    "sensitivity": {"core", "data", "descriptive", "regression", "inference", "prediction",
                    "comparative"},
    "cdm": {"core", "data", "sccs", "descriptive", "regression", "inference", "prediction",
            "comparative"},
}
# Inside regression/, the solvers talk to the model interface: they import the priors only.
SOLVERS_MAY_IMPORT = {"engine.regression.priors"}


# Each folder of app/ and the folders it may import (docs/architecture.md's app floors): the
# shell knows no page, the data floor only the shell, a page the shell and the data floor, and
# the few pages built on others name them. app/main.py (the session) may import every folder.
APP_FLOORS = {
    "shell": set(),
    "data": {"shell"},
    "describe": {"shell", "data"},
    "survival": {"shell", "data", "describe"},   # Results draws Describe's Kaplan-Meier choices
    "sensitivity": {"shell", "data"},
    "omop": {"shell", "data", "survival"},       # the study's fit is kept in the workbench
    "sccs": {"shell", "data"},
    "bayes": {"shell", "data"},
    "gwas": {"shell", "data"},
    "timing": {"shell", "data"},
    "export": {"shell", "data", "describe", "survival"},
    "analyses": {"shell", "data", "survival", "omop"},  # an analysis holds their states
}
APP_TOP = {"app", "app.main", "app.serve"}


def _family(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "engine" else None


def test_every_family_imports_only_the_floors_beneath_it():
    bad = []
    for name, targets in _edges().items():
        family = _family(name)
        if family is None or name.startswith("app"):
            continue
        if family not in FLOORS:
            bad.append(f"{name}: engine/{family}/ has no floor in FLOORS")
            continue
        for target in targets:
            other = _family(target)
            if other is None and target == "engine":
                bad.append(f"{name} imports the engine package itself")
            elif other not in (None, family) and other not in FLOORS[family]:
                bad.append(f"{name} -> {target}: {family} may not import {other}")
    assert not bad, bad


def test_every_app_folder_imports_only_the_floors_beneath_it():
    """A page folder imports the shell, the data floor and the pages APP_FLOORS names, never
    another page; every module lives in a folder with a floor (or is the session's top)."""
    bad = []
    for name, targets in _edges().items():
        if not name.startswith("app") or name in APP_TOP:
            continue
        folder = name.split(".")[1]
        if folder not in APP_FLOORS:
            bad.append(f"{name}: app/{folder}/ has no floor in APP_FLOORS")
            continue
        for target in targets:
            other = target.split(".")[1] if target.startswith("app.") else None
            if target in APP_TOP - {"app"}:
                bad.append(f"{name} imports {target}, the top of the app")
            elif other not in (None, folder) and other not in APP_FLOORS[folder]:
                bad.append(f"{name} -> {target}: app/{folder}/ may not import app/{other}/")
    assert not bad, bad


def test_solvers_import_only_the_priors():
    bad = [f"{name} -> {target}" for name, targets in _edges().items()
           if name.startswith("engine.regression.solvers")
           for target in targets
           if target.startswith("engine") and not target.startswith("engine.regression.solvers")
           and target not in SOLVERS_MAY_IMPORT]
    assert not bad, bad


def test_no_import_circle():
    graph = _edges()
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    # A package's __init__ re-exporting its own modules is not a circle of ideas: a module of
    # the package importing a sibling through the package is what the check is after.
    real = [c for c in cycles if not any(a.startswith(b + ".") or b.startswith(a + ".")
                                         for a, b in zip(c, c[1:]))]
    assert not real, "import circles: " + "; ".join(" -> ".join(c) for c in real)


def test_no_private_name_of_another_package():
    bad = []
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for base, names in _imports(name, path):
            if not base.startswith(("engine", "app")):
                continue
            private = [n for n in names if n.startswith("_")]
            if private and package not in (base, base.rpartition(".")[0]):
                bad.append(f"{name}: from {base} import {', '.join(private)}")
    assert not bad, bad


def test_engine_imports_no_gui_package():
    bad = [f"{name}: {base}" for name, path in _modules("engine").items()
           for base, _ in _imports(name, path) if base.split(".")[0] in GUI]
    assert not bad, bad


HEAVY = ["duckdb", "lifelines", "panel", "cupy"]


def test_import_engine_is_light():
    """A fresh interpreter (one for all the packages: each costs 2.5 s on 2 cores)."""
    code = f"import sys, engine; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [], f"import engine imported {done.stdout.strip()}"


def test_cuda_flags_equal_the_row_flags():
    """The CUDA header's FLAG_* defines carry engine.row_flags' values (the GPU layout's
    STRATUM_TAIL stays on the host)."""
    from engine.regression import row_flags

    header = (ROOT / "engine" / "regression" / "backends" / "cuda" / "flag_scan.cuh").read_text()
    defines = {line.split()[1]: int(line.split()[2]) for line in header.splitlines()
               if line.startswith("#define FLAG_")}
    expected = {f"FLAG_{n}": int(getattr(row_flags, n))
                for n in ("EVENT", "HEAD", "GROUP_END", "GROUP_HEAD", "STRATUM_TAIL")}
    assert defines and defines == {k: expected[k] for k in defines}
