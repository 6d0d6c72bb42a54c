"""Conformance: the private LangChain names groundlock relies on, and only where it may.

``groundlock._lc`` is the one module allowed private LangChain names, each for a safety
property (stage data kept out of event streams, a retriever's search unobserved). These
tests fail loudly when langchain-core changes one of them, instead of letting a guard fail
open; and they keep every other module on the public API.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import langchain_core.tracers
import pytest
from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from langchain_core.vectorstores import VectorStore

import groundlock
from groundlock import _lc

PACKAGE = Path(groundlock.__file__).parent
LC_MODULE = PACKAGE / "_lc.py"
# Protected names of Runnable meant for subclasses (the issue names them public API; the
# stream helpers' docstrings say "Use this to implement stream or transform in Runnable
# subclasses").
SUBCLASS_API = {
    "_call_with_config",
    "_acall_with_config",
    "_transform_stream_with_config",
    "_atransform_stream_with_config",
}


def test_the_installed_langchain_has_the_shape_groundlock_relies_on() -> None:
    _lc.check_shape()  # raises LangChainShapeError otherwise
    _lc.check_openai_shape()


def test_a_missing_private_name_fails_loudly_not_open(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(VectorStore, "_select_relevance_score_fn")
    with pytest.raises(_lc.LangChainShapeError, match="_select_relevance_score_fn"):
        _lc.check_shape()


def test_a_missing_openai_payload_builder_fails_loudly_when_the_model_is_pinned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Checked when an OpenAI-family model is pinned (not at import, which would load the
    # openai SDK for every chain): the model is refused, not pinned unchecked.
    from langchain_openai import ChatOpenAI  # noqa: PLC0415
    from langchain_openai.chat_models.base import BaseChatOpenAI  # noqa: PLC0415

    from groundlock.policies import DEFAULT_POLICY, load_policy  # noqa: PLC0415
    from groundlock.providers import pin_model  # noqa: PLC0415

    model = ChatOpenAI(model="gpt-4.1-mini", api_key="sk-test")
    monkeypatch.delattr(BaseChatOpenAI, "_get_request_payload")
    with pytest.raises(_lc.LangChainShapeError, match="_get_request_payload"):
        _lc.check_openai_shape()
    with pytest.raises(_lc.LangChainShapeError, match="_get_request_payload"):
        pin_model(model, load_policy(DEFAULT_POLICY))


def test_a_changed_hook_registry_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_lc, "_configure_hooks", {"not": "a list"})
    with pytest.raises(_lc.LangChainShapeError, match="_configure_hooks"):
        _lc.check_shape()


def _langchain_stream_handlers() -> list[type]:
    """Every callback handler class in langchain_core.tracers that streams runs to readers."""
    found: list[type] = []
    for info in pkgutil.walk_packages(langchain_core.tracers.__path__, "langchain_core.tracers."):
        module = importlib.import_module(info.name)
        found.extend(
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, BaseCallbackHandler)
            and "stream" in value.__name__.lower()
            and value.__module__ == module.__name__
        )
    return found


def test_every_stream_handler_langchain_has_carries_a_mark_groundlock_knows() -> None:
    handlers = _langchain_stream_handlers()
    names = {handler.__name__ for handler in handlers}
    # The two that back astream_events (v2) and astream_log / astream_events v1.
    assert {"_AstreamEventsCallbackHandler", "LogStreamCallbackHandler"} <= names
    unmarked = [h.__name__ for h in handlers if not issubclass(h, _lc.STREAM_READER_MARKS)]
    assert unmarked == [], f"stream handlers groundlock would not hide stages from: {unmarked}"


def _private_langchain_attributes() -> set[str]:
    """Private (single underscore) attribute names of the LangChain classes we build on."""
    from langchain_core.callbacks import BaseCallbackManager  # noqa: PLC0415
    from langchain_core.language_models import BaseChatModel  # noqa: PLC0415
    from langchain_openai.chat_models.base import BaseChatOpenAI  # noqa: PLC0415

    names: set[str] = set()
    for cls in (Runnable, BaseRetriever, VectorStore, BaseChatModel, BaseChatOpenAI):
        names |= {n for n in dir(cls) if n.startswith("_") and not n.startswith("__")}
    names |= {n for n in dir(BaseCallbackManager) if n.startswith("_") and not n.startswith("__")}
    return names


# Override points LangChain documents for subclasses: a groundlock class *defines* them
# (a chat model's ``_generate``); defining is not reading a private name.
OVERRIDE_POINTS = {
    "_generate",
    "_agenerate",
    "_stream",
    "_astream",
    "_llm_type",
    "_identifying_params",
    "_get_relevant_documents",
    "_aget_relevant_documents",
    "_combine_llm_outputs",
}


def _uses(tree: ast.AST, private: set[str]) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lang"):
            parts = node.module.split(".")
            if any(p.startswith("_") for p in parts):
                found.append(f"line {node.lineno}: from {node.module}")
            found += [
                f"line {node.lineno}: import {a.name}"
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
        elif isinstance(node, ast.Attribute) and node.attr in private - SUBCLASS_API:
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_private_langchain_names_appear_in_one_module_only() -> None:
    private = _private_langchain_attributes() - OVERRIDE_POINTS
    offenders: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == LC_MODULE:
            continue
        uses = _uses(ast.parse(path.read_text("utf-8")), private)
        if uses:
            offenders[str(path.relative_to(PACKAGE))] = uses
    assert offenders == {}
    # and the module itself does use them (the check above is not vacuous)
    assert _uses(ast.parse(LC_MODULE.read_text("utf-8")), private)


def test_a_run_s_child_config_is_the_one_langchain_would_pass_its_function() -> None:
    # Stages read their child config from the context (_lc.run_child_config) instead of
    # asking LangChain to build it again as a ``config`` argument: both must be the same.
    from langchain_core.callbacks import CallbackManagerForChainRun  # noqa: PLC0415
    from langchain_core.runnables import RunnableConfig  # noqa: PLC0415
    from langchain_core.tracers.context import collect_runs  # noqa: PLC0415

    seen: list[tuple[RunnableConfig, RunnableConfig, object]] = []

    def look(
        value: object, run_manager: CallbackManagerForChainRun, config: RunnableConfig
    ) -> object:
        seen.append((config, _lc.run_child_config(), run_manager.run_id))
        return value

    class Looking(Runnable[object, object]):
        def invoke(
            self, input: object, config: RunnableConfig | None = None, **kw: object
        ) -> object:
            return self._call_with_config(look, input, config)

    with collect_runs():
        Looking().invoke(1, {"metadata": {"k": "v"}, "tags": ["t"]})
    [(passed, context, run_id)] = seen
    assert passed.keys() == context.keys()
    assert all(passed[k] == context[k] for k in passed if k != "callbacks")  # type: ignore[literal-required]
    assert context["metadata"] == {"k": "v"}
    assert context["tags"] == ["t"]
    passed_callbacks, context_callbacks = passed["callbacks"], context["callbacks"]
    assert isinstance(passed_callbacks, BaseCallbackManager)
    assert isinstance(context_callbacks, BaseCallbackManager)
    assert passed_callbacks.parent_run_id == context_callbacks.parent_run_id == run_id
    assert passed_callbacks.handlers == context_callbacks.handlers
