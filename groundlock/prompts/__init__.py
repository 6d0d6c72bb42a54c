"""Frozen, hash-locked prompt templates (R3) and their loader."""

from groundlock.prompts.template import PromptTemplate, PromptTemplateError, load_template

__all__ = ["PromptTemplate", "PromptTemplateError", "load_template"]
