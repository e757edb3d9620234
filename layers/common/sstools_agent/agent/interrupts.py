"""What the policy middleware's `interrupt()` carries, and the answer a resume gives it.

Both cross the checkpoint, which stores plain dicts (an enum or a dataclass there would be revived
by the serializer's own rules): so each is a small dataclass in code with `to_dict` for what goes
in and `from_dict` for what comes back, and the dicts keep the keys they have always had, so a
checkpoint written before this module reads the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from sstools_agent.domain.chat_events import ConfirmationResult
from sstools_agent.domain.confirmations import card_fingerprint

APPROVE: Final = "approve"
REJECT: Final = "reject"


@dataclass(frozen=True, slots=True)
class ConfirmationInterrupt:
    """A tool call waiting for the user's decision, as the checkpoint keeps it."""

    tool_call_id: str
    tool: str
    args: dict[str, Any]
    decision: dict[str, Any]
    """The GuardrailDecision's payload: what the card shows."""
    ui_context: dict[str, Any] | None = None
    """The page context the card was created in: every resolution of the card runs in it."""

    @property
    def fingerprint(self) -> str:
        """The fingerprint of the call as the card showed it."""
        return card_fingerprint(self.tool, self.args, self.decision)

    def to_dict(self) -> dict[str, Any]:
        """The value passed to `interrupt()`."""
        return {
            "tool_call_id": self.tool_call_id,
            "tool": self.tool,
            "args": self.args,
            "decision": self.decision,
            "ui_context": self.ui_context,
        }

    @classmethod
    def from_dict(cls, value: object) -> ConfirmationInterrupt:
        """The payload of a pending interrupt (anything else reads as an empty one)."""
        data = value if isinstance(value, dict) else {}
        return cls(
            tool_call_id=str(data.get("tool_call_id", "")),
            tool=str(data.get("tool", "")),
            args=dict(data.get("args") or {}),
            decision=dict(data.get("decision") or {}),
            ui_context=data.get("ui_context"),
        )


@dataclass(frozen=True, slots=True)
class ConfirmationAnswer:
    """What a resume answers the interrupt with: confirmed runs the call, anything else rejects
    it, and the result says why (denied, expired, cancelled). A confirmation with
    `edited_args` approves the call with those arguments in place of the card's, in full."""

    result: ConfirmationResult
    edited_args: dict[str, Any] | None = None

    @property
    def approved(self) -> bool:
        return self.result is ConfirmationResult.CONFIRMED

    @property
    def stale(self) -> bool:
        """Confirmed after the card's plan stopped being true: the call asks again."""
        return self.result is ConfirmationResult.STALE

    def to_dict(self) -> dict[str, Any]:
        """The resume value (`Command(resume=...)`)."""
        if self.approved:
            if self.edited_args is not None:
                return {"decision": APPROVE, "edited_args": self.edited_args}
            return {"decision": APPROVE}
        return {"decision": REJECT, "reason": self.result.value}

    @classmethod
    def from_dict(cls, value: object) -> ConfirmationAnswer:
        """The answer `interrupt()` returned; anything that is not an approval is a denial."""
        data = value if isinstance(value, dict) else {}
        if data.get("decision") == APPROVE:
            edited = data.get("edited_args")
            return cls(ConfirmationResult.CONFIRMED, edited if isinstance(edited, dict) else None)
        try:
            result = ConfirmationResult(data.get("reason", ConfirmationResult.DENIED))
        except ValueError:
            result = ConfirmationResult.DENIED
        return cls(ConfirmationResult.DENIED if result is ConfirmationResult.CONFIRMED else result)
