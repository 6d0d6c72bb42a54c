"""A multiset hash of rows that adds up: LtHash, so a table's rows can be checked as a whole.

A chain link binds the rows of *one commit*; a compaction moves them into new files and a
vacuum deletes the old ones, after which no commit's rows can be read back alone. What can
still be read is every row the table holds now. A multiset hash lets the writer keep, in
each link, a running hash of every row the table has been given, and lets the verifier
hash the rows it finds, in any order and any files, and compare the two.

The construction is LtHash (Bellare and Micciancio's lattice hash, "A New Paradigm for
Collision-free Hashing", 1997, as Facebook's "Securing Update Propagation with Homomorphic
Hashing", 2019, parameterises it): a row's element is 1,024 lanes of 16 bits drawn from
SHAKE-128 of its row hash, and a multiset is the lane-wise sum mod 2**16 of its elements.
Adding and removing rows is adding and subtracting elements; order and grouping do not
matter. Its security rests on the short-integer-solution problem over that lattice (about
200 bits at these parameters). A plain sum of SHA-256 outputs mod 2**256 is *not* a sound
alternative: Wagner's generalized-birthday attack finds rows whose hashes sum to a chosen
value in far fewer than 2**128 steps.

Pure Python, stdlib only. The 1,024 lanes of an element are one 16,384-bit integer; lanes
are summed two integers at a time, the even lanes in one and the odd lanes in the other,
each lane in a 32-bit slot whose upper 16 bits catch its carries, so one big-integer
addition adds 512 lanes. A slot cannot overflow before 65,536 additions; the sums are
reduced (masked) before then.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable

__all__ = ["SIZE", "LtHash"]

LANES = 1024
"""Lanes per element."""
SIZE = LANES * 2
"""Bytes of an element or a sum (16-bit lanes, little-endian)."""
_DOMAIN = b"groundlock-lthash16-v1\x00"
_EVEN = int.from_bytes(b"\xff\xff\x00\x00" * (LANES // 2), "little")
"""The even lanes, each in the low half of its 32-bit slot."""
_ODD = _EVEN << 16
"""The odd lanes, each in the high half of its slot (their carries spill into the next)."""
_ONE_PAST = int.from_bytes(b"\x00\x00\x01\x00" * (LANES // 2), "little")
"""2**16 in every even slot: a lane's ``2**16 - v`` needs no borrow from its neighbour."""
_REDUCE_EVERY = 65_535
"""Additions after which a slot's spare bits could overflow into the next lane."""


class LtHash:
    """A multiset of row hashes, as an LtHash sum (see the module docstring).

    Example:
        >>> a = LtHash.of([b"row-1", b"row-2"])
        >>> a == LtHash.of([b"row-2"]) + LtHash.of([b"row-1"])
        True
        >>> (a - LtHash.of([b"row-2"])) == LtHash.of([b"row-1"])
        True
    """

    __slots__ = ("_value",)

    def __init__(self, value: bytes = bytes(SIZE)) -> None:
        if len(value) != SIZE:
            raise ValueError(f"an LtHash is {SIZE} bytes, not {len(value)}")
        self._value = int.from_bytes(value, "little")

    @classmethod
    def of(cls, row_hashes: Iterable[bytes]) -> LtHash:
        """The sum of the elements of ``row_hashes`` (each a row's sha256)."""
        return cls._packed(_sum(row_hashes))

    @classmethod
    def from_text(cls, text: str) -> LtHash:
        """The sum a link records (:meth:`text`); ``ValueError`` if it is not one."""
        return cls(base64.b64decode(text.encode("ascii"), validate=True))

    @classmethod
    def _packed(cls, value: int) -> LtHash:
        made = cls.__new__(cls)
        made._value = value
        return made

    def digest(self) -> bytes:
        """The sum's 2,048 bytes (lanes little-endian)."""
        return self._value.to_bytes(SIZE, "little")

    def text(self) -> str:
        """The sum as base64 (2,732 characters), as a link records it."""
        return base64.b64encode(self.digest()).decode("ascii")

    def __add__(self, other: LtHash) -> LtHash:
        even = ((self._value & _EVEN) + (other._value & _EVEN)) & _EVEN
        odd = ((self._value & _ODD) + (other._value & _ODD)) & _ODD
        return LtHash._packed(even | odd)

    def __sub__(self, other: LtHash) -> LtHash:
        # Each lane a - b = a + (2**16 - b) mod 2**16; 2**16 - b is never negative.
        even = ((self._value & _EVEN) + _ONE_PAST - (other._value & _EVEN)) & _EVEN
        odd = ((self._value & _ODD) + (_ONE_PAST << 16) - (other._value & _ODD)) & _ODD
        return LtHash._packed(even | odd)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LtHash) and self._value == other._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"LtHash({hashlib.sha256(self.digest()).hexdigest()[:16]}…)"


def _sum(row_hashes: Iterable[bytes]) -> int:
    """The packed lane-wise sum of the rows' elements (the hot loop: locals only)."""
    shake, from_bytes, even_mask, odd_mask = hashlib.shake_128, int.from_bytes, _EVEN, _ODD
    even = odd = 0
    pending = 0
    for row_hash in row_hashes:
        element = from_bytes(shake(_DOMAIN + row_hash).digest(SIZE), "little")
        even += element & even_mask
        odd += element & odd_mask
        pending += 1
        if pending == _REDUCE_EVERY:
            even &= even_mask
            odd &= odd_mask
            pending = 0
    return (even & even_mask) | (odd & odd_mask)
