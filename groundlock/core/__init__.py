"""Pure stage logic: decisions with no I/O and no LangChain import.

The runnables in :mod:`groundlock.runnables` are thin LCEL shells around these functions.
"""

from groundlock.core.assembly import assemble
from groundlock.core.firewall import validate_answer
from groundlock.core.package import package_response
from groundlock.core.prompt import build_prompt

__all__ = ["assemble", "build_prompt", "package_response", "validate_answer"]
