"""Running a resolved tool call: the identities it carries, its answer, and its failure.

The tool runner port (`domain.ports.ToolRunner`) speaks these; the HTTP client of the upstream
(`adapters.upstream_client`) is the one that produces them in production.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sstools_agent.domain.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class UpstreamCredentials:
    """Both identities a tool call carries."""

    service_token: str
    user_token: str


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    """A successful upstream answer."""

    output: Any
    """Parsed JSON, or the text when the upstream did not answer JSON."""
    status_code: int
    attempts: int
    elapsed_s: float


class ToolCallFailed(Exception):
    """A tool call that did not succeed, with the code and words the user will see."""

    def __init__(
        self,
        code: ErrorCode,
        detail: str,
        *,
        attempts: int,
        status_code: int | None = None,
        status_unknown: bool = False,
    ) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.attempts = attempts
        self.status_code = status_code
        self.status_unknown = status_unknown
