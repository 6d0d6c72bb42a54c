"""Access tags filtered in the Delta scan give exactly the rows the post-filter gives.

One index, written in three runs (so its rows sit in several data files, one business unit
to a file where possible), is searched both ways: the front with the access condition in
the scan, and the old path (every row fetched, ``AccessPolicy.admits`` after the search).
The expected rows are also stated by hand for some principals. Tags hold quotes, unicode,
lists, invalid values, SQL-looking text; some rows have no tag at all.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from groundlock import AccessPolicy, Principal, RetrievalBundle, RetrievalFront
from groundlock.cli import main
from groundlock.lakehouse import DeltaVectorStore, LexicalEmbeddings, index_documents
from groundlock.lakehouse.tag_columns import AccessScan, access_condition, tag_column
from groundlock.stores.layout import files_scanned

LEVELS = ("PUBLIC", "INTERNAL", "CONFIDENTIAL")
ACCESS = AccessPolicy(attributes=("business_unit",), levels={"sensitivity_level": LEVELS})

_TEXT = (
    "The {w} pump filter is replaced every {n} operating hours and the seal is checked.\n\n"
    "Pressure of the {w} hydraulic circuit is logged after each filter change.\n\n"
    "The {w} crane winch brake is inspected before every lift of the season.\n"
)
# document -> front-matter tag lines (YAML), in the run that first writes it.
RUNS: list[dict[str, str]] = [
    {
        "d01.md": "business_unit: MARINE\nsensitivity_level: PUBLIC",
        "d02.md": "business_unit: MARINE\nsensitivity_level: CONFIDENTIAL",
        "d08.md": "business_unit: MARINE",  # no level: never shown
    },
    {
        "d03.md": "business_unit: TERMINAL\nsensitivity_level: INTERNAL",
        "d12.md": "business_unit: TERMINAL\nsensitivity_level: [PUBLIC]",  # a level as a list
    },
    {
        "d04.md": "business_unit: [MARINE, TERMINAL]\nsensitivity_level: PUBLIC",
        "d05.md": 'business_unit: "O\'Brien & Sons"\nsensitivity_level: INTERNAL',
        "d06.md": "business_unit: Måløy-Süd\nsensitivity_level: INTERNAL",
        "d07.md": "",  # no tags at all
        "d09.md": 'business_unit: [MARINE, "bad[tag]"]\nsensitivity_level: PUBLIC',
        "d10.md": 'business_unit: "bad[tag]"\nsensitivity_level: PUBLIC',
        "d11.md": "business_unit: \"x' OR '1'='1\"\nsensitivity_level: PUBLIC",
        "d13.md": 'business_unit: ""\nsensitivity_level: PUBLIC',  # the list marker's value
        "d14.md": "business_unit: MARINE\nsensitivity_level: PUBLIC\nUnité d'affaires: Nord",
    },
]
WORDS = {"d01": "tug", "d02": "tug", "d08": "tug", "d03": "quay", "d12": "quay", "d04": "fuel",
         "d05": "barge", "d06": "ferry", "d07": "draft", "d09": "tug", "d10": "barge",
         "d11": "barge", "d13": "fuel", "d14": "pilot"}  # fmt: skip
QUESTIONS = (
    "How often is the tug pump filter replaced?",
    "When is the crane winch brake inspected?",
    "Where is the hydraulic circuit pressure logged?",
)


def _principal(**grants: str | list[str]) -> Principal:
    return Principal(principal_id="p", grants=grants)


PRINCIPALS = {
    "marine-internal": _principal(business_unit="MARINE", sensitivity_level="INTERNAL"),
    "two-units": _principal(business_unit=["MARINE", "TERMINAL"], sensitivity_level="CONFIDENTIAL"),
    "every-unit": _principal(business_unit="*", sensitivity_level="CONFIDENTIAL"),
    "quoted": _principal(business_unit="O'Brien & Sons", sensitivity_level="INTERNAL"),
    "unicode": _principal(business_unit="Måløy-Süd", sensitivity_level="INTERNAL"),
    "sql-looking": _principal(business_unit="x' OR '1'='1", sensitivity_level="PUBLIC"),
    "injection": _principal(business_unit="'); DROP TABLE t; --", sensitivity_level="PUBLIC"),
    "no-unit": _principal(sensitivity_level="CONFIDENTIAL"),
}
# The documents each principal may see, by hand from the tags above.
VISIBLE = {
    "marine-internal": {"d01", "d04", "d09", "d14"},
    "two-units": {"d01", "d02", "d03", "d04", "d09", "d14"},
    "every-unit": {"d01", "d02", "d03", "d04", "d05", "d06", "d11", "d14"},
    "quoted": {"d05"},
    "unicode": {"d06"},
    "sql-looking": {"d11"},
    "injection": set(),
    "no-unit": set(),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("access-scan")
    docs, index = root / "docs", root / "idx"
    docs.mkdir()
    for run in RUNS:  # three runs: three data files, one per run
        for name, tags in run.items():
            stem = name.removesuffix(".md")
            text = _TEXT.format(w=WORDS[stem], n=int(stem[1:]) * 50)
            (docs / name).write_text(f"---\n{tags}\n---\n{text}" if tags else text)
        index_documents(docs, index)
    return index


def _store(index: Path) -> DeltaVectorStore:
    return DeltaVectorStore(str(index), LexicalEmbeddings())


def _post_filtered(
    store: DeltaVectorStore, question: str, policy: AccessPolicy, principal: Principal, k: int
) -> list[tuple[str, float]]:
    """The old path: every row by cosine, then the access check, then the first k."""
    everything = store.similarity_search_with_score(question, k=1000)
    admitted = [(d.id or "", s) for d, s in everything if policy.admits(d.metadata, principal)]
    return admitted[:k]


def _front(store: DeltaVectorStore, **options: object) -> RetrievalFront:
    return RetrievalFront(
        source=store,
        index_version=store.index_version,
        embedding_model=store.embedding_model or "",
        normalization="cosine",
        access=ACCESS,
        **options,  # type: ignore[arg-type]
    )


def _rows(bundle: object) -> list[tuple[str, int, float]]:
    assert isinstance(bundle, RetrievalBundle), bundle
    return [(r.chunk_id, r.rank, r.similarity_score) for r in bundle.results]


def _documents(store: DeltaVectorStore, principal: Principal) -> set[str]:
    hits = store.similarity_search_with_score(
        "anything", k=1000, access=AccessScan(ACCESS, principal)
    )
    return {(d.id or "").split(".md#")[0] for d, _ in hits}


@pytest.mark.parametrize("who", sorted(PRINCIPALS))
def test_the_scan_admits_exactly_the_rows_the_post_filter_admits(index: Path, who: str):
    store = _store(index)
    principal = PRINCIPALS[who]
    assert _documents(store, principal) == VISIBLE[who]
    for question in QUESTIONS:
        for k in (1, 3, 8, 1000):
            scanned = store.similarity_search_with_score(
                question, k=k, access=AccessScan(ACCESS, principal)
            )
            assert [(d.id, s) for d, s in scanned] == _post_filtered(
                store, question, ACCESS, principal, k
            ), (who, question, k)


@pytest.mark.parametrize("who", sorted(PRINCIPALS))
def test_the_front_gives_the_same_rows_ranks_and_scores_both_ways(index: Path, who: str):
    store = _store(index)
    config = {"configurable": {"principal": PRINCIPALS[who]}}
    in_scan = _front(store, top_k=4)
    after = _front(store, top_k=4, scan_access=False, fetch_k=1000)
    for question in QUESTIONS:
        pushed = in_scan.invoke(question, config)
        checked = after.invoke(question, config)
        assert _rows(pushed) == _rows(checked), (who, question)
        expected = _post_filtered(store, question, ACCESS, PRINCIPALS[who], 4)
        assert [(c, s) for c, _, s in _rows(pushed)] == [(c, max(s, 0.0)) for c, s in expected]
        assert isinstance(pushed, RetrievalBundle)
        assert pushed.access_denied_count == 0  # the scan withheld them unread


def test_the_scan_reads_only_admitted_rows_and_skips_files_by_statistics(index: Path):
    store = _store(index)
    table = DeltaTable(str(index / "embeddings"))
    total = len(table.file_uris())
    assert total >= 3  # one data file per indexing run
    terminal = _principal(business_unit="TERMINAL", sensitivity_level="CONFIDENTIAL")
    sql = store.scan_sql(access=AccessScan(ACCESS, terminal))
    everything = "SELECT chunk_id, content_sha256, embedding FROM t"
    # Filtered after the scan, every file would be opened and every row would come out.
    assert files_scanned(table, everything) == total
    # The first run's file holds MARINE rows only: its statistics rule it out unopened.
    assert files_scanned(table, sql) < total
    counted = QueryBuilder().register("t", table).execute(f"SELECT chunk_id FROM ({sql})")  # noqa: S608
    scanned = {str(v) for batch in counted for v in batch.column("chunk_id").to_pylist()}
    # Only d03 (TERMINAL) and d04 ([MARINE, TERMINAL]) rows leave the scan: 3 chunks each.
    assert {c.split(".md#")[0] for c in scanned} == {"d03", "d04"}
    assert len(scanned) == 6


def test_values_are_literals_not_sql(index: Path):
    store = _store(index)
    hostile = _principal(business_unit="x' OR '1'='1", sensitivity_level="PUBLIC")
    condition = access_condition(AccessScan(ACCESS, hostile), store.vector_columns)
    assert "'x'' OR ''1''=''1'" in condition  # the quote doubled: one literal
    # Nothing ran: the table still holds every row after the "DROP TABLE" grant's search.
    assert _documents(store, PRINCIPALS["injection"]) == set()
    rows = store.chunk_rows("SELECT COUNT(*) AS n FROM t")
    assert rows[0]["n"] == 3 * sum(len(run) for run in RUNS)
    # A level with a quote, from the policy, is a literal too.
    quoted_levels = AccessPolicy(levels={"sensitivity_level": ("PUBLIC", "INT'L")})
    clerk = _principal(sensitivity_level="INT'L")
    hits = store.similarity_search_with_score(
        "pump", k=1000, access=AccessScan(quoted_levels, clerk)
    )
    public = {"d01", "d04", "d09", "d10", "d11", "d13", "d14"}  # a string level, PUBLIC
    assert {(d.id or "").split(".md#")[0] for d, _ in hits} == public


def test_a_tag_with_any_name_is_a_column_of_its_own(index: Path):
    store = _store(index)
    assert tag_column("Unité d'affaires") in store.vector_columns
    assert tag_column("Unité d'affaires").removeprefix("tag__").isalnum()  # no tag text in SQL
    policy = AccessPolicy(attributes=("Unité d'affaires",))
    north = _principal(**{"Unité d'affaires": "Nord"})
    hits = store.similarity_search_with_score("pilot", k=1000, access=AccessScan(policy, north))
    assert {(d.id or "").split(".md#")[0] for d, _ in hits} == {"d14"}  # written in run 3


def test_a_tag_no_row_carries_is_refused_when_the_front_is_built(index: Path):
    store = _store(index)
    region = AccessPolicy(attributes=("business_unit", "region"))
    with pytest.raises(ValueError, match="restricts 'region', which no row of the index carries"):
        RetrievalFront.over_index(store, access=region)
    # The store itself denies every row for it, as the post-filter would.
    principal = _principal(business_unit="MARINE", region="EU")
    hits = store.similarity_search_with_score("pump", k=10, access=AccessScan(region, principal))
    assert hits == []


def test_ask_refuses_an_access_file_naming_a_tag_the_index_lacks(
    index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    access = tmp_path / "access.json"
    access.write_text(json.dumps({"attributes": ["region"]}))
    argv = ["ask", "pump?", "--index", str(index), "--access", str(access), "--grant", "region=EU"]
    assert main(argv) == 2
    assert "--access restricts 'region', which no row of the index carries" in (
        capsys.readouterr().err
    )


def test_an_index_written_before_tag_columns_is_checked_after_the_search(
    index: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    # An earlier groundlock's embeddings table: the same rows without the tag columns.
    old = tmp_path / "old"
    old.mkdir()
    for name in ("chunks", "embeddings"):
        table = DeltaTable(str(index / name))
        keep = [f.name for f in table.schema().fields if not f.name.startswith(("tag", "access"))]
        if name == "chunks":
            keep.append("access_tags")
        select = ", ".join(f'"{c}"' for c in keep)
        reader = QueryBuilder().register("t", table).execute(f"SELECT {select} FROM t")  # noqa: S608
        write_deltalake(str(old / name), reader.read_all())
    store = _store(old)
    assert not store.filters_access
    principal = PRINCIPALS["marine-internal"]
    with pytest.raises(ValueError, match="no access-tag columns"):
        store.similarity_search_with_score("pump", k=4, access=AccessScan(ACCESS, principal))
    with caplog.at_level(logging.WARNING, logger="groundlock.retrieval"):
        front = _front(store, top_k=4)
    assert "access is checked after the search" in caplog.text
    assert front.rows_to_fetch == 16  # the over-fetch, as before
    scanned = _front(_store(index), top_k=4)
    assert scanned.rows_to_fetch == 4
    config = {"configurable": {"principal": principal}}
    for question in QUESTIONS:
        assert _rows(front.invoke(question, config)) == _rows(scanned.invoke(question, config))
