"""The public surface is curated: adding or removing a name is a reviewed decision."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import groundlock
from groundlock.contracts import reasons

EXPECTED = {
    "AnswerBundle", "AssembleEvidence", "AssemblyMetrics", "AssemblyStatus", "AssemblyTrace",
    "AttemptRecord", "BuildPrompt", "BuildStatus", "DropReason", "DroppedRow", "ExecuteModel",
    "ExtractiveChatModel", "FiltersApplied", "FinishReason", "GenerationStatus",
    "GroundlockError", "LLMExecutionResult", "ModelPinningError", "PinnedModel", "Policy",
    "PolicyError", "ProviderUnavailableError", "PromptBuildResult", "PromptMessage",
    "PromptTemplateError",
    "PromptTokenAccount", "ReasonCode", "RetrievalBundle", "RetrievalRow", "RetrievalStatus",
    "SelectedEvidence", "TokenizerUnavailableError", "__version__", "assemble",
    "available_policies", "build_prompt", "load_policy", "load_template", "lock_policy",
    "GroundingMetrics", "PackageResponse", "PublicCitation", "PublicResponse", "TokenUsage",
    "ValidateAnswer", "ValidationResult", "ValidationStatus", "grounded_answer_chain",
    "validate_answer", "AuditUnavailable", "DeltaAuditStore",
    "FeedbackRow", "QueryRow", "RecordValidation", "ValidationRow", "AccessPolicy", "Principal",
    "RetrievalFront", "ScoreNormalization", "AuditSink", "MemoryAuditSink", "Answered",
    "Assembled", "Judged", "Outcome", "Prompted", "RunState", "clear_caches", "validate_text",
    "Confidence", "HistoryTurn", "QueryType", "DeltaVectorStore", "IndexReport",
    "LexicalEmbeddings", "index_documents",
}  # fmt: skip


def test_public_names_are_pinned():
    assert set(groundlock.__all__) == EXPECTED


def test_every_public_name_resolves_and_explains_itself():
    for name in groundlock.__all__:
        value = getattr(groundlock, name)
        if name != "__version__":
            assert (value.__doc__ or "").strip(), f"{name} has no docstring"


def test_package_layout_shows_the_design_card():
    for package in (
        "contracts", "policies", "prompts", "runnables", "chains", "providers", "text", "core",
        "stores", "serve",
    ):  # fmt: skip
        assert import_module(f"groundlock.{package}").__doc__


def test_every_reason_code_is_documented():
    source = Path(reasons.__file__).read_text(encoding="utf-8")
    for code in [*groundlock.ReasonCode, *groundlock.DropReason]:
        declaration = f'{code.name} = "{code.value}"\n    """'
        assert declaration in source, f"{code.name} needs a docstring saying when it is used"
