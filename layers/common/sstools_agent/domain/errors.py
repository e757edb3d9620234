"""The error taxonomy, defined once: the seed's codes plus the few this backend adds.

Every error that reaches a user (an HTTP body, an `error` or `tool_error` stream event, an audit
record) carries one of these codes.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Machine-readable error codes shared by the stream, the REST API and the audit log."""

    # The product's original error taxonomy.
    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN = "FORBIDDEN"
    LLM_UNAVAILABLE = "LLM_UNAVAILABLE"
    TOOL_FAILURE = "TOOL_FAILURE"
    # Added here: each names a situation the seed describes in words.
    TOOL_TIMEOUT = "TOOL_TIMEOUT"
    TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
    """A confirmed call left and its run was interrupted: it may have changed something."""
    TOOL_NOT_RUN = "TOOL_NOT_RUN"
    """The call did not run to an answer and changed nothing: a confirmed call that never left,
    a second write of the same model step (one confirmation at a time), or a read a cancel
    abandoned."""
    INVALID_CONTEXT = "INVALID_CONTEXT"
    INVALID_ATTACHMENT = "INVALID_ATTACHMENT"
    """A file that may not be uploaded or sent: its type, size, bytes, owner or number."""
    VALIDATION_ERROR = "VALIDATION_ERROR"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    """A request body over its endpoint's limit (413), refused before it is read."""
    CONVERSATION_BUSY = "CONVERSATION_BUSY"
    CONVERSATION_ARCHIVED = "CONVERSATION_ARCHIVED"
    NO_PENDING_CONFIRMATION = "NO_PENDING_CONFIRMATION"
    CONFIRMATION_PENDING = "CONFIRMATION_PENDING"
    INVALID_RESUME = "INVALID_RESUME"
    NOT_RUNNING = "NOT_RUNNING"
    ALREADY_DECIDED = "ALREADY_DECIDED"
    CONFIRMATION_EXPIRED = "CONFIRMATION_EXPIRED"
    NOT_FOUND = "NOT_FOUND"
    INVALID_CURSOR = "INVALID_CURSOR"
    IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"
    STORAGE_FAILURE = "STORAGE_FAILURE"
    RATE_LIMITED = "RATE_LIMITED"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    INTERNAL_ERROR = "INTERNAL_ERROR"


SESSION_EXPIRED_MESSAGE = "сессия истекла, обновите страницу"
"""What the user reads when the upstream refuses the user's JWT (seed edge case)."""

WRITE_STATUS_UNKNOWN_MESSAGE = "operation status unknown — check status"
"""What the user reads when a write times out: it may have succeeded upstream, so no retry."""
