"""Pending confirmations: what the user is asked to confirm, and how it may end."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ConfirmationStatus(StrEnum):
    PENDING = "pending"
    CONFIRMED = "confirmed"
    DENIED = "denied"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Confirmation:
    """One confirmation request; its status leaves `pending` exactly once."""

    confirmation_id: str
    conversation_id: str
    user: str
    tool_call_id: str
    tool: str
    fingerprint: str
    risk: str
    status: ConfirmationStatus
    expires_at: float
    """Epoch seconds."""
    task_token: str | None = None

    def expired(self, now: float) -> bool:
        """Expired by status, or by time even if the timer has not marked it yet."""
        return self.status is ConfirmationStatus.EXPIRED or (
            self.status is ConfirmationStatus.PENDING and now >= self.expires_at
        )


def fingerprint(tool: str, args: dict[str, Any], environment: str | None, risk: str) -> str:
    """What exactly was shown to the user: a confirm only runs a call with the same fingerprint."""
    canonical = json.dumps(
        [tool, args, environment, risk],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()
