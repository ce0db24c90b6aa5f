"""Why a run failed: the one list of the codes a run's ResponseFailed carries and every
protocol passes to its client (docs/api.md). Each protocol maps a code to its own status
(agents.protocols.failures); a new code is a new member here, and mypy then shows every
place that must decide what it means."""

from __future__ import annotations

from enum import StrEnum


class FailureCode(StrEnum):
    # The request cannot run as asked: the client's to change.
    INVALID_REQUEST = "invalid_request"  # no question for a RAG agent, a tool_choice of no tool
    TEMPLATE_LIMIT = "template_limit"  # a task's template went over a limit with these inputs
    CALL_TOO_DEEP = "call_too_deep"  # past MAX_AGENT_DEPTH in a chain of agents calling agents
    FORBIDDEN = "forbidden"  # a schedule's owner may no longer run the agent (agents.schedules)
    BUDGET_EXCEEDED = "budget_exceeded"  # a blocking budget that applies is spent (agents.budgets)
    # What the agent or a part it depends on did.
    UNSUPPORTED = "unsupported"  # the agent's type, or the run lacks what the type needs
    PROVIDER_ERROR = "provider_error"  # the model provider failed after its own retries
    PROVIDER_TIMEOUT = "provider_timeout"  # the model provider did not answer in time
    RETRIEVAL_UNAVAILABLE = "retrieval_unavailable"  # the document search failed
    MAX_ITERATIONS = "max_iterations"  # the tool loop did not finish within maxIterations
    STRUCTURED_OUTPUT_INVALID = "structured_output_invalid"  # past maxRetries of bad output
    OUTPUT_INVALID = "output_invalid"  # a task's answer did not match its outputSchema
    # How it ended from outside.
    CANCELED = "canceled"  # by its caller, or the client went away
    INTERRUPTED = "interrupted"  # the process running it stopped (found by the lease sweep)
    NOT_STARTED = "not_started"  # a background run no worker took within RUN_QUEUE_TIMEOUT
    APPROVAL_EXPIRED = "approval_expired"  # no decision on its tool calls within approvalTtl
    INTERNAL_ERROR = "internal_error"  # a bug: logged with its traceback

    @classmethod
    def _missing_(cls, value: object) -> FailureCode:
        """A code this version does not know (a stored run's, written by another version)
        reads as an internal error rather than crashing the reader."""
        return cls.INTERNAL_ERROR
