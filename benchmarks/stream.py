"""Validated streaming: when a reader sees each sentence, against when the model wrote it.

    python benchmarks/stream.py [--rate 40] [--repeat 5] [--sentences 4]

A fake chat model streams a cited answer of ``--sentences`` sentences (about twenty words
each, a word a token) at ``--rate`` tokens per second, through ``grounded_answer_chain``
with ``chain.stream``, under both stream modes (default policy ``R2_POLICY_V4``; the
progressive one is the same policy with ``stream_mode="progressive"``). Printed, median over
``--repeat`` streams:

* ``progressive``: the time to the first validated sentence over the time the model took
  to finish that sentence (its last token, the marker). Target (issue 30): at most 1.2x.
  A sentence is released once a whole word has followed it (the segmenter decides a
  boundary from the next word), then judged as a prefix: its cost is about two tokens'
  time plus R5 on the prefix.
* ``buffered``: what it adds to the end of the answer: the time from the model's last token
  to the response event, less the same for a bare streaming chain
  (``ChatPromptTemplate | model | StrOutputParser``, whose stream ends when the model's does,
  after LangChain's own end-of-stream work), against R5's own time on the same answer
  (``validate_answer`` on the answered state, measured alone, median). Target (issue 30): no
  more than R5's own time.

Figures come from one run on a shared machine; compare within a run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402

from groundlock import (  # noqa: E402
    AssembleEvidence,
    BuildPrompt,
    ExecuteModel,
    grounded_answer_chain,
    load_policy,
    validate_text,
)
from groundlock.core.firewall import validate_answer  # noqa: E402

MARKS: list[float] = []
"""When the model handed out each token (time.perf_counter), for the current stream."""

FACTS = [
    ("Replace the case drain filter element of the main hydraulic pump every 500 operating "
     "hours, and sooner when the clogging indicator shows red during a shift."),
    ("Tighten the filter housing bolts in a cross pattern to 40 Nm with a calibrated torque "
     "wrench, then check the housing seal for weeping after ten minutes of running."),
    ("Record each filter change in the maintenance log with the hour meter reading, the "
     "element batch number and the name of the technician who fitted it."),
    ("Inspect the removed element for metal particles, and send a sample of the oil to the "
     "laboratory whenever the particles are larger than a grain of sand."),
    ("Bleed the air from the filter housing through the vent screw before the pump is "
     "started again, until the oil runs out of the vent without bubbles."),
    ("Keep a spare element of the same part number on the machine, stored in its sealed bag "
     "in the dry compartment behind the operator cab."),
]  # fmt: skip


class PacedChatModel(BaseChatModel):
    """Streams ``text`` a word a token, ``rate`` tokens a second (a provider's stream)."""

    text: str
    rate: float
    model_name: str = "paced-model"
    temperature: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "paced"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,  # noqa: ANN401  (BaseChatModel's signature)
    ) -> ChatResult:
        message = AIMessage(self.text, response_metadata={"model_name": self.model_name})
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,  # noqa: ANN401  (BaseChatModel's signature)
    ) -> Iterator[ChatGenerationChunk]:
        MARKS.clear()
        words = self.text.split(" ")
        for index, word in enumerate(words):
            time.sleep(1 / self.rate)
            MARKS.append(time.perf_counter())
            yield ChatGenerationChunk(message=AIMessageChunk(word if index == 0 else " " + word))
        yield ChatGenerationChunk(
            message=AIMessageChunk("", response_metadata={"model_name": self.model_name})
        )


def scenario(sentences: int) -> tuple[dict[str, Any], str, int]:
    """The bundle, the answer, and how many tokens its first sentence takes."""
    rows = [
        {"chunk_id": f"c{i}", "rank": i, "similarity": 0.9 - i / 100, "knowledge_id": f"K{i}",
         "chunk_text": FACTS[i]}
        for i in range(sentences)
    ]  # fmt: skip
    bundle = {
        "request_id": "stream-bench",
        "user_question": "How is the case drain filter of the main hydraulic pump serviced?",
        "retrieval_status": "SUCCESS",
        "index_version": "i",
        "embedding_model": "e",
        "top_k": sentences,
        "results": rows,
    }
    parts = [f"{FACTS[i]} [C{i}]" for i in range(sentences)]
    return bundle, " ".join(parts), len(parts[0].split(" "))


def one_stream(chain: Any, bundle: dict[str, Any]) -> tuple[float | None, float, list[Any]]:  # noqa: ANN401
    """(first delta's arrival, the response's arrival, events), in perf_counter time."""
    first: float | None = None
    events = []
    for event in chain.stream(bundle):
        now = time.perf_counter()
        if event.type == "answer_delta" and first is None:
            first = now
        events.append(event)
    return first, time.perf_counter(), events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=40.0, help="model tokens per second")
    parser.add_argument("--repeat", type=int, default=5, help="streams per mode")
    parser.add_argument("--sentences", type=int, default=4, help="sentences in the answer")
    args = parser.parse_args()
    bundle, answer, first_tokens = scenario(args.sentences)
    default = load_policy()
    progressive = default.model_copy(
        update={"policy_version": "STREAM_BENCH_V1", "stream_mode": "progressive"}
    )
    assert validate_text(answer, bundle).validation_status.value == "PASSED"  # noqa: S101
    answered = (
        AssembleEvidence() | BuildPrompt() | ExecuteModel(model=PacedChatModel(text=answer, rate=1))
    ).invoke(bundle)
    r5 = []
    for _ in range(max(20, args.repeat * 4)):
        started = time.perf_counter()
        validate_answer(answered, default)
        r5.append(time.perf_counter() - started)
    r5_ms = statistics.median(r5) * 1000
    bare_tails = []
    prompt = ChatPromptTemplate.from_messages([("user", "{question}")])
    for _ in range(args.repeat):
        bare = prompt | PacedChatModel(text=answer, rate=args.rate) | StrOutputParser()
        for _chunk in bare.stream({"question": bundle["user_question"]}):
            pass
        bare_tails.append((time.perf_counter() - MARKS[-1]) * 1000)
    bare_ms = statistics.median(bare_tails)
    print(
        f"answer: {args.sentences} sentences, {len(answer.split(' '))} tokens at "
        f"{args.rate:g} tokens/s; the first sentence is {first_tokens} tokens"
    )
    print(f"R5 alone on the whole answer (validate_answer): {r5_ms:.2f} ms (median)")
    print(f"bare streaming chain: its stream ends {bare_ms:.2f} ms after the model's last token")
    for name, policy in (("progressive", progressive), ("buffered", default)):
        ratios, tails, firsts = [], [], []
        for _ in range(args.repeat):
            chain = grounded_answer_chain(
                model=PacedChatModel(text=answer, rate=args.rate), policy=policy
            )
            started = time.perf_counter()
            first, done, events = one_stream(chain, bundle)
            assert events[-1].response.status.value == "OK"  # noqa: S101
            assert "".join(e.text for e in events[:-1]) == answer  # noqa: S101
            sentence_done = MARKS[first_tokens - 1]
            if first is not None:
                ratios.append((first - started) / (sentence_done - started))
                firsts.append((first - sentence_done) * 1000)
            tails.append((done - MARKS[-1]) * 1000)
        if name == "progressive":
            print(
                f"progressive: first validated sentence at {statistics.median(ratios):.3f}x "
                f"the time the model took to finish it (target <= 1.2x); "
                f"{statistics.median(firsts):.1f} ms after its last token"
            )
        tail = statistics.median(tails)
        print(
            f"{name}: response {tail:.2f} ms after the model's last token, "
            f"{tail - bare_ms:.2f} ms more than the bare chain's end "
            f"(R5's own time: {r5_ms:.2f} ms; target: no more)"
        )


if __name__ == "__main__":
    main()
