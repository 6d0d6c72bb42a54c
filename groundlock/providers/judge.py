"""A chat model as R5's optional support judge: pinned like R4, a frozen prompt, JSON verdicts.

The judge is asked, one sentence at a time, whether the entries a sentence cites state what
it says. A chat model judge is pinned exactly as R4 pins the answering model (temperature 0,
output cap, the SDK's own retries off, no fallbacks or configurable alternatives); it is
given the frozen, hash-locked judge prompt (``groundlock/prompts/judge_prompt_v1.txt``) and
must reply with one JSON object, ``{"verdict": "supported" | "unsupported", "score": 0..1}``.
It is not retried: a judge that errs fails the request closed, or is flagged, as the policy
says (:mod:`groundlock.core.firewall.judging`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from pydantic import ConfigDict
from typing_extensions import override

from groundlock.contracts.execution import PinnedModel
from groundlock.core.firewall.judging import JudgePrompt, JudgeQuestion, load_judge_prompt
from groundlock.policies.model import Policy
from groundlock.providers.chat import pin_model

__all__ = ["ChatModelJudge"]

_JSON_RE = re.compile(r"\{[^{}]*\}")


class ChatModelJudge(RunnableSerializable[dict[str, Any], dict[str, Any]]):
    """``{"sentence": str, "evidence": [str, ...]}`` in, ``{"verdict", "score"}`` out.

    Build it with :meth:`pinned`, which pins the model to the policy as R4 does.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str | None = "R5.SupportJudge"
    model: BaseChatModel
    """The pinned chat model."""
    pinned_model: PinnedModel
    """What was pinned (model id, temperature, output cap), for the judge's record."""
    prompt: JudgePrompt
    """The frozen judge prompt."""

    @classmethod
    def pinned(cls, model: BaseChatModel | str, policy: Policy) -> ChatModelJudge:
        """``model`` pinned under ``policy``, with the judge prompt its settings name.

        Raises:
            ModelPinningError: as for R4's model.
            GroundlockError: the judge prompt is missing or changed.
        """
        version = policy.support_judge.prompt if policy.support_judge else "judge_prompt_v1"
        pinned, record = pin_model(model, policy)
        return cls(model=pinned, pinned_model=record, prompt=load_judge_prompt(version))

    def _messages(self, request: dict[str, Any]) -> list[BaseMessage]:
        question = JudgeQuestion(0, str(request["sentence"]), tuple(request["evidence"]))
        system, user = self.prompt.render(question)
        return [SystemMessage(system), HumanMessage(user)]

    @override
    def invoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        return _parsed(self.model.invoke(self._messages(input), config).text)

    @override
    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        reply = await self.model.ainvoke(self._messages(input), config)
        return _parsed(reply.text)


def _parsed(text: str) -> dict[str, Any]:
    """The JSON object of a reply (a model may wrap it in a code fence).

    ``ValueError`` if there is none: the verdict is then outside the judge's contract.
    """
    found = _JSON_RE.search(text)
    if found is None:
        raise ValueError("the judge did not reply with a JSON object")
    value = json.loads(found.group())
    if not isinstance(value, dict):
        raise ValueError("the judge's reply is not a JSON object")  # noqa: TRY004
    return value
