"""A card two people approve, after its requester's confirm: the approvals waiting for a caller,
a second person's decision on one, and that decision told in the requester's conversation.

Here, in the chat function, because the decision needs what only it has: the card's call checked
against the approver's role (the catalog and the policy), the plan read again (the agent's plan
reads), the task token handed back (the state machine authorizes this function), and, for the
run itself, the conversation's checkpoint and the tools.

The second person sees the card as its requester saw it (its call in words, prompt, badge,
impact, plan, the second approval's deadline) and nothing else of the conversation. Their
decision is one conditional write (`decide_second`: the card still waiting, its timer still
holding the token, the approver not the requester), then the token goes back; the state machine
then invokes this function asynchronously (`tell`), which takes the conversation's lock and
resumes the card's call as decided: a confirmed call runs once (its journal), only while the
plan is still the card's; a denied one says so.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

from sstools_agent.adapters.service_tokens import ServiceTokenSource
from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.runtime import ChatAgent, PendingConfirmation
from sstools_agent.chat.card_answers import DECIDED_AS
from sstools_agent.chat.prepared_turn import PreparedTurn
from sstools_agent.chat.turns import ChatTurns
from sstools_agent.domain.approvals import (
    approvals_text,
    second_decision_text,
    second_decision_told,
)
from sstools_agent.domain.audit import AuditKind, AuditRecord
from sstools_agent.domain.chat_events import ChatEvent, ConfirmationResult, ErrorEvent, Text
from sstools_agent.domain.confirmation_outcomes import call_text
from sstools_agent.domain.confirmations import (
    Confirmation,
    ConfirmationExpired,
    ConfirmationNotFound,
    ConfirmationNotPermitted,
    ConfirmationStatus,
    ExecutionState,
    OwnSecondApproval,
)
from sstools_agent.domain.conversations import (
    Conversation,
    ConversationArchived,
    ConversationBusy,
)
from sstools_agent.domain.glossary import tool_label
from sstools_agent.domain.identity import Principal
from sstools_agent.domain.ports import AuditSink, ConfirmationStore, ConfirmationWorkflow
from sstools_agent.domain.roles import Role
from sstools_agent.domain.wording import role_words

logger = logging.getLogger(__name__)

Decision = Literal["approve", "deny"]
LOCK_ATTEMPTS: Final = 20
LOCK_RETRY_S: Final = 0.5
"""A conversation busy with another run (its requester's page reading history, say) is tried
again for ten seconds; after that its next access settles the card (the journal's truth)."""


@dataclass(frozen=True, slots=True)
class SecondDecision:
    """What the second approver is told of their decision."""

    confirmation_id: str
    outcome: Literal["approved", "denied", "stale"]
    detail: str


class SecondDecisionTold(StrEnum):
    """What became of one invocation with a second approver's decision."""

    TOLD = "told"
    NOT_DECIDED = "not_decided"
    """No second decision on the card (unknown, still waiting, or decided by its requester)."""
    ALREADY_SETTLED = "already_settled"
    """The conversation no longer waits on the card (told already: a redelivery)."""
    LEFT_FOR_NEXT_ACCESS = "left_for_next_access"


def card_call(card: Confirmation) -> PendingConfirmation:
    """The card's call as its checkpoint keeps it, from what the item kept of the card."""
    shown = card.card or {}
    return PendingConfirmation(
        tool_call_id=card.tool_call_id,
        tool=card.tool,
        args=dict(shown.get("args") or {}),
        decision=dict(shown.get("decision") or {}),
        ui_context=shown.get("ui_context"),
        interrupt_id="",
    )


def approval_view(card: Confirmation) -> dict[str, Any]:
    """A card waiting for a second person, as the approvals view shows it: what the requester's
    card showed, who asked and approved first, and the deadline; nothing of the conversation."""
    shown = card.card or {}
    decision = shown.get("decision") or {}
    return {
        "confirmation_id": card.confirmation_id,
        "call": call_text(card.tool, shown.get("args"), card.edited_args),
        "prompt": decision.get("prompt"),
        "label": decision.get("label"),
        "badge": decision.get("badge"),
        "impact": decision.get("impact"),
        "tone": decision.get("tone"),
        "environment": decision.get("environment"),
        "risk": card.risk,
        "plan": card.plan,
        "requested_by": card.user,
        "approved_by": card.approval.by if card.approval else None,
        "approvals": approvals_text(1, card.approvers),
        "expires_at": card.approval_expires_iso,
    }


class SecondApprovals:
    """The approvals view's reads and decisions, and the decisions told where they were asked."""

    def __init__(
        self,
        turns: ChatTurns,
        agent: Callable[[], ChatAgent],
        confirmations: ConfirmationStore,
        workflow: ConfirmationWorkflow,
        *,
        audit: AuditSink,
        service_token: ServiceTokenSource,
    ) -> None:
        self.turns, self.agent = turns, agent
        self.confirmations, self.workflow = confirmations, workflow
        self.audit, self.service_token = audit, service_token

    async def waiting_for(self, principal: Principal) -> list[dict[str, Any]]:
        """The cards waiting for a second person that `principal` may approve: not their own,
        still within the second approval's time, a call their role may make. Soonest first."""
        agent, now = self.agent(), time.time()
        views = [
            card
            for card in await self.confirmations.awaiting_approval()
            if card.approval is not None
            and card.approval.by != principal.subject
            and not card.expired(now)
            and agent.permission_for(card_call(card), principal.role).allowed
        ]
        views.sort(key=lambda card: card.approval.expires_at if card.approval else 0.0)
        return [approval_view(card) for card in views]

    async def decide(
        self, principal: Principal, confirmation_id: str, decision: Decision, request_id: str
    ) -> SecondDecision:
        """A second person's decision on a card waiting for one: refused for its requester
        (OwnSecondApproval), for a role that may not make its call (ConfirmationNotPermitted),
        for one decided or expired already (409); an approval whose plan is no longer the
        card's is decided `stale` (nothing runs). Exactly once: one conditional write."""
        card = await self.confirmations.get(confirmation_id)
        if card is None or card.approval is None:
            raise ConfirmationNotFound(confirmation_id)
        if card.approval.by == principal.subject:
            raise OwnSecondApproval(confirmation_id)
        agent = self.agent()
        call = card_call(card)
        permission = agent.permission_for(call, principal.role)
        if not permission.allowed:
            raise ConfirmationNotPermitted(
                f"Недостаточно прав: «{tool_label(card.tool)}» подтверждает роль "
                f"{role_words(permission.required_role, True)}; ничего не выполнено."
            )
        wanted = ConfirmationStatus.DENIED
        if decision == "approve":
            wanted = ConfirmationStatus.CONFIRMED
            if await self._stale(agent, card, call, principal, request_id):
                wanted = ConfirmationStatus.STALE
        decided = await self.confirmations.decide_second(confirmation_id, principal.subject, wanted)
        token = decided.approval_token
        if not token or not await self.workflow.hand_back(token, DECIDED_AS[wanted]):
            raise ConfirmationExpired(confirmation_id)  # its timer ended first: nothing runs
        self.audit.emit(
            AuditRecord(
                AuditKind.APPROVAL_DECIDED,
                principal.subject,
                wanted.value,
                None,
                {
                    "confirmation_id": confirmation_id,
                    "requested_by": card.user,
                    "approved_by": card.approval.by,
                    "tool": card.tool,
                    "risk": card.risk,
                    "fingerprint": card.fingerprint,
                },
            )
        )
        outcome, detail = second_decision_told(decided, wanted)
        return SecondDecision(confirmation_id, outcome, detail)

    async def _stale(
        self,
        agent: ChatAgent,
        card: Confirmation,
        call: PendingConfirmation,
        principal: Principal,
        request_id: str | None,
    ) -> bool:
        """Whether the plan reads differently now than the card showed it (as `principal`)."""
        shown = (card.plan or {}).get("digest")
        if shown is None:
            return False
        context = AgentRunContext(principal, None, await self.service_token(), request_id)
        current = await agent.plan(call, context)
        return current is None or current.digest != shown

    async def tell(self, confirmation_id: str) -> SecondDecisionTold:
        """The second person's decision on `confirmation_id` told in its conversation, as a
        turn of its own (the requester's open page follows it, a closed one finds it in the
        history): a confirmed call runs (once, and only while its plan is still the card's),
        a denied or stale one does not."""
        card = await self.confirmations.get(confirmation_id)
        decided = (
            ConfirmationStatus.CONFIRMED,
            ConfirmationStatus.DENIED,
            ConfirmationStatus.STALE,
        )
        if card is None or card.second_approver is None or card.status not in decided:
            return SecondDecisionTold.NOT_DECIDED
        context = await self._requester_context(card)
        turn = await self._locked(card)
        if isinstance(turn, SecondDecisionTold):
            return turn
        waiting = turn.pending or card_call(card)  # (_locked names it)
        if turn.result is ConfirmationResult.CONFIRMED and await self._stale(
            self.agent(), card, waiting, context.principal, None
        ):
            # The world moved between the approval and now: nothing runs, a new card asks
            await self.turns.cards.journals.of(card, turn.conversation).record(
                ExecutionState.NOT_RUN
            )
            turn.result = ConfirmationResult.STALE
        preface = Text(second_decision_text(card, turn.result or ConfirmationResult.DENIED))
        failed = False
        async for _, event in self.turns.stream(turn, context, self._told(turn, context, preface)):
            failed = failed or isinstance(event, ErrorEvent)
        logger.info("second decision told", extra={"confirmation_id": confirmation_id})
        return SecondDecisionTold.LEFT_FOR_NEXT_ACCESS if failed else SecondDecisionTold.TOLD

    async def _told(
        self, turn: PreparedTurn, context: AgentRunContext, preface: ChatEvent
    ) -> AsyncGenerator[ChatEvent]:
        yield preface
        async for event in self.turns.answer_events(turn, context):
            yield event

    async def _requester_context(self, card: Confirmation) -> AgentRunContext:
        """The requester's identity for the run: their role and token as they confirmed."""
        approval = card.approval
        role = Role(approval.role) if approval and approval.role in set(Role) else None
        principal = Principal(
            card.user,
            role,
            (role.value,) if role else (),
            approval.token if approval else "",
            0,
        )
        return AgentRunContext(principal, None, await self.service_token())

    async def _locked(self, card: Confirmation) -> PreparedTurn | SecondDecisionTold:
        """The requester's conversation held for the decision's turn, with the card's call
        checked to be the one it waits on; or why it is not told here."""
        asked = Conversation.asked_for(card.conversation_id, card.user, None)
        run_id = uuid.uuid4().hex
        store = self.turns.store
        for _ in range(LOCK_ATTEMPTS):
            try:
                held = await store.start_turn(asked, run_id, self.turns.lease_s, new=False)
                break
            except ConversationBusy:
                await asyncio.sleep(LOCK_RETRY_S)
            except ConversationArchived:
                return SecondDecisionTold.ALREADY_SETTLED
        else:
            return SecondDecisionTold.LEFT_FOR_NEXT_ACCESS
        pending = await self.agent().pending_confirmation(card.conversation_id)
        waits = held.pending_confirmation_id == card.confirmation_id
        if not waits or pending is None or pending.fingerprint != card.fingerprint:
            await store.finish_turn(held.conversation_id, run_id, held.last_seq, held.updated_at)
            return SecondDecisionTold.ALREADY_SETTLED
        result = DECIDED_AS[card.status]
        return PreparedTurn(
            held, "confirm", None, run_id, result=result, confirmation=card, pending=pending
        )
