"""The import graph: every arrow points down, there are no circles, and names are unique.

The layers, lowest first. A package may import from its own layer's lower neighbours and
from any lower layer, never from a higher one (an "upward arrow"), lazily or not. The
pure core in particular imports neither LangChain nor the stores: it is the part of
groundlock a reader can check without knowing either.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import groundlock

PACKAGE = Path(groundlock.__file__).parent

LAYERS: list[set[str]] = [
    {"errors", "_version", "_frozen", "_caches", "_lazy"},
    {"citations"},
    {"text"},
    {"contracts", "prompts", "policies"},
    {"core"},
    {"_lc", "stores", "lakehouse"},
    {"providers"},
    {"runnables"},
    {"chains"},
    {"serve", "spark"},
    {"cli"},
    {"<face>"},  # groundlock/__init__.py: the package face re-exports everything
    {"__main__"},  # python -m groundlock: the command line, from the top
]
LEVEL = {name: level for level, names in enumerate(LAYERS) for name in names}
EXTERNAL_SERVICES = ("langchain", "langchain_core", "langchain_openai", "langserve", "langsmith")


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _room(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "<face>"
    return parts[1]


def _imports(path: Path, *, top_level_only: bool) -> set[str]:
    """Modules ``path`` imports; with ``top_level_only``, those run at import time."""
    tree = ast.parse(path.read_text("utf-8"))
    nodes: list[ast.AST] = []
    if top_level_only:
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            nodes.extend(ast.walk(node))
    else:
        nodes = list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


MODULES = {_module(path): path for path in PACKAGE.rglob("*.py")}


def test_every_room_has_a_layer() -> None:
    rooms = {_room(module) for module in MODULES}
    assert rooms <= set(LEVEL), rooms - set(LEVEL)


def test_no_arrow_points_up() -> None:
    upward: list[str] = []
    for module, path in sorted(MODULES.items()):
        room = _room(module)
        for target in _imports(path, top_level_only=False):
            if not target.startswith("groundlock.") or target not in MODULES:
                continue
            if LEVEL[_room(target)] > LEVEL[room]:
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_the_core_imports_neither_langchain_nor_the_stores() -> None:
    offenders = [
        f"{module} -> {target}"
        for module, path in sorted(MODULES.items())
        if _room(module) == "core"
        for target in _imports(path, top_level_only=False)
        if target.split(".")[0] in EXTERNAL_SERVICES or target.startswith("groundlock.stores")
    ]
    assert offenders == []


def test_no_circle_among_modules() -> None:
    graph = {
        module: {
            target
            for target in _imports(path, top_level_only=True)
            if target in MODULES and target != module
        }
        for module, path in MODULES.items()
    }
    seen: dict[str, int] = {}  # 1: on the current path, 2: done
    circles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        seen[module] = 1
        for target in sorted(graph[module]):
            if seen.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in seen:
                visit(target, [*path, target])
        seen[module] = 2

    for module in sorted(graph):
        if module not in seen:
            visit(module, [module])
    assert circles == []


def test_module_names_are_unique() -> None:
    names = Counter(
        path.name
        for path in PACKAGE.rglob("*.py")
        if path.name not in {"__init__.py", "__main__.py"}
    )
    assert [name for name, count in names.items() if count > 1] == []


def test_no_firewall_rule_imports_another_rule() -> None:
    """Rules share what they know about an answer through its typed reading, not each other.

    A rule that imported another's helper would make one rule's change move the other's
    verdicts, and the order of their runs would matter (the shared memo this replaced).
    """
    rules = "groundlock.core.firewall.rules."
    offenders = [
        f"{module} -> {target}"
        for module, path in sorted(MODULES.items())
        if module.startswith(rules)
        for target in _imports(path, top_level_only=False)
        if target.startswith(rules) and target.rsplit(".", 1)[0] != module and target != module
    ]
    assert offenders == []
