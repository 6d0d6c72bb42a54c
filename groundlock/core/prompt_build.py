"""R3 as a pure function: ``build_prompt(state, policy) -> Prompted``.

The frozen template is rendered with three values: the policy's refusal text, the bundle's
evidence block, and the question. The question is inserted as received except for the same
safe normalisation evidence gets (hidden characters removed, whitespace collapsed, fence
tags and anchors neutralised): its words never change, but a question cannot close its own
section or open another one.

History is rendered where the template puts it: as lines of a ``<history>`` section of the
user message, or (``004``'s layout) as messages of their own, one per kept turn with the
turn's role, between the system and user messages. Either way a turn is normalised like
evidence with the policy's marker shapes made inert, and no marker can name it.

Tokens are accounted per section (``001`` PB3) from segments whose counts add up exactly
(see :mod:`groundlock.prompts.template`): static text is counted once and cached, and the
evidence block's count comes from R2. PB4: while prompt plus reserved output exceeds
``max_total_prompt_tokens``, the lowest-ranked chunk is dropped and the block rebuilt; if
even one chunk does not fit, the prompt cannot be repaired and the request fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from groundlock.contracts.assembly import AnswerBundle
from groundlock.contracts.enums import BuildStatus, GenerationStatus
from groundlock.contracts.evidence import ENTRY_SEPARATOR
from groundlock.contracts.prompt import (
    PromptBuildResult,
    PromptMessage,
    PromptTokenAccount,
    prompt_digest,
)
from groundlock.contracts.reasons import DropReason, ReasonCode
from groundlock.contracts.retrieval import HistoryTurn
from groundlock.contracts.state import Assembled, Outcome, Prompted
from groundlock.core.evidence_assembly import without_lowest_ranked
from groundlock.core.skipped import unbuilt, unbuilt_prompt
from groundlock.policies.model import Policy
from groundlock.prompts.template import PromptTemplate
from groundlock.text.sanitize import neutralized_for, safe_normalize
from groundlock.text.tokens import TokenCounter

__all__ = [
    "HistoryWindow",
    "build_prompt",
    "check_outside_bundle",
    "checked_question",
    "history_window",
]

_SECTION_FIELD = {
    "system": "system_tokens",
    "rules": "safety_tokens",
    "evidence": "evidence_tokens",
    "question": "question_tokens",
    "output_rules": "output_rules_tokens",
    "history": "history_tokens",
}


def build_prompt(
    state: Assembled | AnswerBundle,
    policy: Policy,
    template: PromptTemplate | None = None,
    counter: TokenCounter | None = None,
) -> Prompted:
    """The state with the exact prompt for its evidence, or with why there is none.

    A request that is not OK gets a prompt that was not built, carrying its reason. PB4 may
    prune the evidence to fit the budget: the returned state's ``bundle`` is what the prompt
    holds.

    >>> from groundlock import assemble, load_policy
    >>> row = {"chunk_id": "c1", "rank": 0, "similarity": 0.9, "knowledge_id": "K1",
    ...        "chunk_text": "Replace the seal every 500 hours."}
    >>> bundle = assemble({"request_id": "r1", "user_question": "Seal interval?",
    ...                    "retrieval_status": "SUCCESS", "index_version": "i",
    ...                    "embedding_model": "e", "top_k": 1, "results": [row]}, load_policy())
    >>> prompt = build_prompt(bundle, load_policy()).prompt
    >>> [m.role for m in prompt.messages], prompt.tokens.total_prompt_tokens <= 3500
    (['system', 'user'], True)
    """
    state = state if isinstance(state, Assembled) else Assembled.of(state)
    if state.outcome.status is not GenerationStatus.OK:
        return unbuilt(state, policy)
    template = template if template is not None else policy.template
    counter = counter if counter is not None else policy.token_counter
    bundle = state.bundle

    question = checked_question(bundle.user_question or "", policy, counter)
    if isinstance(question, tuple):
        reason, message = question
        return _failed(state, bundle, policy, template, reason=reason, message=message)

    history = (
        history_window(bundle.history, policy, counter, as_messages=template.history_messages)
        if template.has_history
        else None
    )
    values = {"refusal": policy.refusal_text, "evidence_block": "", "user_question": question}
    if history is not None and not template.history_messages:
        values["history_block"] = history.block
    # Everything but the evidence block is fixed for this request: count it once.
    fixed = _section_counts(template, values, counter)
    if history is not None and template.history_messages:
        fixed["history_tokens"] += history.tokens  # the turns' messages, counted whole
    pruned = 0
    while True:
        tokens = PromptTokenAccount(
            reserved_output_tokens=policy.output_tokens_for(bundle.query_type),
            **{**fixed, "evidence_tokens": fixed["evidence_tokens"] + bundle.evidence_token_count},
        )
        if tokens.total_prompt_tokens <= policy.max_total_prompt_tokens:
            break
        if len(bundle.selected_evidence) == 1:
            return _failed(
                state,
                bundle,
                policy,
                template,
                reason=ReasonCode.PROMPT_BUDGET_EXCEEDED,
                message=f"prompt: {tokens.total_prompt_tokens} tokens with one evidence entry "
                f"exceed max_total_prompt_tokens ({policy.max_total_prompt_tokens})",
                pruned=pruned,
            )
        bundle = without_lowest_ranked(bundle, DropReason.DROP_PROMPT_BUDGET)
        pruned += 1

    values["evidence_block"] = bundle.evidence_block_text
    messages = _messages(template, values, history.messages if history is not None else ())
    prompt = PromptBuildResult(
        build_status=BuildStatus.OK,
        reason_code=None,
        message=None,
        messages=messages,
        prompt_sha256=prompt_digest(tuple((m.role, m.content) for m in messages))[1],
        template_version=template.version,
        template_sha256=template.sha256,
        refusal_text=policy.refusal_text,
        tokens=tokens,
        pruned_chunk_count=pruned,
        history_turns_given=len(bundle.history),
        history_turns_kept=history.kept if history is not None else 0,
    )
    return state.prompted(prompt, bundle=bundle)


@dataclass(frozen=True, slots=True)
class HistoryWindow:
    """The history section of one prompt: the turns kept, rendered, and how many."""

    block: str
    """``user: ...`` / ``assistant: ...`` lines, each ending with a blank line, oldest first
    (empty when the turns are messages)."""
    kept: int
    tokens: int
    """Tokens of what the prompt holds of the turns: the block, or the messages' contents."""
    messages: tuple[tuple[str, str], ...] = ()
    """(role, content) of each kept turn, oldest first, when the turns are messages."""


def history_window(
    turns: tuple[HistoryTurn, ...],
    policy: Policy,
    counter: TokenCounter,
    *,
    as_messages: bool = False,
) -> HistoryWindow:
    """The newest turns that fit the policy's window, sanitised like evidence and rendered.

    Turns are taken from the newest back; the first one that would pass ``max_turns`` or
    ``max_tokens`` ends the window, so what the model sees is always an unbroken recent
    stretch of the conversation (older turns are dropped first). A turn with nothing visible
    after normalisation is skipped. Each rendered turn begins after a newline, so the
    section's count is the sum of the turns' counts.

    ``as_messages`` (``004``'s layout): each turn is a message of its own whose content is
    the normalised text alone (its role is the message's), and a turn costs the tokens of
    that content; the window's rule is the same.
    """
    window = policy.history
    if window is None or not turns:
        return HistoryWindow("", 0, 0)
    grammar = policy.grammar
    kept: list[tuple[str, str]] = []
    used = 0
    for turn in reversed(turns):
        text = neutralized_for(safe_normalize(turn.content), grammar).text
        if not text:
            continue
        rendered = text if as_messages else f"{turn.role}: {text}{ENTRY_SEPARATOR}"
        size = counter.count(rendered)
        if len(kept) == window.max_turns or used + size > window.max_tokens:
            break
        kept.append((turn.role, rendered))
        used += size
    kept.reverse()
    if as_messages:
        return HistoryWindow("", len(kept), used, tuple(kept))
    return HistoryWindow("".join(rendered for _role, rendered in kept), len(kept), used)


def checked_question(
    user_question: str, policy: Policy, counter: TokenCounter
) -> str | tuple[ReasonCode, str]:
    r"""The question as the prompt will carry it, or the reason and message refusing it.

    R3's question gates, which depend on nothing but the question: the retrieval front
    runs them too, so a question R3 would refuse never costs a search.

    >>> from groundlock.policies import load_policy
    >>> from groundlock.text.tokens import get_token_counter
    >>> policy = load_policy()
    >>> checked_question("  Torque  of the\tpump bolts? ", policy, get_token_counter("cl100k_base"))
    'Torque of the pump bolts?'
    >>> checked_question("word " * 400, policy, get_token_counter("cl100k_base"))[1]
    'user_question: 401 tokens exceed max_question_tokens (300)'
    """
    normalized = safe_normalize(user_question)  # unique per request: not cached
    if policy.sanitization_mode == "safe_normalize_v2":
        normalized = neutralized_for(normalized, policy.grammar)
    question = normalized.text
    if not question:
        return (
            ReasonCode.INPUT_SCHEMA_INVALID,
            "user_question: nothing visible remains after normalisation",
        )
    question_tokens = counter.count(question + "\n")
    if question_tokens > policy.max_question_tokens:
        return (
            ReasonCode.PROMPT_BUDGET_EXCEEDED,
            f"user_question: {question_tokens} tokens exceed max_question_tokens "
            f"({policy.max_question_tokens})",
        )
    return question


def check_outside_bundle(
    bundle: AnswerBundle, policy: Policy, counter: TokenCounter | None = None
) -> str | None:
    """Re-check what a bundle that arrived as data (not from R2 in this process) claims.

    Its text was already re-checked as sanitised by the contract; here its token counts are
    recounted, since budgets and PB4 rely on them. Returns why it is refused, or None.
    """
    counter = counter if counter is not None else policy.token_counter
    try:
        policy.budget_for(bundle.query_type)
    except KeyError:
        return f"query_type: policy {policy.policy_version} defines no such query type"
    if bundle.history and policy.history is None:
        return f"history: policy {policy.policy_version} takes no conversation history"
    grammar = policy.grammar.name
    total = 0
    for entry in bundle.selected_evidence:
        if entry.citation_grammar != grammar:
            return (
                f"selected_evidence[{entry.anchor}].citation_grammar: this policy cites in "
                f"{grammar}"
            )
        actual = counter.count(entry.entry_text)
        if actual != entry.token_count or actual > policy.max_chunk_tokens:
            return f"selected_evidence[{entry.anchor}].token_count: does not match its text"
        total += actual
    if total > policy.max_evidence_tokens:
        return "selected_evidence: more tokens than max_evidence_tokens"
    return None


def _section_counts(
    template: PromptTemplate, values: dict[str, str], counter: TokenCounter
) -> dict[str, int]:
    """Tokens per section, by PromptTokenAccount field, with the evidence block left out.

    The block's count is known exactly from R2 (re-tokenising it would cost ~0.5 ms), and
    it is the only part that changes when PB4 prunes an entry.
    """
    counts = dict.fromkeys(_SECTION_FIELD.values(), 0)
    for section, _role, placeholder, segment in template.segments(values):
        if placeholder != "evidence_block":
            counts[_SECTION_FIELD[section]] += counter.count(segment)
    return counts


def _messages(
    template: PromptTemplate, values: dict[str, str], turns: tuple[tuple[str, str], ...]
) -> tuple[PromptMessage, ...]:
    """The system message, the history turns (none unless the template asks), the user one."""
    contents: dict[str, list[str]] = {"system": [], "user": []}
    for _section, role, _placeholder, segment in template.segments(values):
        contents[role].append(segment)
    return (
        PromptMessage(role="system", content="".join(contents["system"])),
        *(PromptMessage.model_validate({"role": r, "content": c}) for r, c in turns),
        PromptMessage(role="user", content="".join(contents["user"])),
    )


def _failed(
    state: Assembled,
    bundle: AnswerBundle,
    policy: Policy,
    template: PromptTemplate,
    *,
    reason: ReasonCode,
    message: str,
    pruned: int = 0,
) -> Prompted:
    prompt = unbuilt_prompt(
        BuildStatus.FAILED, reason, message, policy, template=template, pruned=pruned
    )
    outcome = Outcome.failed(reason, message)
    return state.prompted(prompt, bundle=bundle, outcome=outcome)
