"""The R3 output contract: the exact prompt bytes, their hash, and how tokens were spent.

``prompt_bytes`` is derived from ``messages`` (canonical JSON of the ordered role/content
list, UTF-8), so the bytes and the messages cannot disagree; ``prompt_sha256`` is checked
against them whenever a result is built or read back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Literal

from pydantic import NonNegativeInt

from groundlock._caches import memoized
from groundlock._frozen import cached_property
from groundlock.contracts._base import Contract
from groundlock.contracts.enums import BuildStatus
from groundlock.contracts.reasons import ReasonCode

__all__ = [
    "PromptBuildResult",
    "PromptMessage",
    "PromptTokenAccount",
    "canonical_prompt_bytes",
    "prompt_digest",
]


class PromptMessage(Contract):
    """One chat message of the prompt."""

    role: Literal["system", "user", "assistant"]
    """``assistant`` only for a history turn the model's side spoke, in a template that
    lays history out as messages (``004``); R4 sends it as an ``AIMessage``."""
    content: str


def canonical_prompt_bytes(messages: Iterable[tuple[str, str]]) -> bytes:
    """The one serialisation of an ordered (role, content) list that prompts are hashed in.

    >>> canonical_prompt_bytes([("system", "Be brief."), ("user", "Hi")])
    b'[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]'
    """
    payload = [{"role": role, "content": content} for role, content in messages]
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@memoized(64)
def prompt_digest(messages: tuple[tuple[str, str], ...]) -> tuple[bytes, str]:
    """The canonical bytes of ``messages`` and their sha256 hex digest.

    Memoised (on the message strings, whose hashes Python caches) because R3 hashes a prompt
    when it builds it and its contract checks the hash again straight after: one request,
    one serialisation. Bounded to the last 64 prompts, so at most a few megabytes.

    >>> data, sha = prompt_digest((("user", "Hi"),))
    >>> data, sha == hashlib.sha256(data).hexdigest()
    (b'[{"role":"user","content":"Hi"}]', True)
    """
    data = canonical_prompt_bytes(messages)
    return data, hashlib.sha256(data).hexdigest()


class PromptTokenAccount(Contract):
    """Tokens per section (``001`` PB3/PB4): the sum of the five sections and the reserve.

    Section counts add up exactly to the tokenizer's count of the message contents (the
    template is segmented at line starts); chat-format overhead per message is not included.
    """

    system_tokens: NonNegativeInt
    safety_tokens: NonNegativeInt
    evidence_tokens: NonNegativeInt
    question_tokens: NonNegativeInt
    output_rules_tokens: NonNegativeInt
    reserved_output_tokens: NonNegativeInt
    """The answer's budget: the policy's, or its query type's (``004``)."""
    history_tokens: NonNegativeInt = 0
    """The conversation-history section (templates that have one)."""

    @property
    def prompt_tokens(self) -> int:
        """Tokens of the prompt itself, without the output reserve."""
        return (
            self.system_tokens
            + self.safety_tokens
            + self.evidence_tokens
            + self.question_tokens
            + self.output_rules_tokens
            + self.history_tokens
        )

    @property
    def total_prompt_tokens(self) -> int:
        """``001`` PB4's total: prompt plus reserved output; must fit the policy's ceiling."""
        return self.prompt_tokens + self.reserved_output_tokens


class PromptBuildResult(Contract):
    """R3's section of the run state: the exact prompt, or why there is none.

    The evidence the prompt holds is the state's ``bundle`` (R3 replaces it with the pruned
    one when PB4 drops entries to fit the budget).
    """

    build_status: BuildStatus
    reason_code: ReasonCode | None
    message: str | None
    """Why the status is not OK, naming the field or budget at fault."""
    messages: tuple[PromptMessage, ...]
    """The system message, then (in a template that lays history out as messages) one
    message per kept history turn with the turn's role, then the user message; empty unless
    OK."""
    prompt_sha256: str | None
    """sha256 of ``prompt_bytes``; None unless OK."""
    template_version: str
    template_sha256: str
    refusal_text: str
    """The exact refusal this prompt demands; R4 uses it for NO_EVIDENCE, R5 checks it."""
    tokens: PromptTokenAccount | None
    pruned_chunk_count: NonNegativeInt
    """Chunks PB4 dropped (lowest rank first) to fit max_total_prompt_tokens."""
    history_turns_given: NonNegativeInt = 0
    """Prior turns the bundle brought."""
    history_turns_kept: NonNegativeInt = 0
    """The newest of them that fit the policy's window (turns and tokens) and hold text:
    the ones the prompt shows. The others were dropped, oldest first."""

    @cached_property
    def prompt_bytes(self) -> bytes:
        """The exact bytes the model runnable must send (empty unless OK)."""
        if not self.messages:
            return b""
        return prompt_digest(tuple((m.role, m.content) for m in self.messages))[0]

    def _check(self) -> None:
        if self.build_status is not BuildStatus.OK:
            if self.reason_code is None or self.messages or self.prompt_sha256 is not None:
                raise ValueError("a non-OK prompt has a reason_code and no prompt")
            return
        if self.reason_code is not None or self.tokens is None:
            raise ValueError("an OK prompt has token accounting and no reason_code")
        roles = [m.role for m in self.messages]
        turns = roles[1:-1]
        if (
            roles[:1] != ["system"]
            or roles[-1:] != ["user"]
            or len(roles) < 2
            or "system" in turns
            or len(turns) not in {0, self.history_turns_kept}
        ):
            raise ValueError(
                "an OK prompt is a system message, its kept history turns as user or "
                "assistant messages (or none), then one user message"
            )
        pairs = tuple((m.role, m.content) for m in self.messages)
        if prompt_digest(pairs)[1] != self.prompt_sha256:
            raise ValueError("prompt_sha256 must be the sha256 of prompt_bytes")
