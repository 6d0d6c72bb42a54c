"""The lakehouse commands: ``index``, ``index --list``, and ``ask QUESTION --index PATH``.

``groundlock index SOURCE --index PATH`` chunks and embeds the documents under ``SOURCE``
(offline, with the lexical embedding) into the Delta tables at ``PATH``; a re-run writes
only what changed. Every row is checked against the policy ``ask --index`` will answer
under (``--policy``, chosen as below): a document R2 would refuse is refused (exit 1, one
line naming the file and the field), or with ``--skip-invalid`` left out and reported.
``groundlock index --list [chunks|documents] --index PATH`` says what an index holds: one
line per chunk (the ids a gold set names) or per document, ``--json`` one object a line.
``groundlock ask "question" --index PATH`` answers a plain question from
such an index: R1 (a :class:`~groundlock.RetrievalFront` over a
:class:`~groundlock.lakehouse.DeltaVectorStore`) in front of the usual chain.

``ask`` keeps its bundle mode (``--bundle``, ``--batch``, stdin); this module adds the
question and ``--index`` to the same command, so there is one way to ask.

The policy: ``--policy`` when given. Without it, an index built with the lexical embedding
is answered under :data:`~groundlock.lakehouse.LEXICAL_POLICY` (its gates are calibrated
for that embedding) and any other under the library's default. A policy whose similarity
gate is above what the lexical embedding reaches is refused for a lexical index (exit 2),
naming its lexical twin (``SOURCE_PAGE_POLICY_V1`` -> ``SOURCE_PAGE_POLICY_V1_LEXICAL``,
see :mod:`groundlock.lakehouse.calibration`), rather than left to refuse every question.
It is refused, not swapped for the twin: the policy a user names is the policy every audit
row (and every ``eval`` row) records, so a script that filters rows by the name it passed
finds them, and a name never stands for gates it does not hold.

Access: the shell user reads the index's tables directly, so ``ask --index`` applies no
access policy unless given one: ``--access FILE`` (an :class:`~groundlock.AccessPolicy` as
JSON) with ``--role ROLE`` (one of its roles) or ``--grant KEY=VALUE[,VALUE]`` (repeatable),
which answers as that principal would be answered: what an operator needs to check an
access policy against the index before serving it. ``--access`` without a principal is
refused by the front (``PRINCIPAL_UNRESOLVED``), as a served request would be.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundlock.cli._shared import (
    Parser,
    PlainRawDescriptionFormatter,
    UsageError,
    check_location,
    model_named,
    open_store,
    table_lines,
)

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from groundlock.contracts.retrieval import RetrievalBundle
    from groundlock.core.access import AccessPolicy
    from groundlock.lakehouse import IndexListing, ListedChunk, ListedDocument
    from groundlock.policies import Policy
    from groundlock.runnables.retrieve import RetrievalFront

__all__ = [
    "DEFAULT_TOP_K",
    "TOP_K_HELP",
    "add_commands",
    "extend_ask",
    "index_front",
    "policy_for",
]

_MIB = 1024 * 1024
# Copies, pinned equal by tests/cli/test_start.py: the parsers are built for --help, and
# groundlock.lakehouse loads the pydantic Policy model (a quarter of a second).
MAX_DOCUMENT_BYTES = 16 * _MIB
"""``groundlock.lakehouse.chunking.MAX_DOCUMENT_BYTES``: ``--max-document-mb``'s default."""
PDF_FILE_RATIO = 8
"""``groundlock.lakehouse.chunking.PDF_FILE_RATIO``, for ``--max-document-mb``'s help."""
LEXICAL_POLICY = "R2_POLICY_V4_LEXICAL"
"""``groundlock.lakehouse.LEXICAL_POLICY``: what ``index`` checks rows against by default."""
_DIMENSIONS, _MAX_CHARS = 2048, 1200
_CHUNK_TOKENS, _OVERLAP_TOKENS = "300:700", 50
"""``TokenChunking``'s defaults (pinned equal by tests/lakehouse/test_token_chunking.py)."""
_LIST_LIMIT, _MOST_LISTED = 100, 1_000_000
DEFAULT_TOP_K = 6
"""Rows retrieved per question by ``ask --index`` and ``eval``: the most evidence rows any
built-in policy admits (``max_chunks``), where the library's ``RetrievalFront`` asks for 8."""
TOP_K_HELP = (
    f"rows retrieved per question (default {DEFAULT_TOP_K}, deliberately: the most evidence "
    "rows any built-in policy admits, its max_chunks; the library's RetrievalFront asks for 8)"
)
_SHOWN_TEXT = 48
"""Characters of a chunk's text a ``--list`` line shows (its first words)."""

_INDEX_USAGE = (
    "groundlock index SOURCE --index PATH [--policy P] [--knowledge-type TYPE]\n"
    "                        [--skip-invalid] [--max-document-mb MIB] [--dimensions N]\n"
    "                        [--chunking tokens|chars] [--chunk-tokens MIN:MAX]\n"
    "                        [--overlap-tokens N] [--max-chars N] [--json]\n"
    "       groundlock index --list [chunks|documents] --index PATH [--document DOC]...\n"
    "                        [--limit N] [--json]"
)
_INDEX_DESCRIPTION = """\
Index the documents under SOURCE (Markdown, text, PDF) into the Delta tables at --index;
a re-run writes only what changed. Or, with --list, say what the index holds: one line
per chunk (its id, page, knowledge type, semantic id, citation label and first words),
with --list documents one line per document, with --json one JSON object per line.

Chunking: by characters (the default), one chunk per paragraph, cut above --max-chars;
or --chunking tokens: chunks of 300 to 700 tokens of the policy's encoding
(--chunk-tokens MIN:MAX), cut at paragraph ends, else sentence ends, each opening with
the last 50 tokens of the one before (--overlap-tokens N). The index records its chunking
and a re-run without these options keeps it; changing it re-chunks every document.

Chunk ids: by characters they say where a chunk came from: <document>#<n> is paragraph n
of a Markdown or text file (crane-slew-bearing.md#2), <document>#p<page>.<n> paragraph n
of page <page> of a PDF (manual.pdf#p3.1); <document> is the file's path under SOURCE. By
tokens they name the chunk's text: <document>#t<12 hex of its sha256> (#p<page>.t<hex>),
the same for the same text on every run. The chunk ids a correct answer cites are what a
gold set's expected_citations list (groundlock eval)."""


def add_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """Add ``index`` (which also lists an index, with ``--list``) to the command line."""
    index = commands.add_parser(
        "index",
        help="index documents (Markdown, text, PDF) into Delta tables, or list an index",
        usage=_INDEX_USAGE,
        description=_INDEX_DESCRIPTION,
        formatter_class=PlainRawDescriptionFormatter,
    )
    index.add_argument(
        "source", type=Path, nargs="?", help="a folder of documents, or one file (not with --list)"
    )
    index.add_argument("--index", required=True, metavar="PATH", help="the index's path or URI")
    index.add_argument(
        "--dimensions",
        type=int,
        metavar="N",
        help=f"lexical embedding size (default {_DIMENSIONS})",
    )
    index.add_argument(
        "--max-chars",
        type=int,
        metavar="N",
        help=f"longest chunk, in characters (default {_MAX_CHARS})",
    )
    index.add_argument(
        "--chunking",
        choices=("tokens", "chars"),
        help="chunk by tokens or by characters (default: what the index recorded, else chars)",
    )
    index.add_argument(
        "--chunk-tokens",
        metavar="MIN:MAX",
        help=f"with tokens: tokens a chunk holds (default {_CHUNK_TOKENS}; at most the "
        "policy's per-entry ceiling, 770 for the built-in ones)",
    )
    index.add_argument(
        "--overlap-tokens",
        type=int,
        metavar="N",
        help=f"with tokens: a chunk opens with the last N tokens of the one before (default "
        f"{_OVERLAP_TOKENS})",
    )
    index.add_argument(
        "--max-document-mb",
        type=int,
        metavar="MIB",
        help=f"refuse a document whose text is larger (default {MAX_DOCUMENT_BYTES // _MIB}), "
        f"and a PDF file over {PDF_FILE_RATIO} times that, before it is read",
    )
    index.add_argument(
        "--policy",
        help=f"check every row against this policy (default {LEXICAL_POLICY}, what ask uses)",
    )
    index.add_argument(
        "--knowledge-type",
        metavar="TYPE",
        help="knowledge_type of a document that names none (default: the policy's first)",
    )
    index.add_argument(
        "--skip-invalid",
        action="store_true",
        help="leave out (and report) a document the policy would refuse, instead of failing",
    )
    index.add_argument(
        "--list",
        nargs="?",
        const="chunks",
        choices=("chunks", "documents"),
        help="list the index's chunks (the default) or documents instead of indexing",
    )
    index.add_argument(
        "--document",
        action="append",
        default=[],
        metavar="DOC",
        help="with --list: only this document (its path under the indexed folder; repeatable)",
    )
    index.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help=f"with --list: at most N lines (default {_LIST_LIMIT}; a cut listing says so)",
    )
    index.add_argument(
        "--json", action="store_true", help="print the report, or each listed line, as JSON"
    )
    index.set_defaults(handler=_index)

    retrieve = commands.add_parser(
        "retrieve",
        help="retrieve a question's bundle from an index (step 1 of retrieve, answer, validate)",
        description="groundlock retrieve QUESTION --index PATH --json > retrieved.json writes "
        "the retrieval bundle ask QUESTION --index would answer; anyone may then write the "
        "answer, and groundlock validate --bundle retrieved.json --answer-file FILE judges it.",
    )
    retrieve.add_argument("question", help="the question to retrieve evidence for")
    retrieve.add_argument("--index", required=True, metavar="PATH", help="the index's path or URI")
    retrieve.add_argument("--top-k", type=int, default=DEFAULT_TOP_K, metavar="N", help=TOP_K_HELP)
    retrieve.add_argument(
        "--policy",
        help="the policy the answer will be judged under: its question limits apply, and the "
        "summary shows its citation ids (default: as ask --index chooses)",
    )
    _access_arguments(retrieve)
    retrieve.add_argument(
        "--json",
        action="store_true",
        help="print the bundle as JSON (what validate --bundle and ask --bundle read)",
    )
    retrieve.set_defaults(handler=_retrieve)


def _access_arguments(parser: argparse.ArgumentParser) -> None:
    """``--access``, ``--role`` and ``--grant``: answer (or retrieve) as a principal."""
    parser.add_argument(
        "--access", type=Path, metavar="FILE", help="with --index: an access policy (JSON)"
    )
    parser.add_argument(
        "--role", metavar="ROLE", help="with --access: answer as this role of the policy"
    )
    parser.add_argument(
        "--grant",
        action="append",
        default=[],
        metavar="KEY=VALUE[,VALUE]",
        help="with --access: answer as a principal granted these values (repeatable)",
    )


def extend_ask(ask: argparse.ArgumentParser) -> None:
    """Give ``ask`` a question and ``--index``; without ``--index`` it answers bundles."""
    bundle_handler = ask.get_default("handler")
    ask.add_argument("question", nargs="?", help="with --index: the question to answer")
    ask.add_argument(
        "--index", metavar="PATH", help="answer the question from this lakehouse index"
    )
    ask.add_argument(
        "--top-k", type=int, default=DEFAULT_TOP_K, metavar="N", help=f"with --index: {TOP_K_HELP}"
    )
    _access_arguments(ask)

    def handler(args: argparse.Namespace) -> int:
        if args.index is None:
            if args.question is not None:
                raise UsageError("a question needs --index PATH (or pass a bundle instead)")
            return int(bundle_handler(args))
        return _ask_index(args)

    ask.set_defaults(handler=handler)


def _index(args: argparse.Namespace) -> int:
    from groundlock.lakehouse import LexicalEmbeddings, index_documents  # noqa: PLC0415
    from groundlock.lakehouse.indexer import embedding_name  # noqa: PLC0415

    if args.list is not None:
        return _list(args)
    listing_only = [
        name
        for name, given in (("--document", args.document), ("--limit", args.limit is not None))
        if given
    ]
    if listing_only:
        verb = "go" if len(listing_only) > 1 else "goes"
        raise UsageError(
            f"{' and '.join(listing_only)} {verb} with --list (a listing of the index), not "
            "with a SOURCE to index"
        )
    if args.source is None:
        raise UsageError(
            "index needs a SOURCE (a folder of documents, or one file) to index, or --list "
            "to list what the index holds"
        )
    args.dimensions = _DIMENSIONS if args.dimensions is None else args.dimensions
    if args.max_document_mb is None:
        args.max_document_mb = MAX_DOCUMENT_BYTES // _MIB
    if args.dimensions < 1 or (args.max_chars is not None and args.max_chars < 50):
        raise UsageError("--dimensions must be at least 1 and --max-chars at least 50")
    if args.max_document_mb < 1:
        raise UsageError("--max-document-mb must be at least 1")
    _check_chunking_options(args)
    if not args.source.exists():
        raise UsageError(f"no such file or folder: {args.source}")
    check_location(args.index, "--index")  # before any document is read
    embedding = LexicalEmbeddings(args.dimensions)
    policy = policy_for(args.policy, embedding_name(embedding))
    limit = policy.input_limits.max_chunk_chars
    if args.max_chars is not None and args.max_chars > limit:
        raise UsageError(f"--max-chars: policy {policy.policy_version} admits at most {limit}")
    chunking = _token_chunking(args, policy)
    allowed = policy.allowed_knowledge_types
    if args.knowledge_type is not None and args.knowledge_type not in allowed:
        raise UsageError(
            f"--knowledge-type {args.knowledge_type!r}: policy {policy.policy_version} admits "
            f"{', '.join(allowed)}"
        )
    report = index_documents(
        args.source,
        args.index,
        embedding,
        max_chars=args.max_chars,
        chunking=chunking,
        policy=policy,
        default_knowledge_type=args.knowledge_type,
        skip_invalid=args.skip_invalid,
        max_document_bytes=args.max_document_mb * _MIB,
    )
    for _, why in report.skipped:
        sys.stderr.write(f"groundlock: skipped {why}\n")
    if args.json:
        fields = {
            "index_version": report.index_version,
            "embedding_model": report.embedding_model,
            "policy_version": report.policy_version,
            "documents": report.documents,
            "changed": list(report.changed),
            "removed": list(report.removed),
            "skipped": [{"document": name, "reason": why} for name, why in report.skipped],
            "untyped": list(report.untyped),
            "default_knowledge_type": report.default_knowledge_type,
            "chunking": report.chunking.record,
            "chunks_written": report.chunks_written,
            "chunks_version": report.chunks_version,
            "embeddings_version": report.embeddings_version,
            "seconds": round(report.seconds, 3),
        }
        sys.stdout.write(json.dumps(fields, indent=2) + "\n")
        return 0
    what = (
        f"{len(report.changed)} (re)indexed, {len(report.removed)} removed, "
        f"{report.chunks_written} chunks written"
        if report.wrote
        else "nothing changed, nothing written"
    )
    skipped = f", {len(report.skipped)} skipped" if report.skipped else ""
    sys.stdout.write(
        f"{report.documents} documents{skipped}: {what}\n"
        f"chunked by {report.chunking.describe()}\n"
        f"index_version {report.index_version} ({report.embedding_model}); "
        f"Delta versions: chunks {report.chunks_version}, "
        f"embeddings {report.embeddings_version}\n"
    )
    if report.untyped:
        sys.stdout.write(
            f"{len(report.untyped)} document(s) name no knowledge_type: indexed as "
            f"{report.default_knowledge_type} (choose with --knowledge-type)\n"
        )
    return 0


def _check_chunking_options(args: argparse.Namespace) -> None:
    """Refuse chunking options that contradict each other (``--max-chars`` with tokens)."""
    token_options = [
        name
        for name, value in (
            ("--chunk-tokens", args.chunk_tokens),
            ("--overlap-tokens", args.overlap_tokens),
        )
        if value is not None
    ]
    if args.chunking is None and token_options:
        args.chunking = "tokens"  # --chunk-tokens alone says tokens
    if args.chunking == "chars" and token_options:
        raise UsageError(f"{token_options[0]} goes with --chunking tokens, not chars")
    if args.chunking == "tokens" and args.max_chars is not None:
        raise UsageError("--max-chars goes with --chunking chars; by tokens use --chunk-tokens")


def _token_chunking(args: argparse.Namespace, policy: Policy) -> Any:  # noqa: ANN401
    """The ``TokenChunking`` the options ask for, counted in the policy's encoding.

    None unless ``--chunking tokens`` (then ``index_documents`` keeps the index's own).
    ``--chunking chars`` alone is characters at the default length.
    """
    from groundlock.lakehouse.token_chunking import CharChunking, TokenChunking  # noqa: PLC0415

    if args.chunking == "chars" and args.max_chars is None:
        return CharChunking(_MAX_CHARS)
    if args.chunking != "tokens":
        return None
    low, _, high = (args.chunk_tokens or _CHUNK_TOKENS).partition(":")
    try:
        bounds = int(low), int(high)
    except ValueError:
        raise UsageError(
            f"--chunk-tokens {args.chunk_tokens!r}: write MIN:MAX, two whole numbers (300:700)"
        ) from None
    overlap = _OVERLAP_TOKENS if args.overlap_tokens is None else args.overlap_tokens
    try:
        chunking = TokenChunking(*bounds, overlap, policy.token_encoding)
    except ValueError as exc:
        raise UsageError(f"--chunk-tokens/--overlap-tokens: {exc}") from None
    if chunking.max_tokens > policy.max_chunk_tokens:
        raise UsageError(
            f"--chunk-tokens: policy {policy.policy_version} admits an evidence entry of at "
            f"most {policy.max_chunk_tokens} tokens, header included, and truncates a longer "
            "chunk"
        )
    return chunking


def _list(args: argparse.Namespace) -> int:
    """``index --list``: the index's chunks (or documents), one line (or JSON object) each."""
    from groundlock.lakehouse import list_chunks, list_documents  # noqa: PLC0415

    building = {
        "SOURCE": args.source,
        "--policy": args.policy,
        "--knowledge-type": args.knowledge_type,
        "--skip-invalid": args.skip_invalid or None,
        "--dimensions": args.dimensions,
        "--max-chars": args.max_chars,
        "--chunking": args.chunking,
        "--chunk-tokens": args.chunk_tokens,
        "--overlap-tokens": args.overlap_tokens,
        "--max-document-mb": args.max_document_mb,
    }
    given = [name for name, value in building.items() if value is not None]
    if given:
        raise UsageError(f"--list reads an index; {given[0]} is for building one")
    limit = _LIST_LIMIT if args.limit is None else args.limit
    if not 1 <= limit <= _MOST_LISTED:
        raise UsageError(f"--limit must be between 1 and {_MOST_LISTED:,}")
    check_location(args.index, "--index")
    lister = list_documents if args.list == "documents" else list_chunks
    try:
        listing: IndexListing[Any] = lister(args.index, documents=args.document, limit=limit)
    except ValueError as exc:  # no index there
        raise UsageError(str(exc)) from None
    for name in listing.missing:
        sys.stderr.write(
            f"groundlock: the index holds no document {name!r} (see: groundlock index "
            "--list documents)\n"
        )
    what = "documents" if args.list == "documents" else "chunks"
    more = (
        f"more {what} match: only the first {limit:,} of {listing.matched:,} "
        f"{'is' if limit == 1 else 'are'} shown; see "
        "more with --limit N" + ("" if what == "documents" else ", or fewer with --document DOC")
    )
    if args.json:
        for item in listing.items:
            line = json.dumps(dataclasses.asdict(item), ensure_ascii=False)
            sys.stdout.write(line + "\n")
        if listing.cut:  # (not on stdout: every line there is an item)
            sys.stderr.write(f"groundlock: {more}\n")
        return 0
    if what == "documents":
        header, rows = _document_table(listing.items)
    else:
        header, rows = _chunk_table(listing.items)
    for line in table_lines(header, rows):
        sys.stdout.write(line + "\n")
    sys.stdout.write(
        f"{len(listing.items):,} {what[:-1]}(s); index_version {listing.index_version} "
        f"({listing.embedding_model or 'empty'})\n"
    )
    if listing.cut:
        sys.stdout.write(f"{more}\n")
    return 0


def _chunk_table(chunks: tuple[ListedChunk, ...]) -> tuple[list[str], list[list[str]]]:
    header = ["chunk_id", "page", "knowledge_type", "semantic_id", "citation_label", "text"]
    return header, [
        [
            chunk.chunk_id,
            _cell(chunk.page),
            chunk.knowledge_type,
            _cell(chunk.semantic_id),
            _cell(chunk.citation_label),
            _first_words(chunk.chunk_text),
        ]
        for chunk in chunks
    ]


def _document_table(
    documents: tuple[ListedDocument, ...],
) -> tuple[list[str], list[list[str]]]:
    header = ["document", "chunks", "pages", "knowledge_id", "knowledge_type", "citation_label"]
    return header, [
        [
            document.document_id,
            str(document.chunks),
            _pages(document.first_page, document.last_page),
            document.knowledge_id,
            document.knowledge_type,
            _cell(document.citation_label),
        ]
        for document in documents
    ]


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


def _pages(first: int | None, last: int | None) -> str:
    if first is None or last is None:
        return "-"
    return str(first) if first == last else f"{first}-{last}"


def _first_words(text: str) -> str:
    """The text's first words on one line, cut between words and marked ``…`` if cut."""
    flat = " ".join(text.split())
    if len(flat) <= _SHOWN_TEXT:
        return flat
    cut = flat.rfind(" ", 0, _SHOWN_TEXT)
    return flat[: cut if cut > 0 else _SHOWN_TEXT] + "…"


def policy_for(name: str | None, index_model: str) -> Policy:
    """The policy to answer under (see the module docstring for the choice)."""
    from groundlock.errors import GroundlockError  # noqa: PLC0415
    from groundlock.lakehouse import (  # noqa: PLC0415
        LEXICAL_EMBEDDING_PREFIX,
        LEXICAL_TWINS,
        calibration_problem,
        lexical_policy,
        lexical_twin,
    )
    from groundlock.policies import load_policy  # noqa: PLC0415
    from groundlock.policies.loader import DEFAULT_POLICY  # noqa: PLC0415

    lexical = index_model.startswith(LEXICAL_EMBEDDING_PREFIX)
    try:
        if name == LEXICAL_POLICY or (name is None and lexical):
            policy = lexical_policy()
        else:
            policy = load_policy(name or DEFAULT_POLICY)
    except (GroundlockError, ValueError, LookupError, OSError) as exc:
        raise UsageError(f"cannot load the policy: {type(exc).__name__}: {exc}") from None
    problem = calibration_problem(policy, index_model)
    if problem is None:
        return policy
    # Refused, never swapped for the twin: the name passed is the name the trail records.
    twin = lexical_twin(policy.policy_version)
    if twin is not None:
        raise UsageError(
            f"{problem}. Its lexical twin {twin} is the same policy with both gates at 0.33: "
            f"pass --policy {twin}"
        )
    twins = ", ".join(sorted(set(LEXICAL_TWINS.values()) - {LEXICAL_POLICY}))
    raise UsageError(
        f"{problem}. Omit --policy (or pass --policy {LEXICAL_POLICY}) to use the lexical "
        f"calibration, or pass a preset's lexical twin ({twins})"
    )


def index_front(
    index: str, top_k: int, policy_name: str | None, access: AccessPolicy | None = None
) -> tuple[RetrievalFront, Policy]:
    """R1 over the Delta index at ``index`` and the policy to answer under, for the shell.

    ``ask --index`` and ``eval`` both answer questions from an index; they open it, embed
    with its recorded lexical model, and pick the policy the same way (see the module).

    Raises:
        UsageError: a bad top_k, an empty or unusable index, a policy refused for it.
    """
    from groundlock.runnables.retrieve import RetrievalFront  # noqa: PLC0415

    if not 1 <= top_k <= 100:
        raise UsageError("--top-k must be between 1 and 100")
    from groundlock.lakehouse import open_lexical_index  # noqa: PLC0415

    try:
        store = open_lexical_index(index)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    policy = policy_for(policy_name, store.embedding_model or "unknown")
    missing = store.missing_tags(access) if access is not None and store.filters_access else []
    if missing:
        raise UsageError(
            f"--access restricts {missing[0]!r}, which no row of the index carries: every "
            "row would be denied (tag the documents, or fix the name in the access policy)"
        )
    return RetrievalFront.over_index(store, top_k=top_k, access=access), policy


def _ask_index(args: argparse.Namespace) -> int:
    from groundlock.chains.grounded import grounded_answer_chain  # noqa: PLC0415
    from groundlock.cli.verdict_view import answered, print_response  # noqa: PLC0415

    if args.bundle is not None or args.batch is not None:
        raise UsageError("--index answers a question; it does not take --bundle or --batch")
    if not args.question or not args.question.strip():
        raise UsageError("--index needs a question: groundlock ask 'question' --index PATH")
    store = open_store(args) if args.store else None  # before the index is opened
    if args.archive and store is None:
        raise UsageError("--archive needs --store: the archive is written with the trail")
    check_location(args.archive, "--archive")
    access, config = _access(args)
    front, policy = index_front(args.index, args.top_k, args.policy, access)
    chain_options: dict[str, Any] = {"policy": policy, "front": front}
    if args.model:
        chain_options["model"] = args.model
    if store is not None:
        chain_options["store"] = store
    if args.archive:
        chain_options["archive"] = args.archive
    with model_named(args.model, "ask"):
        chain = grounded_answer_chain(**chain_options)
    if args.json:
        response = chain.invoke(args.question, config=config)
        sys.stdout.write(response.model_dump_json(indent=2) + "\n")
    else:
        state, response = answered(chain, args.question, config)
        print_response(response, state)
    return 1 if response.status.value == "FAILED" else 0


def _retrieve(args: argparse.Namespace) -> int:
    """Step 1 of 002's three: the bundle ``ask --index`` would answer, as JSON or a summary.

    R1 exactly as ``ask --index`` runs it (the same front, policy and access), without the
    model: a request the front refuses is one line on stderr and exit 1.
    """
    from groundlock.core.intake import Rejection  # noqa: PLC0415

    if not args.question.strip():
        raise UsageError("retrieve needs a question: groundlock retrieve 'question' --index PATH")
    access, config = _access(args)
    front, policy = index_front(args.index, args.top_k, args.policy, access)
    if front.policy != policy:
        front = front.model_copy(update={"policy": policy})
    found = front.invoke(args.question, config=config)
    if isinstance(found, Rejection):
        from groundlock.cli.verdict_view import shown  # noqa: PLC0415

        sys.stderr.write(shown(f"groundlock: FAILED {found.reason.value}: {found.message}") + "\n")
        return 1
    if args.json:
        sys.stdout.write(found.model_dump_json(indent=2, exclude_none=True) + "\n")
        return 0
    sys.stdout.write("".join(line + "\n" for line in _retrieved_lines(found, policy)))
    return 0


def _retrieved_lines(bundle: RetrievalBundle, policy: Policy) -> list[str]:
    """The human summary: one line per row, then the ids an answer may cite.

    A row's line: rank, similarity, the id an answer cites it by (or why R2 drops it), its
    chunk id and source.
    """
    from groundlock.cli.verdict_view import retrieved_line, shown, source_of  # noqa: PLC0415
    from groundlock.core.evidence_assembly import assemble  # noqa: PLC0415
    from groundlock.core.firewall.naming import public_ids  # noqa: PLC0415

    assembled = assemble(bundle, policy)
    grammar = policy.grammar
    held = {entry.chunk_id: entry for entry in assembled.selected_evidence}
    metrics = assembled.metrics
    dropped = {row.chunk_id: row.reason.value for row in (metrics.dropped_rows if metrics else ())}
    lines = [
        f"Question: {bundle.user_question}",
        f"Index: {bundle.index_version} ({bundle.embedding_model}), policy "
        f"{policy.policy_version}, request {bundle.request_id}",
        f"Retrieved: {len(bundle.results)} row(s)",
    ]
    for row in bundle.results:
        entry = held.get(row.chunk_id)
        cited_as = (
            f"[{grammar.public_anchor(entry)}]"
            if entry
            else f"(dropped: {dropped.get(row.chunk_id, 'not admitted')})"
        )
        source = source_of(entry) if entry else row.source_reference or row.chunk_id
        lines.append(
            f"  {row.rank}. {row.similarity_score:.3f} {cited_as} {row.chunk_id}: {source}"
        )
    lines.append(retrieved_line(public_ids(grammar, assembled.selected_evidence)))
    # The question and the sources are the caller's and the documents' text: nothing in
    # them may act on the terminal (as ask's and validate's lines).
    return [shown(line) for line in lines]


def _access(args: argparse.Namespace) -> tuple[AccessPolicy | None, RunnableConfig]:
    """The access policy of ``--access`` and the run config naming the principal."""
    from pydantic import ValidationError  # noqa: PLC0415

    from groundlock.core.access import AccessPolicy  # noqa: PLC0415

    if args.access is None:
        if args.role or args.grant:
            raise UsageError("--role and --grant need --access FILE")
        return None, {}
    if args.role and args.grant:
        raise UsageError("answer as a --role or with --grant, not both")
    try:
        access = AccessPolicy.model_validate_json(args.access.read_bytes())
    except OSError as exc:
        raise UsageError(f"cannot read {args.access}: {exc.strerror}") from None
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "policy"
        raise UsageError(f"{args.access}: not an access policy: {where}: {first['msg']}") from None
    if args.role:
        return access, {"metadata": {"requester_role": args.role, "requester_id": "cli"}}
    if not args.grant:
        return access, {}  # the front refuses: access control is on and no one is named
    grants: dict[str, list[str]] = {}
    for grant in args.grant:
        key, sep, values = grant.partition("=")
        if not sep or not key.strip() or not values.strip():
            raise UsageError(f"--grant {grant!r}: expected KEY=VALUE[,VALUE]")
        grants.setdefault(key.strip(), []).extend(v.strip() for v in values.split(",") if v)
    principal = {"principal_id": "cli", "grants": grants}
    return access, {"configurable": {"principal": principal}}
