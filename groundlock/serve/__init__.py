"""Serving: the chain behind LangServe routes, locked down (see :mod:`groundlock.serve.app`).

The web stack (FastAPI, LangServe) loads on first use of a name from ``app``, so the
command line can read :class:`ServeLimits` without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groundlock.serve.limits import ServeLimits

if TYPE_CHECKING:
    from groundlock.serve.app import (
        ANSWER_PATH,
        Requester,
        app_from_env,
        create_app,
        requesters_from_env,
    )

__all__ = [
    "ANSWER_PATH",
    "Requester",
    "ServeLimits",
    "app_from_env",
    "create_app",
    "requesters_from_env",
]


def __getattr__(name: str) -> Any:  # noqa: ANN401  (a module attribute of any kind)
    if name in __all__:
        from groundlock.serve import app  # noqa: PLC0415

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
