"""A control or line-break character in a table's location is refused at creation, by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundlock.stores.location import delta_location
from tests.stores.test_location import OPENERS

# C0 (tab, newline, carriage return, NUL, escape, unit separator), DEL, C1 (next line and
# the last C1) and the Unicode line and paragraph separators. delta-rs 1.6 fails on C0 and
# DEL at the first write; a URL parser drops a tab or newline; every one of them would split
# or rewrite the message or log line that names the location.
CONTROL = {
    "\t": "U+0009",
    "\n": "U+000A",
    "\r": "U+000D",
    "\x00": "U+0000",
    "\x1b": "U+001B",
    "\x1f": "U+001F",
    "\x7f": "U+007F",
    "\x85": "U+0085",
    "\x9f": "U+009F",
    "\u2028": "U+2028",
    "\u2029": "U+2029",
}


@pytest.mark.parametrize("character", sorted(CONTROL))
@pytest.mark.parametrize("opener", sorted(OPENERS))
def test_a_control_character_in_a_local_path_is_refused_naming_it(
    tmp_path: Path, character: str, opener: str
) -> None:
    path = tmp_path / "trail" / f"a{character}b"
    with pytest.raises(ValueError, match="may not hold a control or line-break") as raised:
        OPENERS[opener](str(path))
    message = str(raised.value)
    assert f"{character!r} ({CONTROL[character]})" in message
    # The message stays one line: it names the path with the character escaped.
    assert message.startswith(f"{tmp_path}/trail/a{repr(character)[1:-1]}b: ")
    assert character not in message
    assert not (tmp_path / "trail").exists()  # refused before anything was written


@pytest.mark.parametrize("character", ["\t", "\n", "\r", "\u2028"])
def test_a_control_character_in_a_remote_uri_is_refused_without_quoting_the_uri(
    character: str,
) -> None:
    # A URL parser drops a tab or newline: s3://bucket/a<TAB>b would be another table.
    uri = f"s3://bucket/secret-token/a{character}b"
    with pytest.raises(ValueError, match="may not hold a control or line-break") as raised:
        delta_location(uri)
    assert "secret-token" not in str(raised.value)  # a URI may carry a credential
    assert repr(character) in str(raised.value)


def test_a_file_url_with_a_control_character_names_the_local_path(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"may not hold a control") as raised:
        delta_location(f"file://{tmp_path}/a\tb")
    assert str(raised.value).startswith(f"{tmp_path}/a\\tb: ")


def test_printable_unicode_and_format_characters_are_still_opened(tmp_path: Path) -> None:
    # Only controls and line breaks are refused: a no-break space, an accent, a zero-width
    # space or a right-to-left mark are ordinary (if unwise) folder names delta-rs opens.
    for name in ("a\xa0b", "café", "a\u200bb", "a\u200fb"):
        assert delta_location(tmp_path / name) == str(tmp_path / name)
