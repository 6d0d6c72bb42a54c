"""What a firewall rule is: a named check over a parsed answer that yields findings.

A rule reads the answer's :class:`~groundlock.core.firewall.reading.Reading` (parsed once,
each sentence's support looked up once) and a :class:`Context` (the evidence, the question,
the policy, the ruleset's vocabulary) and yields a :class:`Finding` for each thing it
objects to. Rules never call one another: what two rules need about a sentence is a property
of its reading. It never edits the answer and never decides
the verdict: the ruleset's ordered table and the policy's modes do (the first *enforced*
finding in table order names ``failure_reason``; flagged findings are recorded only).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar, Protocol

from groundlock.contracts.assembly import AnswerBundle, SelectedEvidence
from groundlock.contracts.execution import LLMExecutionResult
from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.parsed import LineKind
from groundlock.policies.model import Policy
from groundlock.policies.ruleset import Ruleset

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import Reading, SentenceReading

__all__ = ["Context", "Finding", "Rule", "SentenceRule"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One objection of one rule."""

    rule: str
    """The rule's name (``unsupported_value``)."""
    reason: ReasonCode
    message: str
    """Internal detail for the audit trail: which sentence, which kind of thing. It never
    quotes the answer at length; a value or name it found may be named."""
    sentence: int | None = None
    """The 1-based sentence it is about, or None for the whole answer."""


@dataclass(frozen=True)
class Context:
    """Everything a rule may read besides the answer itself."""

    execution: LLMExecutionResult
    bundle: AnswerBundle
    """The evidence the prompt held (the run state's, after any pruning)."""
    policy: Policy
    ruleset: Ruleset
    entries: Mapping[str, SelectedEvidence]
    """Every evidence entry of the request by anchor (not only the cited ones)."""
    request_id: str | None = None
    """The request the answer replies to."""

    @cached_property
    def question(self) -> str:
        """The user's question (values and names it contains are not new)."""
        return self.bundle.user_question or ""


class Rule(Protocol):
    """One row of the rule table."""

    name: ClassVar[str]
    """Stable name, as the ruleset manifest and a policy's modes spell it."""
    reason: ClassVar[ReasonCode]
    """The reason code of its findings."""
    judges_exact_refusal: ClassVar[bool]
    """Whether it runs on an answer that is exactly the refusal (most do not)."""

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """Every objection to the answer, in the order an auditor should read them."""
        ...


class SentenceRule:
    """A rule that judges each sentence on its own (``firewall_v2``'s substantive rules).

    Subclasses say which sentences they judge and what, if anything, they object to in one;
    the loop, the message's prefix and the finding are this class's.
    """

    name: ClassVar[str]
    reason: ClassVar[ReasonCode]
    judges_exact_refusal: ClassVar[bool] = False

    def judges(self, sentence: SentenceReading) -> bool:
        """Whether the rule reads ``sentence``.

        By default a cited one, or an uncited heading, label or table header (read against
        what the whole answer cites).
        """
        return bool(sentence.cited) or sentence.kind is not LineKind.TEXT

    def objection(self, sentence: SentenceReading, ctx: Context) -> str | None:
        """What is wrong with ``sentence``, in a few words, or None."""
        raise NotImplementedError

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """One finding per sentence objected to."""
        for sentence in reading.sentences:
            if not self.judges(sentence):
                continue
            found = self.objection(sentence, ctx)
            if found is not None:
                message = f"answer: sentence {sentence.number}: {found}"
                yield Finding(self.name, self.reason, message, sentence.number)
