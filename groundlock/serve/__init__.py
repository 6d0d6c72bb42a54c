"""Serving: the chain behind LangServe routes, locked down (see :mod:`groundlock.serve.app`)."""

from groundlock.serve.app import (
    ANSWER_PATH,
    Requester,
    app_from_env,
    create_app,
    requesters_from_env,
)

__all__ = ["ANSWER_PATH", "Requester", "app_from_env", "create_app", "requesters_from_env"]
