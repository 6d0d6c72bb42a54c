"""A deterministic support judge for tests (the network edge: a judge is a model).

It calls a sentence supported when every content word of it, four letters or more, occurs in
what it cites; its score is the share that does. Not a product component: the product takes
any Runnable or a pinned chat model (``examples/judges.py`` has two recipes).
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.runnables import Runnable, RunnableLambda

__all__ = ["word_overlap_judge"]

_WORD_RE = re.compile(r"[a-z]{4,}")


def _verdict(request: dict[str, Any]) -> dict[str, Any]:
    said = set(_WORD_RE.findall(request["sentence"].lower()))
    held = set(_WORD_RE.findall(" ".join(request["evidence"]).lower()))
    score = len(said & held) / len(said) if said else 1.0
    return {"verdict": "supported" if score == 1.0 else "unsupported", "score": score}


def word_overlap_judge() -> Runnable[dict[str, Any], dict[str, Any]]:
    """The judge, as ``benchmarks/firewall.py --judge tests.fakes.judges:word_overlap_judge``."""
    return RunnableLambda(_verdict)
