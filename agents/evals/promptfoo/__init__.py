"""A promptfoo configuration's tests as a dataset's cases and an experiment's scorers
(docs/api.md#importing-a-promptfoo-configuration), for teams that evaluate with promptfoo."""

from agents.evals.promptfoo.config import PromptfooImport, promptfoo_import

__all__ = ["PromptfooImport", "promptfoo_import"]
