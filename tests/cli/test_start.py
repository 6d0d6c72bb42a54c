"""What the parsers read without importing the package they describe is that package's value.

The command line builds every parser for ``--help``; the values it shows come from light
copies (:mod:`groundlock.lakehouse` and :mod:`groundlock.policies` load the pydantic models).
"""

from __future__ import annotations

from groundlock.cli import lakehouse as lakehouse_cli
from groundlock.cli import replay as replay_cli
from groundlock.cli._shared import builtin_policies
from groundlock.lakehouse import LEXICAL_POLICY, chunking
from groundlock.policies import available_policies


def test_the_parsers_list_the_policies_the_loader_lists() -> None:
    assert builtin_policies() == available_policies()


def test_the_index_parsers_limits_are_the_chunkers() -> None:
    assert lakehouse_cli.MAX_DOCUMENT_BYTES == chunking.MAX_DOCUMENT_BYTES
    assert lakehouse_cli.PDF_FILE_RATIO == chunking.PDF_FILE_RATIO
    assert lakehouse_cli.LEXICAL_POLICY == LEXICAL_POLICY


def test_the_replays_public_names_are_read_from_where_it_runs() -> None:
    from groundlock.cli import _replay_run  # noqa: PLC0415  (after the light module)

    assert replay_cli.replay_row is _replay_run.replay_row
    assert replay_cli.Replayed is _replay_run.Replayed
