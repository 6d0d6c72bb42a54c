"""Build the firewall's verdict corpus: a few thousand answers over fixed bundles.

The corpus pins verdicts: ``tests/firewall/test_corpus.py`` runs every answer through R5
under each frozen ruleset and compares the result (status, reason, message and metrics) with
the verdict frozen in ``verdicts_<ruleset>.jsonl``. A changed verdict under an existing
ruleset name fails; changing verdicts means a new ruleset version.

The answers come from three places, all fixed (a seeded generator, no clock):

* every string literal of the firewall's older test modules (hostile and tricky wording:
  malformed anchors, links, refusals, injections, segmentation traps), as written and with an
  anchor appended;
* answers composed from each bundle's own evidence sentences: quotes, wrong and missing
  anchors, merged and listed sentences, tables, headings, citation lists;
* the same quotes perturbed: a digit, a unit, a negation, a name, a word changed.

A ruleset of the ``[Source: file, p.N]`` grammar (``source_page_v1``, ``source_page_v2``)
judges the same answers written in its markers (:func:`paged_bundles`): each ``[Cn]`` becomes
the marker of entry ``n``, as ``tests/firewall/eval/presets.py`` translates the evaluation
sets.

Run ``python -m tests.firewall.corpus.build`` to rewrite ``answers.jsonl`` (only when the
corpus itself is meant to change), then ``python -m tests.firewall.corpus.freeze <POLICY>``
with the code whose verdicts are to be frozen.
"""

from __future__ import annotations

import ast
import json
import random
import re
from pathlib import Path
from typing import Any

from tests.builders import make_bundle, make_row, sample_bundle
from tests.firewall.eval.presets import preset_bundle

HERE = Path(__file__).parent
ROOT = HERE.parent.parent.parent
ANSWERS = HERE / "answers.jsonl"
_SOURCES = (
    "tests/core/test_validate.py",
    "tests/chains/test_injection.py",
    "tests/providers/test_extractive.py",
    "tests/text/test_unsafe.py",
    "tests/text/test_sentences.py",
)
_VALIDATE_ROWS = (
    "Replace the case drain filter element every 500 operating hours. "
    "Depressurise the system before removal, e.g. at the hydraulic panel.",
    "Case drain pressure must not exceed 3.5 bar at 1,800 rpm (pump software v1.2).",
    "No evidence of corrosion was found on the pump housing during inspection IR-7.",
)


def bundles() -> dict[str, dict[str, Any]]:
    """The corpus's fixed bundles by name."""
    validate = make_bundle(
        [
            make_row(0, chunk_id="amm-c4", knowledge_id="AMM-29-11", chunk_text=_VALIDATE_ROWS[0]),
            make_row(1, chunk_id="amm-c5", knowledge_id="AMM-29-11", chunk_text=_VALIDATE_ROWS[1]),
            make_row(
                2,
                chunk_id="ir-c2",
                knowledge_id="IR-7",
                chunk_text=_VALIDATE_ROWS[2],
                knowledge_type_effective="INSPECTION_RECORD",
            ),
        ]
    )
    return {"pump": sample_bundle(), "validate": validate}


PAGED_POLICY = "SOURCE_PAGE_POLICY_V1"
"""The preset whose marker style the ``source_page`` rulesets read the corpus in."""
MANUAL_FILE = "amm-29-11.md"
"""The file of the validate bundle's manual: ``.md`` is also a top-level domain."""


def paged_bundles(manual_file: str = MANUAL_FILE) -> dict[str, dict[str, Any]]:
    """The bundles with the ``source_file`` and ``page`` a ``[Source: file, p.N]`` marker names.

    The pump bundle's documents are PDFs (``Tug AMM 29-11-00.pdf``, ...); the validate
    bundle's manual is ``manual_file`` (pages 2 and 5), a Markdown file unless told
    otherwise, and its inspection record ``ir-7.pdf`` (page 8). A marker naming a Markdown
    file holds a host name to a linkifier: what ``source_page_v2`` reads apart from
    ``source_page_v1``.
    """
    files = {"AMM-29-11": manual_file, "IR-7": "ir-7.pdf"}
    paged = {name: preset_bundle(bundle, PAGED_POLICY) for name, bundle in bundles().items()}
    for row in paged["validate"]["results"]:
        row["source_file"] = files[row["knowledge_id"]]
    return paged


def _literals() -> list[str]:
    found: dict[str, None] = {}
    for source in _SOURCES:
        tree = ast.parse((ROOT / source).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if 3 <= len(text) <= 2000 and re.search(r"[^\W_]", text) and "\n\n\n" not in text:
                    found[text] = None
    return list(found)


_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_SWAPS = (
    ("500", "250"),
    ("3.5", "5.3"),
    ("1,800", "1,600"),
    ("45", "54"),
    ("60", "45"),
    ("must not", "may"),
    ("not ", ""),
    ("bar", "psi"),
    ("Nm", "lbf ft"),
    ("hours", "days"),
    ("every", "after"),
    ("before", "after"),
    ("above", "below"),
    ("Replace", "Inspect"),
    ("filter", "pump"),
    ("0 bar", "2 bar"),
    ("10 seconds", "10 minutes"),
)


def _composed(name: str, bundle: dict[str, Any], rng: random.Random) -> list[str]:
    entries = [row["chunk_text"] for row in bundle["results"]]
    quotes = [
        (i, s.strip()) for i, text in enumerate(entries) for s in _SPLIT_RE.split(text) if s.strip()
    ]
    answers: list[str] = []
    for i, quote in quotes:
        other = (i + 1) % len(entries)
        answers += [
            f"{quote} [C{i}]",
            f"{quote}[C{i}]",
            f"[C{i}] {quote}",
            f"{quote}",
            f"{quote} [C{other}]",
            f"{quote} [C{i}][C{other}]",
            f"According to [C{i}], {quote[0].lower()}{quote[1:]}",
            f"- {quote} [C{i}]",
            f"**{quote}** [C{i}]",
            f"{quote} [C{i}]\nSources: [C{i}]",
            f"{quote} [C{i}]\nSources: [C{other}]",
            f"## Answer\n{quote} [C{i}]",
            f"| Item | Value |\n|---|---|\n| {quote} | [C{i}] |",
        ]
        for old, new in _SWAPS:
            if old in quote:
                answers.append(f"{quote.replace(old, new, 1)} [C{i}]")
    for _ in range(60):
        picked = rng.sample(quotes, k=min(len(quotes), rng.randint(2, 4)))
        joiner = rng.choice(["\n", " ", "\n- ", "\n\n"])
        answers.append(joiner.join(f"{q} [C{i}]" for i, q in picked))
        dropped = rng.randrange(len(picked))
        answers.append(
            " ".join(q if k == dropped else f"{q} [C{i}]" for k, (i, q) in enumerate(picked))
        )
    return answers


def build() -> list[dict[str, Any]]:
    """The corpus rows, in a fixed order."""
    rng = random.Random(20261124)
    rows: list[dict[str, Any]] = []
    literals = _literals()
    for name, bundle in bundles().items():
        answers = [*literals, *(f"{text} [C0]" for text in literals)]
        answers += _composed(name, bundle, rng)
        rows.extend(
            {"bundle": name, "answer": answer, "finish_reason": "stop"}
            for answer in dict.fromkeys(answers)
        )
    rows.extend(
        {"bundle": "pump", "answer": answer, "finish_reason": "length"} for answer in literals[:40]
    )
    for index, row in enumerate(rows):
        row["id"] = f"{row['bundle']}-{index:05d}"
    return rows


if __name__ == "__main__":
    corpus = build()
    with ANSWERS.open("w", encoding="utf-8") as out:
        for row in corpus:
            out.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"{len(corpus)} answers written to {ANSWERS.relative_to(ROOT)}")  # noqa: T201  (a command-line tool)
