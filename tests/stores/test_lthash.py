"""The row-set hash: the packed big-int sums agree with a plain lane-by-lane LtHash."""

from __future__ import annotations

import hashlib
import struct

import pytest

from groundlock.stores.lthash import SIZE, LtHash


def _reference(row_hashes: list[bytes]) -> bytes:
    """LtHash16 written the slow, obvious way: 1,024 lanes, each summed mod 2**16."""
    lanes = [0] * 1024
    for row_hash in row_hashes:
        element = hashlib.shake_128(b"groundlock-lthash16-v1\x00" + row_hash).digest(SIZE)
        lanes = [
            (a + b) & 0xFFFF for a, b in zip(lanes, struct.unpack("<1024H", element), strict=True)
        ]
    return struct.pack("<1024H", *lanes)


def _hashes(count: int, salt: str = "") -> list[bytes]:
    return [hashlib.sha256(f"{salt}{n}".encode()).digest() for n in range(count)]


def test_the_packed_sum_is_the_lane_by_lane_sum() -> None:
    rows = _hashes(300)
    assert LtHash.of(rows).digest() == _reference(rows)


def test_order_and_grouping_do_not_matter() -> None:
    rows = _hashes(50)
    whole = LtHash.of(rows)
    assert whole == LtHash.of(reversed(rows))
    assert whole == LtHash.of(rows[:17]) + LtHash.of(rows[17:40]) + LtHash.of(rows[40:])


def test_removing_rows_is_subtracting_them() -> None:
    rows = _hashes(40)
    assert LtHash.of(rows) - LtHash.of(rows[:25]) == LtHash.of(rows[25:])
    assert LtHash.of(rows[:3]) - LtHash.of(rows[:3]) == LtHash()


def test_a_multiset_counts_a_repeated_row() -> None:
    (row,) = _hashes(1)
    assert LtHash.of([row, row]) != LtHash.of([row])
    assert LtHash.of([row, row]) == LtHash.of([row]) + LtHash.of([row])


def test_an_edited_row_changes_the_sum() -> None:
    rows = _hashes(20)
    assert LtHash.of([*rows[:-1], hashlib.sha256(b"edited").digest()]) != LtHash.of(rows)


def test_sums_past_the_carry_limit_are_reduced() -> None:
    # 65,535 additions fill a slot's spare bits; the sum goes on correctly past them.
    rows = _hashes(70_000)
    whole = LtHash.of(rows)
    assert whole == LtHash.of(rows[:35_000]) + LtHash.of(rows[35_000:])


def test_the_text_a_link_records_reads_back() -> None:
    value = LtHash.of(_hashes(5))
    assert len(value.text()) == 2732
    assert LtHash.from_text(value.text()) == value


@pytest.mark.parametrize("text", ["", "AAAA", "not base64!"])
def test_a_text_that_is_not_a_sum_is_refused(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011  (binascii.Error is a ValueError)
        LtHash.from_text(text)
