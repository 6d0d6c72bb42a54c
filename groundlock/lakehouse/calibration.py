"""Which policies can answer from a lexical index: gates are calibrated per embedding.

A policy's similarity gates (``min_top_similarity_score``, ``min_similarity_score``) mean
something only for the embedding they were calibrated on. The offline
:class:`~groundlock.lakehouse.LexicalEmbeddings` scores the paragraph that answers a
question about 0.3 to 0.6 (0.31 to 0.59 for the handbook's nine answerable gold
questions), so the built-in gates of 0.76 refuse every question it retrieves for.

So each built-in policy a lexical index is answered under has a **lexical twin**: a frozen,
hash-locked policy identical to it except for its description and its two gates, at 0.33
(the calibration of :data:`LEXICAL_POLICY`). A twin is a policy of its own name, never the
preset with its gates swapped at run time: the audit row names the policy that judged, and
an auditor reading ``SOURCE_PAGE_POLICY_V1_LEXICAL`` knows which gates those were. A gate
that followed the index would make a stored ``SOURCE_PAGE_POLICY_V1`` mean two things.

A twin's name is its preset's with ``_LEXICAL`` added (as ``R2_POLICY_V3_STRICT`` and
``_JUDGED`` name variants of ``R2_POLICY_V3``), so the preset's name is whole inside it and
a new version of a preset gets its twin by the same rule. ``LEXICAL_POLICY_V1``, the twin
of ``R2_POLICY_V2``, came first and keeps its name: archived requests are found by it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from groundlock.policies import Policy

__all__ = [
    "LEXICAL_GATE_CEILING",
    "LEXICAL_POLICY",
    "LEXICAL_TWINS",
    "calibration_problem",
    "lexical_twin",
]

LEXICAL_POLICY = "R2_POLICY_V4_LEXICAL"
"""The locked policy for an index embedded with :class:`LexicalEmbeddings`.

The default policy's lexical twin: ``R2_POLICY_V4`` with the similarity gates at 0.33
instead of 0.76 (a policy's gates are calibrated per embedding, and the lexical embedding's
cosines run lower than a neural model's). The policy a lexical index's rows are checked
against, and answered under, when no other is named. It follows the default policy, so an
``ask --index`` without ``--policy`` is judged by the newest firewall (it was
``LEXICAL_POLICY_V1``, ``R2_POLICY_V2``'s twin, before ``R2_POLICY_V4``: still built in, so
that replay finds rows recorded under it).
"""

LEXICAL_TWINS: Mapping[str, str] = MappingProxyType(
    {
        "R2_POLICY_V2": "LEXICAL_POLICY_V1",
        "R2_POLICY_V3": "R2_POLICY_V3_LEXICAL",
        "R2_POLICY_V4": "R2_POLICY_V4_LEXICAL",
        "SOURCE_PAGE_POLICY_V1": "SOURCE_PAGE_POLICY_V1_LEXICAL",
        "SOURCE_PAGE_POLICY_V2": "SOURCE_PAGE_POLICY_V2_LEXICAL",
        "SOURCE_PAGE_POLICY_V3": "SOURCE_PAGE_POLICY_V3_LEXICAL",
        "SEMANTIC_ID_POLICY_V1": "SEMANTIC_ID_POLICY_V1_LEXICAL",
        "SEMANTIC_ID_POLICY_V2": "SEMANTIC_ID_POLICY_V2_LEXICAL",
        "CIT_LABEL_POLICY_V1": "CIT_LABEL_POLICY_V1_LEXICAL",
        "CIT_LABEL_POLICY_V2": "CIT_LABEL_POLICY_V2_LEXICAL",
    }
)
"""Each built-in policy with a lexical twin, and the twin's name.

>>> LEXICAL_TWINS["SOURCE_PAGE_POLICY_V1"]
'SOURCE_PAGE_POLICY_V1_LEXICAL'
"""

LEXICAL_GATE_CEILING = 0.5
"""A top-similarity gate above this refuses most answers from a lexical index: the lexical
embedding's cosine for the paragraph that answers a question runs about 0.3 to 0.6."""


def lexical_twin(policy_version: str) -> str | None:
    """The name of ``policy_version``'s lexical twin, or None if it has none.

    >>> lexical_twin("R2_POLICY_V3"), lexical_twin("R2_POLICY_V3_STRICT")
    ('R2_POLICY_V3_LEXICAL', None)
    """
    return LEXICAL_TWINS.get(policy_version)


def calibration_problem(policy: Policy, embedding_model: str) -> str | None:
    """Why ``policy`` cannot answer from an index of ``embedding_model``, or None.

    A policy whose top-similarity gate is above :data:`LEXICAL_GATE_CEILING` would refuse
    every question a lexical index is asked. The caller refuses such a policy (naming its
    :func:`lexical_twin`); it never swaps in the twin behind the caller's back, so the name
    the caller chose is the name every audit row records.

    >>> from groundlock.policies import load_policy
    >>> calibration_problem(load_policy("SOURCE_PAGE_POLICY_V1_LEXICAL"), "lexical-hash-2048")
    >>> print(calibration_problem(load_policy("SOURCE_PAGE_POLICY_V1"), "lexical-hash-2048"))
    ... # doctest: +ELLIPSIS
    policy SOURCE_PAGE_POLICY_V1 gates answers at a top similarity of 0.76, ... refused
    """
    from groundlock.lakehouse.embeddings import LEXICAL_EMBEDDING_PREFIX  # noqa: PLC0415  (LangChain)

    lexical = embedding_model.startswith(LEXICAL_EMBEDDING_PREFIX)
    if not lexical or policy.min_top_similarity_score <= LEXICAL_GATE_CEILING:
        return None
    return (
        f"policy {policy.policy_version} gates answers at a top similarity of "
        f"{policy.min_top_similarity_score}, calibrated for a neural embedding; this index "
        f"was embedded with {embedding_model}, whose cosine for the paragraph that answers "
        "a question runs about 0.3 to 0.6, so nearly every question would be refused"
    )
