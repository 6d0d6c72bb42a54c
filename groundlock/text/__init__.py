"""Pure text helpers: sanitisation, token counting, overlap. No I/O, no LangChain."""

from groundlock.text.overlap import covered_fraction, shingles
from groundlock.text.sanitize import SanitizedText, sanitize_evidence
from groundlock.text.tokens import TokenCounter, get_token_counter, load_encoding

__all__ = [
    "SanitizedText",
    "TokenCounter",
    "covered_fraction",
    "get_token_counter",
    "load_encoding",
    "sanitize_evidence",
    "shingles",
]
