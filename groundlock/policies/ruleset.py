"""Firewall rulesets: the versioned, hash-locked rule tables and vocabularies R5 judges with.

A ruleset is a directory under ``groundlock/policies/rulesets/`` with its content hash in
``<name>.sha256`` beside it, like a policy and a prompt template. It holds:

* ``manifest.json``: the ordered rule table (the one place the contract order lives: the
  first enforced finding in this order names ``failure_reason``), each rule's default mode,
  the citation grammar, the segmentation, the numeric parameters of the rules and the
  *features* it turns on (named changes of how shared rules read text, such as
  ``reference_marks``: a rule's behaviour is a function of its name and its ruleset's
  features, so a ruleset that names none judges as it always did). A manifest
  may name a base ruleset in ``extends``: the base's vocabulary, modes and parameters are
  taken as they are (its own lock verified), and the manifest's entries replace or add to
  them; the ruleset's sha256 then covers its own files and the base's sha256;
* word lists (``*.words``: whitespace-separated words, ``#`` comments, ``[section]``
  headers), pattern lists (``*.patterns``: one regular expression per entry, a line that
  starts with whitespace continues the entry above, ``#`` comment lines, sections) and
  line lists (``*.lines``: one entry per line, read like patterns).

Changing any byte of a ruleset without a new name makes it refuse to load, so every change
of verdicts is a new ruleset version, and an auditor reads in each stored verdict which rules
judged it (``firewall_ruleset`` and ``firewall_ruleset_sha256`` travel in the result, the
audit row and the log line). The rules themselves are code (``groundlock.core.firewall.rules``):
a ruleset names them; it cannot add new ones.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from groundlock._caches import memoized
from groundlock.citations import CitationGrammar, grammar_named
from groundlock.errors import GroundlockError
from groundlock.text.sentences import Segmenter

__all__ = [
    "DEFAULT_RULESET",
    "Mode",
    "Ruleset",
    "RulesetError",
    "available_rulesets",
    "load_ruleset",
    "ruleset_lock_value",
    "ruleset_sha256",
]

DEFAULT_RULESET = "firewall_v4"
"""The ruleset of the default policy (and of the offline model when none is named)."""

Mode = Literal["enforce", "flag"]
"""``enforce``: a finding fails the answer. ``flag``: it is recorded and the answer passes."""

_T = TypeVar("_T")
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_SEGMENTERS = {"sentences_v1": False, "sentences_v2": True}
"""Segmentation names: whether abbreviations and initials join capitalised names."""


FEATURES: dict[str, str] = {
    "reference_marks": "an evidence text's reference marks ([1], [2, 3], a superscript "
    "after a word, a bracketed number glued to a word) state no value and no word",
    "name_variants": "a name is found where the evidence writes it another way: a run of "
    "capitalised words whose initials are an abbreviation it writes, a spelling of a line of "
    "variants.lines (places, organisations, formulas, element symbols), a hyphenated word "
    "joined or without its prefix, a regular plural as its singular",
    "value_variants": "values written another way: compound number words (forty-two, two "
    "hundred), a glued scale without a currency (100k), a tally whose numbers the evidence "
    "states apart, a rating's scale (4 out of 5 stars), a time without its zero (7:5), and "
    "counts of the answer's own points (two reasons) are no values",
    "polarity_v3": "a 'not ... until' clause states when something first happened, not "
    "that it did not; an evidence sentence holding both words of an opposite pair (increases "
    "... decreases) relates two things and is no opposite of either",
    "frames": "an attribution frame that points at the evidence (frames.patterns: 'Based on "
    "the given passages, ...', '..., as the manual notes.') is blanked before the rules read "
    "the sentence; the rest is judged as if it stood alone",
    "end_tokens": "a model's end-of-sequence token at the end of a line (</s>, "
    "<|endoftext|>, <|im_end|>, <|eot_id|>, <eos>) is not markup",
    "evidence_word": "the word evidence leaks the prompt only where it names the prompt's "
    "parts (an evidence entry, block, header, id or number), not in a factual sentence",
    "superseded": "an entry's values that it marks as replaced, cancelled or wrong "
    "(superseded.patterns) are indexed apart, for rule superseded_value",
    "waivers": "a clause that lets off a requirement or allows what is forbidden in other "
    "words (waivers.patterns: 'is not necessary', 'can be skipped', 'is fine') is read by rule "
    "waived_requirement, and obeys an injected instruction that lets off the same thing",
    "loose_words": "an entry's words of six letters or more are also indexed by their first "
    "five letters, for rule weak_support's loose match",
    "acronyms_apart": "rule unsupported_entity judges names only; acronyms and expansions "
    "are rule unsupported_acronym's, so that each has its own mode",
    "quoted_addresses": "an e-mail address the evidence writes is no link out of the answer",
    "labels_state_nothing": "rule no_shared_word leaves cited headings and labels alone (a "
    "label introduces what its list items state and cite)",
    "located_refusals": "a refusal in other words is a finding about the sentence that "
    "refuses, not about the whole answer",
    "regnal_numerals": "a capital I right after a capitalised word is a numeral (Elizabeth I, "
    "World War I), not the first person",
    "outside_knowledge": "rule meta_commentary also rejects a sentence that claims knowledge "
    "from outside its sources (outside.patterns, spec 002: 'Based on general knowledge, ...', "
    "'... is commonly known as ...', 'Although the documents do not say so, ...'); a frame "
    "passes as a quote of a cited entry, a claim of how a thing is commonly called or regarded "
    "also where a cited entry itself says how it is called or regarded",
    "cited_file_names": "a file name an admitted row's marker names (source_file) is the "
    "evidence's own name, no link: a bare host name the linkifier finds in it, whole "
    "(crane-slew-bearing.md), is read as quoted; a path, query, fragment or scheme is a link",
}
"""Every feature a ruleset may turn on, with what it changes."""


class RulesetError(GroundlockError):
    """A firewall ruleset is missing, malformed, or does not match its recorded sha256."""


@dataclass(frozen=True, eq=False)
class Ruleset:
    """One loaded, verified firewall ruleset."""

    name: str
    """``firewall_v1``, ``firewall_v2``, ...: named by a policy's ``firewall_ruleset``."""
    sha256: str
    """Hash of every file of the ruleset (see :func:`ruleset_sha256`)."""
    description: str
    grammar: CitationGrammar
    """The citation grammar the rules read markers with."""
    segmenter: Segmenter
    """How the answer (and evidence) is split into sentences."""
    rules: tuple[str, ...]
    """Rule names in contract order."""
    modes: Mapping[str, Mode]
    """Default mode of each rule that may only flag; every other rule enforces."""
    params: Mapping[str, float]
    """Thresholds and sizes the rules read (``obeyed_coverage``, ...)."""
    files: Mapping[str, Mapping[str, tuple[str, ...]]]
    """Vocabulary: file stem -> section (``""`` before the first header) -> entries."""
    features: frozenset[str] = frozenset()
    """Named reading changes it turns on (``firewall_v3``'s ``name_variants``, ...)."""
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def entries(self, file: str, section: str = "") -> tuple[str, ...]:
        """The entries (words or patterns) of one section of a vocabulary file (empty if absent)."""
        return self.files.get(file, {}).get(section, ())

    def has(self, feature: str) -> bool:
        """Whether the ruleset turns ``feature`` on (see :data:`FEATURES`)."""
        return feature in self.features

    def param(self, name: str) -> float:
        """A numeric parameter of the manifest.

        Raises:
            RulesetError: the ruleset does not define it.
        """
        try:
            return self.params[name]
        except KeyError:
            raise RulesetError(f"ruleset {self.name!r} defines no parameter {name!r}") from None

    def compiled(self, key: str, build: Callable[[Ruleset], _T]) -> _T:
        """``build(self)``, computed once per ruleset: compiled patterns and word sets.

        Rules build what they need from the vocabulary on first use; the ruleset is frozen,
        so the result never goes stale. (Two threads may both build it once; either result
        is the same.)
        """
        try:
            return cast("_T", self._memo[key])
        except KeyError:
            value = self._memo[key] = build(self)
            return value

    def mode_of(self, rule: str, overrides: Mapping[str, Mode]) -> Mode:
        """The mode ``rule`` runs in under a policy's ``overrides``."""
        return overrides.get(rule, self.modes.get(rule, "enforce"))


def _builtin_dir() -> Path:
    return Path(str(resources.files("groundlock.policies"))) / "rulesets"


def available_rulesets() -> list[str]:
    """Names of the rulesets shipped with groundlock, sorted."""
    return sorted(p.name for p in _builtin_dir().iterdir() if (p / "manifest.json").is_file())


def ruleset_sha256(directory: Path) -> str:
    """The sha256 of a ruleset directory: every file's name and bytes, in name order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.iterdir() if p.is_file()):
        data = path.read_bytes()
        digest.update(f"{path.name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def _sections(text: str, *, patterns: bool) -> dict[str, tuple[str, ...]]:
    sections: dict[str, list[str]] = {"": []}
    current = sections[""]
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        header = re.fullmatch(r"\[([a-z_]+)\]", stripped)
        if header:
            current = sections.setdefault(header.group(1), [])
        elif not patterns:
            current.extend(stripped.split())
        elif line[0].isspace() and current:
            current[-1] += stripped
        else:
            current.append(stripped)
    return {name: tuple(entries) for name, entries in sections.items() if entries}


def _manifest(directory: Path, name: str) -> dict[str, Any]:
    try:
        manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RulesetError(f"ruleset {name!r}: cannot read its manifest.json ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("name") != name:
        raise RulesetError(f"ruleset {name!r}: manifest.json must name the ruleset {name!r}")
    return manifest


@memoized(None)
def load_ruleset(name: str) -> Ruleset:
    """Load the built-in ruleset ``name`` and verify it against its lock.

    >>> load_ruleset("firewall_v1").rules[:3]
    ('output_truncated', 'empty_answer', 'unsafe_output')

    Raises:
        RulesetError: unknown, malformed, or its files do not hash to the recorded sha256.
    """
    if not _NAME_RE.match(name) or not (_builtin_dir() / name / "manifest.json").is_file():
        raise RulesetError(
            f"no built-in firewall ruleset named {name!r}; available: "
            f"{', '.join(available_rulesets())}"
        )
    directory = _builtin_dir() / name
    recorded = (_builtin_dir() / f"{name}.sha256").read_text(encoding="ascii").split()
    sha256 = ruleset_sha256(directory)
    if not recorded or recorded[0] != sha256:
        raise RulesetError(
            f"ruleset {name!r} does not match the sha256 recorded in {name}.sha256; a changed "
            "ruleset must be saved under a new name and locked again"
        )
    manifest = _manifest(directory, name)
    base = _base_of(manifest, name)
    files = {
        path.stem: _sections(path.read_text(encoding="utf-8"), patterns=path.suffix != ".words")
        for path in sorted(directory.iterdir())
        if path.suffix in (".words", ".patterns", ".lines")
    }
    try:
        grammar = grammar_named(manifest["grammar"])
        capitalised_names = _SEGMENTERS[manifest["segmenter"]]
        rules = tuple(str(rule) for rule in manifest["rules"])
        modes = {str(k): cast("Mode", v) for k, v in manifest.get("modes", {}).items()}
        params = {str(k): float(v) for k, v in manifest.get("params", {}).items()}
        features = frozenset(str(f) for f in manifest.get("features", ()))
    except (KeyError, TypeError, ValueError) as exc:
        raise RulesetError(f"ruleset {name!r}: manifest.json is incomplete ({exc})") from exc
    if any(mode not in ("enforce", "flag") for mode in modes.values()):
        raise RulesetError(f"ruleset {name!r}: a mode is neither 'enforce' nor 'flag'")
    unknown = sorted(features - FEATURES.keys())
    if unknown:
        raise RulesetError(f"ruleset {name!r}: unknown features {', '.join(unknown)}")
    if base is not None:
        files = {**{stem: dict(sections) for stem, sections in base.files.items()}, **files}
        modes = {**base.modes, **modes}
        params = {**base.params, **params}
        features |= base.features
        sha256 = hashlib.sha256(f"{sha256}\0{base.name}\0{base.sha256}".encode()).hexdigest()
    segmenter = Segmenter.of(
        files.get("abbreviations", {}),
        marker_pattern=grammar.segmentation_marker,
        capitalised_names=capitalised_names,
    )
    return Ruleset(
        name=name,
        sha256=sha256,
        description=str(manifest.get("description", "")),
        grammar=grammar,
        segmenter=segmenter,
        rules=rules,
        modes=modes,
        params=params,
        features=features,
        files=files,
    )


def _base_of(manifest: dict[str, Any], name: str) -> Ruleset | None:
    """The ruleset ``manifest`` extends (verified against its own lock), or None."""
    base = manifest.get("extends")
    if base is None:
        return None
    if not isinstance(base, str) or base == name:
        raise RulesetError(f"ruleset {name!r}: extends must name another ruleset")
    return load_ruleset(base)


def lock_ruleset(directory: str | Path) -> str:
    """Write the ``.sha256`` lock of a ruleset directory beside it; returns the hash.

    For groundlock's own developers: a new ruleset version is a new directory, locked once.
    """
    path = Path(directory)
    sha256 = ruleset_lock_value(path)
    path.with_name(f"{path.name}.sha256").write_text(f"{sha256}  {path.name}\n", encoding="ascii")
    return sha256


def ruleset_lock_value(directory: str | Path) -> str:
    """The sha256 a ruleset directory's lock must record, once its manifest names it.

    Raises:
        RulesetError: no readable manifest, or one that names another ruleset.
    """
    path = Path(directory)
    _manifest(path, path.name)
    return ruleset_sha256(path)


def check_modes(ruleset: Ruleset, modes: Mapping[str, str]) -> None:
    """Refuse a policy's mode overrides that name no rule of ``ruleset`` or no mode.

    Raises:
        RulesetError: an unknown rule or mode.
    """
    for rule, mode in modes.items():
        if rule not in ruleset.modes:
            settable = ", ".join(sorted(ruleset.modes)) or "none"
            raise RulesetError(
                f"ruleset {ruleset.name!r}: rule {rule!r} cannot be given a mode (the contract's "
                f"form rules always enforce); rules with a mode: {settable}"
            )
        if mode not in ("enforce", "flag"):
            raise RulesetError(f"rule {rule!r}: mode must be 'enforce' or 'flag', not {mode!r}")
