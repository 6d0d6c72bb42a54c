"""Two support judges for R2_POLICY_V3_JUDGED, and ``benchmarks/firewall.py --judge``.

A support judge reads one cited sentence and the texts of the entries it cites, and answers
``{"verdict": "supported" | "unsupported", "score": 0..1}``. It runs after the deterministic
rules, only on answers that passed them. Neither recipe ships or downloads a model:

* :func:`openai_judge`: a pinned chat model. ``grounded_answer_chain`` pins it as R4 pins the
  answering model (temperature 0, an output cap, the SDK's own retries off, no fallbacks) and
  gives it the frozen, hash-locked ``judge_prompt_v1``. Needs ``OPENAI_API_KEY`` (and, for a
  compatible server, ``OPENAI_BASE_URL``); the model name comes from
  ``GROUNDLOCK_JUDGE_MODEL`` (default ``gpt-4.1-mini``).
* :func:`cross_encoder_judge`: a local entailment cross-encoder (an NLI model: premise = the
  cited texts, hypothesis = the sentence) loaded from a folder you downloaded yourself and name
  in ``GROUNDLOCK_CROSS_ENCODER``, read with ``local_files_only`` so nothing is fetched. Needs
  ``sentence-transformers`` installed by you; groundlock does not depend on it.

Measure what a judge adds on real model output::

    python benchmarks/firewall.py --judge examples.judges:cross_encoder_judge --repeat 0
    python benchmarks/firewall.py --judge examples.judges:openai_judge --set real-dev

Use one in the chain::

    chain = grounded_answer_chain(policy="R2_POLICY_V3_JUDGED", judge=cross_encoder_judge())
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.runnables import Runnable, RunnableLambda

__all__ = ["cross_encoder_judge", "openai_judge"]


def openai_judge() -> str:
    """A ``provider:model`` string: the chain and the benchmark pin it as a judge."""
    if not os.environ.get("OPENAI_API_KEY"):
        raise SystemExit("openai_judge needs OPENAI_API_KEY (and OPENAI_BASE_URL for a proxy)")
    return f"openai:{os.environ.get('GROUNDLOCK_JUDGE_MODEL', 'gpt-4.1-mini')}"


def cross_encoder_judge() -> Runnable[dict[str, Any], dict[str, Any]]:
    """An NLI cross-encoder read from ``GROUNDLOCK_CROSS_ENCODER`` (a local folder)."""
    path = os.environ.get("GROUNDLOCK_CROSS_ENCODER")
    if not path or not os.path.isdir(path):
        raise SystemExit("set GROUNDLOCK_CROSS_ENCODER to the folder of a downloaded NLI model")
    try:
        from sentence_transformers import CrossEncoder  # noqa: PLC0415  (the user's install)
    except ImportError as exc:
        raise SystemExit("cross_encoder_judge needs: pip install sentence-transformers") from exc
    model = CrossEncoder(path, local_files_only=True)
    labels = {name.lower(): index for index, name in model.config.id2label.items()}
    entailment = labels.get("entailment", len(labels) - 1)

    def verdict(request: dict[str, Any]) -> dict[str, Any]:
        premise = " ".join(request["evidence"])
        scores = model.predict([(premise, request["sentence"])], apply_softmax=True)[0]
        score = float(scores[entailment])
        return {"verdict": "supported" if score >= 0.5 else "unsupported", "score": score}

    return RunnableLambda(verdict)
