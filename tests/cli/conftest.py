"""The audit store the command-line tests read: six answers, one refusal, one rejection."""

from __future__ import annotations

import pytest

from groundlock import grounded_answer_chain
from groundlock.stores import DeltaAuditStore
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel
from tests.stores.conftest import s3, s3_server  # noqa: F401  (moto's S3 server, a bucket)


@pytest.fixture(scope="module")
def store_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    # Module scope: each test module gets a store of its own, so the rows one module adds
    # (feedback, compaction) never change what another module reads.
    root = tmp_path_factory.mktemp("cli") / "audit"
    store = DeltaAuditStore(root)
    chain = grounded_answer_chain(store=store)
    for number in range(6):
        chain.invoke(make_bundle(request_id=f"ok-{number}"))
    chain.invoke(make_bundle(request_id="refused", results=[make_row(0, similarity=0.01)]))
    rejected = grounded_answer_chain(store=store, model=ScriptedChatModel(text="Fine [C7]."))
    rejected.invoke(make_bundle(request_id="rejected"))
    store.close()
    return str(root)
