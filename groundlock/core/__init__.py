"""Pure stage logic: decisions with no I/O and no LangChain import.

The runnables in :mod:`groundlock.runnables` are thin LCEL shells around these functions.
"""

from groundlock.core.assembly import assemble

__all__ = ["assemble"]
