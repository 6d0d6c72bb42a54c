"""The labelled evaluation set translated into each preset's citation style.

Every answer of the set cites its bundle's entries as ``[C0]``, ``[C1]``, ... in entry order.
A preset policy reads the same evidence through another grammar, so the set is translated:

* **Rows.** Each row of the bundle gains what the presets cite: a ``semantic_id`` derived
  from its document and position (``AML_POL_04_0``, ``REVIEW_AML_12_K1_1``), a
  ``citation_label`` (its source, else its document id), a ``document_id`` (its knowledge id),
  a ``source_file`` (the document part of its source, ``Tug AMM 29-11-00.pdf``; the bundle's
  id when it names no source, so every entry of a review bundle is a page of one file) and a
  ``page``, distinct for every row of a file (taken from ``p. 14`` in its source when it has
  one). Rows of one document therefore share a file and differ in page, as 004 has them.
  ``knowledge_type_effective`` is mapped to a type the preset admits (:data:`KIND_FOR`), or
  left out, which every preset accepts: it only feeds R2's domain gate, never R5.
* **Markers.** Every well-formed ``[Cn]`` becomes the preset's marker for entry ``n``
  (``[C0][C2]`` -> ``[CIT-01][CIT-03]``), written here from the spec, not by the library, so
  the translation does not inherit a grammar's bug.
* **Malformed markers** become the preset's analogous malformed shape (:data:`SHAPES`, one
  translation per preset): ``[c0]`` -> ``[amm_29_11_00_0]``, ``[cit-01]``,
  ``[source: f.pdf, p.14]``; ``(C0)``, ``【C0】``, ``{C0}`` -> the same brackets around the
  marker's body; ``[C0, C1]`` -> ``[A_0, B_1]``, ``[CIT-01, CIT-02]``,
  ``[Source: f.pdf, p.14; Source: g.pdf, p.15]``; ``[C0-C2]`` -> ``[A_0-C_2]``,
  ``[CIT-01-CIT-03]``, ``[Source: f.pdf, pp.14-8]``; ``[C 0]`` -> ``[ A_0 ]``,
  ``[CIT 01]``, ``[Source: f.pdf, p. 14]``; ``C0]`` -> ``A_0]``, ``CIT-01]``,
  ``Source: f.pdf, p.14]``; a Cyrillic C (U+0421) -> the marker's first letter as its
  Cyrillic twin; the template's ``[Cn]`` -> ``[semantic_id]``, ``[CIT-NN]``,
  ``[Source: <file>, p.<N>]``. Where a preset has no analogue the answer is
  *untranslatable*: ``[C01]`` (a leading zero) under ``[semantic_id]`` and
  ``[Source: file, p.N]`` (neither pads a number; ``[CIT-2]`` under ``[CIT-NN]``), a
  Cyrillic C when the marker starts with no letter that has a Cyrillic twin, any
  anchor-like shape :func:`groundlock.citations.bracket_c.scan_anchors` counts as malformed
  that no entry of :data:`SHAPES` recognises, and a refusal variant (``NO_EVIDENCE`` without
  the exact refusal sentence). They are reported with a count and left out of agreement.
* **Refusals.** The default policy's exact refusal text becomes the preset's.

Answers without markers stay as they are. The hand-written sets hold no malformed marker,
no marker beyond the bundle's entries and no refusal (every answer cites), so on them the
mapping of malformed shapes and refusals is exercised only by
``tests/firewall/test_preset_evalset.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from groundlock import ValidationResult, load_policy, validate_text
from groundlock.citations.bracket_c import ANCHOR_RE, scan_anchors
from tests.firewall.eval.evalset import Answer, EvalBundle, load_all

__all__ = [
    "DEFAULT",
    "KIND_FOR",
    "PRESETS",
    "SHAPES",
    "Judged",
    "Translation",
    "judge_set",
    "preset_bundle",
    "translate_answer",
]

DEFAULT = "R2_POLICY_V2"
"""The policy whose answers cite ``[Cn]``: what the presets are compared with."""
PRESETS = ("SEMANTIC_ID_POLICY_V1", "CIT_LABEL_POLICY_V1", "SOURCE_PAGE_POLICY_V1")
"""The preset policies, one per citation grammar."""

KIND_FOR: dict[str, tuple[str, ...]] = {
    "MAINTENANCE_PROCEDURE": ("MAINTENANCE_PROCEDURE", "PROCEDURE"),
    "INSPECTION_RECORD": ("INSPECTION_RECORD", "AUDIT_REPORT", "REPORT"),
    "FAILURE_REPORT": ("FAILURE_REPORT", "REPORT", "AUDIT_REPORT"),
    "OPERATING_MANUAL": ("OPERATING_MANUAL", "MANUAL", "PROCEDURE", "POLICY_DOCUMENT"),
    "SAFETY_NOTICE": ("SAFETY_NOTICE", "GUIDANCE", "POLICY_DOCUMENT"),
    "REGULATION": ("REGULATION",),
}
"""An eval knowledge type -> the types it may become, the first one a preset admits wins."""

_PAGE_IN_SOURCE_RE = re.compile(r"\bpp?\.\s*(\d+)")
_CYRILLIC_TWIN = str.maketrans(
    "ACEHIKMOPSTXaceiopsx",
    "\u0410\u0421\u0415\u041d\u0406\u041a\u041c\u041e\u0420\u0405\u0422\u0425\u0430\u0441\u0435\u0456\u043e\u0440\u0455\u0445",
)


# -- rows -----------------------------------------------------------------------------------


def _file_stem(source: str | None, fallback: str) -> str:
    """The document part of a source (before its first comma), as a file name can hold it."""
    stem = (source or fallback).split(",")[0]
    stem = re.sub(r"[.?!](?=\s|$)", "", stem)  # ``St. Louis`` -> ``St Louis``
    stem = re.sub(r"[\[\];/\\\"]", "-", stem)  # ``AML/KYC`` -> ``AML-KYC``
    return " ".join(stem.split())


def _semantic_id(document: str, position: int) -> str:
    """``AML-POL-04`` at position 0 -> ``AML_POL_04_0`` (002's ``IPC_420_0`` style)."""
    return re.sub(r"[^A-Za-z0-9]+", "_", document).strip("_").upper() + f"_{position}"


def _kind(kind: str | None, allowed: tuple[str, ...]) -> str | None:
    if kind is None or kind in allowed:
        return kind
    return next((k for k in KIND_FOR.get(kind, ()) if k in allowed), None)


def preset_bundle(bundle: dict[str, Any], policy: str) -> dict[str, Any]:
    """A copy of a ``RetrievalBundle`` dict whose rows carry every preset's citation fields.

    Works on any bundle (the eval set's, the benchmarks' ``make_row`` rows): a row's document
    is its ``knowledge_id`` (else its ``chunk_id``), its file the document part of its
    ``source_reference`` (else the request id's stem).
    """
    allowed = load_policy(policy).allowed_knowledge_types
    stem = str(bundle["request_id"]).removeprefix("eval-")
    used: dict[str, set[int]] = {}
    rows = []
    for position, row in enumerate(bundle["results"]):
        document = row.get("knowledge_id") or row["chunk_id"]
        source = row.get("source_reference")
        file = _file_stem(source, stem) + ".pdf"
        found = _PAGE_IN_SOURCE_RE.search(source or "")
        page = int(found.group(1)) if found else 2 + 3 * position
        while page in used.setdefault(file, set()):
            page += 1
        used[file].add(page)
        translated = {
            **row,
            "semantic_id": _semantic_id(document, position),
            "citation_label": source or document,
            "document_id": document,
            "source_file": file,
            "page": page,
        }
        kind = _kind(row.get("knowledge_type_effective"), allowed)
        if kind is None:
            translated.pop("knowledge_type_effective", None)
        else:
            translated["knowledge_type_effective"] = kind
        rows.append(translated)
    return {**bundle, "results": rows}


# -- answers --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Marks:
    """How one preset writes entry ``n``: the marker's body (what goes between brackets)."""

    policy: str
    rows: tuple[dict[str, Any], ...]

    def body(self, n: int) -> str:
        """The marker of entry ``n`` without its brackets, as the preset's spec writes it."""
        if self.policy == "CIT_LABEL_POLICY_V1":
            return f"CIT-{n + 1:02d}"
        if n >= len(self.rows):  # the default's [C7] of six entries: a marker naming nothing
            return (
                f"{self.rows[0]['semantic_id'].rsplit('_', 1)[0]}_{n}"
                if self.policy == "SEMANTIC_ID_POLICY_V1"
                else f"Source: {self.rows[0]['source_file']}, p.{9000 + n}"
            )
        row = self.rows[n]
        if self.policy == "SEMANTIC_ID_POLICY_V1":
            return str(row["semantic_id"])
        return f"Source: {row['source_file']}, p.{row['page']}"

    def marker(self, n: int) -> str:
        """``[AML_POL_04_0]``, ``[CIT-01]``, ``[Source: file.pdf, p.3]``; ``[Cn]`` by default."""
        return f"[C{n}]" if self.policy == DEFAULT else f"[{self.body(n)}]"


_Translate = Callable[[re.Match[str], _Marks], str | None]


def _first(found: re.Match[str]) -> int:
    return int(found.group("n"))


def _numbers(found: re.Match[str]) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", found.group())]


def _lower(found: re.Match[str], marks: _Marks) -> str | None:
    body = marks.body(_first(found))
    if marks.policy == "SOURCE_PAGE_POLICY_V1":
        return f"[{body[0].lower()}{body[1:]}]"  # ``[source: file, p.3]``
    return f"[{body.lower()}]" if body.lower() != body else None


def _listed(found: re.Match[str], marks: _Marks) -> str | None:
    bodies = [marks.body(n) for n in _numbers(found)]
    separator = "; " if marks.policy == "SOURCE_PAGE_POLICY_V1" else ", "
    return f"[{separator.join(bodies)}]"


def _range(found: re.Match[str], marks: _Marks) -> str | None:
    first, last = _numbers(found)[:2]
    if marks.policy == "SOURCE_PAGE_POLICY_V1":
        start, end = marks.body(first), marks.body(last).rsplit("p.", 1)[1]
        return f"[{start.replace(', p.', ', pp.')}-{end}]"
    return f"[{marks.body(first)}-{marks.body(last)}]"


def _spaced(found: re.Match[str], marks: _Marks) -> str | None:
    body = marks.body(_first(found))
    if marks.policy == "CIT_LABEL_POLICY_V1":
        return f"[{body.replace('-', ' ')}]"
    if marks.policy == "SOURCE_PAGE_POLICY_V1":
        return f"[{body.replace(', p.', ', p. ')}]"
    return f"[ {body} ]"


def _padded(found: re.Match[str], marks: _Marks) -> str | None:
    if marks.policy != "CIT_LABEL_POLICY_V1":
        return None  # neither an id nor a page has a zero-padding convention to break
    return f"[CIT-{_first(found) + 1}]"


def _cyrillic(found: re.Match[str], marks: _Marks) -> str | None:
    body = marks.body(_first(found))
    twin = body[0].translate(_CYRILLIC_TWIN)
    if twin == body[0]:
        return None
    return f"[{twin}{body[1:]}]"


def _echo(found: re.Match[str], marks: _Marks) -> str | None:
    return {
        "SEMANTIC_ID_POLICY_V1": "[semantic_id]",
        "CIT_LABEL_POLICY_V1": "[CIT-NN]",
        "SOURCE_PAGE_POLICY_V1": "[Source: <file>, p.<N>]",
    }[marks.policy]


def _rebracketed(found: re.Match[str], marks: _Marks) -> str | None:
    return f"{found.group('open')}{marks.body(_first(found))}{found.group('close')}"


def _stray(found: re.Match[str], marks: _Marks) -> str | None:
    return f"{marks.body(_first(found))}]"


SHAPES: tuple[tuple[str, re.Pattern[str], _Translate], ...] = (
    ("list [C0, C1]", re.compile(r"\[\s*C\d+(?:\s*[,;]\s*C?\d+)+\s*\]"), _listed),
    ("range [C0-C2]", re.compile(r"\[C\d+\s*[-\u2013]\s*C?\d+\]"), _range),
    ("lower case [c0]", re.compile(r"\[c(?P<n>\d+)\]"), _lower),
    ("spaced [C 0]", re.compile(r"\[(?=\s|C\s)\s*C\s*(?P<n>\d+)\s*\]"), _spaced),
    ("leading zero [C01]", re.compile(r"\[C0+(?P<n>\d+)\]"), _padded),
    ("Cyrillic [\u04210]", re.compile(r"\[\u0421(?P<n>\d+)\]"), _cyrillic),
    ("template echo [Cn]", re.compile(r"\[C(?:n|<n>|<number>)\]"), _echo),
    (
        "other brackets (C0) \u3010C0\u3011",
        re.compile(
            r"(?P<open>[(\uff3b\u3010\u3014\u3016\u27e6{])C(?P<n>\d+)(?P<close>[)\uff3d\u3011\u3015\u3017\u27e7}])"
        ),
        _rebracketed,
    ),
    ("lost bracket C0]", re.compile(r"(?<![\w\[])C(?P<n>\d+)\]"), _stray),
)
"""Malformed ``[Cn]`` shapes: name, pattern, translation (None: the preset has no analogue)."""


@dataclass(frozen=True)
class Translation:
    """An answer in a preset's style, or why it has none."""

    text: str
    untranslatable: str | None = None
    """The shape the preset has no analogue for; None when translated."""


def translate_answer(text: str, rows: list[dict[str, Any]], policy: str) -> Translation:
    """``text`` (citing ``[Cn]``) as an answer under ``policy`` about the preset's ``rows``."""
    if policy == DEFAULT:
        return Translation(text)
    marks = _Marks(policy, tuple(rows))
    refusal = load_policy(DEFAULT).refusal_text
    text = text.replace(refusal, load_policy(policy).refusal_text)
    if refusal.split(":")[0] in text:
        return Translation(text, "a variant of the default refusal")
    pieces: list[tuple[int, int, str]] = []
    residual = list(text)

    def claim(found: re.Match[str], replacement: str) -> None:
        pieces.append((found.start(), found.end(), replacement))
        residual[found.start() : found.end()] = " " * (found.end() - found.start())

    for found in ANCHOR_RE.finditer(text):
        claim(found, marks.marker(int(found.group(1))))
    for name, pattern, translate in SHAPES:
        for found in pattern.finditer("".join(residual)):
            replacement = translate(found, marks)
            if replacement is None:
                return Translation(text, name)
            claim(found, replacement)
    if scan_anchors("".join(residual)).malformed:
        return Translation(text, "an anchor-like shape no entry of SHAPES recognises")
    out, at = [], 0
    for start, end, replacement in sorted(pieces):
        out += [text[at:start], replacement]
        at = end
    return Translation("".join([*out, text[at:]]))


# -- judging --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Judged:
    """One answer of a set under one policy."""

    bundle: EvalBundle
    answer: Answer
    translation: Translation
    result: ValidationResult | None
    """R5's verdict (through ``validate_text``); None when the answer was not judged."""
    skipped: str | None = None
    """Why it was not judged: the answer could not be translated."""

    @property
    def passed(self) -> bool:
        """Whether the policy accepted the answer."""
        return self.result is not None and self.result.validation_status.value == "PASSED"

    @property
    def rule(self) -> str:
        """The first enforced finding's rule and reason, or the failure reason alone."""
        if self.result is None:
            return f"skipped ({self.skipped})"
        finding = next((f for f in self.result.findings if f.mode == "enforce"), None)
        if finding is not None:
            return f"{finding.rule} ({finding.reason.value})"
        reason = self.result.failure_reason
        return reason.value if reason is not None else "accepted"


def _judged(bundle: EvalBundle, policy: str) -> Iterator[Judged]:
    plain = bundle.retrieval_bundle()
    request = plain if policy == DEFAULT else preset_bundle(plain, policy)
    for answer in bundle.answers:
        translation = translate_answer(answer.answer, request["results"], policy)
        if translation.untranslatable:
            skipped = f"untranslatable: {translation.untranslatable}"
        else:
            result = validate_text(translation.text, request, policy)
            yield Judged(bundle, answer, translation, result)
            continue
        yield Judged(bundle, answer, translation, None, skipped)


@cache
def judge_set(policy: str, directory: Path) -> tuple[Judged, ...]:
    """Every answer of the set in ``directory``, translated for ``policy`` and judged."""
    return tuple(j for bundle in load_all(directory) for j in _judged(bundle, policy))
