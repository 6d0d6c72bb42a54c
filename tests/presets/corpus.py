"""Realistic evidence for the preset policies, and what each preset must make of it.

One domain per preset, as its spec has it: statute sections cited by semantic id (``002``),
compliance controls cited by ``[CIT-NN]`` (``003``), paged maintenance manuals cited by
``[Source: file, p.N]`` (``004``); and the default policy's maintenance manual (``[C<n>]``).
Every row carries every citation field a preset may need, so a bundle is valid under the
policy it is written for. Expected markers, anchors and refusals are written out here by
hand, never computed by the code under test.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from tests.builders import make_bundle, make_row

SEMANTIC = "SEMANTIC_ID_POLICY_V1"
CIT = "CIT_LABEL_POLICY_V1"
SOURCE = "SOURCE_PAGE_POLICY_V1"
DEFAULT = "R2_POLICY_V2"
PRESETS = (SEMANTIC, CIT, SOURCE)
ALL_POLICIES = (*PRESETS, DEFAULT)

REFUSALS = {
    SEMANTIC: "I cannot answer based on the provided documents.",
    CIT: (
        "INSUFFICIENT_CONTEXT: The provided context does not contain enough information to "
        "answer this question."
    ),
    SOURCE: "I could not find this in your documents.",
    DEFAULT: (
        "NO_EVIDENCE: The provided evidence does not contain sufficient information to "
        "answer this question."
    ),
}

# Legal sections (002) -------------------------------------------------------------------------

IPC_420 = (
    "Whoever cheats and thereby dishonestly induces the person deceived to deliver any "
    "property to any person shall be punished with imprisonment of either description for a "
    "term which may extend to seven years, and shall also be liable to fine."
)
MWA_12 = (
    "Where a notification is in force in respect of any scheduled employment, the employer "
    "shall pay to every employee wages at a rate not less than the minimum rate of wages "
    "fixed for that class of employees."
)
ICA_73 = (
    "When a contract has been broken, the party who suffers by such breach is entitled to "
    "receive compensation for any loss or damage caused to him thereby."
)


def legal_rows() -> list[dict[str, Any]]:
    """Three statute sections; the third has no semantic_id and is cited by its chunk_id."""
    return [
        make_row(0, chunk_id="ipc-s420-c0", semantic_id="IPC_420_0", knowledge_id="IPC-1860",
                 source_reference="Indian Penal Code 1860 s. 420", citation_label="IPC s. 420",
                 document_id="IPC-1860", source_file="indian-penal-code-1860.pdf", page=112,
                 knowledge_type_effective="STATUTE", similarity=0.91, chunk_text=IPC_420),
        make_row(1, chunk_id="mwa-s12-c1", semantic_id="MinimumWagesAct_12_1",
                 knowledge_id="MWA-1948", source_reference="Minimum Wages Act 1948 s. 12",
                 citation_label="MWA s. 12", document_id="MWA-1948",
                 source_file="minimum-wages-act-1948.pdf", page=9,
                 knowledge_type_effective="STATUTE", similarity=0.86, chunk_text=MWA_12),
        make_row(2, chunk_id="ica-s73-c0", knowledge_id="ICA-1872",
                 citation_label="ICA s. 73", document_id="ICA-1872",
                 source_file="indian-contract-act-1872.pdf", page=31,
                 knowledge_type_effective="STATUTE", similarity=0.84, chunk_text=ICA_73),
    ]  # fmt: skip


LEGAL_QUESTION = "What punishment applies to whoever cheats and dishonestly induces delivery?"

# Compliance controls (003) --------------------------------------------------------------------

ACCESS_REVIEW = (
    "Access rights of privileged accounts shall be reviewed every 90 days by the asset owner."
)
KEY_ROTATION = (
    "Cryptographic keys shall be rotated at least every 12 months and stored in a hardware "
    "security module."
)
LOG_RETENTION = (
    "Security event logs shall be retained for a minimum of 365 days and protected against "
    "modification."
)


def control_rows() -> list[dict[str, Any]]:
    """Three controls of two standards, each with its citation label, document and page."""
    return [
        make_row(0, chunk_id="iso-a925", knowledge_id="ISO27001-A9",
                 semantic_id="ISO27001_A_9_2_5", citation_label="ISO/IEC 27001 A.9.2.5",
                 document_id="ISO27001-2013", source_file="iso-27001-annex-a.pdf", page=12,
                 knowledge_type_effective="CONTROL", similarity=0.9, chunk_text=ACCESS_REVIEW),
        make_row(1, chunk_id="iso-a1012", knowledge_id="ISO27001-A10",
                 semantic_id="ISO27001_A_10_1_2", citation_label="ISO/IEC 27001 A.10.1.2",
                 document_id="ISO27001-2013", source_file="iso-27001-annex-a.pdf", page=14,
                 knowledge_type_effective="CONTROL", similarity=0.85, chunk_text=KEY_ROTATION),
        make_row(2, chunk_id="soc2-cc72", knowledge_id="SOC2-CC7", semantic_id="SOC2_CC7_2",
                 citation_label="SOC 2 CC7.2", document_id="SOC2-2017",
                 source_file="soc2-trust-criteria.pdf", page=41,
                 knowledge_type_effective="CONTROL", similarity=0.82, chunk_text=LOG_RETENTION),
    ]  # fmt: skip


CONTROL_QUESTION = "How often shall access rights of privileged accounts be reviewed?"

# Paged manuals (004) --------------------------------------------------------------------------

FILTER_INTERVAL = (
    "Replace the hydraulic return filter element every 600 flight hours or at the next "
    "A-check, whichever comes first."
)
RESERVOIR = "Reservoir pressure must stay between 2.8 and 3.2 bar during ground operation."
SHAFT_SEAL = "Inspect the pump shaft seal for leakage after every 200 operating cycles."
AMM = "tug-amm-29-11-00.pdf"
CMM = "gpu-cmm-24-30.pdf"


def manual_rows(knowledge_type: str = "MANUAL") -> list[dict[str, Any]]:
    """Two pages of an aircraft maintenance manual and one of a component manual."""
    return [
        make_row(0, chunk_id="amm-p14-c0", knowledge_id="TUG-AMM-29-11-00",
                 semantic_id="AMM_29_11_00_P14", citation_label="Tug AMM 29-11-00 p. 14",
                 document_id="TUG-AMM", source_file=AMM, page=14,
                 knowledge_type_effective=knowledge_type, similarity=0.93,
                 chunk_text=FILTER_INTERVAL),
        make_row(1, chunk_id="amm-p15-c0", knowledge_id="TUG-AMM-29-11-00",
                 semantic_id="AMM_29_11_00_P15", citation_label="Tug AMM 29-11-00 p. 15",
                 document_id="TUG-AMM", source_file=AMM, page=15,
                 knowledge_type_effective=knowledge_type, similarity=0.87, chunk_text=RESERVOIR),
        make_row(2, chunk_id="cmm-p3-c0", knowledge_id="GPU-CMM-24-30",
                 semantic_id="CMM_24_30_P3", citation_label="GPU CMM 24-30 p. 3",
                 document_id="GPU-CMM", source_file=CMM, page=3,
                 knowledge_type_effective=knowledge_type, similarity=0.81, chunk_text=SHAFT_SEAL),
    ]  # fmt: skip


MANUAL_QUESTION = "How often is the hydraulic return filter element replaced?"


@dataclass(frozen=True)
class Case:
    """A policy over its own domain: the bundle, and what its answers must look like."""

    policy: str
    rows: tuple[dict[str, Any], ...]
    question: str
    markers: tuple[str, ...]
    """The marker of each admitted entry, in evidence order."""
    anchors: tuple[str, ...]
    """The anchor a public citation shows for each entry."""
    headers: tuple[str, ...]
    """The header line the assembler writes for each entry."""
    answer: str
    """What the offline model answers to ``question``: the relevant sentence, cited."""
    refusal: str

    def bundle(self, **fields: Any) -> dict[str, Any]:
        """A fresh bundle (its rows deep-copied) around the case's rows."""
        fields.setdefault("user_question", self.question)
        return make_bundle(copy.deepcopy(list(self.rows)), **fields)


CASES = {
    SEMANTIC: Case(
        policy=SEMANTIC,
        rows=tuple(legal_rows()),
        question=LEGAL_QUESTION,
        markers=("[IPC_420_0]", "[MinimumWagesAct_12_1]", "[ica-s73-c0]"),
        anchors=("IPC_420_0", "MinimumWagesAct_12_1", "ica-s73-c0"),
        headers=(
            "[IPC_420_0] source=Indian Penal Code 1860 s. 420",
            "[MinimumWagesAct_12_1] source=Minimum Wages Act 1948 s. 12",
            "[ica-s73-c0]",
        ),
        answer=f"{IPC_420} [IPC_420_0]",
        refusal=REFUSALS[SEMANTIC],
    ),
    CIT: Case(
        policy=CIT,
        rows=tuple(control_rows()),
        question=CONTROL_QUESTION,
        markers=("[CIT-01]", "[CIT-02]", "[CIT-03]"),
        anchors=("CIT-01", "CIT-02", "CIT-03"),
        headers=(
            "[CIT-01] source=ISO/IEC 27001 A.9.2.5 | document_id=ISO27001-2013 | page=12",
            "[CIT-02] source=ISO/IEC 27001 A.10.1.2 | document_id=ISO27001-2013 | page=14",
            "[CIT-03] source=SOC 2 CC7.2 | document_id=SOC2-2017 | page=41",
        ),
        answer=f"{ACCESS_REVIEW} [CIT-01]",
        refusal=REFUSALS[CIT],
    ),
    SOURCE: Case(
        policy=SOURCE,
        rows=tuple(manual_rows()),
        question=MANUAL_QUESTION,
        markers=(f"[Source: {AMM}, p.14]", f"[Source: {AMM}, p.15]", f"[Source: {CMM}, p.3]"),
        anchors=(f"Source: {AMM}, p.14", f"Source: {AMM}, p.15", f"Source: {CMM}, p.3"),
        headers=(f"[Source: {AMM}, p.14]", f"[Source: {AMM}, p.15]", f"[Source: {CMM}, p.3]"),
        answer=f"{FILTER_INTERVAL} [Source: {AMM}, p.14]",
        refusal=REFUSALS[SOURCE],
    ),
    DEFAULT: Case(
        policy=DEFAULT,
        rows=tuple(manual_rows("MAINTENANCE_PROCEDURE")),
        question=MANUAL_QUESTION,
        markers=("[C0]", "[C1]", "[C2]"),
        anchors=("C0", "C1", "C2"),
        headers=(
            "[C0 | chunk_id=amm-p14-c0 | knowledge_id=TUG-AMM-29-11-00 | source=unknown]",
            "[C1 | chunk_id=amm-p15-c0 | knowledge_id=TUG-AMM-29-11-00 | source=unknown]",
            "[C2 | chunk_id=cmm-p3-c0 | knowledge_id=GPU-CMM-24-30 | source=unknown]",
        ),
        answer=f"{FILTER_INTERVAL} [C0]",
        refusal=REFUSALS[DEFAULT],
    ),
}
