"""The commands that run the chain: ``ask``, ``validate`` and ``serve``.

``ask`` answers one bundle (a file or stdin) or a JSONL batch; ``validate`` judges an
answer someone already has with :func:`~groundlock.validate_text` (R2, R3 and R5, no model);
``serve`` starts uvicorn workers that each build the chain from the environment. What only
one command needs (uvicorn above all, the replay model, the chain builder) is imported
inside that command, so no other command pays for it. :class:`ServeLimits` is light and is
read when the parser is built, because ``serve`` has one flag per limit.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundlock.cli._shared import (
    Parser,
    UsageError,
    builtin_policies,
    check_location,
    model_named,
    store_option,
)
from groundlock.serve.limits import ServeLimits

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import RunnableSequence

    from groundlock.contracts.response import PublicResponse
    from groundlock.policies import Policy

__all__ = ["add_commands"]


def _policy_help(default: str = "the library's default") -> str:
    return (
        f"a built-in policy version or a policy file (default: {default}); "
        f"built in: {', '.join(builtin_policies())}"
    )


MODEL_HELP = (
    "the model, as provider:model (openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, "
    "ollama:llama3.1, ...; the provider's LangChain package installed and its API key in "
    "the environment); default: the offline model, which calls no provider"
)
"""The ``--model`` help of every command that answers (ask, serve, eval)."""

_LIMIT_HELP = {
    "max_body_bytes": "largest request body (413 BODY_TOO_LARGE)",
    "max_batch_items": "most inputs in one /answer/batch request (413 BATCH_TOO_LARGE)",
    "max_batch_rows": "most evidence rows over a batch's bundles (413 BATCH_TOO_LARGE)",
    "batch_concurrency": "how many of a batch's inputs run at once",
    "max_in_flight": "most requests one worker runs at once (503 OVERLOADED)",
    "max_in_flight_per_client": "most requests one client runs at once on a worker (429)",
    "request_timeout_seconds": "longest a request may take once its body is in (504)",
    "read_timeout_seconds": "longest a client may take to send its headers, then its body (408)",
}
"""What each serving limit bounds (``ServeLimits``' field docstrings, in one line)."""


def add_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``ask``, ``validate`` and ``serve`` to the command line."""
    ask = commands.add_parser(
        "ask",
        help="answer a bundle (a JSON file, or stdin), or a question from an index (--index)",
        description="groundlock ask --bundle FILE (or a bundle's JSON on stdin, or --batch "
        "FILE of them) answers retrieval bundles; groundlock ask QUESTION --index PATH "
        "answers a question from an index that groundlock index wrote.",
    )
    source = ask.add_mutually_exclusive_group()
    source.add_argument(
        "--bundle", type=Path, metavar="FILE", help="a bundle JSON file (default: stdin)"
    )
    source.add_argument(
        "--batch", type=Path, metavar="FILE", help="a JSONL file of bundles, one per line"
    )
    ask.add_argument("--json", action="store_true", help="print the PublicResponse as JSON")
    ask.add_argument("--model", metavar="PROVIDER:MODEL", help=MODEL_HELP)
    ask.add_argument(
        "--policy",
        help=_policy_help(
            "the library's default; with --index, R2_POLICY_V4_LEXICAL for an index built with "
            "the lexical embedding"
        ),
    )
    ask.add_argument(
        "--concurrency",
        type=int,
        default=8,
        metavar="N",
        help="with --batch: how many bundles are answered at once (default 8)",
    )
    ask.add_argument(
        "--archive",
        metavar="URI",
        help="also archive each request's evidence, prompt and model text here, for "
        "groundlock replay (needs --store; off by default: it keeps text the firewall refused)",
    )
    ask.add_argument(
        "--max-line-bytes",
        type=int,
        default=_MAX_LINE_BYTES,
        metavar="N",
        help="with --batch: a longer line is answered FAILED INPUT_LIMIT_EXCEEDED without "
        f"being held whole (default {_MAX_LINE_BYTES:,}, a served request's body)",
    )
    ask.add_argument(
        "--run-id",
        metavar="ID",
        help="with --batch: the run's id, in the request id of a line that has none "
        "(<run-id>:line-<n>); the same id again records no line twice (default: a fresh one)",
    )
    store_option(ask, default=None)
    ask.set_defaults(handler=_ask)

    validate = commands.add_parser(
        "validate", help="judge an existing answer against a bundle, without a model"
    )
    validate.add_argument(
        "--bundle",
        type=Path,
        required=True,
        metavar="FILE",
        help="the bundle (JSON) the answer was written from",
    )
    validate.add_argument(
        "--answer-file",
        type=Path,
        required=True,
        metavar="FILE",
        help="the answer text, or the JSON that `groundlock ask --json` prints",
    )
    validate.add_argument(
        "--policy",
        help=_policy_help(
            "the library's default; for a bundle retrieved from a lexical index, "
            "R2_POLICY_V4_LEXICAL, as ask --index chooses"
        ),
    )
    validate.add_argument(
        "--json",
        action="store_true",
        help="print the verdict as JSON (default: grounded or not, citations, sources, "
        "retrieved ids)",
    )
    validate.set_defaults(handler=_validate)

    serve = commands.add_parser("serve", help="serve the chain over HTTP (LangServe, uvicorn)")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only)",
    )
    serve.add_argument(
        "--port", type=int, default=8000, metavar="N", help="the port (default 8000)"
    )
    serve.add_argument(
        "--workers", type=int, default=1, metavar="N", help="worker processes, forked (default 1)"
    )
    serve.add_argument("--model", metavar="PROVIDER:MODEL", help=MODEL_HELP)
    serve.add_argument("--policy", help=_policy_help())
    store_option(serve)
    for field in dataclasses.fields(ServeLimits):
        serve.add_argument(
            f"--{field.name.replace('_', '-')}",
            type=float if field.name.endswith("seconds") else int,
            metavar="SECONDS" if field.name.endswith("seconds") else "N",
            help=f"{_LIMIT_HELP.get(field.name, 'a serving limit')} "
            f"(default {field.default or _LEAST_DEADLINE}; env GROUNDLOCK_{field.name.upper()})",
        )
    serve.set_defaults(handler=_serve)


_LEAST_DEADLINE = "the policy's model deadline plus a tenth, at least 120"
_MAX_LINE_BYTES = ServeLimits().max_body_bytes
"""A batch line's default limit: what a served request's body may be (4 MiB; the same as
:data:`groundlock.cli.batch.MAX_LINE_BYTES`, which this module does not import early)."""
_LARGEST_LINE = 2**30


_NO_BUNDLE = (
    "no bundle: pass --bundle FILE, pipe a bundle's JSON on stdin, or ask a question with "
    "--index PATH"
)


def _read_json(path: Path | None) -> object:
    """The bundle from a file or stdin; unreadable input is a usage error (exit 2).

    A terminal on stdin is refused at once (the command would wait for a bundle the user
    does not know to type), and so is an empty stdin: either way the message says what to
    pass. A JSON error names its line and column.
    """
    from_stdin = path is None or str(path) == "-"
    if from_stdin and sys.stdin.isatty():
        raise UsageError(_NO_BUNDLE)
    try:
        text = sys.stdin.read() if from_stdin or path is None else path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path or 'stdin'}: {type(exc).__name__}") from None
    if not text.strip():
        raise UsageError(_NO_BUNDLE if from_stdin else f"{path} is empty: no bundle in it")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path or 'stdin'} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except (ValueError, RecursionError) as exc:  # (RecursionError: nested too deep)
        raise UsageError(f"{path or 'stdin'} is not JSON: {type(exc).__name__}") from None


def _chain_for(
    args: argparse.Namespace, model: BaseChatModel | None = None, policy: Policy | None = None
) -> RunnableSequence[Any, PublicResponse]:
    from pydantic import ValidationError  # noqa: PLC0415

    from groundlock.chains.grounded import grounded_answer_chain  # noqa: PLC0415
    from groundlock.errors import GroundlockError  # noqa: PLC0415
    from groundlock.policies.loader import DEFAULT_POLICY  # noqa: PLC0415
    from groundlock.providers.chat import ModelPinningError  # noqa: PLC0415

    archive = getattr(args, "archive", None) or None
    if archive is not None and not getattr(args, "store", None):
        raise UsageError("--archive needs --store: the archive is written with the audit trail")
    check_location(archive, "--archive")
    spec = None if model is not None else getattr(args, "model", None) or None
    try:
        with model_named(spec, getattr(args, "command", "ask")):
            return grounded_answer_chain(
                model=model or spec,
                policy=policy or args.policy or DEFAULT_POLICY,
                store=getattr(args, "store", None) or None,
                archive=archive,
            )
    except (GroundlockError, ModelPinningError, ValidationError, ValueError, LookupError) as exc:
        raise UsageError(f"cannot build the chain: {type(exc).__name__}: {exc}") from None


def _exit_code(status: str) -> int:
    return 1 if status == "FAILED" else 0


def _ask(args: argparse.Namespace) -> int:
    if args.batch is not None:
        return _ask_batch(args)
    if args.run_id is not None:
        raise UsageError("--run-id goes with --batch (a bundle carries its own run_id)")
    bundle = _read_json(args.bundle)
    # A bundle retrieve wrote from a lexical index is answered as ask --index answers it.
    chain = _chain_for(args, policy=_bundle_policy(args.policy, bundle))
    if args.json:
        response = chain.invoke(bundle)
        sys.stdout.write(response.model_dump_json(indent=2) + "\n")
    else:
        from groundlock.cli.verdict_view import answered, print_response  # noqa: PLC0415

        state, response = answered(chain, bundle, {})
        print_response(response, state)
    return _exit_code(response.status.value)


def _ask_batch(args: argparse.Namespace) -> int:
    from groundlock.cli.batch import answer_file  # noqa: PLC0415  (only --batch needs it)

    if not 1 <= args.concurrency <= 256:
        raise UsageError("--concurrency must be between 1 and 256")
    if not 1 <= args.max_line_bytes <= _LARGEST_LINE:
        raise UsageError(f"--max-line-bytes must be between 1 and {_LARGEST_LINE:,}")
    args.run_id = _batch_run_id(args.run_id)
    try:
        source = args.batch.open("rb")
    except OSError as exc:
        raise UsageError(f"cannot read {args.batch}: {type(exc).__name__}") from None
    with source:  # (closed also when the chain cannot be built)
        chain = _chain_for(args)
        gc.freeze()  # the chain lives as long as the run: kept out of every full collection
        return answer_file(args, chain, source)


_MAX_RUN_ID = 200
"""Room left in a request id (256 characters) for ``:line-<n>``."""


def _batch_run_id(given: str | None) -> str:
    """The batch's run id: ``given`` if it is a valid id, else a fresh ``batch-<12 hex>``."""
    from pydantic import TypeAdapter, ValidationError  # noqa: PLC0415

    from groundlock.contracts._fields import Identifier  # noqa: PLC0415

    if given is None:
        return f"batch-{uuid.uuid4().hex[:12]}"
    try:
        TypeAdapter(Identifier).validate_python(given)
    except ValidationError:
        valid = False
    else:
        valid = len(given) <= _MAX_RUN_ID
    if not valid:
        raise UsageError(
            f"--run-id must be 1 to {_MAX_RUN_ID} characters on one line, with no space at "
            "either end and no '[', ']', '|', '<', '>', tab, control or invisible character"
        )
    return given


def _validate(args: argparse.Namespace) -> int:
    from groundlock.cli.verdict_view import verdict_document, verdict_lines  # noqa: PLC0415
    from groundlock.core.written_answer import judged_text  # noqa: PLC0415

    bundle = _read_json(args.bundle)
    answer = _read_answer(args.answer_file)
    policy = _bundle_policy(args.policy, bundle)
    verdict, entries = judged_text(answer, bundle, policy)  # entries: what its ids name
    reason = verdict.failure_reason.value if verdict.failure_reason else None
    if not args.json:
        detail = f"{reason}: {verdict.message}" if verdict.message else reason
        lines = verdict_lines(verdict, entries, policy.grammar, reason=detail, show_written=True)
        # Which rules judged: the policy may have been chosen from the bundle (a lexical
        # index's), so the reader is told, as an auditor is by the --json fields.
        lines.append(f"Policy: {policy.policy_version} (ruleset {verdict.firewall_ruleset})")
        sys.stdout.write("".join(line + "\n" for line in lines))
        return _exit_code(verdict.generation_status.value)
    sys.stdout.write(
        json.dumps(
            {
                "request_id": verdict.request_id,
                "validation_status": verdict.validation_status.value,
                "generation_status": verdict.generation_status.value,
                "failure_reason": reason,
                "message": verdict.message,
                "validated_citations": list(verdict.cited_ids),
                **verdict_document(verdict, entries, policy.grammar),
                "grounding_metrics": verdict.grounding_metrics.model_dump(mode="json"),
                "policy_version": policy.policy_version,
                "policy_sha256": policy.policy_sha256,
                "firewall_ruleset": verdict.firewall_ruleset,
                "firewall_ruleset_sha256": verdict.firewall_ruleset_sha256,
            },
            indent=2,
        )
        + "\n"
    )
    return _exit_code(verdict.generation_status.value)


def _bundle_policy(name: str | None, bundle: object) -> Policy:
    """The policy to answer or judge under: ``--policy``, else as ``ask --index`` chooses.

    A bundle that ``groundlock retrieve`` wrote from a lexical index names the lexical
    embedding: ``ask --bundle`` and ``validate`` take it under the lexical calibration (and
    refuse a policy whose gates that embedding never reaches, naming its lexical twin), so
    the three steps retrieve, answer, validate agree without repeating ``--policy``.
    """
    from groundlock.cli.lakehouse import policy_for  # noqa: PLC0415
    from groundlock.errors import GroundlockError  # noqa: PLC0415
    from groundlock.lakehouse.embeddings import LEXICAL_EMBEDDING_PREFIX  # noqa: PLC0415
    from groundlock.policies import load_policy  # noqa: PLC0415
    from groundlock.policies.loader import DEFAULT_POLICY  # noqa: PLC0415

    model = bundle.get("embedding_model") if isinstance(bundle, dict) else None
    if isinstance(model, str) and model.startswith(LEXICAL_EMBEDDING_PREFIX):
        return policy_for(name, model)
    try:
        return load_policy(name or DEFAULT_POLICY)
    except (GroundlockError, ValueError, LookupError) as exc:
        raise UsageError(f"cannot load the policy: {type(exc).__name__}: {exc}") from None


_MAX_ANSWER_BYTES = 1 << 20
"""The longest answer file ``validate`` reads: 1 MiB, hundreds of times any policy's output
budget (at most 1,000 tokens) and a long written memo; a larger file is refused before it
is read whole (a 30 MB one took 8 s and 325 MB to judge)."""


def _read_answer(path: Path) -> str:
    """The answer text: the file as it is, or the ``answer`` of ``groundlock ask --json``.

    A JSON object with a string ``answer`` (a ``PublicResponse``) gives that answer; any
    other file is the answer itself, byte for byte (a plain answer may well start with a
    brace).
    """
    try:
        with path.open("rb") as file:
            raw = file.read(_MAX_ANSWER_BYTES + 1)
        if len(raw) > _MAX_ANSWER_BYTES:
            raise UsageError(
                f"{path}: an answer of more than {_MAX_ANSWER_BYTES:,} bytes; validate judges "
                "answers, not documents"
            )
        # Line ends read as a text file reads them (universal newlines), as before the cap.
        text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {type(exc).__name__}") from None
    if text.lstrip().startswith("{"):
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):
            return text
        if isinstance(document, dict) and isinstance(document.get("answer"), str):
            return str(document["answer"])
    return text


def _serve(args: argparse.Namespace) -> int:
    import uvicorn  # noqa: PLC0415  (only this command needs the server)

    from groundlock.errors import PolicyError  # noqa: PLC0415
    from groundlock.policies.loader import DEFAULT_POLICY, load_policy  # noqa: PLC0415
    from groundlock.serve.app import requesters_from_env  # noqa: PLC0415
    from groundlock.serve.protocol import UVICORN_OPTIONS  # noqa: PLC0415

    if not 1 <= args.port <= 65535 or args.workers < 1:
        raise UsageError("--port must be 1-65535 and --workers at least 1")
    # Each worker builds its app from the environment (uvicorn's factory), after the fork:
    # delta-rs and the audit writer must not be created in the parent.
    for name, value in (
        ("GROUNDLOCK_MODEL", args.model),
        ("GROUNDLOCK_POLICY", args.policy),
        ("GROUNDLOCK_STORE", args.store),
        *(
            (f"GROUNDLOCK_{field.name.upper()}", getattr(args, field.name))
            for field in dataclasses.fields(ServeLimits)
        ),
    ):
        if value is not None and value != "":
            os.environ[name] = str(value)
    try:
        # A bad limit, or a deadline below the policy's model deadline, is a usage error
        # here, not in every worker.
        # (What the workers will read: the flags above, else the environment.)
        policy = os.environ.get("GROUNDLOCK_POLICY") or DEFAULT_POLICY
        model = os.environ.get("GROUNDLOCK_MODEL") or None
        store = os.environ.get("GROUNDLOCK_STORE") or None
        limits = ServeLimits.from_env()
        limits.request_timeout(load_policy(policy))
        # So are API keys and a store (its location, its settings) no worker could take: a
        # worker that fails at start is started again and again by uvicorn's supervisor.
        requesters_from_env()
        if store:
            from groundlock.stores.delta import DeltaAuditStore  # noqa: PLC0415

            DeltaAuditStore(store)  # (touches nothing: no delta-rs before the fork)
    except (ValueError, PolicyError) as exc:
        raise UsageError(str(exc)) from None
    # So is a model or policy that cannot be built: tried once here, without the store
    # (delta-rs must not start before the fork).
    _chain_for(argparse.Namespace(model=model, policy=policy, store=None, command="serve"))
    host = f"[{args.host}]" if ":" in args.host else args.host
    workers = f"{args.workers} worker{'s' * (args.workers > 1)}"
    sys.stderr.write(f"groundlock serve: http://{host}:{args.port}/answer ({workers})\n")
    uvicorn.run(
        "groundlock.serve.app:app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level="warning",
        **UVICORN_OPTIONS,
    )
    return 0
