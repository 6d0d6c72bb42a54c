"""A policy with what it names loaded: its ruleset, template, tokenizer, grammar, segmenter.

A policy file names its parts; the stages and the pure functions below them need the
objects. :func:`resolve_policy` loads and cross-checks them once per policy content, and a
policy hands them out (``policy.grammar``, ``policy.template``, ...), so nothing below
``runnables/`` looks anything up by name. ``load_policy`` resolves every policy it returns;
a policy built in code is resolved, with the same checks, on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from groundlock._caches import registered_dict
from groundlock.errors import PolicyError
from groundlock.text.tokens import TokenCounter, get_token_counter

if TYPE_CHECKING:
    from groundlock.citations import CitationGrammar
    from groundlock.policies.model import Policy
    from groundlock.policies.ruleset import Ruleset
    from groundlock.prompts.template import PromptTemplate
    from groundlock.text.sentences import Segmenter

__all__ = ["ResolvedPolicy", "resolve_policy"]


@dataclass(frozen=True, slots=True, eq=False)
class ResolvedPolicy:
    """A policy with everything it names loaded, verified and checked against each other.

    A policy names its ruleset, template and token encoding; the stages and the pure
    functions below them need the objects, not the names. Resolving once here, when the
    policy is first used, means nothing below ``runnables/`` looks anything up by name, and
    R2, R3 and R6 read the citation grammar from the policy rather than through R5's
    ruleset. Read it as ``policy.resolved`` (or ``policy.grammar``, ``policy.template``, ...).
    """

    policy: Policy
    ruleset: Ruleset
    """The firewall ruleset with its rules, modes, parameters and vocabulary."""
    template: PromptTemplate
    """The frozen prompt template R3 renders."""
    token_counter: TokenCounter
    """The counter of the policy's token encoding (budgets, PB4, the answer's size)."""

    @property
    def grammar(self) -> CitationGrammar:
        """The citation grammar: how R2 heads entries, R3 neutralises, R5 and R6 read markers."""
        return self.ruleset.grammar

    @property
    def segmenter(self) -> Segmenter:
        """How answers and evidence are split into sentences."""
        return self.ruleset.segmenter


_RESOLVED: dict[str, ResolvedPolicy] = registered_dict(__name__ + "._RESOLVED")
"""Resolved policies by content hash, filled by :func:`resolve_policy`.

Emptied by ``clear_caches`` with the loaders' caches it is built from. Kept outside
the instance so that pickling or deep-copying a policy (Spark ships one to
every executor) carries its values, not a loaded ruleset and tokenizer.
"""

_MAX_RESOLVED = 256
"""Policies kept resolved: built-ins and the few a process builds in code, bounded."""


def resolve_policy(policy: Policy, name: str | None = None) -> ResolvedPolicy:
    """Load and cross-check what ``policy`` names, once per policy content.

    Kept by the policy's sha256 (same content, same parts), so a copy of a policy costs a
    dictionary read. ``load_policy`` resolves the policies it returns; a policy built in
    code is resolved on first use, with the same checks.

    Raises:
        PolicyError: the ruleset or template cannot be loaded, or the parts disagree (a
            history window without a history section, a grammar v1 sanitising cannot guard).
        TokenizerUnavailableError: the token encoding cannot be loaded offline.
    """
    found = _RESOLVED.get(policy.policy_sha256)
    return found if found is not None else _resolve(policy, name or policy.policy_version)


def _resolve(policy: Policy, name: str) -> ResolvedPolicy:
    from groundlock.policies.ruleset import (  # noqa: PLC0415  (loaded only when checked)
        RulesetError,
        check_modes,
        load_ruleset,
    )

    counter = get_token_counter(policy.token_encoding)
    try:
        ruleset = load_ruleset(policy.firewall_ruleset)
        check_modes(ruleset, policy.firewall_modes)
    except RulesetError as exc:
        raise PolicyError(f"policy {name!r}: {exc}") from exc
    from groundlock.prompts.template import (  # noqa: PLC0415  (loaded only when checked)
        PromptTemplateError,
        load_template,
    )

    try:
        template = load_template(policy.prompt_template)
    except PromptTemplateError as exc:
        raise PolicyError(f"policy {name!r}: {exc}") from exc
    if template.has_history != (policy.history is not None):
        raise PolicyError(
            f"policy {name!r}: a history window needs a template with a history section, "
            "and a template with one needs a history window"
        )
    if policy.history is not None and policy.sanitization_mode == "safe_normalize_v1":
        raise PolicyError(
            f"policy {name!r}: a history window needs safe_normalize_v2 (v1 does not "
            "neutralise the history section's fence tags)"
        )
    if ruleset.grammar.name != "bracket_c" and policy.sanitization_mode == "safe_normalize_v1":
        raise PolicyError(
            f"policy {name!r}: ruleset {ruleset.name!r} cites in {ruleset.grammar.name}, "
            "whose marker shapes only safe_normalize_v2 neutralises in evidence"
        )
    resolved = ResolvedPolicy(policy, ruleset, template, counter)
    if len(_RESOLVED) >= _MAX_RESOLVED:
        _RESOLVED.pop(next(iter(_RESOLVED)))
    _RESOLVED[policy.policy_sha256] = resolved
    return resolved
