"""Pure stage logic: decisions with no I/O, no LangChain and no store.

One module per concern: :mod:`~groundlock.core.evidence_assembly` (R2),
:mod:`~groundlock.core.prompt_build` (R3), :mod:`~groundlock.core.attempts` (R4's retry
rules), :mod:`~groundlock.core.firewall` (R5), :mod:`~groundlock.core.packaging` (R6),
:mod:`~groundlock.core.audit` (the audit rows), :mod:`~groundlock.core.access` (R1's access
control) and :mod:`~groundlock.core.skipped` (the sections of stages that did not run).
Each reads and returns the run state of :mod:`groundlock.contracts.state`; the runnables in
:mod:`groundlock.runnables` are thin shells around these functions, so everything here can
be read and tested without LangChain.
"""

from groundlock.core.evidence_assembly import assemble
from groundlock.core.firewall import validate_answer
from groundlock.core.packaging import package_response
from groundlock.core.prompt_build import build_prompt
from groundlock.core.written_answer import validate_text

__all__ = ["assemble", "build_prompt", "package_response", "validate_answer", "validate_text"]
