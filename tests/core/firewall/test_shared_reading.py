"""R5 reads each entry and each sentence once, however many rules and sentences ask.

Issue 29: a sentence's view of the evidence used to look every entry up again (as another
entry, and among all of them), so the lookups grew with sentences x entries. Counted steps,
never clocks: the lookups of entry facts an answer makes equal the entries of its request,
for an answer of 5 sentences and of 20 alike, and the verdict's rules all share one word
list per sentence.
"""

from __future__ import annotations

import pytest

from groundlock import AssembleEvidence, BuildPrompt, ExecuteModel, load_policy, validate_answer
from groundlock.core.firewall import support
from groundlock.core.firewall.lexicon import words
from groundlock.core.firewall.parsed import parse_answer
from groundlock.core.firewall.reading import Reading
from groundlock.core.firewall.rule import Context
from groundlock.policies.ruleset import load_ruleset
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel

POLICY = load_policy("R2_POLICY_V3")
ROWS = [make_row(i) for i in range(20)]
PROMPT = (AssembleEvidence(policy=POLICY) | BuildPrompt(policy=POLICY)).invoke(make_bundle(ROWS))


def _answer(sentences: int) -> str:
    return "\n".join(
        f"{ROWS[i % 20]['chunk_text'].split(':', 1)[1].strip()} [C{i % 20}]"
        for i in range(sentences)
    )


@pytest.mark.parametrize("sentences", [5, 20])
def test_each_entry_is_looked_up_once_an_answer_whatever_its_length(sentences, monkeypatch):
    looked_up = []
    original = support._entry

    def counting(entry, ctx):
        looked_up.append(entry.anchor)
        return original(entry, ctx)

    monkeypatch.setattr(support, "_entry", counting)
    execution = ExecuteModel(
        model=ScriptedChatModel(text=_answer(sentences)), policy=POLICY
    ).invoke(PROMPT)
    validate_answer(execution, POLICY)
    assert sorted(looked_up) == sorted(e.anchor for e in PROMPT.bundle.selected_evidence)


def test_every_rule_reads_one_word_list_per_sentence():
    execution = ExecuteModel(model=ScriptedChatModel(text=_answer(5)), policy=POLICY).invoke(PROMPT)
    state = execution
    ruleset = load_ruleset(POLICY.firewall_ruleset)
    ctx = Context(
        execution=state.execution,
        bundle=state.bundle,
        policy=POLICY,
        ruleset=ruleset,
        entries={e.anchor: e for e in state.bundle.selected_evidence},
    )
    grammar = ruleset.grammar.bound(state.bundle.selected_evidence)
    reading = Reading(
        parse_answer(state.execution.raw_model_text, ctx.entries, grammar, ruleset.segmenter), ctx
    )
    for sentence in reading.sentences:
        assert sentence.words == tuple(words(sentence.text))
        assert sentence.words is sentence.words  # read once, then shared
        assert reading.evidence is sentence.request.evidence
