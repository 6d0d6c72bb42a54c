"""One contract suite that every pipeline stage inherits (like langchain-tests).

A stage's test class subclasses :class:`StageContract` and provides a stage, valid inputs
and one invalid input. It then gets, for free: invoke/ainvoke/batch/abatch parity,
determinism, the declared input/output schemas, a stable run name for tracing, fail-closed
behaviour on a bug, and "bad input never raises".
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import Runnable


class _RunNames(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.names.append(kwargs["name"])


class StageContract:
    """Subclass and fill in the class attributes and the two abstract helpers."""

    run_name: ClassVar[str]
    canary: ClassVar[str]
    """A string inside ``valid_inputs[0]``'s data that must never reach a log line."""
    input_type: ClassVar[type]
    output_type: ClassVar[type]

    @pytest.fixture
    def stage(self) -> Runnable[Any, Any]:
        raise NotImplementedError

    @pytest.fixture
    def valid_inputs(self) -> list[Any]:
        raise NotImplementedError

    @pytest.fixture
    def invalid_input(self) -> Any:
        raise NotImplementedError

    def assert_failed_closed(self, output: Any) -> None:
        """Assert that ``output`` is the stage's FAILED result for an internal error."""
        raise NotImplementedError

    def comparable(self, output: Any) -> Any:
        """What two runs must agree on; stages with timing fields drop them here."""
        return output

    def break_stage(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Make the stage's pure core raise an exception whose message quotes input data."""
        raise NotImplementedError

    def test_sync_async_and_batch_paths_agree(self, stage, valid_inputs):
        same = self.comparable
        one_by_one = [same(stage.invoke(item)) for item in valid_inputs]
        assert [same(asyncio.run(stage.ainvoke(item))) for item in valid_inputs] == one_by_one
        assert [same(out) for out in stage.batch(valid_inputs)] == one_by_one
        assert [same(out) for out in asyncio.run(stage.abatch(valid_inputs))] == one_by_one

    def test_repeated_calls_are_deterministic(self, stage, valid_inputs):
        first = [self.comparable(stage.invoke(item)) for item in valid_inputs]
        assert first == [self.comparable(stage.invoke(item)) for item in valid_inputs]

    def test_schemas_are_the_contract_models(self, stage):
        assert stage.InputType is self.input_type
        assert stage.OutputType is self.output_type
        assert stage.get_input_jsonschema() == self.input_type.model_json_schema()
        assert stage.get_output_jsonschema() == self.output_type.model_json_schema()

    def test_stage_is_a_named_run_for_tracing(self, stage, valid_inputs):
        handler = _RunNames()
        stage.invoke(valid_inputs[0], config={"callbacks": [handler]})
        asyncio.run(stage.ainvoke(valid_inputs[0], config={"callbacks": [handler]}))
        assert handler.names == [self.run_name, self.run_name]

    def test_bad_input_returns_a_result_instead_of_raising(self, stage, invalid_input):
        assert isinstance(stage.invoke(invalid_input), self.output_type)
        assert isinstance(asyncio.run(stage.ainvoke(invalid_input)), self.output_type)

    def test_a_bug_fails_closed_and_logs_no_message(self, stage, valid_inputs, monkeypatch, caplog):
        self.break_stage(monkeypatch)
        with caplog.at_level(logging.ERROR, logger="groundlock"):
            output = stage.invoke(valid_inputs[0])
        self.assert_failed_closed(output)
        assert "RuntimeError" in caplog.text
        assert self.canary not in caplog.text  # the exception message is never logged
