r"""A verdict as ``002``'s tool shows it: grounded or not, citations, sources, retrieved ids.

``ask`` and ``validate`` print the same block after their own first lines, and
``validate --json`` carries the same data, so a user of ``002`` (``is_grounded``,
``cited_sources``, ``invalid_citations``, ``retrieved_semantic_ids``) reads it where they
expect it. Ids are in the policy's citation form (the verdict's ``cited_ids``,
``invalid_citations`` and ``retrieved_ids``), never the internal keys. A FAILED answer's text
is never shown; ``validate`` lists its invalid citations (markers naming nothing: what was
wrong, written by its caller), ``ask`` counts them: its model wrote them, and under
``[Source: file, p.N]`` a marker may hold a sentence of the rejected answer.

Everything printed is safe on a terminal (:func:`shown`): a control, format or separator
character that an answer, a marker or a message carries is written escaped (``\x1b``),
never sent, so an answer cannot reset, retitle or rewrite the reader's terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig, RunnableSequence

    from groundlock.citations import CitationGrammar
    from groundlock.contracts.assembly import SelectedEvidence
    from groundlock.contracts.response import PublicResponse
    from groundlock.contracts.state import Judged
    from groundlock.contracts.validation import ValidationResult

__all__ = [
    "answered",
    "cited_sources",
    "entries_of",
    "print_response",
    "retrieved_line",
    "shown",
    "source_of",
    "verdict_document",
    "verdict_lines",
]


def shown(text: str, keep: str = "") -> str:
    r"""``text`` with every character a terminal would act on written as its escape.

    Characters that are not printable (controls, format characters such as U+202E,
    separators other than the space) become ``\x1b``, ``\u202e``, ``\r``; ``keep`` names
    the ones to leave (an answer's line breaks and tabs).

    >>> shown("Source: \x1bc\r x\u202e")
    'Source: \\x1bc\\r x\\u202e'
    """
    if text.isprintable() and not keep:
        return text
    return "".join(
        c if c == " " or c in keep or c.isprintable() else c.encode("unicode_escape").decode()
        for c in text
    )


def answered(
    chain: RunnableSequence[Any, PublicResponse], given: object, config: RunnableConfig
) -> tuple[Judged | None, PublicResponse]:
    """The run state R6 packages, and R6's response: the chain run in two steps.

    The same stages on the same input (R1 when the chain has a front, the audit record when
    it has a store); the state is kept only to say what the verdict named.
    """
    from langchain_core.runnables import RunnableSequence  # noqa: PLC0415

    from groundlock.contracts.state import Judged  # noqa: PLC0415

    *judging, packaging = chain.steps
    judge: RunnableSequence[Any, object] = RunnableSequence(*judging, name=chain.name)
    state = judge.invoke(given, config)
    response: PublicResponse = packaging.invoke(state, config)
    return (state if isinstance(state, Judged) else None), response


def source_of(entry: SelectedEvidence) -> str:
    """What a reader is told an entry came from.

    Its source reference, else its file and page, else its citation label, else its
    knowledge id.
    """
    if entry.source_reference:
        return entry.source_reference
    if entry.source_file:
        return entry.source_file + (f", p.{entry.page}" if entry.page is not None else "")
    return entry.citation_label or entry.knowledge_id


def cited_sources(
    verdict: ValidationResult, entries: Sequence[SelectedEvidence], grammar: CitationGrammar
) -> list[dict[str, str]]:
    """Each cited id with the source(s) of the entries it names, in order of first use.

    A page marker may name two chunks of one page: one id, their sources joined once each.
    """
    by_key = {entry.anchor: entry for entry in entries}
    sources: dict[str, list[str]] = {}
    for key in verdict.validated_citations:
        entry = by_key.get(key)
        if entry is None:
            continue
        found = sources.setdefault(grammar.public_anchor(entry), [])
        if source_of(entry) not in found:
            found.append(source_of(entry))
    return [{"id": cited, "source": "; ".join(found)} for cited, found in sources.items()]


def verdict_document(
    verdict: ValidationResult, entries: Sequence[SelectedEvidence], grammar: CitationGrammar
) -> dict[str, object]:
    """The verdict's ``002`` fields as JSON-ready data (``validate --json``)."""
    return {
        "grounded": verdict.validation_status.value == "PASSED",
        "cited_ids": list(verdict.cited_ids),
        "cited_sources": cited_sources(verdict, entries, grammar),
        "invalid_citations": list(verdict.invalid_citations),
        "malformed_citations": list(verdict.malformed_citations),
        "retrieved_ids": list(verdict.retrieved_ids),
    }


def verdict_lines(
    verdict: ValidationResult,
    entries: Sequence[SelectedEvidence],
    grammar: CitationGrammar | None,
    *,
    reason: str | None,
    show_written: bool,
) -> list[str]:
    """The human block: ``Grounded:``, citations and sources, what was wrong, retrieved ids.

    ``grammar``: to list each cited id with its source (None: ``ask`` has listed them);
    ``reason``: the reason line of a FAILED verdict as the command may show it (``ask``
    shows only what its response may carry); ``show_written``: list invalid and malformed
    markers as written (``validate``, whose caller wrote them) or count them (``ask``: its
    model wrote them, and a rejected answer's text is never shown). Every line is
    :func:`shown`.
    """
    status = verdict.generation_status.value
    grounded = verdict.validation_status.value == "PASSED"
    lines = [f"Grounded: {'yes' if grounded else 'no'} ({status})"]
    if not grounded and reason:
        lines.append(f"Reason: {reason}")
    if grounded:
        lines.append(f"Citations: {len(verdict.cited_ids)}")
        if grammar is not None:
            sources = cited_sources(verdict, entries, grammar)
            lines += [f"  [{item['id']}] {item['source']}" for item in sources]
    for label, written in (
        ("Invalid", verdict.invalid_citations),
        ("Malformed", verdict.malformed_citations),
    ):
        if written:
            listed = ", ".join(written) if show_written else f"{len(written)}"
            lines.append(f"{label} citations: {listed}")
    lines.append(retrieved_line(verdict.retrieved_ids))
    return [shown(line) for line in lines]


def retrieved_line(ids: Sequence[str]) -> str:
    """The last line of ``validate``, ``ask`` and ``retrieve`` alike (``-`` for none).

    >>> retrieved_line(("IPC_420_0", "IPC_421_0"))
    'Retrieved ids (2): IPC_420_0, IPC_421_0'
    """
    return f"Retrieved ids ({len(ids)}): {', '.join(ids) or '-'}"


def entries_of(state: Judged | None) -> Sequence[SelectedEvidence]:
    """The evidence the prompt held, or none."""
    return state.bundle.selected_evidence if state is not None else ()


def print_response(response: PublicResponse, state: Judged | None = None) -> None:
    """The answer and its numbered citations (or the failure), then the verdict's block."""
    if response.status.value == "FAILED":
        detail = f": {response.failure_message}" if response.failure_message else ""
        reason = response.failure_reason.value if response.failure_reason else "-"
        sys.stdout.write(shown(f"FAILED {reason}{detail}") + "\n")
    else:
        _print_answer(response)
    if state is not None and judged_or_refused(state.validation):
        # (A request whose audit write failed after R5 has a FAILED verdict in its state too.)
        lines = verdict_lines(
            state.validation, entries_of(state), None, reason=None, show_written=False
        )
        sys.stdout.write("".join(line + "\n" for line in lines))


def judged_or_refused(verdict: ValidationResult) -> bool:
    """Whether the verdict has something to show: an answer R5 judged, or a refusal.

    A request that failed before any answer was judged (retrieval, the input contract, a
    model that could not be called) has no citations and no retrieved ids to list: its
    ``FAILED`` line says all there is, and a ``Grounded: no`` block would only repeat it.
    """
    return verdict.firewall_ruleset is not None or verdict.validation_status.value == "PASSED"


def _print_answer(response: PublicResponse) -> None:
    sys.stdout.write(shown(response.answer, keep="\n\t") + "\n")
    for number, citation in enumerate(response.citations, start=1):
        details = ", ".join(
            part
            for part in (citation.source_reference, citation.event_date, citation.equipment_id)
            if part
        )
        line = f"  {number}. [{citation.anchor}] {citation.knowledge_id}"
        sys.stdout.write(shown(line + (f" ({details})" if details else "")) + "\n")
