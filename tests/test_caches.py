"""One registry of caches: every process-wide cache is in it, and ``clear_caches`` empties all."""

from __future__ import annotations

import ast
from pathlib import Path

import groundlock
from groundlock import clear_caches, grounded_answer_chain
from groundlock._caches import cache_report
from tests.builders import sample_bundle

PACKAGE = Path(groundlock.__file__).parent
FUNCTOOLS_CACHES = {"cache", "lru_cache"}


def _functools_caches(tree: ast.AST) -> list[int]:
    lines: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "functools":
            lines += [node.lineno for a in node.names if a.name in FUNCTOOLS_CACHES]
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in FUNCTOOLS_CACHES
            and isinstance(node.value, ast.Name)
            and node.value.id == "functools"
        ):
            lines.append(node.lineno)
    return lines


def test_no_module_keeps_a_cache_outside_the_registry() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_caches.py"
        and (lines := _functools_caches(ast.parse(path.read_text("utf-8"))))
    }
    assert found == {}


def test_clear_caches_empties_every_cache_and_answers_stay_the_same() -> None:
    chain = grounded_answer_chain()
    before = chain.invoke(sample_bundle())
    held = {name: info.entries for name, info in cache_report().items() if info.entries}
    # a request warms caches under all three policies: frozen, counted and weighted
    assert "groundlock.prompts.template.load_template" in held  # frozen
    assert "groundlock.core.firewall.polarity.clauses" in held  # counted
    assert any(name.startswith("groundlock.text.sanitize.safe_normalize#") for name in held)
    assert len(held) >= 15
    clear_caches()
    assert {name: info.entries for name, info in cache_report().items() if info.entries} == {}
    after = grounded_answer_chain().invoke(sample_bundle())
    ignore = {"latency_ms"}
    assert after.model_dump(exclude=ignore) == before.model_dump(exclude=ignore)


def test_a_long_text_is_computed_but_not_kept_by_a_text_keyed_cache() -> None:
    from groundlock.core.firewall.lexicon import plain  # noqa: PLC0415

    clear_caches()
    short, long = "Torque to 45 Nm.", "Torque to 45 Nm. " * 1000
    assert plain(long) == plain(long)  # same answer, computed twice
    plain(short)
    plain(short)
    info = plain.cache_info()
    assert (info.currsize, info.hits) == (1, 1)  # only the short text was kept
