"""The lakehouse loop's evaluation: run a gold set through the chain, score it, log it to Delta.

``003``'s evaluation log. A dataset is JSON Lines, one :class:`EvalItem` a line: a question
(answered through the chain's retrieval front) or a retrieval bundle, the gold answer, the
chunks an answer is expected to cite and whether the question is answerable from the
corpus. :func:`run_eval` answers every item and scores it *deterministically*, so two runs
of the same chain over the same index give the same numbers and a difference between two
runs is the policy's, the model's or the index's, never the scorer's:

- ``citation_precision``: the share of the chunks the answer cites that were expected
  (null when it cites none);
- ``citation_recall``: the share of the expected chunks the answer cites (null when none
  are expected);
- ``refusal_correct``: an answerable item answered OK, or an unanswerable one refused with
  ``NO_EVIDENCE``; a FAILED request is never correct;
- ``passed``: refusal correct and, for an answered item with expected citations, every
  expected chunk cited (recall 1.0). A strict bar, so a pass rate is comparable;
- the firewall's verdict (``PASSED``/``FAILED``) and its first enforced reason, and the
  mean support coverage of the answer's sentences (R5's grounding metrics);
- ``003``'s relevance and compliance: ``relevance_f1`` and ``relevance_rouge_l`` (token F1
  and ROUGE-L of the answer's content words against the gold answer's) and
  ``compliance_score`` (from the verdict and the cited chunks' sources), defined in
  :mod:`~groundlock.lakehouse.eval_scores` and named by ``scoring_version``.

Expected citations are **chunk ids** (``<document>#<paragraph>``, as
:func:`~groundlock.lakehouse.index_documents` assigns them), not knowledge ids: a document
holds several chunks, and a citation of the wrong paragraph of the right document is the
error the precision should show. The gold answer is scored by word overlap only, which
is deterministic but blind to paraphrase: a model that words a right answer differently
scores lower. A human review (``review_status``, ``reviewer``, ``reviewed_at``; null until
:func:`set_review`) remains the judgement of the answer's content.

The scorer drives the chain without its last stage (R6) to keep the R5 verdict (the
``Judged`` state: firewall findings, support coverage, the pinned model and the index
version), then packages the public response with R6 itself. The chain is treated as an
opaque ``RunnableSequence``: this module sits below the runnables and never imports them.
"""

from __future__ import annotations

import html
import json
import logging
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

from langchain_core.runnables import Runnable, RunnableSequence
from pydantic import BaseModel, ConfigDict, StringConstraints, model_validator
from pydantic import Field as PydanticField

from groundlock.contracts.audit_rows import TableRow, UtcTimestamp
from groundlock.contracts.response import PublicResponse
from groundlock.contracts.state import Judged
from groundlock.lakehouse.eval_scores import SCORING_VERSION, compliance, relevance
from groundlock.stores.arrow import arrow_schema, to_arrow
from groundlock.stores.location import delta_location
from groundlock.stores.readers import InvalidRow, TrailDamaged, damaged, read_table, valid_rows

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = [
    "EVAL_TABLE",
    "EvalItem",
    "EvalRow",
    "RunSummary",
    "compare",
    "comparison_html",
    "format_difference",
    "format_summary",
    "load_dataset",
    "read_eval_log",
    "read_eval_rows",
    "run_eval",
    "score",
    "score_difference",
    "set_review",
    "summary",
    "summary_json",
    "write_eval_log",
]

EVAL_TABLE = "eval_log"
CHAIN_ERROR = "CHAIN_ERROR"
"""The ``failure_reason`` of an item whose chain raised instead of answering: scored FAILED,
and the run goes on."""

logger = logging.getLogger("groundlock.eval")
"""The evaluation log's table name (its directory under a store root)."""

_Id = Annotated[str, StringConstraints(min_length=1, max_length=512)]
_Text = Annotated[str, StringConstraints(max_length=100_000)]
_Share = Annotated[float, PydanticField(ge=0.0, le=1.0, allow_inf_nan=False)]


class EvalItem(BaseModel):
    """One line of a gold set: a question (or a bundle), its gold answer and citations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: _Id
    question: str | None = None
    """A plain question, answered through the chain's retrieval front."""
    bundle: dict[str, Any] | None = None
    """A retrieval bundle, answered by the chain's stages after the front (if any)."""
    gold_answer: str | None = None
    """What a correct answer says: the reference of the relevance scores (none: null)."""
    expected_citations: tuple[str, ...] = ()
    """Chunk ids a correct answer cites (empty for an unanswerable item)."""
    answerable: bool

    @model_validator(mode="after")
    def _one_input(self) -> Self:
        if (self.question is None) == (self.bundle is None):
            raise ValueError("an item has exactly one of question and bundle")
        if not self.answerable and self.expected_citations:
            raise ValueError("an unanswerable item expects no citations")
        return self


class EvalRow(TableRow):
    """One scored item of one evaluation run: a row of the ``eval_log`` Delta table.

    A :class:`TableRow` like the audit rows, so its Arrow schema derives from its fields.
    """

    table: ClassVar[str] = EVAL_TABLE
    key_fields: ClassVar[tuple[str, ...]] = ("run_id", "item_id")

    run_id: _Id
    item_id: _Id
    question: _Text | None
    gold_answer: _Text | None
    answerable: bool
    status: _Id
    """The public status: OK, NO_EVIDENCE or FAILED."""
    failure_reason: _Id | None
    answer: _Text
    """The model output as the chain returned it (the validated answer or the refusal)."""
    actual_citations: tuple[_Id, ...]
    """The chunk ids the answer cites, in order of first use."""
    expected_citations: tuple[_Id, ...]
    citation_precision: _Share | None
    citation_recall: _Share | None
    refusal_correct: bool
    passed: bool
    firewall_verdict: _Id | None
    """R5's validation status (PASSED/FAILED); null when no verdict was reached."""
    firewall_reason: _Id | None
    """Why R5's verdict failed: its first enforced finding, or the upstream stage's reason
    it passed through; null when it passed."""
    firewall_ruleset: _Id | None
    support_coverage: _Share | None
    """Mean share of content words of the answer's sentences found in what they cite."""
    policy_version: _Id | None
    model_name: _Id | None
    index_version: _Id | None
    embedding_model: _Id | None
    latency_ms: Annotated[float, PydanticField(ge=0, allow_inf_nan=False)]
    """Wall time of the item through the chain, retrieval included."""
    review_status: _Id | None = None
    reviewer: _Id | None = None
    reviewed_at: UtcTimestamp | None = None
    relevance_f1: _Share | None = None
    """Token F1 of the answer's content words against the gold answer's
    (:mod:`~groundlock.lakehouse.eval_scores`); null without a gold answer to compare, an
    unanswerable item, and in rows logged before the column existed."""
    relevance_rouge_l: _Share | None = None
    """ROUGE-L F-measure (longest common subsequence) over the same content words."""
    compliance_score: _Share | None = None
    """From the verdict and the citation checks: 0 FAILED, 1 NO_EVIDENCE, for OK the share
    of cited chunks from an expected source; null only in rows logged before the column."""
    scoring_version: _Id | None = None
    """The definitions the three scores above follow (``eval_scores_v1``)."""


# -- the dataset ------------------------------------------------------------------------------


def load_dataset(path: str | Path) -> list[EvalItem]:
    """The items of a JSON Lines gold set (blank lines and ``#`` lines skipped)."""
    items: list[EvalItem] = []
    for number, line in enumerate(Path(path).read_text("utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            items.append(EvalItem.model_validate_json(line))
        except ValueError as exc:
            raise ValueError(f"{path}, line {number}: {exc}") from None
    ids = [item.id for item in items]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: item ids are not unique")
    return items


# -- scoring -----------------------------------------------------------------------------------


def score(
    item: EvalItem, status: str, actual: Sequence[str]
) -> tuple[float | None, float | None, bool, bool]:
    """``(precision, recall, refusal_correct, passed)`` of one answer (see the module doc)."""
    cited = set(actual)
    expected = set(item.expected_citations)
    hits = len(cited & expected)
    precision = hits / len(cited) if cited else None
    recall = hits / len(expected) if expected else None
    refusal_correct = (item.answerable and status == "OK") or (
        not item.answerable and status == "NO_EVIDENCE"
    )
    passed = refusal_correct and (status != "OK" or recall is None or recall == 1.0)
    return precision, recall, refusal_correct, passed


def _split(chain: RunnableSequence[Any, Any]) -> tuple[Runnable[Any, Any], Runnable[Any, Any]]:
    steps = list(chain.steps)
    if len(steps) < 2:
        raise ValueError("the chain has no R6 stage to package its answers")
    return RunnableSequence(*steps[:-1]), steps[-1]


def _without_front(chain: RunnableSequence[Any, Any]) -> RunnableSequence[Any, Any]:
    steps = list(chain.steps)
    if steps and str(getattr(steps[0], "name", "")).startswith("R1."):
        steps = steps[1:]
    return RunnableSequence(*steps)


def _answer(
    chain: RunnableSequence[Any, Any], item: EvalItem, request_id: str
) -> tuple[PublicResponse, Judged | None]:
    if item.question is not None:
        to_judge, package = _split(chain)
        stage_input: object = {"user_question": item.question, "request_id": request_id}
    else:
        to_judge, package = _split(_without_front(chain))
        stage_input = {"request_id": request_id, **(item.bundle or {})}
    state = to_judge.invoke(stage_input)
    response = package.invoke(state)
    if not isinstance(response, PublicResponse):
        raise TypeError("the chain's last stage did not return a PublicResponse")
    return response, state if isinstance(state, Judged) else None


def _mean(values: Iterable[float]) -> float | None:
    found = list(values)
    return sum(found) / len(found) if found else None


def _item_fields(item: EvalItem, run_id: str, ms: float) -> dict[str, object]:
    """The columns of a row that come from the item and the run, whatever the answer."""
    return {
        "record_id": uuid.uuid4().hex,
        "timestamp_utc": datetime.now(UTC),
        "run_id": run_id,
        "item_id": item.id,
        "question": item.question,
        "gold_answer": item.gold_answer,
        "answerable": item.answerable,
        "expected_citations": item.expected_citations,
        "latency_ms": ms,
    }


def _answer_scores(
    item: EvalItem, status: str, answer: str, cited: Sequence[str]
) -> dict[str, object]:
    """003's relevance and compliance columns of one response (``eval_scores``)."""
    f1, rouge = relevance(answer, item.gold_answer, status=status, answerable=item.answerable)
    return {
        "relevance_f1": f1,
        "relevance_rouge_l": rouge,
        "compliance_score": compliance(
            status, cited, item.expected_citations, answerable=item.answerable
        ),
        "scoring_version": SCORING_VERSION,
    }


def _raised_row(item: EvalItem, run_id: str, ms: float) -> EvalRow:
    """The row of an item whose chain raised: FAILED, reason ``CHAIN_ERROR``, nothing cited."""
    precision, recall, refusal_correct, passed = score(item, "FAILED", ())
    nothing = ("firewall_verdict", "firewall_reason", "firewall_ruleset", "support_coverage",
               "policy_version", "model_name", "index_version", "embedding_model")  # fmt: skip
    return EvalRow.fitted(
        {
            **_item_fields(item, run_id, ms),
            **dict.fromkeys(nothing),
            "status": "FAILED",
            "failure_reason": CHAIN_ERROR,
            "answer": "",
            "actual_citations": (),
            "citation_precision": precision,
            "citation_recall": recall,
            "refusal_correct": refusal_correct,
            "passed": passed,
            **_answer_scores(item, "FAILED", "", ()),
        }
    )


def _cited_chunks(response: PublicResponse, judged: Judged | None) -> tuple[str, ...]:
    """The chunk ids the answer cites: R5's validated anchors, resolved through R2's map.

    Not the public citations' anchors: under a preset those are its markers (``CIT-01``,
    ``MM-TUG7-HPU-04_2``, ``Source: manual.pdf, p.3``), not R2's anchors, and one page's
    marker may cite several chunks of the page, which are listed once to a reader.
    """
    if not response.citations:
        return ()
    if judged is None:
        return tuple(citation.knowledge_id for citation in response.citations)
    anchors = judged.bundle.anchor_map
    cited = (anchors[a] for a in judged.validation.validated_citations if a in anchors)
    return tuple(dict.fromkeys(cited))


def _row(
    item: EvalItem, run_id: str, response: PublicResponse, judged: Judged | None, ms: float
) -> EvalRow:
    actual = _cited_chunks(response, judged)
    status = response.status.value
    precision, recall, refusal_correct, passed = score(item, status, actual)
    validation = judged.validation if judged is not None else None
    enforced = [f for f in validation.findings if f.mode == "enforce"] if validation else []
    reason = (
        validation.failure_reason or (enforced[0].reason if enforced else None)
        if validation is not None
        else None
    )
    trace = judged.bundle.trace if judged is not None else None
    return EvalRow.fitted(
        {
            **_item_fields(item, run_id, ms),
            "status": status,
            "failure_reason": response.failure_reason.value if response.failure_reason else None,
            "answer": response.answer,
            "actual_citations": actual,
            "citation_precision": precision,
            "citation_recall": recall,
            "refusal_correct": refusal_correct,
            "passed": passed,
            "firewall_verdict": validation.validation_status.value if validation else None,
            "firewall_reason": reason.value if reason is not None else None,
            "firewall_ruleset": validation.firewall_ruleset if validation else None,
            "support_coverage": _mean(validation.grounding_metrics.support_coverage)
            if validation
            else None,
            "policy_version": judged.policy_version if judged is not None else None,
            "model_name": response.model_used
            or (judged.execution.model_name if judged is not None else None),
            "index_version": trace.index_version if trace is not None else None,
            "embedding_model": trace.embedding_model if trace is not None else None,
            **_answer_scores(item, status, response.answer, actual),
        }
    )


def run_eval(
    dataset: Iterable[EvalItem] | str | Path,
    chain: RunnableSequence[Any, Any],
    *,
    run_id: str | None = None,
    table_uri: str | Path | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> list[EvalRow]:
    """Answer and score every item with ``chain`` (a :func:`grounded_answer_chain`).

    ``dataset`` is the items or a JSONL path. With ``table_uri`` the rows are appended to
    the Delta evaluation log there (created on first use) in one commit; a location no
    store can open is a ``ValueError`` before any item is answered. Request ids are
    ``<run_id>:<item id>``, so the audit trail of a chain with a store ties back to the run.
    """
    if table_uri is not None:
        delta_location(table_uri)  # refused before the first item, not after the last
    items = load_dataset(dataset) if isinstance(dataset, str | Path) else list(dataset)
    run = run_id or f"eval-{uuid.uuid4().hex[:12]}"
    rows: list[EvalRow] = []
    for item in items:
        request_id = f"{run}:{item.id}"
        started = time.perf_counter()
        try:
            response, judged = _answer(chain, item, request_id)
        except Exception as exc:  # noqa: BLE001  (one item's fault must not lose the run)
            # The stages fail closed, so this is a fault around them (a retriever or a
            # store raising): the item is scored FAILED and the run goes on. The log line
            # names the kind only; an exception's text may quote data.
            logger.warning("eval %s: item %s raised %s", run, item.id, type(exc).__name__)
            ms = (time.perf_counter() - started) * 1000.0
            rows.append(_raised_row(item, run, ms))
            continue
        ms = (time.perf_counter() - started) * 1000.0
        rows.append(_row(item, run, response, judged, ms))
    if table_uri is not None:
        write_eval_log(rows, table_uri, storage_options=storage_options)
    return rows


# -- the Delta table ----------------------------------------------------------------------------


def write_eval_log(
    rows: Sequence[EvalRow],
    table_uri: str | Path,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> None:
    """Append ``rows`` to the evaluation log (one commit; the table is created if absent).

    Not append-only (unlike the audit tables): a review updates its row in place.
    """
    from deltalake import DeltaTable, write_deltalake  # noqa: PLC0415

    from groundlock.stores.delta_tables import add_new_columns  # noqa: PLC0415

    uri = delta_location(table_uri)
    options = dict(storage_options) if storage_options else None
    if not DeltaTable.is_deltatable(uri, storage_options=options):
        DeltaTable.create(uri, arrow_schema(EvalRow), mode="ignore", storage_options=options)
    if rows:
        table = DeltaTable(uri, storage_options=options)
        # A log an older groundlock wrote lacks the newer nullable score columns: they are
        # added (its rows read them as null) before rows that carry them are appended.
        if add_new_columns(table, EvalRow):
            table = DeltaTable(uri, storage_options=options)
        write_deltalake(table, to_arrow(EvalRow, list(rows)), mode="append")


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


_LOG = "the evaluation log"
"""How an error names the table (never by its path or URI: a URI may carry a credential)."""


def _open_log(table_uri: str | Path, storage_options: Mapping[str, str] | None) -> DeltaTable:
    """The log's table; ``LookupError`` when there is none, ``TrailDamaged`` when damaged."""
    from deltalake import DeltaTable  # noqa: PLC0415
    from deltalake.exceptions import TableNotFoundError  # noqa: PLC0415

    uri = delta_location(table_uri)
    try:
        return DeltaTable(uri, storage_options=dict(storage_options or {}) or None)
    except TableNotFoundError:
        raise LookupError(f"{_LOG} does not exist") from None
    except Exception as exc:  # noqa: BLE001  (a damaged log: named by kind, never by path)
        raise TrailDamaged(f"{_LOG} cannot be opened ({type(exc).__name__})") from None


def read_eval_rows(
    table_uri: str | Path,
    run_id: str | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> list[EvalRow | InvalidRow]:
    """The log's rows as :func:`read_eval_log` orders them, a row that breaks its model kept.

    Such a row is an :class:`~groundlock.stores.readers.InvalidRow` (its values as read,
    and what it breaks) for the reader to show and flag. Raises ``LookupError`` when there
    is no log, and :class:`~groundlock.stores.readers.TrailDamaged` (one line naming the
    log and its data file) when a data file is gone or cannot be read.
    """
    condition = "" if run_id is None else f"run_id = {_sql_text(run_id)}"
    return read_table(
        _open_log(table_uri, storage_options),
        EvalRow,
        condition,
        order_by="run_id, item_id, timestamp_utc",
        label=_LOG,
    )


def read_eval_log(
    table_uri: str | Path,
    run_id: str | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> list[EvalRow]:
    """The rows of the log (of one run, with ``run_id``), by run, then item, then time.

    Read through delta-rs's own query engine, never pyarrow. A row that breaks its model
    raises :class:`~groundlock.stores.readers.TrailDamaged` naming it (read it with
    :func:`read_eval_rows` instead), as does a data file that is gone or unreadable; no log
    at all is a ``LookupError``.
    """
    return valid_rows(read_eval_rows(table_uri, run_id, storage_options=storage_options))


def set_review(
    table_uri: str | Path,
    run_id: str,
    item_id: str,
    status: Literal["approved", "rejected"],
    reviewer: str,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> int:
    """Record a human review of one item of one run (a Delta update); the rows updated.

    Raises ``LookupError`` when the run has no such item, so a typo is not a silent no-op
    (or when there is no log), and :class:`~groundlock.stores.readers.TrailDamaged` when a
    data file the update reads is gone or unreadable.
    """
    if status not in {"approved", "rejected"}:
        raise ValueError("a review is approved or rejected")
    if not reviewer.strip():
        raise ValueError("a review names its reviewer")
    table = _open_log(table_uri, storage_options)
    try:
        result = table.update(
            new_values={
                "review_status": status,
                "reviewer": reviewer,
                "reviewed_at": datetime.now(UTC),
            },
            predicate=f"run_id = {_sql_text(run_id)} AND item_id = {_sql_text(item_id)}",
        )
    except Exception as exc:  # noqa: BLE001  (delta-rs raises plain Exception)
        raise damaged(table, exc, _LOG) from None
    updated = int(result.get("num_updated_rows", 0))
    if not updated:
        raise LookupError(f"run {run_id} has no item {item_id}")
    return updated


# -- summaries ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSummary:
    """The aggregates of one run (under one policy, model and index version)."""

    run_id: str
    policy_version: str | None
    model_name: str | None
    index_version: str | None
    answers: int
    answered: int
    """Items answered OK."""
    refusal_accuracy: float
    """Share of items whose answer-or-refuse decision was correct."""
    citation_precision: float | None
    citation_recall: float | None
    support_coverage: float | None
    pass_rate: float
    reviewed: int
    approved: int
    relevance_f1: float | None = None
    """Mean over the items that have one (an answerable item with a gold answer)."""
    relevance_rouge_l: float | None = None
    compliance: float | None = None
    """Mean compliance score over the items that have one (every item scored since v1)."""


def summary(rows: Iterable[EvalRow]) -> list[RunSummary]:
    """One :class:`RunSummary` per run and policy/model/index version, in run order."""
    groups: dict[tuple[str, str | None, str | None, str | None], list[EvalRow]] = {}
    for row in rows:
        key = (row.run_id, row.policy_version, row.model_name, row.index_version)
        groups.setdefault(key, []).append(row)
    summaries = []
    for (run_id, policy, model, index), group in groups.items():
        count = len(group)
        summaries.append(
            RunSummary(
                run_id=run_id,
                policy_version=policy,
                model_name=model,
                index_version=index,
                answers=count,
                answered=sum(row.status == "OK" for row in group),
                refusal_accuracy=sum(row.refusal_correct for row in group) / count,
                citation_precision=_mean(
                    r.citation_precision for r in group if r.citation_precision is not None
                ),
                citation_recall=_mean(
                    r.citation_recall for r in group if r.citation_recall is not None
                ),
                support_coverage=_mean(
                    r.support_coverage for r in group if r.support_coverage is not None
                ),
                pass_rate=sum(row.passed for row in group) / count,
                reviewed=sum(row.review_status is not None for row in group),
                approved=sum(row.review_status == "approved" for row in group),
                relevance_f1=_mean(r.relevance_f1 for r in group if r.relevance_f1 is not None),
                relevance_rouge_l=_mean(
                    r.relevance_rouge_l for r in group if r.relevance_rouge_l is not None
                ),
                compliance=_mean(
                    r.compliance_score for r in group if r.compliance_score is not None
                ),
            )
        )
    return summaries


def compare(
    rows: Iterable[EvalRow | InvalidRow], run_a: str, run_b: str
) -> tuple[list[RunSummary], list[str]]:
    """The summaries of two runs, and the items whose outcome differs between them.

    An item differs when its status, its pass or its cited chunks differ, or one of its
    relevance and compliance scores (both rows scored alike): the lines a reviewer reads
    first when a policy, model or index version changed. A line names the scores that moved
    (``g03: OK -> OK; relevance F1 0.62 -> 0.40``). A row that breaks
    its model (:func:`read_eval_rows` keeps it) counts in no summary, and its item is
    listed as not compared rather than as missing from its run.
    """
    runs = {run_a, run_b}
    kept = [row for row in rows if not isinstance(row, InvalidRow) and row.run_id in runs]
    unread: dict[str, set[str]] = {}
    for row in rows:
        if isinstance(row, InvalidRow) and row.get("run_id") in runs:
            unread.setdefault(str(row.get("item_id") or "-"), set()).add(row.get("run_id"))
    by_run: dict[str, dict[str, EvalRow]] = {run_a: {}, run_b: {}}
    for row in kept:
        by_run[row.run_id][row.item_id] = row
    for run in (run_a, run_b):
        if not by_run[run]:
            readable = " that can be read" if any(run in r for r in unread.values()) else ""
            raise LookupError(f"no rows{readable} for run {run}")
    changes = []
    for item_id in sorted(by_run[run_a].keys() | by_run[run_b].keys() | unread.keys()):
        a, b = by_run[run_a].get(item_id), by_run[run_b].get(item_id)
        if item_id in unread:
            changes.append(
                f"{item_id}: not compared: the row of run {', '.join(sorted(unread[item_id]))} "
                "breaks its model"
            )
        elif a is None or b is None:
            changes.append(f"{item_id}: only in {run_a if b is None else run_b}")
        elif _outcome(a) != _outcome(b) or _score_changes(a, b):
            moved = _score_changes(a, b)
            changes.append(
                f"{item_id}: {a.status}{'' if a.passed else ' (fail)'} -> "
                f"{b.status}{'' if b.passed else ' (fail)'}" + (f"; {moved}" if moved else "")
            )
    order = {run_a: 0, run_b: 1}
    return sorted(summary(kept), key=lambda s: order[s.run_id]), changes


_SCORES = (
    ("relevance F1", "relevance_f1"),
    ("ROUGE-L", "relevance_rouge_l"),
    ("compliance", "compliance_score"),
)
"""003's answer scores as ``compare`` names them, and their row columns."""


def _outcome(row: EvalRow) -> tuple[object, ...]:
    return (row.status, row.passed, row.actual_citations)


def _scores(row: EvalRow) -> tuple[float | None, ...]:
    return tuple(getattr(row, column) for _, column in _SCORES)


def _score_changes(a: EvalRow, b: EvalRow) -> str:
    """The answer scores that differ between two rows of an item: ``ROUGE-L 0.40 -> 0.55``.

    Empty unless both rows were scored under the same definitions: a row logged before the
    scores existed has none, which is not a change of the answer.
    """
    if a.scoring_version is None or a.scoring_version != b.scoring_version:
        return ""
    return ", ".join(
        f"{name} {_share(before)} -> {_share(after)}"
        for (name, _), before, after in zip(_SCORES, _scores(a), _scores(b), strict=True)
        if before != after
    )


_MEANS = {"relevance_f1": "relevance F1", "relevance_rouge_l": "ROUGE-L",
          "compliance": "compliance", "citation_precision": "precision",
          "citation_recall": "recall", "support_coverage": "coverage",
          "pass_rate": "pass rate"}  # fmt: skip
"""The mean scores of a :class:`RunSummary` that ``compare`` differences, in its order,
with the name its line gives each."""


def score_difference(first: RunSummary, second: RunSummary) -> dict[str, float | None]:
    """``second`` minus ``first`` for each mean score (None where either run has none).

    What ``eval compare`` prints under the two runs: the relevance and compliance means,
    then the citation scores and the pass rate, as the second run moved them.
    """
    difference: dict[str, float | None] = {}
    for name in _MEANS:
        before, after = getattr(first, name), getattr(second, name)
        difference[name] = None if before is None or after is None else after - before
    return difference


def format_difference(first: RunSummary, second: RunSummary) -> str:
    """One line: ``difference (b - a): relevance F1 +0.05, ROUGE-L +0.03, ...``."""
    parts = [
        f"{_MEANS[name]} {'-' if value is None else f'{value:+.2f}'}"
        for name, value in score_difference(first, second).items()
    ]
    return f"difference ({second.run_id} - {first.run_id}): " + ", ".join(parts)


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


_HEADER = (
    "run", "policy", "model", "index", "answers", "answered", "refusals ok", "precision",
    "recall", "coverage", "pass rate", "relevance F1", "ROUGE-L", "compliance", "reviewed",
)  # fmt: skip


def _cells(item: RunSummary) -> list[str]:
    return [
        item.run_id,
        item.policy_version or "-",
        item.model_name or "-",
        item.index_version or "-",
        str(item.answers),
        str(item.answered),
        _share(item.refusal_accuracy),
        _share(item.citation_precision),
        _share(item.citation_recall),
        _share(item.support_coverage),
        _share(item.pass_rate),
        _share(item.relevance_f1),
        _share(item.relevance_rouge_l),
        _share(item.compliance),
        f"{item.reviewed} ({item.approved} approved)",
    ]


def format_summary(summaries: Sequence[RunSummary]) -> str:
    """A console table of the summaries, one line per run."""
    table = [list(_HEADER), *(_cells(item) for item in summaries)]
    widths = [max(len(line[i]) for line in table) for i in range(len(_HEADER))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in table
    ]
    return "\n".join(lines)


def comparison_html(summaries: Sequence[RunSummary], changes: Sequence[str] = ()) -> str:
    """An HTML ``<section>`` comparing runs (for a report), every value escaped."""
    head = "".join(f"<th>{html.escape(name)}</th>" for name in _HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in _cells(item)) + "</tr>"
        for item in summaries
    )
    changed = "".join(f"<li>{html.escape(line)}</li>" for line in changes)
    moved = (
        f"<p>{html.escape(format_difference(summaries[0], summaries[1]))}</p>"
        if len(summaries) == 2  # (one summary per run: a difference is of two)
        else ""
    )
    return (
        '<section class="evaluation"><h2>Evaluation</h2>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{moved}"
        + (f"<h3>Items that changed</h3><ul>{changed}</ul>" if changes else "")
        + "</section>"
    )


def failure_of(row: EvalRow) -> str | None:
    """Why an item did not pass, in words (None if it passed); the rule of :func:`score`."""
    if row.passed:
        return None
    reason = row.failure_reason or row.firewall_reason
    ended = f"{row.status}{f' {reason}' if reason else ''}"
    if row.answerable and row.status != "OK":
        return f"answerable, but ended {ended}"
    if not row.answerable and row.status != "NO_EVIDENCE":
        return f"not answerable, so it should have been refused, but ended {ended}"
    missing = sorted(set(row.expected_citations) - set(row.actual_citations))
    return f"answered without citing {', '.join(missing)}"


def failures(rows: Iterable[EvalRow]) -> list[dict[str, str]]:
    """Each item that did not pass: its run, its id and why (for the console and ``--json``)."""
    return [
        {"run_id": row.run_id, "item_id": row.item_id, "why": why}
        for row in rows
        if (why := failure_of(row)) is not None
    ]


def summary_json(summaries: Sequence[RunSummary]) -> str:
    """The summaries as JSON (for ``--json`` and for scripts)."""
    return json.dumps([item.__dict__ for item in summaries], indent=2)
