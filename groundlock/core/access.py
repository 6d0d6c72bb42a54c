"""The retrieval front's decisions, pure: who may see a row, and what a raw score means.

A vector store answers with documents, raw scores and metadata. Before any of it becomes a
:class:`~groundlock.RetrievalBundle`, three things are decided here, without I/O:

* **Access.** An :class:`AccessPolicy` names the metadata attributes that restrict a row
  (``business_unit``, ``sensitivity_level``) and a :class:`Principal` carries what its holder
  is granted. A row is admitted only when every restricting attribute is present and granted:
  a missing or unknown value denies, so an untagged document is never shown by accident
  (``003``: authorization-aware filtering before context assembly).
* **Scores.** A :class:`ScoreNormalization` maps the store's raw score to a similarity in
  [0, 1]. The policy's gates (0.76 in ``R2_POLICY_V1``) only mean something on the scale they
  were calibrated on, so there is no default: the caller says what the store's scores are,
  and the name of the mapping travels in the bundle to the audit trail.
* **Fields.** Chunk metadata is mapped onto the row fields by name (``fields``); access
  attributes and anything else stay behind, so nothing but the row contract reaches R2.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Self

from pydantic import (
    ConfigDict,
    Field,
    StrictStr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from groundlock._caches import memoized
from groundlock._frozen import FrozenModel
from groundlock.contracts._fields import Identifier

__all__ = [
    "ROW_FIELDS",
    "WILDCARD",
    "AccessPolicy",
    "Principal",
    "ScoreNormalization",
    "is_tag",
    "normalization",
    "row_payload",
]

WILDCARD = "*"
"""A grant of every value of an unordered attribute (the row must still carry one)."""

ROW_FIELDS = (
    "chunk_id",
    "knowledge_id",
    "knowledge_type_effective",
    "source_reference",
    "faiss_id",
    "equipment_id",
    "event_date",
    "semantic_id",
    "citation_label",
    "document_id",
    "source_file",
    "page",
)
"""The row fields that metadata can fill; ``fields`` maps each to a metadata key (the last
five are what the presets cite: ``[semantic_id]``, ``[CIT-NN]``, ``[Source: file, p.N]``)."""

_Values = Annotated[tuple[Identifier, ...], Field(min_length=1)]
_IDENTIFIER: TypeAdapter[str] = TypeAdapter(Identifier)


def _as_tuples(value: object) -> object:
    # A single value is a one-element grant: {"business_unit": "MARINE"}.
    if isinstance(value, Mapping):
        return {k: (v,) if isinstance(v, str) else v for k, v in value.items()}
    return value


class Principal(FrozenModel):
    """Who is asking, and which values of each access attribute they are granted.

    >>> Principal(principal_id="u-17", grants={"business_unit": "MARINE"}).grants
    {'business_unit': ('MARINE',)}
    """

    model_config = ConfigDict(frozen=True, extra="forbid", revalidate_instances="always")

    principal_id: Identifier
    """Who the principal is, for logs; access is decided by ``grants`` alone."""
    role: Identifier | None = None
    """The role the grants came from, if any."""
    grants: dict[StrictStr, _Values]
    """Attribute -> granted values. For an ordered attribute, its highest granted level."""

    _grants_as_tuples = field_validator("grants", mode="before")(_as_tuples)


class AccessPolicy(FrozenModel):
    """Which retrieved rows a principal may see, judged from each row's access metadata.

    ``attributes`` are unordered: a row's value (a string, or a list of strings meaning any
    of them) must be granted, or the grant is :data:`WILDCARD`. ``levels`` are ordered, least
    sensitive first: a row's level must be at or below the principal's highest granted level.
    ``roles`` gives the grants of each role, for principals known only by role (a served
    app's API keys name a requester and a role).

    >>> access = AccessPolicy(attributes=("business_unit",),
    ...                       levels={"sensitivity_level": ("PUBLIC", "INTERNAL", "SECRET")})
    >>> clerk = Principal(principal_id="u1", grants={"business_unit": "MARINE",
    ...                                              "sensitivity_level": "INTERNAL"})
    >>> access.admits({"business_unit": "MARINE", "sensitivity_level": "PUBLIC"}, clerk)
    True
    >>> access.admits({"business_unit": "MARINE", "sensitivity_level": "SECRET"}, clerk)
    False
    >>> access.admits({"business_unit": "MARINE"}, clerk)  # untagged: never shown
    False
    """

    attributes: tuple[StrictStr, ...] = ()
    """Unordered access attributes (metadata keys)."""
    levels: dict[StrictStr, Annotated[tuple[StrictStr, ...], Field(min_length=1)]] = Field(
        default_factory=dict
    )
    """Ordered access attributes: metadata key -> levels, least sensitive first."""
    roles: dict[StrictStr, dict[StrictStr, _Values]] = Field(default_factory=dict)
    """Role -> grants, used when a request names a role and no principal."""

    @field_validator("roles", mode="before")
    @classmethod
    def _role_grants_as_tuples(cls, value: object) -> object:
        if isinstance(value, Mapping):
            return {role: _as_tuples(grants) for role, grants in value.items()}
        return value

    @model_validator(mode="after")
    def _coherent(self) -> Self:
        if not self.attributes and not self.levels:
            raise ValueError("an access policy restricts at least one attribute")
        shared = set(self.attributes) & set(self.levels)
        if shared:
            raise ValueError(f"{sorted(shared)} cannot be both unordered and ordered")
        for name, order in self.levels.items():
            if len(set(order)) != len(order):
                raise ValueError(f"levels of {name!r} repeat a level")
        for role, grants in self.roles.items():
            problem = self.grant_problem(grants)
            if problem:
                raise ValueError(f"role {role!r}: {problem}")
        return self

    def grant_problem(self, grants: Mapping[str, tuple[str, ...]]) -> str | None:
        """Why ``grants`` cannot be judged by this policy, or None.

        A grant of an attribute the policy does not restrict, or of a level it does not
        list, is a misconfiguration (a typo would otherwise silently grant nothing).
        """
        for name, values in grants.items():
            if name in self.levels:
                unknown = sorted(set(values) - set(self.levels[name]))
                if unknown:
                    return f"grant {name}={unknown[0]!r} is not a level of the access policy"
            elif name not in self.attributes:
                return f"grant {name!r} is not an attribute of the access policy"
        return None

    def admits(self, metadata: Mapping[str, object], principal: Principal) -> bool:
        """Whether ``principal`` may see a row with this metadata."""
        return self.checker(principal)(metadata)

    def checker(self, principal: Principal) -> Callable[[Mapping[str, object]], bool]:
        """:meth:`admits` for one principal, with its grants resolved once per request.

        A granted level the policy does not list grants nothing (the front refuses such a
        principal before it gets here; :meth:`grant_problem`).
        """
        unordered = [(name, frozenset(_granted(principal, name))) for name in self.attributes]
        ordered = []
        for name, order in self.levels.items():
            rank = {level: index for index, level in enumerate(order)}
            known = [rank[level] for level in _granted(principal, name) if level in rank]
            ordered.append((name, rank, max(known, default=-1)))

        def admits(metadata: Mapping[str, object]) -> bool:
            for name, granted in unordered:
                value = metadata.get(name)
                values = (value,) if isinstance(value, str) else value
                if not isinstance(values, list | tuple) or not values:
                    return False
                if not all(isinstance(v, str) for v in values):
                    return False
                if WILDCARD not in granted:
                    if granted.isdisjoint(values):  # grants are identifiers: tags must match
                        return False
                elif not all(map(is_tag, values)):
                    return False  # a blank or invisible tag is no tag
            for name, rank, ceiling in ordered:
                value = metadata.get(name)
                if not isinstance(value, str) or rank.get(value, ceiling + 1) > ceiling:
                    return False
            return True

        return admits


@memoized(4096)
def is_tag(value: str) -> bool:
    """Whether ``value`` is a tag a grant could name (an identifier: visible, one line).

    One definition for the check after a search and for the tag columns the scan filters
    on (:mod:`groundlock.lakehouse.tag_columns`): the two paths must admit the same rows.
    """
    try:
        _IDENTIFIER.validate_python(value)
    except ValidationError:
        return False
    return True


def _granted(principal: Principal, name: str) -> tuple[str, ...]:
    # A principal built without validation (model_construct) may hold a bare string, which
    # would otherwise be read character by character ("ADMIN*" granting "*").
    values = principal.grants.get(name, ())
    return (values,) if isinstance(values, str) else tuple(values)


@dataclass(frozen=True, slots=True)
class ScoreNormalization:
    """A named, deterministic map from a store's raw score to a similarity in [0, 1].

    The built-ins (:func:`normalization`) clip at the ends of their range, because a raw
    cosine below zero means "unrelated" and zero says that. A custom one is not clipped: a
    value outside [0, 1] means the mapping is wrong, and the request fails
    ``SIMILARITY_INTEGRITY`` instead of being judged on a made-up scale.

    >>> ScoreNormalization("platt_v2", lambda raw: 1 / (1 + 2.0 ** -raw)).apply(0.0)
    0.5
    """

    name: str
    """Recorded in the bundle and the audit trail; give a changed mapping a new name."""
    raw_to_similarity: Callable[[float], float]
    clip: bool = False
    relevance: bool = False
    """Apply the vector store's own relevance function to its raw score first."""

    def apply(self, raw: object) -> float:
        """The similarity for ``raw`` (NaN when there is none: R2 then refuses the request).

        Any real number is a raw score (numpy's ``float32`` from FAISS included); a bool,
        a string or None is not.
        """
        if isinstance(raw, bool) or not isinstance(raw, numbers.Real):
            return math.nan
        try:
            raw = float(raw)
            if not math.isfinite(raw):
                return math.nan
            value = float(self.raw_to_similarity(raw))
        except (ArithmeticError, ValueError):  # an overflow, a math domain error
            return math.nan
        return min(1.0, max(0.0, value)) if self.clip and math.isfinite(value) else value


def _identity(raw: float) -> float:
    return raw


_BUILT_IN: dict[str, ScoreNormalization] = {
    normal.name: normal
    for normal in (
        # The store already returns a similarity in [0, 1]; anything else is an error.
        ScoreNormalization("unit_interval", _identity),
        # Cosine similarity in [-1, 1] (InMemoryVectorStore, inner product of unit vectors).
        ScoreNormalization("cosine", _identity, clip=True),
        # Cosine distance 1 - cos in [0, 2] (Chroma "cosine", pgvector <=>).
        ScoreNormalization("cosine_distance", lambda d: 1.0 - d, clip=True),
        # Euclidean distance between unit vectors: d^2 = 2 - 2 cos.
        ScoreNormalization("unit_l2_distance", lambda d: 1.0 - d * d / 2.0, clip=True),
        # Squared Euclidean distance between unit vectors (FAISS IndexFlatL2, Chroma "l2").
        ScoreNormalization("unit_squared_l2_distance", lambda d: 1.0 - d / 2.0, clip=True),
        # The store's own _select_relevance_score_fn, clipped (LangChain's only warns).
        ScoreNormalization("relevance", _identity, clip=True, relevance=True),
    )
}


def normalization(spec: str | ScoreNormalization) -> ScoreNormalization:
    """A built-in normalisation by name, or ``spec`` itself.

    >>> normalization("cosine_distance").apply(0.3)
    0.7
    >>> sorted(_BUILT_IN)  # doctest: +NORMALIZE_WHITESPACE
    ['cosine', 'cosine_distance', 'relevance', 'unit_interval', 'unit_l2_distance',
     'unit_squared_l2_distance']
    """
    if isinstance(spec, ScoreNormalization):
        return spec
    try:
        return _BUILT_IN[spec]
    except KeyError:
        raise ValueError(
            f"unknown score normalisation {spec!r}; built in: {', '.join(sorted(_BUILT_IN))} "
            "(or pass a ScoreNormalization)"
        ) from None


def row_payload(
    *,
    rank: int,
    similarity: float,
    text: str,
    document_id: str | None,
    metadata: Mapping[str, Any],
    fields: Mapping[str, str],
) -> dict[str, object]:
    """One retrieval row as R2 will read it: mapped fields only, values unjudged.

    Values are copied as the store holds them; R2's input gates judge them, so a bad one
    fails the request with the field's path (``results[2].event_date``) like any bundle.
    ``chunk_id`` falls back to the document's own id.
    """
    row: dict[str, object] = {"rank": rank, "similarity_score": similarity, "chunk_text": text}
    for name in ROW_FIELDS:
        key = fields.get(name, name)
        if key in metadata and metadata[key] is not None:
            row[name] = metadata[key]
    if "chunk_id" not in row and document_id is not None:
        row["chunk_id"] = document_id
    return row
