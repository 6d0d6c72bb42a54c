"""Every rule the firewall knows, by name. A ruleset's manifest orders a selection of them.

A rule's behaviour is frozen under its name: a rule that must judge differently is a new
rule with a new name (``uncited_statement`` beside ``uncited_sentence``), named by a new
ruleset, so that every ruleset keeps judging exactly as it did.
"""

from __future__ import annotations

from groundlock.core.firewall.rule import Rule
from groundlock.core.firewall.rules.contradiction import ContradictsEvidence
from groundlock.core.firewall.rules.coverage import SupportCoverage
from groundlock.core.firewall.rules.form import (
    CitationList,
    EmptyAnswer,
    MalformedCitation,
    OutputTruncated,
    RefusalFormat,
    UncitedSentence,
    UncitedStatement,
    UnknownAnchor,
    WordLimit,
)
from groundlock.core.firewall.rules.instructions import InstructionFollowed, ObeyedInstruction
from groundlock.core.firewall.rules.leaks import MetaCommentary, MetadataLeak
from groundlock.core.firewall.rules.misattribution import MisattributedCitation
from groundlock.core.firewall.rules.rebound_value import ReboundValue
from groundlock.core.firewall.rules.shared_word import NoSharedWord
from groundlock.core.firewall.rules.superseded_value import SupersededValue
from groundlock.core.firewall.rules.unsafe_output import UnsafeOutput
from groundlock.core.firewall.rules.unsupported_entity import (
    UnsupportedAcronym,
    UnsupportedEntity,
    UnsupportedSubject,
)
from groundlock.core.firewall.rules.unsupported_value import UnsupportedValue
from groundlock.core.firewall.rules.waived_requirement import WaivedRequirement
from groundlock.core.firewall.rules.weak_support import WeakSupport
from groundlock.policies.ruleset import Ruleset, RulesetError

__all__ = ["RULES", "rules_of"]

RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in (
        OutputTruncated(),
        EmptyAnswer(),
        UnsafeOutput(),
        RefusalFormat(),
        MalformedCitation(),
        UnknownAnchor(),
        UncitedSentence(),
        UncitedStatement(),
        MetadataLeak(),
        MetaCommentary(),
        NoSharedWord(),
        InstructionFollowed(),
        ObeyedInstruction(),
        CitationList(),
        MisattributedCitation(),
        UnsupportedValue(),
        SupersededValue(),
        ReboundValue(),
        UnsupportedEntity(),
        UnsupportedAcronym(),
        UnsupportedSubject(),
        ContradictsEvidence(),
        WaivedRequirement(),
        WeakSupport(),
        SupportCoverage(),
        WordLimit(),
    )
}


def rules_of(ruleset: Ruleset) -> tuple[Rule, ...]:
    """The rule table of ``ruleset``, in its contract order.

    Raises:
        RulesetError: the manifest names a rule this version of groundlock does not have.
    """
    missing = [name for name in ruleset.rules if name not in RULES]
    if missing:
        raise RulesetError(f"ruleset {ruleset.name!r} names unknown rules: {', '.join(missing)}")
    return tuple(RULES[name] for name in ruleset.rules)
