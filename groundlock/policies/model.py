"""The policy: every value that decides which evidence a model may see.

A policy is identified by its version *and* by the sha256 of its content, and both travel in
every trace and audit row, so an answer can always be tied to the exact rules that shaped it.
Modes that the specs freeze (``rank_strict`` ordering, ``safe_normalize_v1`` sanitisation,
strict NO_EVIDENCE) are literal types: groundlock has no lenient mode to switch on by mistake.
"""

from __future__ import annotations

import hashlib
import json
from decimal import ROUND_FLOOR, Decimal
from typing import TYPE_CHECKING, Annotated, Literal, Self

from pydantic import ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator

from groundlock._frozen import FrozenModel, cached_property
from groundlock.policies.resolved import ResolvedPolicy, resolve_policy

if TYPE_CHECKING:
    from groundlock.citations import CitationGrammar
    from groundlock.policies.ruleset import Ruleset
    from groundlock.prompts.template import PromptTemplate
    from groundlock.text.sentences import Segmenter
    from groundlock.text.tokens import TokenCounter

__all__ = [
    "ConfidenceThresholds",
    "ExecutionLimits",
    "HistoryWindow",
    "InputLimits",
    "Policy",
    "QueryTypeBudget",
    "SupportJudgeSettings",
]


_Positive = Annotated[StrictInt, Field(ge=1)]
_Fraction = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True)]


class InputLimits(FrozenModel):
    """Resource limits checked before any parsing work, so oversized input costs nothing."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_results: _Positive
    """Most rows a bundle may carry."""
    max_chunk_chars: _Positive
    """Longest chunk_text accepted; longer means a broken upstream chunker, not evidence."""
    max_question_chars: _Positive
    """Longest user_question accepted."""


_Seconds = Annotated[float, Field(gt=0.0, allow_inf_nan=False, strict=True)]


class ExecutionLimits(FrozenModel):
    """How long and how often R4 may try the model; there is no other retry layer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: Annotated[StrictInt, Field(ge=1, le=10)]
    """Total attempts per request, the first included; only transient failures retry."""
    attempt_timeout_seconds: _Seconds
    """HTTP timeout of one attempt, pinned on the provider client."""
    request_deadline_seconds: _Seconds
    """Wall-clock budget for all attempts and the waits between them."""
    retry_after_cap_seconds: Annotated[float, Field(ge=0.0, allow_inf_nan=False, strict=True)]
    """Longest Retry-After honoured; a provider asking for more fails the request at once."""
    backoff_initial_seconds: _Seconds
    """First wait when the provider gives no Retry-After (then exponential, with jitter)."""
    backoff_max_seconds: _Seconds
    """Longest such wait."""

    @model_validator(mode="after")
    def _coherent(self) -> Self:
        if self.attempt_timeout_seconds > self.request_deadline_seconds:
            raise ValueError("attempt_timeout_seconds must fit in request_deadline_seconds")
        if self.backoff_initial_seconds > self.backoff_max_seconds:
            raise ValueError("backoff_initial_seconds must not exceed backoff_max_seconds")
        return self


_LATER_FIELDS = (
    "firewall_ruleset",
    "firewall_modes",
    "min_support_coverage",
    "support_judge",
    "confidence",
    "query_types",
    "history",
    "stream_mode",
    "on_model_unavailable",
)
"""Fields added after the first policies were locked (see :attr:`Policy.policy_sha256`)."""

_LATER_SUBFIELDS: dict[str, tuple[str, ...]] = {
    "confidence": ("comparison", "basis", "no_evidence"),
}
"""Fields added to a nested setting after policies that set it were locked: left out of the
hash at their defaults, so a policy with its own thresholds keeps its lock."""


class SupportJudgeSettings(FrozenModel):
    """How a policy uses an optional support judge (an entailment model) in R5.

    The judge runs after the deterministic rules, only on answers that passed them, once per
    cited sentence, with the sentence and the texts of the entries it cites. The judge itself
    (a chat model, pinned like R4's, or any runnable) is given to the chain; the policy says
    that one is required and what its verdicts do.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["enforce", "flag"] = "enforce"
    """``enforce``: an unsupported sentence withholds the answer (``SUPPORT_JUDGE_REJECTED``);
    ``flag``: the verdict is recorded and the answer passes."""
    on_error: Literal["fail", "flag"] = "fail"
    """A judge that errs, times out or answers outside its contract fails the request
    closed (``SUPPORT_JUDGE_FAILED``), or, with ``flag``, is recorded and the answer passes."""
    min_score: _Fraction = 0.5
    """A ``supported`` verdict scored below this counts as unsupported."""
    prompt: Annotated[StrictStr, Field(pattern=r"^[a-z][a-z0-9_]*$")] = "judge_prompt_v1"
    """The frozen, hash-locked prompt a chat-model judge is given (``groundlock/prompts``)."""
    timeout_seconds: _Seconds = 60.0
    """Wall-clock budget for judging one answer; past it the judge has failed."""
    max_sentences: Annotated[StrictInt, Field(ge=1, le=200)] = 60
    """Most sentences judged; a longer answer fails the judge (its cost is bounded)."""


class ConfidenceThresholds(FrozenModel):
    """How the public response's ``confidence`` is read off the evidence the prompt held.

    By default (every built-in policy): the top admitted similarity, ``high`` at or above
    0.88, ``medium`` at or above 0.80, else ``low``, on OK answers only. Spec 004's bands are
    these fields set otherwise: ``high`` 0.5, ``medium`` 0.2, ``comparison`` ``above``,
    ``basis`` ``rerank_else_similarity`` and ``no_evidence`` ``low``. The three fields after
    the thresholds were added later: at their defaults they leave a policy's hash unchanged.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    high: _Fraction = 0.88
    medium: _Fraction = 0.80
    comparison: Literal["at_least", "above"] = "at_least"
    """``at_least``: a score equal to a threshold reaches it (groundlock's default);
    ``above``: it must be strictly greater (004's ``> 0.5``, ``> 0.2``)."""
    basis: Literal["similarity", "rerank_else_similarity"] = "similarity"
    """The score bucketed: the top ``similarity_score``, or (004) the top of each entry's
    ``rerank_score`` where the row gave one and its similarity where it did not. A
    reranker's scores are on its own scale: set the thresholds for the scale it uses."""
    no_evidence: Literal["none", "low"] = "none"
    """The confidence of a NO_EVIDENCE response: none (the default), or ``low`` (004: a
    refusal with nothing retrieved is the weakest signal there is). FAILED never has one."""

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.medium > self.high:
            raise ValueError("confidence: medium must not exceed high")
        return self


class QueryTypeBudget(FrozenModel):
    """The output budget of one query type (``004``): tokens reserved, words allowed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reserved_output_tokens: _Positive
    """Tokens kept for the answer and the model's output cap, for this query type."""
    max_words: _Positive
    """Most words the answer may hold (its markers not counted); R5 enforces it
    (``WORD_LIMIT_EXCEEDED``)."""


QueryTypeName = Literal["factual", "summary", "compare"]


class HistoryWindow(FrozenModel):
    """How much conversation history a prompt carries (``004``): the newest turns that fit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_turns: Annotated[StrictInt, Field(ge=1, le=50)]
    """Most turns kept (a user turn and its reply are two); older ones are dropped first."""
    max_tokens: _Positive
    """Most tokens the history section's turns may take; older turns are dropped first."""


class Policy(FrozenModel):
    """A frozen, versioned selection and budget policy (``001`` R2.2 snapshot and more)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy_version: Annotated[StrictStr, Field(pattern=r"^[A-Z][A-Z0-9_]*$")]
    """Name of this version, e.g. ``R2_POLICY_V1``; equals the file name it is stored in."""
    description: StrictStr
    """What this version is for and how it differs from its predecessor."""

    max_chunks: _Positive
    """Most chunks admitted into a prompt."""
    max_chunks_per_knowledge_id: _Positive
    """Most chunks from one source document: a cap, not one-per-document."""
    max_evidence_tokens: _Positive
    """Budget for the whole evidence block, headers included."""
    reserved_output_tokens: _Positive
    """Tokens kept for the answer; also the model's output cap."""
    max_total_prompt_tokens: _Positive
    """Ceiling for prompt plus reserved output."""
    max_chunk_token_ratio: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False, strict=True)]
    """Largest share of the evidence budget one chunk may take; longer chunks are trimmed."""
    overlap_ratio_threshold: _Fraction
    """Chunks whose shingle overlap with a better-ranked chunk exceeds this are duplicates."""
    overlap_shingle_words: _Positive
    """Words per shingle for overlap (3 catches copied sentences, ignores shared phrases)."""
    ordering_mode: Literal["rank_strict"]
    """Rank ascending, chunk_id ascending: the only ordering with stable anchors."""
    sanitization_mode: Literal["safe_normalize_v1", "safe_normalize_v2"]
    """The frozen sanitiser of ``groundlock.text.sanitize``: v2 also neutralises the history
    section's fence tags and the markers of the ruleset's citation grammar (the presets')."""
    strict_no_evidence: Literal[True]
    """No evidence means the exact refusal, never a best-effort answer."""
    min_top_similarity_score: _Fraction
    """If the best row scores below this, nothing is trusted: NO_EVIDENCE."""
    min_similarity_score: _Fraction
    """Per-row floor; rows below it are dropped. Not above the top gate."""
    allowed_knowledge_types: Annotated[tuple[StrictStr, ...], Field(min_length=1)]
    """Knowledge types that may be evidence; any other type fails the request (V5)."""
    require_knowledge_type: StrictBool
    """Whether a row without ``knowledge_type_effective`` fails V5 (``001`` rows have none)."""
    token_encoding: StrictStr
    """tiktoken encoding that budgets are counted in; must be loadable offline."""
    input_limits: InputLimits
    refusal_text: Annotated[StrictStr, Field(min_length=1, pattern=r"^[^\n]+$")]
    """The exact, single-line answer for insufficient evidence (``001`` P2.1 refusal lock)."""
    prompt_template: Annotated[StrictStr, Field(pattern=r"^[a-z][a-z0-9_]*$")]
    """Version of the frozen prompt template (``groundlock/prompts/<version>.txt``)."""
    max_question_tokens: _Positive
    """Cap on the question's tokens in the prompt (``001`` PB3); longer questions fail."""
    execution: ExecutionLimits
    firewall_ruleset: Annotated[StrictStr, Field(pattern=r"^[a-z][a-z0-9_]*$")] = "firewall_v1"
    """The R5 ruleset (``groundlock/policies/rulesets/<name>``): its rule table, order and
    vocabulary, hash-locked like the prompt template. Older policies, written before rulesets
    were versioned, judge with ``firewall_v1``."""
    firewall_modes: dict[StrictStr, Literal["enforce", "flag"]] = Field(default_factory=dict)
    """Per rule, ``enforce`` or ``flag``, for the ruleset's rules that have a mode (the
    substantive rules); a rule not named runs in the ruleset's default mode. The form rules
    of the contract always enforce."""
    support_judge: SupportJudgeSettings | None = None
    """An optional support judge after the deterministic rules (None: no judge)."""
    stream_mode: Literal["buffered", "progressive"] = "buffered"
    """How a streamed request releases its sentences (``chain.stream``). ``buffered``: none
    until the whole answer has passed R5 (and, with a store, is recorded), then all of them.
    ``progressive``: each once it and the sentences before it pass the rules about them;
    if the answer fails after all, the stream ends with a retraction of what was emitted
    (see :mod:`groundlock.contracts.stream`)."""
    min_support_coverage: _Fraction = 0.5
    """Rule ``support_coverage``: a cited sentence less than this share of whose content
    words occur in the entries it cites is a finding (a flag in the default policy)."""
    confidence: ConfidenceThresholds = Field(default_factory=ConfidenceThresholds)
    """Thresholds of the public response's ``confidence`` (a retrieval signal)."""
    query_types: dict[QueryTypeName, QueryTypeBudget] | None = None
    """Budgets per query type (None: only ``factual``, with :attr:`reserved_output_tokens`
    and no word limit). When given, ``factual`` must be among them with the policy's own
    ``reserved_output_tokens``, and every budget must fit the prompt ceiling."""
    history: HistoryWindow | None = None
    """The conversation-history window (None: the policy takes no history, and a bundle
    that brings some fails the input contract). Needs a template with a history section."""
    on_model_unavailable: Literal["fail", "refuse"] = "fail"
    """What a chain does when its model cannot be built (``004``: no model configured: its
    integration package is missing, or the provider's SDK refuses for want of an API key).
    ``fail`` (the default): building the chain raises, as it always has. ``refuse``: the
    chain is built without a model and every request that reaches R4 gets the policy's
    refusal with ``model_used`` ``none``, recorded as ``MODEL_NOT_CONFIGURED`` (never a
    fallback model). A model that was built and fails mid-request fails the request as
    always, with its own reason code: an outage is not a refusal."""

    @model_validator(mode="after")
    def _values_are_coherent(self) -> Self:
        if self.min_similarity_score > self.min_top_similarity_score:
            raise ValueError("min_similarity_score must not exceed min_top_similarity_score")
        if self.max_evidence_tokens + self.reserved_output_tokens > self.max_total_prompt_tokens:
            raise ValueError(
                "max_evidence_tokens + reserved_output_tokens must fit in max_total_prompt_tokens"
            )
        if self.refusal_text != self.refusal_text.strip():
            raise ValueError("refusal_text must not start or end with whitespace")
        if self.max_chunk_tokens < 1:
            raise ValueError("max_chunk_token_ratio * max_evidence_tokens must be at least 1")
        if len(set(self.allowed_knowledge_types)) != len(self.allowed_knowledge_types):
            raise ValueError("allowed_knowledge_types must not repeat a type")
        if self.query_types is not None:
            factual = self.query_types.get("factual")
            if factual is None or factual.reserved_output_tokens != self.reserved_output_tokens:
                raise ValueError(
                    "query_types must hold factual with the policy's reserved_output_tokens"
                )
            for name, budget in self.query_types.items():
                if (
                    self.max_evidence_tokens + budget.reserved_output_tokens
                    > self.max_total_prompt_tokens
                ):
                    raise ValueError(
                        f"query_types.{name}: max_evidence_tokens + reserved_output_tokens "
                        "must fit in max_total_prompt_tokens"
                    )
        return self

    def budget_for(self, query_type: str | None) -> QueryTypeBudget | None:
        """The budget of ``query_type`` (None: ``factual``), or None if the policy has none.

        A policy without query types answers every request with ``reserved_output_tokens``
        and no word limit, and knows only ``factual``.

        Raises:
            KeyError: the policy defines no such query type.
        """
        name = query_type or "factual"
        if self.query_types is None:
            if name != "factual":
                raise KeyError(name)
            return None
        for known, budget in self.query_types.items():
            if known == name:
                return budget
        raise KeyError(name)

    def output_tokens_for(self, query_type: str | None) -> int:
        """Tokens reserved for the answer of ``query_type`` (see :meth:`budget_for`)."""
        budget = self.budget_for(query_type)
        return budget.reserved_output_tokens if budget else self.reserved_output_tokens

    @cached_property
    def output_budgets(self) -> tuple[int, ...]:
        """Every distinct output cap the policy may pin a model with, the default first."""
        caps = [self.reserved_output_tokens]
        for budget in (self.query_types or {}).values():
            if budget.reserved_output_tokens not in caps:
                caps.append(budget.reserved_output_tokens)
        return tuple(caps)

    @cached_property
    def max_chunk_tokens(self) -> int:
        """Token ceiling for one evidence entry: ``floor(ratio * max_evidence_tokens)``.

        Cached: R2 reads it for every row, and the policy is frozen. Computed in decimal
        so that ``0.35 * 2200`` is 770, not 769 from binary rounding.
        """
        exact = Decimal(str(self.max_chunk_token_ratio)) * self.max_evidence_tokens
        return int(exact.to_integral_value(rounding=ROUND_FLOOR))

    @property
    def resolved(self) -> ResolvedPolicy:
        """Everything this policy names, loaded and cross-checked once per content.

        Built by ``policies.resolved.resolve_policy`` (``load_policy`` already did it); read
        through the shortcuts below, so that the stages and pure functions take the parts
        from the policy they were given instead of looking them up by name.
        """
        return resolve_policy(self)

    @property
    def ruleset(self) -> Ruleset:
        """The firewall ruleset ``firewall_ruleset`` names, loaded and verified."""
        return self.resolved.ruleset

    @property
    def grammar(self) -> CitationGrammar:
        """The citation grammar the policy's answers cite in (its ruleset's)."""
        return self.resolved.ruleset.grammar

    @property
    def template(self) -> PromptTemplate:
        """The frozen prompt template ``prompt_template`` names."""
        return self.resolved.template

    @property
    def token_counter(self) -> TokenCounter:
        """The counter of ``token_encoding``."""
        return self.resolved.token_counter

    @property
    def segmenter(self) -> Segmenter:
        """How answers and evidence are split into sentences (its ruleset's)."""
        return self.resolved.ruleset.segmenter

    def __hash__(self) -> int:
        # The content hash is the policy's identity (and ``firewall_modes``, a dict, would
        # make pydantic's field-by-field hash raise).
        return hash(self.policy_sha256)

    @cached_property
    def policy_sha256(self) -> str:
        """sha256 of the policy's canonical JSON: identical content, identical hash.

        Key order and whitespace in the file do not matter; any value change does. Fields
        added after a policy was locked count only when they differ from their default, so
        ``R2_POLICY_V1`` (which predates them) keeps the hash its audit rows carry.
        """
        later = {
            name
            for name in _LATER_FIELDS
            if getattr(self, name)
            == type(self).model_fields[name].get_default(call_default_factory=True)
        }
        dumped = self.model_dump(mode="json", exclude=later)
        for name, subfields in _LATER_SUBFIELDS.items():
            setting = getattr(self, name)
            if name in later or setting is None:
                continue
            fields = type(setting).model_fields
            for sub in subfields:
                if getattr(setting, sub) == fields[sub].get_default(call_default_factory=True):
                    dumped[name].pop(sub)
        canonical = json.dumps(
            dumped,
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
