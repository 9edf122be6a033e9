"""The import contract of iosched's layout (issue 26), checked on the source
text with :mod:`ast` (nothing is imported):

* the algorithm layers -- the scheduler core (``iosched.sched``), the engine
  (``iosched.engine``), the Batsim conventions (``iosched.batsim``) and the
  family algorithm packages (``iosched.bb``, ``iosched.locality``,
  ``iosched.listpack``, ``iosched.pfsbw``, ``iosched.dad``) -- never import
  the runner, campaigns, analysis, the experiment wing, the API, the demo
  or the scheduler launchers;
* no module holds an absolute filesystem path (the repository root, the
  shared data and scratch folders are resolved in :mod:`iosched.paths`);
* every default folder of the project (the package data, the checkout's
  ``platforms/``, ``results/``, ``schedulers/``, the shared data folder) is
  resolved in :mod:`iosched.paths` alone: no other module joins one of those
  names onto a path, nor reads ``REPO_ROOT`` (but the experiment wing's
  side-by-side runs of two source trees, :mod:`iosched.experiments.common`);
* iosched's packages import each other without a cycle (each package of
  the experiment wing counts as one: the campaigns use its platform
  generators and its benchmarks time the campaigns).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: packages holding algorithm or model code only
ALGORITHMS = ("iosched.sched", "iosched.engine", "iosched.batsim", "iosched.bb", "iosched.locality",
              "iosched.listpack", "iosched.pfsbw", "iosched.dad")
#: what they must never import
ABOVE = ("iosched.run", "iosched.campaign", "iosched.analysis", "iosched.experiments", "iosched.api",
         "iosched.demo", "iosched.schedulers")

#: an absolute POSIX path of two or more parts, or a Windows drive path
_ABSOLUTE = re.compile(r"(?:^|[\s\"'(=\[,])(/[\w.-]+(?:/[\w.-]+)+|[A-Za-z]:\\[\w.-]+)")
#: the operating system's interfaces, not files of a machine: allowed
_SYSTEM = ("/proc/", "/sys/", "/dev/", "/bin/sh")


def _modules(src: Path = SRC) -> dict[str, Path]:
    """Dotted module name -> file, for every module under ``src/iosched``."""
    out = {}
    for path in sorted((src / "iosched").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path) -> set[str]:
    """The iosched modules (dotted, possibly ``module.attribute``) that the
    module ``name`` at ``path`` imports, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
    return {m for m in found if m == "iosched" or m.startswith("iosched.")}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _package(module: str) -> str:
    """The node of the package graph a module belongs to: ``iosched.X`` for
    the subpackage or top-level module X (``iosched`` itself for the root);
    the experiment wing is a set of packages, each its own node
    (``iosched.experiments.bench``, ``iosched.experiments.platforms``, ...)."""
    parts = module.split(".")
    return ".".join(parts[:3] if parts[:2] == ["iosched", "experiments"] else parts[:2])


def _violations(src: Path = SRC) -> list[str]:
    bad = []
    for name, path in _modules(src).items():
        if not any(_within(name, p) for p in ALGORITHMS):
            continue
        for imported in sorted(_imports(name, path)):
            if any(_within(imported, p) for p in ABOVE):
                bad.append(f"{name} imports {imported}")
    return bad


def _absolute_paths(src: Path = SRC) -> list[str]:
    bad = []
    for name, path in _modules(src).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        # the text right after an f-string's {field} continues a path: not absolute
        continued = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)
                     for prev, v in zip(n.values, n.values[1:]) if isinstance(prev, ast.FormattedValue)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = ("x" if id(node) in continued else "") + node.value
                for m in _ABSOLUTE.finditer(text):
                    text = m.group(1)
                    if not text.startswith(_SYSTEM):
                        bad.append(f"{name}:{node.lineno}: {text}")
    return bad


#: folder names that only :mod:`iosched.paths` joins onto a path
_DEFAULT_FOLDERS = ("platforms", "results", "schedulers", "shared", "data", "launchers")
#: joins of those names that are no default folder: (module, name)
_NOT_DEFAULTS = {("iosched.campaign.inputs", "platforms"),          # a campaign's own inputs/platforms
                 ("iosched.experiments.bench.tree_run", "schedulers")}  # another source tree's launchers
#: the modules that may read ``REPO_ROOT``
_REPO_ROOT_READERS = ("iosched.paths", "iosched.experiments.common")


def _default_paths_outside_paths(src: Path = SRC) -> list[str]:
    """``path / "<default folder>"`` joins and ``REPO_ROOT`` reads outside
    :mod:`iosched.paths`, as ``module:line: what``."""
    bad = []
    for name, path in _modules(src).items():
        if name == "iosched.paths":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
                    and isinstance(node.right, ast.Constant) and node.right.value in _DEFAULT_FOLDERS
                    and (name, node.right.value) not in _NOT_DEFAULTS):
                bad.append(f"{name}:{node.lineno}: / {node.right.value!r}")
            elif (isinstance(node, ast.Name) and node.id == "REPO_ROOT"
                  or isinstance(node, ast.alias) and node.name == "REPO_ROOT") \
                    and name not in _REPO_ROOT_READERS:
                bad.append(f"{name}:{getattr(node, 'lineno', 0)}: REPO_ROOT")
    return bad


def _package_graph(src: Path = SRC) -> dict[str, set[str]]:
    modules = _modules(src)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        if name == "iosched":  # the root's lazy __getattr__ is no package edge
            continue
        here = _package(name)
        graph.setdefault(here, set())
        for imported in _imports(name, path):
            while imported not in modules and "." in imported:  # module.attribute -> module
                imported = imported.rsplit(".", 1)[0]
            there = _package(imported)
            if there != here and there != "iosched":
                graph[here].add(there)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one node
    (Tarjan), as the sorted list of its nodes."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_source_tree_is_found():
    mods = _modules()
    assert "iosched.sched.core" in mods and "iosched.engine" in mods
    assert len(mods) > 100


def test_algorithm_packages_never_import_what_sits_above_them():
    assert _violations() == []


def test_no_absolute_path_in_the_code():
    assert _absolute_paths() == []


def test_default_folders_are_resolved_in_paths_alone():
    assert _default_paths_outside_paths() == []


def test_no_import_cycle_between_packages():
    assert _cycles(_package_graph()) == []


# The checks themselves catch what they are meant to catch.

def _tree(tmp_path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / "src" / "iosched" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path / "src"


def test_an_upward_import_is_reported(tmp_path):
    src = _tree(tmp_path, {"__init__.py": "", "sched/__init__.py": "", "run/__init__.py": "",
                           "sched/core.py": "from iosched.run.record import RECORD_FILE\n",
                           "locality/__init__.py": "", "locality/x.py": "from ..experiments import y\n",
                           "run/cli.py": "from iosched.sched import core\n"})
    assert _violations(src) == ["iosched.locality.x imports iosched.experiments",
                                "iosched.locality.x imports iosched.experiments.y",
                                "iosched.sched.core imports iosched.run.record",
                                "iosched.sched.core imports iosched.run.record.RECORD_FILE"]


def test_an_absolute_path_is_reported_and_a_relative_one_is_not(tmp_path):
    src = _tree(tmp_path, {"__init__.py": "", "a.py": 'D = "/work/shared/data/uppmax"\n'
                                                        'E = "../shared/data/x.swf"\n'
                                                        'F = "bytes/s and /proc/stat"\n'
                                                        'G = f"{x}/out/jobs.csv"\n'
                                                        'H = "default: /tmp/pfsbw-curve"\n'})
    assert _absolute_paths(src) == ["iosched.a:1: /work/shared/data/uppmax", "iosched.a:5: /tmp/pfsbw-curve"]


def test_a_default_folder_joined_outside_paths_is_reported(tmp_path):
    src = _tree(tmp_path, {"__init__.py": "", "paths.py": 'REPO_ROOT = x\nP = REPO_ROOT / "platforms"\n',
                           "a.py": 'from iosched.paths import REPO_ROOT\n'
                                   'P = REPO_ROOT / "results" / "demo"\n'
                                   'Q = out / "demo"\n'})
    assert _default_paths_outside_paths(src) == ["iosched.a:1: REPO_ROOT", "iosched.a:2: / 'results'",
                                                 "iosched.a:2: REPO_ROOT"]


def test_a_cycle_between_packages_is_reported(tmp_path):
    src = _tree(tmp_path, {"__init__.py": "", "a/__init__.py": "", "b/__init__.py": "",
                           "a/x.py": "from iosched.b import y\n", "b/y.py": "import iosched.a.x\n",
                           "c.py": "import iosched.a\n"})
    assert _cycles(_package_graph(src)) == [["iosched.a", "iosched.b"]]


@pytest.mark.parametrize("module", ALGORITHMS)
def test_each_algorithm_package_exists(module):
    assert module in _modules()
