"""Frozen, hash-locked prompt templates: five sections in a fixed order, three placeholders.

A template file holds the system message, a separator line, and the user message::

    <system> ... </system>            section 1: system instruction block
    <rules> ... {{refusal}} </rules>  section 2: safety and grounding rules
    ===== USER MESSAGE =====
    <evidence>                        section 3: evidence, fenced as untrusted data
    {{evidence_block}}</evidence>
    <history>                         optional: prior turns, fenced as untrusted data
    {{history_block}}</history>
    <question>                        section 4: the user's question
    {{user_question}}
    </question>
    <output_rules> ... </output_rules> section 5: output formatting instructions

A template may lay the history out as ``004`` does instead: a line
``===== HISTORY MESSAGES =====`` right before the user-message separator, and no
``<history>`` section. Each kept turn is then a message of its own, with its own role
(``user`` or ``assistant``), between the system message and the user message.

Loading checks everything a prompt could go wrong by: the sha256 in ``<version>.sha256``,
the five sections in this order with each fence tag exactly once, nothing outside them, and
exactly the three placeholders in their sections (four with the optional history section,
whose placeholder, like the evidence block's, ends with its own newline and may be empty).
Rendering replaces placeholders in one pass, so text inside a value (``{{user_question}}``,
``{question}``) is never substituted.

Every placeholder starts a line and its value ends one, and every section ends with a
newline; so the rendered prompt splits into *segments* that each begin right after a newline.
cl100k's pre-tokenizer always starts a new piece there, which makes the prompt's token count
the sum of its segments' counts: static segments are counted once and cached, and the
evidence block's count is already known from R2.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from groundlock._caches import memoized
from groundlock.errors import GroundlockError
from groundlock.text.sanitize import FENCE_TAG_NAMES, HISTORY_FENCE_TAG_NAMES

__all__ = [
    "HISTORY_MESSAGES_LINE",
    "MESSAGE_SEPARATOR",
    "SECTION_ORDER",
    "PromptTemplate",
    "PromptTemplateError",
    "TemplateSection",
    "load_template",
]

MESSAGE_SEPARATOR = "===== USER MESSAGE =====\n"
HISTORY_MESSAGES_LINE = "===== HISTORY MESSAGES =====\n"
"""Where a template renders the history turns as messages of their own (``004``'s layout):
right before :data:`MESSAGE_SEPARATOR`, so they come between the system and user messages."""
SECTION_ORDER: tuple[tuple[str, str], ...] = (
    ("system", "system"),
    ("rules", "system"),
    ("evidence", "user"),
    ("history", "user"),
    ("question", "user"),
    ("output_rules", "user"),
)
"""(fence tag, message role) of the sections, in the order ``001`` P1 freezes (with the
history section of ``004`` after the evidence, where a template has one)."""
OPTIONAL_SECTIONS = frozenset({"history"})
_BLOCK_PLACEHOLDERS = frozenset({"evidence_block", "history_block"})
"""Placeholders whose value ends with its own newline (a block of entries or turns)."""
_PLACEHOLDER_SECTION = {
    "refusal": "rules",
    "evidence_block": "evidence",
    "history_block": "history",
    "user_question": "question",
}
_PLACEHOLDER_RE = re.compile(r"\{\{(\w+)\}\}")
_VERSION_RE = re.compile(r"^[a-z][a-z0-9_]*$")


class PromptTemplateError(GroundlockError):
    """A template file is missing, tampered with, or not shaped as the contract requires."""


@dataclass(frozen=True, slots=True)
class TemplateSection:
    """One fenced section: static text split around at most one placeholder."""

    name: str
    role: str
    before: str
    """Static text up to the placeholder (or the whole section)."""
    placeholder: str | None
    after: str
    """Static text after the placeholder's line; starts a new line."""


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """A loaded, verified template."""

    version: str
    sha256: str
    sections: tuple[TemplateSection, ...]
    history_messages: bool = False
    """Whether history turns are messages of their own between the system and user
    messages (``004``'s layout) rather than lines of a ``<history>`` section."""

    @property
    def has_history(self) -> bool:
        """Whether the template shows conversation history (in a section or as messages)."""
        return self.history_messages or any(s.name == "history" for s in self.sections)

    def segments(self, values: dict[str, str]) -> list[tuple[str, str, str | None, str]]:
        """The rendered prompt as (section, role, placeholder, segment) tuples, in order.

        ``placeholder`` names the value a segment renders, or is None for static text.

        A placeholder's segment is its value plus the newline that ends its line (the
        evidence block ends with its own blank line), so every segment but the first
        begins right after a newline.
        """
        rendered: list[tuple[str, str, str | None, str]] = []
        for section in self.sections:
            rendered.append((section.name, section.role, None, section.before))
            if section.placeholder is not None:
                value = values[section.placeholder]
                if section.placeholder not in _BLOCK_PLACEHOLDERS:
                    value += "\n"
                rendered.append((section.name, section.role, section.placeholder, value))
                if section.after:
                    rendered.append((section.name, section.role, None, section.after))
        return rendered


def _split_section(name: str, role: str, body: str) -> TemplateSection:
    found = _PLACEHOLDER_RE.findall(body)
    allowed = [key for key, home in _PLACEHOLDER_SECTION.items() if home == name]
    if sorted(found) != sorted(allowed):
        raise PromptTemplateError(
            f"section <{name}> must hold exactly the placeholders {allowed}, found {found}"
        )
    if not allowed:
        return TemplateSection(name, role, body, None, "")
    (placeholder,) = allowed
    marker = "{{" + placeholder + "}}"
    before, after = body.split(marker)
    if not before.endswith("\n"):
        raise PromptTemplateError(f"{marker} must start a line")
    if placeholder in _BLOCK_PLACEHOLDERS:
        if not after.startswith(f"</{name}>"):
            raise PromptTemplateError(f"{marker} must be followed directly by </{name}>")
        return TemplateSection(name, role, before, placeholder, after)
    if not after.startswith("\n"):
        raise PromptTemplateError(f"{marker} must end its line")
    return TemplateSection(name, role, before, placeholder, after[1:])


def _fences(text: str, tag: str) -> int:
    """How many lines of ``text`` start with ``tag`` (inline mentions are not fences).

    A block (evidence, history) ends with its own newline, so ``</evidence>`` right after
    its placeholder starts a line of the rendered prompt and counts as a fence too.
    """
    lines = text
    for block in _BLOCK_PLACEHOLDERS:
        lines = lines.replace("{{" + block + "}}", "{{" + block + "}}\n")
    return len(re.findall(rf"^{re.escape(tag)}", lines, re.MULTILINE))


def _closing_position(remaining: str, closing: str) -> int:
    for found in re.finditer(re.escape(closing), remaining):
        start = found.start()
        if remaining[:start].endswith(("\n", "{{evidence_block}}", "{{history_block}}")):
            return start
    return -1


def _history_messages(text: str, system_text: str) -> bool:
    """Whether the template lays history out as messages (checking the line's one place)."""
    if HISTORY_MESSAGES_LINE not in text:
        return False
    if text.count(HISTORY_MESSAGES_LINE) != 1 or not system_text.endswith(HISTORY_MESSAGES_LINE):
        raise PromptTemplateError(
            "the history-messages line must come once, right before the user-message separator"
        )
    if _fences(text, "<history>"):
        raise PromptTemplateError(
            "a template renders history as messages or in a <history> section, not both"
        )
    return True


def parse_template(version: str, text: str) -> PromptTemplate:
    """Check ``text`` against the template contract and split it into sections."""
    if text.count(MESSAGE_SEPARATOR) != 1:
        raise PromptTemplateError("the template needs exactly one user-message separator line")
    system_text, user_text = text.split(MESSAGE_SEPARATOR)
    history_messages = _history_messages(text, system_text)
    system_text = system_text.removesuffix(HISTORY_MESSAGES_LINE)
    parts = {"system": system_text, "user": user_text}
    sections: list[TemplateSection] = []
    for role in ("system", "user"):
        remaining = parts[role]
        for name, section_role in SECTION_ORDER:
            if section_role != role:
                continue
            if name not in FENCE_TAG_NAMES + HISTORY_FENCE_TAG_NAMES:  # pragma: no cover
                raise PromptTemplateError(f"<{name}> is not a fence tag evidence is kept from")
            opening, closing = f"<{name}>\n", f"</{name}>\n"
            if name in OPTIONAL_SECTIONS and not remaining.startswith(opening):
                if _fences(text, f"<{name}>"):
                    raise PromptTemplateError(f"section <{name}> is out of place")
                continue
            if not remaining.startswith(opening) or _fences(text, f"<{name}>") != 1:
                raise PromptTemplateError(f"section <{name}> must come next, exactly once")
            end = _closing_position(remaining, closing)
            if end < 0 or _fences(text, f"</{name}>") != 1:
                raise PromptTemplateError(f"section <{name}> must be closed exactly once")
            body_end = end + len(closing)
            sections.append(_split_section(name, section_role, remaining[:body_end]))
            remaining = remaining[body_end:]
        if remaining:
            raise PromptTemplateError(f"text outside the sections of the {role} message")
    return PromptTemplate(
        version=version,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        sections=tuple(sections),
        history_messages=history_messages,
    )


@memoized(None)
def load_template(version: str) -> PromptTemplate:
    """Load a built-in template by version, refusing it if its sha256 lock disagrees.

    >>> load_template("prompt_template_v1").sections[2].name
    'evidence'

    Raises:
        PromptTemplateError: unknown version, missing lock, changed file, or a file that
            breaks the template contract.
    """
    if not _VERSION_RE.match(version):
        raise PromptTemplateError(f"{version!r} is not a template version name")
    folder = Path(str(resources.files("groundlock.prompts")))
    try:
        raw = (folder / f"{version}.txt").read_bytes()
        recorded = (folder / f"{version}.sha256").read_text(encoding="ascii").split()
    except OSError as exc:
        raise PromptTemplateError(f"cannot read template {version!r} and its lock") from exc
    if not recorded or hashlib.sha256(raw).hexdigest() != recorded[0]:
        raise PromptTemplateError(
            f"template {version!r} does not match its recorded sha256; a changed template "
            "is a new version"
        )
    return parse_template(version, raw.decode("utf-8"))
