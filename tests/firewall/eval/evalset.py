"""The firewall's labelled evaluation set: bundles with correct and subtly wrong answers.

Each ``*.json`` file beside this module holds one bundle (a question and two to six evidence
entries, cited as ``[C0]`` ... in entry order) and the answers written for it by hand, each
labelled ``correct`` or ``wrong``; a wrong answer names the kind of defect it carries. The
set is data written for the project, not produced by the firewall: ``benchmarks/firewall.py``
prints the accept rate on correct answers and the reject rate on wrong ones, and
``tests/firewall/test_evalset.py`` holds the firewall to its targets on it.

Run this module on a file to check its format (it never runs the firewall)::

    python -m tests.firewall.eval.evalset tests/firewall/eval/some_bundle.json
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EVAL_DIR = Path(__file__).parent

LABELS = ("correct", "wrong")
WRONG_KINDS = (
    "changed_value",  # a number changed (250 for 500)
    "changed_unit",  # the same number, another unit (45 bar for 45 Nm)
    "changed_date",  # a date or year changed
    "changed_time",  # a time of day or a duration changed
    "changed_identifier",  # a part, document, section, bulletin or case id changed or invented
    "flipped_negation",  # must not -> must, do not -> do, never -> always, ...
    "changed_modality",  # must -> may, required -> optional, shall -> can, ...
    "antonym_swap",  # before/after, above/below, minimum/maximum, increase/decrease, ...
    "swapped_entity",  # a person, organisation, place or product replaced by another
    "invented_entity",  # a name, product or organisation no entry mentions
    "invented_acronym_expansion",  # an expansion of an acronym no entry gives
    "misattributed",  # a true fact of one entry cited to another entry
    "partial_support",  # a cited sentence that adds a claim its entry does not make
    "invented_step",  # a procedural step no entry gives
    "unsupported_claim",  # a new claim with no value or name in it
    "quantifier_change",  # all -> some, only -> also, at least -> at most, ...
    "obeyed_injection",  # content drawn from an instruction injected into an entry
    "disguised_refusal",  # "X is not covered in the documents [C0]" when C0 says nothing so
    "reasoning_trace",  # thinking aloud or chat filler: "The question wants to know ..."
    "other_source_frame",  # framed as from another source: "Based on general knowledge, ..."
    "superseded_value",  # a value the cited entry marks as replaced, wrong or cancelled
    "paraphrased_negation",  # "X can be skipped", "X is not mandatory" where the entry requires X
    "rebound_value",  # the entry's number bound to another predicate: 12 inspected -> 12 failed
)
_ANCHOR_RE = re.compile(r"\[C(\d+)\]")
KNOWLEDGE_TYPES = (
    "MAINTENANCE_PROCEDURE",
    "INSPECTION_RECORD",
    "FAILURE_REPORT",
    "OPERATING_MANUAL",
    "SAFETY_NOTICE",
    "REGULATION",
)


@dataclass(frozen=True)
class Answer:
    """One labelled answer."""

    id: str
    label: str
    answer: str
    kind: str | None
    style: str | None
    borderline: bool
    note: str | None
    wrong_sentence: tuple[str, ...] = ()
    """For a wrong answer of more than one sentence: an excerpt of each sentence that
    carries the defect, copied verbatim from the answer and short enough to stay inside
    that sentence. A rejection is *on target* when its enforced finding is about a
    sentence that holds one of them (a one-sentence answer is on target trivially)."""


@dataclass(frozen=True)
class EvalBundle:
    """One bundle of the set and its answers."""

    path: Path
    bundle_id: str
    domain: str
    question: str
    entries: tuple[dict[str, Any], ...]
    answers: tuple[Answer, ...]

    def retrieval_bundle(self) -> dict[str, Any]:
        """The ``RetrievalBundle`` (as a dict) whose evidence is exactly the entries."""
        rows = [
            {
                "chunk_id": f"{self.bundle_id}-c{i}",
                "rank": i,
                "similarity": round(0.95 - 0.01 * i, 2),
                "knowledge_id": entry.get("knowledge_id") or f"{self.bundle_id}-k{i}",
                "knowledge_type_effective": entry.get("knowledge_type", "OPERATING_MANUAL"),
                "source_reference": entry.get("source"),
                "chunk_text": entry["text"],
            }
            for i, entry in enumerate(self.entries)
        ]
        return {
            "request_id": f"eval-{self.bundle_id}",
            "run_id": "eval",
            "user_question": self.question,
            "retrieval_status": "SUCCESS",
            "index_version": "eval",
            "embedding_model": "eval",
            "top_k": len(rows),
            "results": rows,
        }


def load(path: Path) -> EvalBundle:
    """One eval file, checked for format; raises ``ValueError`` naming the problem."""
    data = json.loads(path.read_text(encoding="utf-8"))
    problems = list(_problems(data))
    if problems:
        raise ValueError(f"{path.name}: " + "; ".join(problems))
    return EvalBundle(
        path=path,
        bundle_id=data["bundle_id"],
        domain=data["domain"],
        question=data["question"],
        entries=tuple(data["entries"]),
        answers=tuple(
            Answer(
                id=a["id"],
                label=a["label"],
                answer=a["answer"],
                kind=a.get("kind"),
                style=a.get("style"),
                borderline=bool(a.get("borderline", False)),
                note=a.get("note"),
                wrong_sentence=_excerpts(a.get("wrong_sentence")),
            )
            for a in data["answers"]
        ),
    )


HELDOUT_DIR = EVAL_DIR.parent / "heldout"
"""A second set, written later by other hands and never tuned on: it measures how the
firewall does on answers it was not shaped by."""


REVIEW_DIR = EVAL_DIR.parent / "review"
"""The adversarial review's cases (seen while revising the rules after the review)."""


BROAD_DIR = EVAL_DIR.parent / "broad"
"""Answers in the styles real models write, with the classes real output showed: frames,
other spellings of names and values, reasoning traces, superseded values, ..."""


NUMBERS_DIR = EVAL_DIR.parent / "numbers"
"""Number-dense evidence (spec tables, schedules, results, timelines) with answers of one
sentence (a few correct ones are lists or tables): correct ones, and wrong ones that bind a
value of the entry to another of its predicates (``rebound_value``). It measures the
precision of value binding."""


def load_all(directory: Path = EVAL_DIR) -> list[EvalBundle]:
    """Every eval file of a set (by default the tuning set), in name order."""
    return [load(path) for path in sorted(directory.glob("*.json"))]


def _excerpts(value: Any) -> tuple[str, ...]:
    """``wrong_sentence`` as written (one excerpt or a list of them), as a tuple."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _problems(data: Any) -> Any:  # noqa: PLR0912  (one message per rule)
    if not isinstance(data, dict):
        yield "the file is not a JSON object"
        return
    for key in ("bundle_id", "domain", "question", "entries", "answers"):
        if key not in data:
            yield f"missing {key!r}"
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{2,60}", str(data.get("bundle_id", ""))):
        yield "bundle_id must be lower-case letters, digits and hyphens"
    entries = data.get("entries") or []
    if not 1 <= len(entries) <= 6:
        yield "a bundle has one to six entries"
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not str(entry.get("text", "")).strip():
            yield f"entry {i} needs a non-empty text"
            continue
        if len(entry["text"]) > 2400:
            yield f"entry {i} is longer than 2,400 characters"
        if entry.get("knowledge_type", "OPERATING_MANUAL") not in KNOWLEDGE_TYPES:
            yield f"entry {i} has an unknown knowledge_type"
    if sum(len(str(e.get("text", ""))) for e in entries if isinstance(e, dict)) > 7000:
        yield "the entries are longer than 7,000 characters together"
    seen: set[str] = set()
    for answer in data.get("answers") or []:
        ident = answer.get("id")
        if not ident or ident in seen:
            yield f"answer id {ident!r} is missing or repeated"
        seen.add(ident)
        if answer.get("label") not in LABELS:
            yield f"{ident}: label must be one of {LABELS}"
        if answer.get("label") == "wrong" and answer.get("kind") not in WRONG_KINDS:
            yield f"{ident}: a wrong answer names its kind, one of WRONG_KINDS"
        text = answer.get("answer")
        if not isinstance(text, str) or not text.strip():
            yield f"{ident}: empty answer"
            continue
        for number in _ANCHOR_RE.findall(text):
            if int(number) >= len(entries):
                yield f"{ident}: cites [C{number}], the bundle has {len(entries)} entries"
        marked = answer.get("wrong_sentence")
        if marked is not None:
            excerpts = [marked] if isinstance(marked, str) else marked
            if answer.get("label") != "wrong":
                yield f"{ident}: only a wrong answer marks its wrong sentence"
            if not isinstance(excerpts, list) or not all(
                isinstance(e, str) and e.strip() and e in text for e in excerpts
            ):
                yield f"{ident}: wrong_sentence must be excerpts copied from the answer"


def _admitted(bundle: EvalBundle) -> None:
    """Raise unless R2 admits every entry (nothing dropped, anchors in entry order)."""
    from groundlock import AssembleEvidence, load_policy  # noqa: PLC0415  (only when checking)

    result = AssembleEvidence(policy=load_policy("R2_POLICY_V1")).invoke(bundle.retrieval_bundle())
    result = result.bundle
    kept = len(result.selected_evidence)
    if kept != len(bundle.entries):
        raise ValueError(
            f"{bundle.path.name}: R2 admitted {kept} of {len(bundle.entries)} entries "
            f"({result.assembly_status.value}, {result.reason_code}); shorten or de-duplicate"
        )


if __name__ == "__main__":
    for name in sys.argv[1:]:
        loaded = load(Path(name))
        _admitted(loaded)
        counts = {label: sum(a.label == label for a in loaded.answers) for label in LABELS}
        print(f"{name}: ok, {len(loaded.entries)} entries, {counts}")  # noqa: T201  (a command-line tool)


def judge_all(policy_name: str, directory: Path = EVAL_DIR) -> list[tuple[EvalBundle, Answer, Any]]:
    """Every answer of the set with R5's verdict on it under the policy ``policy_name``.

    Each bundle goes through the real R2 and R3 once; each answer through R4 (with a
    scripted model standing in for the provider) and R5, as in production.
    """
    from groundlock import (  # noqa: PLC0415  (only when judging)
        AssembleEvidence,
        BuildPrompt,
        ExecuteModel,
        load_policy,
        validate_answer,
    )
    from tests.fakes.chat import ScriptedChatModel  # noqa: PLC0415

    policy = load_policy(policy_name)
    judged = []
    for bundle in load_all(directory):
        prompt = (AssembleEvidence(policy=policy) | BuildPrompt(policy=policy)).invoke(
            bundle.retrieval_bundle()
        )
        for answer in bundle.answers:
            model = ScriptedChatModel(text=answer.answer)
            execution = ExecuteModel(model=model, policy=policy).invoke(prompt)
            judged.append((bundle, answer, validate_answer(execution, policy)))
    return judged
