"""The whole chain against a bare LCEL chain, and async throughput under a slow model.

    python benchmarks/chain.py [--repeat N] [--sizes 10,20,100,1000] [--calls N]
                               [--requests N] [--rounds N] [--only latency]

1. Latency with an instant fake model, warm token cache, 10, 20, 100 and 1,000 rows of
   ~300-token chunks (``--sizes``), in wall time and in CPU time (``time.process_time``;
   on a shared machine the CPU figures move less with other processes' load):
   ``grounded_answer_chain`` (R2 | R3 | R4 | R5 | R6) next to a bare
   ``ChatPromptTemplate | model | StrOutputParser`` given the same question and the same
   rows (formatted into its prompt inside the timed call, as an application would). The
   bare chain does no selection, budgeting, pinning, hashing, validation or packaging:
   the ratio is what all of that costs. Targets: at most 2.5x the bare chain's CPU at 10
   to 100 rows, 3x at 1,000 (issue 29). The policy admits at most ``max_chunks`` rows; a row the
   walk never reaches is never sanitised or tokenised, but every row is still validated
   on input and recorded as dropped (the audit trail names each one), so from 100 to 1,000
   rows the chain grows by that per-row validation and record, not by selection work. The
   larger the size, the fewer calls it gets (``--repeat`` scaled by 200 / rows beyond 100
   rows, at least 20), so the default run stays within a few minutes. After warming up,
   what the process has built is frozen out of the garbage collector's sight
   (``gc.freeze()``), as ``groundlock serve``, ``ask --batch`` and the Spark runner do:
   otherwise a full collection walks LangChain's and pydantic's schemas every few large
   requests, and the 1,000-row p99 is about 100 ms instead of about 12. Then where the
   CPU goes: the bare chain beside five plain LangChain runs (its per-run plumbing alone)
   and five stages that do nothing (the same through groundlock's stage shell), each
   stage's own work outside any run, stage after stage as a request meets it, the same
   split counted in Python function calls, and what one more row costs each chain from the
   smallest size to the largest, with the share of it that is reading the row contract.
2. End to end with a model that takes 300 ms (as a real one does, or faster): the same two
   chains, 20 rows, interleaved one call each. Target (issue 16): at most 1.01x — with a
   real model, everything groundlock adds is noise.
3. Async throughput: requests through ``ainvoke`` with at most 64 in flight (as a server
   with 64 concurrent connections), the model sleeping 100 ms per call. The ideal is
   64 / 0.1 s = 640 requests/s; target at least 80 % of it. The prepared inputs are frozen
   out of the garbage collector's sight and responses are dropped once checked, as a
   server would: otherwise the harness's own 1,280 live bundles dominate collection time.
   The two chains take turns for ``--rounds`` rounds; the figure is each one's median.

Both chains use the same model class. Medians and ratios come from one run; the machine is
noisy, so compare figures within a run, not across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import gc
import pstats
import random
import statistics
import time
from collections.abc import Callable
from typing import Any, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSequence
from langchain_core.runnables.config import ensure_config
from typing_extensions import override

from groundlock import GenerationStatus, PublicResponse, grounded_answer_chain, load_policy
from groundlock.core.intake import read_bundle
from groundlock.runnables._stage import Stage
from groundlock.text import get_token_counter

POLICY = load_policy()
COUNTER = get_token_counter(POLICY.token_encoding)
CONCURRENCY = 64
SLEEP_SECONDS = 0.1
E2E_SECONDS = 0.3

_SENTENCES = [
    "Depressurise the hydraulic system before removing the case drain filter bowl.",
    "Torque the filter bowl to {n} Nm and lock-wire it to the housing boss.",
    "Replace the element every {n} operating hours or when the bypass indicator extends.",
    "Record the differential pressure reading on the inspection card, item {n}.",
    "Check the reservoir sight gauge; the level must be within the green band at {n} C.",
    "Inspect the pump mounting flange for cracks longer than {n} mm using a 10x lens.",
    "If case drain pressure exceeds 3.5 bar at {n} rpm, remove the pump for overhaul.",
    "Bleed the return line at the high point until fluid runs free of air for {n} seconds.",
]
ANSWER = "Depressurise the hydraulic system before removing the case drain filter bowl. [C0]"


def _chunk(seed: int, tokens: int = 300) -> str:
    rng = random.Random(seed)
    text = "Depressurise the hydraulic system before removing the case drain filter bowl."
    while COUNTER.count(text) < tokens:
        text += " " + rng.choice(_SENTENCES).format(n=rng.randint(1, 9999))
    return text


def _bundle(rows: int, request: int = 0) -> dict[str, Any]:
    return {
        "request_id": f"bench-{request}",
        "run_id": "bench-run",
        "user_question": "What must be done before removing the case drain filter bowl?",
        "retrieval_status": "SUCCESS",
        "index_version": "idx",
        "embedding_model": "emb",
        "top_k": rows,
        "results": [
            {
                "chunk_id": f"c{rank:05d}",
                "rank": rank,
                "faiss_id": rank,
                "similarity": 0.99 - rank * 0.0001,
                "chunk_text": _chunk(rank),
                "knowledge_id": f"DOC-{rank // 3}",
                "knowledge_type_effective": "MAINTENANCE_PROCEDURE",
                "equipment_id": "TUG-7",
                "event_date": "2025-06-01",
            }
            for rank in range(rows)
        ],
    }


class FixedChatModel(BaseChatModel):
    """Answers every prompt with the same cited sentence, instantly or after a sleep."""

    model_name: str = "bench-model"
    temperature: float = 0.0
    delay_seconds: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "bench-fixed"

    def _result(self) -> ChatResult:
        message = AIMessage(ANSWER, response_metadata={"model_name": self.model_name})
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: object,
    ) -> ChatResult:
        if self.delay_seconds:
            time.sleep(self.delay_seconds)
        return self._result()

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: object,
    ) -> ChatResult:
        if self.delay_seconds:
            await asyncio.sleep(self.delay_seconds)
        return self._result()


def bare_chain(model: BaseChatModel) -> Runnable[dict[str, Any], str]:
    """The baseline: a prompt template, the model, a string parser, the same rows."""
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer only from the evidence and cite it as [C<n>]."),
            ("human", "<evidence>\n{evidence}</evidence>\n<question>\n{question}\n</question>"),
        ]
    )
    return prompt | model | StrOutputParser()


def bare_input(bundle: dict[str, Any]) -> dict[str, str]:
    """What an application does for the bare chain: put the rows' text into the prompt."""
    evidence = "".join(f"[C{row['rank']}] {row['chunk_text']}\n\n" for row in bundle["results"])
    return {"evidence": evidence, "question": bundle["user_question"]}


def _check(response: PublicResponse) -> None:
    if response.status is not GenerationStatus.OK:
        raise SystemExit(f"the benchmark answer did not pass: {response}")


def _timed(call: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


def _timed_both(call: Callable[[], object], repeat: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (``process_time``) milliseconds of each of ``repeat`` calls."""
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter_ns(), time.process_time_ns()
        call()
        cpu.append((time.process_time_ns() - start_cpu) / 1e6)
        wall.append((time.perf_counter_ns() - start) / 1e6)
    return wall, cpu


def _cpu_timed(call: Callable[[], object], repeat: int) -> list[float]:
    return _timed_both(call, repeat)[1]


def _p99(samples: list[float]) -> float:
    return sorted(samples)[min(len(samples) - 1, int(len(samples) * 0.99))]


def _calls_at(rows: int, repeat: int) -> int:
    """Calls at ``rows`` rows: ``repeat`` up to 100 rows, fewer beyond, in rounds of 10."""
    scaled = repeat if rows <= 100 else repeat * 200 // rows
    return max(20, scaled // 10 * 10)


def latency(repeat: int, sizes: tuple[int, ...] = (10, 20, 100, 1000)) -> None:
    model = FixedChatModel()
    chain, bare = grounded_answer_chain(model=model), bare_chain(model)
    medians: dict[int, tuple[float, float]] = {}
    print(f"latency, instant model, warm token cache, up to {repeat} calls each (ms)")
    print(
        f"{'rows':>5} {'calls':>5} {'groundlock median/p99':>22} {'bare median/p99':>18}"
        f" {'ratio':>6} {'CPU groundlock':>14} {'CPU bare':>9} {'CPU ratio':>9}"
    )
    for rows in sizes:
        calls = _calls_at(rows, repeat)
        bundle = _bundle(rows)
        _check(chain.invoke(bundle))  # warm the caches, and check the answer passes
        bare.invoke(bare_input(bundle))
        # What both chains built lives as long as the process: frozen out of the collector's
        # sight, as groundlock serve, ask --batch and the Spark runner do after building.
        gc.freeze()
        # Interleave the two in rounds of 10 calls so that drift in machine load hits both
        # alike; the ratio is the median of the rounds' ratios, which a burst of load on
        # the shared machine moves least.
        ours: list[float] = []
        theirs: list[float] = []
        ours_cpu: list[float] = []
        theirs_cpu: list[float] = []
        ratios: list[float] = []
        cpu_ratios: list[float] = []
        for _ in range(calls // 10):
            mine, mine_cpu = _timed_both(lambda b=bundle: chain.invoke(b), 10)
            base, base_cpu = _timed_both(lambda b=bundle: bare.invoke(bare_input(b)), 10)
            ours += mine
            theirs += base
            ours_cpu += mine_cpu
            theirs_cpu += base_cpu
            ratios.append(statistics.median(mine) / statistics.median(base))
            cpu_ratios.append(statistics.median(mine_cpu) / statistics.median(base_cpu))
        a, b = statistics.median(ours), statistics.median(theirs)
        a_cpu, b_cpu = statistics.median(ours_cpu), statistics.median(theirs_cpu)
        medians[rows] = (a_cpu, b_cpu)
        print(
            f"{rows:>5} {calls:>5} {a:>10.3f} / {_p99(ours):<9.3f} {b:>8.3f} / {_p99(theirs):<7.3f}"
            f" {statistics.median(ratios):>6.2f}x {a_cpu:>14.3f} {b_cpu:>9.3f}"
            f" {statistics.median(cpu_ratios):>8.2f}x"
        )
    _where_the_time_goes(chain, bare, repeat, medians)


class _NoWork(Stage[Any, Any]):
    """A stage that hands its input on: what a run through the stage shell costs alone."""

    @override
    def _work(self, stage_input: object, config: RunnableConfig) -> Any:
        return stage_input


class _PlainRun(Runnable[Any, Any]):
    """LangChain's own minimum for a run: ``invoke`` is one ``_call_with_config`` call."""

    @override
    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._call_with_config(_same, input, config)


def _same(value: object) -> object:
    return value


def _median_us(call: Callable[[], object], repeat: int) -> float:
    """The median CPU time of ``call``, in microseconds."""
    call()
    return statistics.median(_cpu_timed(call, repeat)) * 1000


def _work_in_order_us(
    chain: RunnableSequence[Any, Any], bundle: object, repeat: int
) -> dict[str, float]:
    """Each stage's own work, outside any run, timed as a request meets it: in order.

    Each sample passes one bundle through every stage's work in turn, as the chain does. A
    stage timed alone in a loop on one input runs warmer (its code and data stay in the
    processor's caches) and reads about a third less than it costs inside a request; that
    difference used to be counted in "the rest".
    """
    config = ensure_config()
    stages = [cast("Stage[Any, Any]", step) for step in chain.steps]
    samples: dict[str, list[int]] = {stage.get_name(): [] for stage in stages}
    for sample in range(repeat + 10):
        state = bundle
        for stage in stages:
            start = time.process_time_ns()
            state = stage._work(state, config)
            if sample >= 10:  # the first passes warm up
                samples[stage.get_name()].append(time.process_time_ns() - start)
    return {name: statistics.median(taken) / 1000 for name, taken in samples.items()}


def _calls(call: Callable[[], object], repeat: int = 5) -> float:
    """Python function calls per ``call`` (cProfile's count; deterministic, unlike time)."""
    call()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(repeat):
        call()
    profile.disable()
    return pstats.Stats(profile).total_calls / repeat  # type: ignore[attr-defined, no-any-return]


def _where_the_time_goes(
    chain: RunnableSequence[Any, Any],
    bare: Runnable[dict[str, Any], str],
    repeat: int,
    medians: dict[int, tuple[float, float]],
) -> None:
    """The fixed CPU cost at 20 rows, split, and what one more row costs each chain.

    Five plain runs (a runnable whose ``invoke`` is one ``_call_with_config`` call, in a
    ``RunnableSequence``) are LangChain's per-run plumbing alone (runs, callback managers,
    config, context), which the brief rules out working around; five stages that do nothing
    are the same through groundlock's stage shell, so the difference is the shell's own.
    Each stage's own work is timed outside any run, stage after stage as in a request. The
    rest of the chain's time is what runs around real stages costs beyond that: their child
    runs (the model's), and what the processor's caches lose to LangChain's code in between.
    The same split is also counted in Python function calls, which the machine's load does
    not move: the chain's calls beyond the shell's and the stages' work are the rest's.
    """
    bundle = _bundle(20)
    nothing: RunnableSequence[Any, Any] = RunnableSequence(
        *(_NoWork(name=f"noop{i}") for i in range(5))
    )
    plain: RunnableSequence[Any, Any] = RunnableSequence(*(_PlainRun() for _ in range(5)))
    work = _work_in_order_us(chain, bundle, repeat)
    bare_us = _median_us(lambda: bare.invoke(bare_input(bundle)), repeat)
    plain_us = _median_us(lambda: plain.invoke(bundle), repeat)
    nothing_us = _median_us(lambda: nothing.invoke(bundle), repeat)
    chain_us = _median_us(lambda: chain.invoke(bundle), repeat)
    rest = chain_us - nothing_us - sum(work.values())
    print(
        f"\nwhere the CPU goes at 20 rows (medians, us): the chain {chain_us:.0f}, the bare "
        f"chain {bare_us:.0f}; five plain LangChain runs {plain_us:.0f}, five stages doing "
        f"nothing {nothing_us:.0f} ({nothing_us / bare_us:.2f}x the bare chain); stage work "
        "alone, in order, "
        + ", ".join(f"{name.split('.')[0]} {us:.0f}" for name, us in work.items())
        + f" (sum {sum(work.values()):.0f}; R4 is the model call, which the bare chain makes"
        f" too); the rest, runs around real stages and their children, {rest:.0f}"
    )
    config = ensure_config()
    work_calls = 0.0
    state: object = bundle
    for step in chain.steps:
        stage = cast("Stage[Any, Any]", step)
        work_calls += _calls(functools.partial(stage._work, state, config))
        state = stage._work(state, config)
    chain_calls, nothing_calls = (
        _calls(lambda: chain.invoke(bundle)),
        _calls(lambda: nothing.invoke(bundle)),
    )
    plain_calls = _calls(lambda: plain.invoke(bundle))
    print(
        f"the same in Python function calls: the chain {chain_calls:.0f}; five plain runs "
        f"{plain_calls:.0f}, five stages doing nothing {nothing_calls:.0f}; stage work "
        f"{work_calls:.0f}; the rest {chain_calls - nothing_calls - work_calls:.0f}"
    )
    if len(medians) > 1:
        low, high = min(medians), max(medians)
        rows = high - low
        ours = (medians[high][0] - medians[low][0]) * 1000 / rows
        theirs = (medians[high][1] - medians[low][1]) * 1000 / rows
        big = _bundle(high)
        reading = _median_us(lambda: read_bundle(big, POLICY.input_limits), 20) / high
        print(
            f"one more row, from {low} to {high} rows (CPU): groundlock +{ours:.2f} us, the bare "
            f"chain +{theirs:.2f} us; of groundlock's, {reading:.2f} us is reading the row "
            "contract (read_bundle: pydantic-core, every row of every bundle)"
        )


def end_to_end(calls: int) -> None:
    model = FixedChatModel(delay_seconds=E2E_SECONDS)
    chain, bare = grounded_answer_chain(model=model), bare_chain(model)
    bundle = _bundle(20)
    _check(chain.invoke(bundle))
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(calls):  # one each in turn: load drift reaches both alike
        ours += _timed(lambda: chain.invoke(bundle), 1)
        theirs += _timed(lambda: bare.invoke(bare_input(bundle)), 1)
    a, b = statistics.median(ours), statistics.median(theirs)
    print(
        f"\nend to end, model taking {E2E_SECONDS * 1000:.0f} ms, 20 rows, {calls} calls each: "
        f"groundlock {a:.1f} ms, bare {b:.1f} ms, ratio {a / b:.3f}x (medians)"
    )


async def _throughput(chain: Runnable[Any, Any], inputs: list[Any]) -> float:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(item: object) -> None:
        async with gate:
            output = await chain.ainvoke(item)
        if isinstance(output, PublicResponse):
            _check(output)  # then dropped, as a server drops a response once it is sent

    # The inputs are built up front and stay alive for the whole run; a server holds no
    # such pile of requests. Freezing them keeps the collector from re-scanning them on
    # every full collection (gc.freeze, as servers do after start-up), for both chains.
    gc.collect()
    gc.freeze()
    start = time.perf_counter()
    await asyncio.gather(*(one(item) for item in inputs))
    elapsed = time.perf_counter() - start
    gc.unfreeze()
    return len(inputs) / elapsed


def throughput(requests: int, rounds: int) -> None:
    model = FixedChatModel(delay_seconds=SLEEP_SECONDS)
    chain, bare = grounded_answer_chain(model=model), bare_chain(model)
    bundles = [_bundle(20, request) for request in range(requests)]
    _check(chain.invoke(bundles[0]))
    ideal = CONCURRENCY / SLEEP_SECONDS
    print(
        f"\nasync throughput, model sleeping {SLEEP_SECONDS * 1000:.0f} ms, "
        f"{CONCURRENCY} in flight, {requests} requests of 20 rows, {rounds} rounds"
    )
    # The two chains take turns, so that a change in machine load during the run reaches
    # both; the medians of the rounds are what to quote.
    rates: dict[str, list[float]] = {"groundlock": [], "bare": []}
    for _ in range(rounds):
        for name, runnable, inputs in (
            ("groundlock", chain, bundles),
            ("bare", bare, [bare_input(b) for b in bundles]),
        ):
            rates[name].append(asyncio.run(_throughput(runnable, inputs)))
    for name, measured in rates.items():
        rate = statistics.median(measured)
        rounds_text = " ".join(f"{r / ideal:.1%}" for r in measured)
        print(
            f"{name:>11}: {rate:7.1f} requests/s = {rate / ideal:6.1%} of the ideal {ideal:.0f}"
            f" (median; rounds {rounds_text})"
        )
    gap = (statistics.median(rates["bare"]) - statistics.median(rates["groundlock"])) / ideal
    print(f"{'gap':>11}: {gap * 100:.1f} points of the ideal (target: at most 5)")


def _at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``low`` (a median needs one sample)."""

    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}")
        return value

    return parse


def _sizes(text: str) -> tuple[int, ...]:
    """An argparse type: comma-separated row counts, each at least 1."""
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError("expected row counts such as 20,100,1000") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("expected row counts of at least 1")
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=_at_least(10), default=500)
    parser.add_argument("--requests", type=_at_least(1), default=1280)
    parser.add_argument("--rounds", type=_at_least(1), default=3)
    parser.add_argument("--calls", type=_at_least(1), default=30, help="end-to-end calls each")
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=(10, 20, 100, 1000),
        help="row counts for the latency section, comma-separated (default 10,20,100,1000)",
    )
    parser.add_argument(
        "--only",
        choices=("latency", "end-to-end", "throughput"),
        help="run one section only",
    )
    args = parser.parse_args()
    if args.only in (None, "latency"):
        latency(args.repeat, args.sizes)
    if args.only in (None, "end-to-end"):
        end_to_end(args.calls)
    if args.only in (None, "throughput"):
        throughput(args.requests, args.rounds)


if __name__ == "__main__":
    main()
