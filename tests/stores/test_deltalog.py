"""Which versions a Delta log holds, found by probing (an object store is not listed)."""

from __future__ import annotations

import pytest

from groundlock.stores.deltalog import present_versions


class _Log:
    """A log holding ``versions``, counting the probes made of it."""

    def __init__(self, versions: set[int] | range) -> None:
        self.versions = set(versions)
        self.probes = 0

    def exists(self, version: int) -> bool:
        self.probes += 1
        return version in self.versions


@pytest.mark.parametrize(
    ("held", "loaded", "floor"),
    [
        pytest.param(range(6), 5, 0, id="contiguous"),
        pytest.param(range(6), 3, 0, id="commits-landed-after-the-load"),
        pytest.param({0, 1, 3, 4}, 4, 0, id="one-commit-missing"),
        pytest.param({0, *range(500, 511)}, 510, 0, id="a-wide-hole-above-version-0"),
        pytest.param({*range(100, 106), *range(107, 111)}, 110, 0, id="gap-above-a-cleaned-log"),
        pytest.param({0, 1, 2}, 3, 0, id="the-loaded-commit-gone-its-checkpoint-left"),
        pytest.param({0, 1, 2, 4, 5}, None, 0, id="unloadable-gap-after-version-0"),
        pytest.param({10, 11, 12, 14}, None, 10, id="unloadable-gap-after-a-checkpoint"),
        pytest.param({1, 2, 3}, None, 0, id="version-0-gone"),
        pytest.param({0, 1, *range(30, 70)}, None, 0, id="unloadable-wide-hole"),
        pytest.param(set(), None, 0, id="no-table"),
    ],
)
def test_every_held_version_is_found(held: set[int] | range, loaded: int | None, floor: int):
    assert present_versions(_Log(held).exists, loaded, floor) == sorted(held)


def test_a_cleaned_log_costs_a_few_dozen_probes_not_one_per_cleaned_version():
    log = _Log(range(1_000_000, 1_000_010))
    assert present_versions(log.exists, 1_000_009) == list(range(1_000_000, 1_000_010))
    assert log.probes < 10 + 2 + 25  # each held version, the end above, then doubling steps


def test_the_walk_up_past_a_loaded_log_stops_at_the_first_missing_version():
    # delta-rs's log is contiguous up to the version it loaded: nothing to probe beyond.
    log = _Log({0, 1, 2, 3, 9})
    assert present_versions(log.exists, 3) == [0, 1, 2, 3]
    assert log.probes == 5  # 3, 4 (missing: stop), 2, 1, 0


def test_without_a_loaded_version_a_commit_far_past_a_gap_is_found():
    log = _Log({0, 1, 1_026})  # 1,024 past the missing version 2: a doubling step lands on it
    assert present_versions(log.exists, None) == [0, 1, 1_026]


def test_a_lone_commit_between_two_doubling_steps_is_not_found():
    # The limit the module docstring states: delta-rs cannot load such a log either, and
    # the verifier reports that (LOG_UNREADABLE) when no gap was found to explain it.
    assert present_versions(_Log({0, 1, 40}).exists, None) == [0, 1]
