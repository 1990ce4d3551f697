"""Moved to ``stagerl.core.evaluation`` (kept while callers move; remove when none import it)."""

from stagerl.core.evaluation import deterministic, evaluate

__all__ = ["deterministic", "evaluate"]
