"""What a turn writes to the audit log as it happens: the tools it routed, each tool call,
denial and card as streamed, an edit a card was answered with, and a confirm that ran nothing
because the world changed since its card. A confirmed call's outcome is audited by its journal
(`confirmation_journal`), once, not here."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from sstools_agent.agent.context import AgentRunContext
from sstools_agent.chat.prepared_turn import PreparedTurn
from sstools_agent.domain.audit import AuditKind, AuditRecord, args_hash
from sstools_agent.domain.chat_events import (
    ChatEvent,
    ConfirmationResult,
    ConfirmRequired,
    EventType,
    PermissionDenied,
    ToolEnd,
    ToolError,
)
from sstools_agent.domain.confirmations import Confirmation, ConfirmationEdit
from sstools_agent.domain.conversations import TurnRecorder
from sstools_agent.domain.guardrails import policy_record
from sstools_agent.domain.plan_types import ChangePlan
from sstools_agent.domain.policy_engine import Principal as PolicyPrincipal
from sstools_agent.domain.ports import AuditSink
from sstools_agent.domain.tool_routing import RoutingDecision

logger = logging.getLogger(__name__)

AUDITED: Final = {
    EventType.TOOL_END: (AuditKind.TOOL_CALLED, "succeeded"),
    EventType.TOOL_ERROR: (AuditKind.TOOL_CALLED, "failed"),
    EventType.PERMISSION_DENIED: (AuditKind.TOOL_DENIED, "denied"),
    EventType.CONFIRM_REQUIRED: (AuditKind.CONFIRMATION_REQUESTED, "pending"),
}
AUDITED_EVENTS: Final = (ToolEnd, ToolError, PermissionDenied, ConfirmRequired)


class TurnAudit:
    """The audit records of a chat turn, written to `sink`."""

    def __init__(self, sink: AuditSink) -> None:
        self.sink = sink

    def streamed(
        self,
        turn: PreparedTurn,
        event: ChatEvent,
        recorder: TurnRecorder,
        *,
        who: PolicyPrincipal | None = None,
    ) -> None:
        """Tool calls, denials and confirmation requests, as they stream (a confirmed call's
        outcome is audited by its journal, once); `who`: the user as policy saw them (their
        groups go into the record's `call`)."""
        if not isinstance(event, AUDITED_EVENTS) or event.tool_call_id in turn.journaled:
            return
        call = recorder.tool_calls.get(event.tool_call_id, {})
        shown = event.tool_input if isinstance(event, ConfirmRequired) else {}
        detail = {
            "tool": event.tool or None,
            "tool_call_id": event.tool_call_id,
            "args_hash": args_hash(call.get("input") or shown),
        }
        match event:
            case ToolError():
                detail["code"] = event.code
                detail |= policy_detail(event.policy, who)
            case ToolEnd():
                detail |= policy_detail(event.policy, who)
            case PermissionDenied():
                detail["required_role"] = event.required_role
                detail |= policy_detail(event.policy, who)
            case ConfirmRequired():
                card = (event.decision.get("permission") or {}).get("card_policies")
                detail |= {
                    "confirmation_id": event.confirmation_id,
                    "risk": event.decision.get("risk"),
                    "environment": event.decision.get("environment"),
                } | policy_detail({**policy_record(event.decision), "card_policies": card}, who)
        audit_kind, outcome = AUDITED[event.type]
        conversation = turn.conversation
        self.sink.emit(
            AuditRecord(
                audit_kind, conversation.owner, outcome, conversation.conversation_id, detail
            )
        )

    def routed(
        self, turn: PreparedTurn, routing: RoutingDecision, context: AgentRunContext
    ) -> None:
        """The turn's tool choice, in the logs and the audit log: offered, and removed by which
        rule (role, affinity, no environment: the policy; router: the router)."""
        detail = routing.to_record() | {"request_id": context.request_id}
        logger.info("tools routed", extra={"routing": detail})
        self.sink.emit(
            AuditRecord(
                AuditKind.TOOLS_ROUTED,
                turn.conversation.owner,
                routing.intent.value,
                turn.conversation.conversation_id,
                detail,
            )
        )

    def edited(
        self, confirmation: Confirmation, edit: ConfirmationEdit, result: ConfirmationResult
    ) -> None:
        """The decision to run an edited call, or to ask again for it, with both fingerprints."""
        self.sink.emit(
            AuditRecord(
                AuditKind.CONFIRMATION_DECIDED,
                edit.edited_by,
                "edited" if result is ConfirmationResult.CONFIRMED else "edit_asks_again",
                confirmation.conversation_id,
                card_detail(confirmation) | edit_detail(edit),
            )
        )

    def stale(self, confirmation: Confirmation, current: ChangePlan) -> None:
        """A confirm that ran nothing because the world changed since its card: both plans."""
        shown = confirmation.plan or {}
        self.sink.emit(
            AuditRecord(
                AuditKind.CONFIRMATION_DECIDED,
                confirmation.user,
                "stale",
                confirmation.conversation_id,
                card_detail(confirmation)
                | {
                    "shown_plan": {"digest": shown.get("digest"), "lines": shown.get("lines")},
                    "current_plan": {"digest": current.digest, "lines": list(current.lines)},
                },
            )
        )


def tried_log_only(event: ChatEvent) -> bool:
    """Whether a log-only policy took part in the decision this event reports (the metric)."""
    match event:
        case PermissionDenied() | ToolEnd() | ToolError():
            return bool(event.policy.get("trial"))
        case ConfirmRequired():
            return bool((event.decision.get("permission") or {}).get("trial"))
    return False


def policy_detail(policy: Mapping[str, Any], who: PolicyPrincipal | None = None) -> dict[str, Any]:
    """What an audit record says of the policy's decision (`guardrails.policy_record`): the
    `@id`s of the policies that decided it (the card's too), what log-only policies would have
    decided, if any took part (logged as well), and what policy saw of the call, with the
    user's groups (`make policy-check` replays it)."""
    detail: dict[str, Any] = {
        "policies": list(policy.get("policies") or ()),
        "card_policies": list(policy.get("card_policies") or ()),
    }
    if trial := policy.get("trial"):
        detail["log_only"] = trial
        logger.info("log-only policy decided", extra={"log_only": trial})
    if seen := policy.get("call"):
        detail["call"] = {**seen, "groups": list(who.groups) if who else []}
    return {k: v for k, v in detail.items() if v or k == "policies"}


def edit_detail(edit: ConfirmationEdit | None) -> dict[str, Any]:
    """What an audit record says of the edit a card was answered with (nothing without one)."""
    if edit is None:
        return {}
    return {
        "edited_fingerprint": edit.fingerprint,
        "edited_by": edit.edited_by,
        "edited_args_hash": args_hash(edit.edited_args),
    }


def card_detail(confirmation: Confirmation) -> dict[str, Any]:
    """What every audit record of a card names: its tool, call, id and fingerprint."""
    return {
        "tool": confirmation.tool,
        "tool_call_id": confirmation.tool_call_id,
        "confirmation_id": confirmation.confirmation_id,
        "fingerprint": confirmation.fingerprint,
    }
