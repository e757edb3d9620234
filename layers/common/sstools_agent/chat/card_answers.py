"""Answering a card: a confirm, deny or edit checked against the card it names, the lock taken,
the card's plan read again for a confirm (it runs only while the world is as the card showed
it), an edit checked as a call of its own, and the card decided exactly once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.runtime import ChatAgent, PendingConfirmation
from sstools_agent.chat.confirmation_journal import ConfirmationJournals
from sstools_agent.chat.prepared_turn import Action, PreparedTurn, ThreadRules
from sstools_agent.chat.turn_audit import TurnAudit
from sstools_agent.domain.approvals import DEFAULT_APPROVAL_TIMEOUT_S
from sstools_agent.domain.chat_events import ConfirmationResult
from sstools_agent.domain.confirmations import (
    Confirmation,
    ConfirmationDecided,
    ConfirmationEdit,
    ConfirmationExpired,
    ConfirmationForbidden,
    ConfirmationNotFound,
    ConfirmationNotPermitted,
    ConfirmationStatus,
    ExecutionState,
    FirstApproval,
    InvalidEdit,
    NoPendingConfirmationError,
    OwnSecondApproval,
    card_fingerprint,
    iso_moment,
)
from sstools_agent.domain.conversations import Conversation, now_iso
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.glossary import tool_label
from sstools_agent.domain.guardrails import edit_asks_again
from sstools_agent.domain.plan_types import ChangePlan
from sstools_agent.domain.ports import ConfirmationStore, ConfirmationWorkflow, ConversationStore
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_calls import InvalidToolCall
from sstools_agent.domain.wording import role_words

# What a decision streams (`confirm_resolved`) and resumes the card's call with.
DECIDED_AS: Final = {
    ConfirmationStatus.CONFIRMED: ConfirmationResult.CONFIRMED,
    ConfirmationStatus.DENIED: ConfirmationResult.DENIED,
    ConfirmationStatus.SUPERSEDED: ConfirmationResult.SUPERSEDED,
    ConfirmationStatus.STALE: ConfirmationResult.STALE,
    ConfirmationStatus.AWAITING_APPROVAL: ConfirmationResult.AWAITING_APPROVAL,
}
FIRST_APPROVAL_RESULT: Final = "approved_once"
"""What the state machine's first wait ends with when a second person must approve."""


@dataclass(frozen=True, slots=True)
class CardAnswer:
    """What a confirm, deny or edit asks of the card it names."""

    action: Action
    confirmation_id: str | None
    role: Role | None
    """The user's role now: a confirm is checked against it (a role can change after a card)."""
    edited_args: dict[str, Any]


async def _none() -> None:
    return None


def _outcome[T](result: T | BaseException) -> T:
    """What a call run with `gather(..., return_exceptions=True)` returned, or its raise."""
    if isinstance(result, BaseException):
        raise result
    return result


class CardAnswers:
    """Decides the cards that confirms, denies and edits answer."""

    def __init__(
        self,
        agent_factory: Callable[[], ChatAgent],
        store: ConversationStore,
        confirmations: ConfirmationStore,
        workflow: ConfirmationWorkflow,
        *,
        audit: TurnAudit,
        journals: ConfirmationJournals,
        lease_s: float,
        approval_timeout_s: int = DEFAULT_APPROVAL_TIMEOUT_S,
    ) -> None:
        self._agent_factory = agent_factory
        self.store, self.confirmations, self.workflow = store, confirmations, workflow
        self.audit, self.journals, self.lease_s = audit, journals, lease_s
        self.approval_timeout_s = approval_timeout_s

    async def prepare(
        self,
        conversation_id: str,
        owner: str,
        answer: CardAnswer,
        run_id: str,
        rules: ThreadRules,
        *,
        context: AgentRunContext | None,
    ) -> PreparedTurn:
        """A confirm, deny or edit: the card it answers checked, the lock taken, the card's plan
        read again (a confirm runs only while the world is as the card showed it), the card
        decided. Three reads side by side, none waiting for another: the card, the lock's
        write, and the call the checkpoint waits on. The card's refusals come first (another
        user's card is a 403 whoever's the conversation is), then the lock's, then the
        checkpoint's (the card's call must be the one waiting). That checkpoint read is not
        the run's: it was made before the lock, so the run, after `confirm_resolved`, reads
        again under it (and the call that runs is checked against the card once more). A
        refusal after the lock gives it back as it was: nothing is written. An answer leaves
        the conversation's page as it is (the card keeps the page it was made on)."""
        asked = Conversation.asked_for(conversation_id, owner, None)
        agent = self._agent_factory()
        card, lock, waiting = await asyncio.gather(
            self.confirmations.get(answer.confirmation_id) if answer.confirmation_id else _none(),
            self.store.start_turn(asked, run_id, self.lease_s, new=False),
            agent.pending_confirmation(conversation_id),
            return_exceptions=True,
        )
        held = lock if isinstance(lock, Conversation) else None
        try:
            confirmation = self._answerable(_outcome(card), answer, conversation_id, owner, rules)
            conversation = _outcome(lock)
            pending = self._waiting_call(agent, confirmation, answer, _outcome(waiting))
            edit = None
            if answer.action == "edit" and not confirmation.expired(time.time()):
                edit = self._edit(pending, answer.edited_args, answer.role, owner)
            stale = None
            if answer.action == "confirm" and context is not None:
                stale = await self._stale_plan(agent, confirmation, pending, context)
        except BaseException:
            if held is not None:
                await self._give_back(held, run_id)
            raise
        turn = PreparedTurn(
            conversation, answer.action, None, run_id, confirmation=confirmation, pending=pending
        )
        approval = None
        if confirmation.approvers > 1 and answer.action in ("confirm", "edit"):
            approval = FirstApproval(
                by=owner,
                expires_at=time.time() + self.approval_timeout_s,
                role=answer.role.value if answer.role is not None else None,
                token=context.principal.token if context is not None else "",
            )
        return await self._answer_card(turn, confirmation, edit, stale, approval)

    @staticmethod
    async def _stale_plan(
        agent: ChatAgent,
        confirmation: Confirmation,
        pending: PendingConfirmation,
        context: AgentRunContext,
    ) -> ChangePlan | None:
        """The plan as it reads now, when it is not the one the card showed (None: it is, or
        the card showed none to hold it to). A plan that cannot be read again cannot be held
        to the card either: it is stale too, and the next card says why."""
        shown = (confirmation.plan or {}).get("digest")
        if shown is None or confirmation.expired(time.time()):
            return None
        current = await agent.plan(pending, context)
        if current is not None and current.digest == shown:
            return None
        return current or ChangePlan("", unread="план изменения больше не объявлен")

    async def _give_back(self, held: Conversation, run_id: str) -> None:
        """Releases a lock taken for a turn that was refused, leaving the record as it was."""
        await self.store.finish_turn(held.conversation_id, run_id, held.last_seq, held.updated_at)

    async def _answer_card(
        self,
        turn: PreparedTurn,
        confirmation: Confirmation,
        edit: ConfirmationEdit | None,
        stale: ChangePlan | None = None,
        approval: FirstApproval | None = None,
    ) -> PreparedTurn:
        """Decides `confirmation`, the card `turn` answers (once), under the lock `turn` holds;
        a confirm whose plan is `stale` decides it as such (nothing runs, a new card asks); the
        confirm of a card two people approve is its first `approval` (nothing runs yet)."""
        wanted = ConfirmationStatus.DENIED
        if stale is not None:
            wanted = ConfirmationStatus.STALE
        elif turn.action == "confirm" or (edit is not None and not edit.asks_again):
            wanted = ConfirmationStatus.CONFIRMED
        elif edit is not None:
            wanted = ConfirmationStatus.SUPERSEDED
        if wanted is not ConfirmationStatus.CONFIRMED:
            approval = None
        elif approval is not None:
            wanted = ConfirmationStatus.AWAITING_APPROVAL
        conversation = turn.conversation
        try:
            turn.result, decided = await self._decide(
                confirmation, conversation, wanted, edit, approval
            )
        except BaseException:
            await self.store.finish_turn(
                conversation.conversation_id, turn.run_id, conversation.last_seq, now_iso()
            )
            raise
        turn.confirmation = decided
        if edit is not None and turn.result is not ConfirmationResult.EXPIRED:
            self.audit.edited(confirmation, edit, turn.result)
        if stale is not None and turn.result is ConfirmationResult.STALE:
            self.audit.stale(confirmation, stale)
        return turn

    def _edit(
        self,
        pending: PendingConfirmation,
        edited_args: dict[str, Any],
        role: Role | None,
        owner: str,
    ) -> ConfirmationEdit:
        """The card's call with `edited_args`, checked as a call of its own where the card was
        made: arguments the tool takes (InvalidEdit), a call the user may make now
        (ConfirmationNotPermitted), and whether the card's approval covers it."""
        agent = self._agent_factory()
        try:
            decision, arguments = agent.decide_edit(pending, edited_args, role)
        except InvalidToolCall as invalid:
            if invalid.code is ErrorCode.FORBIDDEN:
                raise ConfirmationNotPermitted(
                    f"{pending.tool} is not available on the card's page; nothing was run."
                ) from None
            raise InvalidEdit(f"{invalid.tool}: {invalid.detail}") from None
        if not decision.permission.allowed:
            raise ConfirmationNotPermitted(
                f"Недостаточно прав: «{tool_label(pending.tool)}» с этими аргументами требует роль "
                f"{role_words(decision.permission.required_role, True)}; ничего не выполнено."
            )
        spec = agent.policy.catalog.get(pending.tool)
        return ConfirmationEdit(
            edited_args=arguments,
            fingerprint=card_fingerprint(pending.tool, arguments, decision.to_payload()),
            asks_again=edit_asks_again(spec, pending.args, pending.decision, arguments, decision),
            edited_by=owner,
        )

    @staticmethod
    def _answerable(
        confirmation: Confirmation | None,
        answer: CardAnswer,
        conversation_id: str,
        owner: str,
        rules: ThreadRules,
    ) -> Confirmation:
        """The confirmation an answer names, if it is this conversation's, the user's and not
        decided yet (and, where the rules say so, not expired)."""
        if confirmation is None or confirmation.conversation_id != conversation_id:
            raise ConfirmationNotFound(answer.confirmation_id or "")
        if confirmation.user != owner:
            raise ConfirmationForbidden(confirmation.confirmation_id)
        if confirmation.status is ConfirmationStatus.AWAITING_APPROVAL and answer.action in (
            "confirm",
            "edit",
        ):
            raise OwnSecondApproval(confirmation.confirmation_id)
        if confirmation.status in (
            ConfirmationStatus.CONFIRMED,
            ConfirmationStatus.DENIED,
            ConfirmationStatus.CANCELLED,
            ConfirmationStatus.SUPERSEDED,
        ):
            raise ConfirmationDecided(confirmation.confirmation_id)
        if rules.an_expired_card_refuses_answers and confirmation.expired(time.time()):
            raise ConfirmationExpired(confirmation.confirmation_id)
        return confirmation

    @staticmethod
    def _waiting_call(
        agent: ChatAgent,
        confirmation: Confirmation,
        answer: CardAnswer,
        pending: PendingConfirmation | None,
    ) -> PendingConfirmation:
        """The call the checkpoint waits on, if it is the card's; for a confirm, also that the
        user may still make that call."""
        expired = confirmation.expired(time.time())
        if pending is None or pending.fingerprint != confirmation.fingerprint:
            if expired:  # the expiry was told already (or is being told by another click)
                raise ConfirmationExpired(confirmation.confirmation_id)
            raise NoPendingConfirmationError(confirmation.conversation_id)
        if answer.action == "confirm" and answer.role is not None and not expired:
            permission = agent.permission_for(pending, answer.role)
            if not permission.allowed:
                raise ConfirmationNotPermitted(
                    f"Недостаточно прав: «{tool_label(pending.tool)}» требует роль "
                    f"{role_words(permission.required_role, True)}; ничего не выполнено."
                )
        return pending

    async def _decide(
        self,
        confirmation: Confirmation,
        conversation: Conversation,
        wanted: ConfirmationStatus,
        edit: ConfirmationEdit | None,
        approval: FirstApproval | None = None,
    ) -> tuple[ConfirmationResult, Confirmation]:
        """Moves the confirmation out of pending exactly once (with the edit it was answered
        with, in the same write: durable before anything can run) and hands its token back;
        the result, and the card as decided.

        The conversation keeps naming the card until the resumed run closes the call in the
        checkpoint: if that run is interrupted, the next access settles the card truthfully.
        `conversation` was read under the lock: the card it still waits on tells whether an expired
        card resolves as expired once (that answer streams `confirm_resolved(expired)`); once
        told, it is ConfirmationExpired (409), never a second resume of a settled call."""
        decided = await self.confirmations.decide(
            confirmation.confirmation_id, conversation.owner, wanted, edit, approval
        )
        if decided.status is not wanted:  # it expired first: nothing runs
            if conversation.pending_confirmation_id != confirmation.confirmation_id:
                raise ConfirmationExpired(confirmation.confirmation_id)
            return ConfirmationResult.EXPIRED, decided
        result = DECIDED_AS[wanted]
        handed: str = result
        details = None
        token = decided.waiting_token
        if approval is not None:  # the first wait ends; the second person's begins
            handed, token = FIRST_APPROVAL_RESULT, decided.task_token
            details = {
                "approved_by": approval.by,
                "approval_expires_at": iso_moment(approval.expires_at),
            }
        if token and not await self.workflow.hand_back(token, handed, details):
            if (
                wanted is ConfirmationStatus.CONFIRMED
            ):  # the timer won after all: the call will not run, and says so once
                await self.journals.of(decided, conversation).record(ExecutionState.NOT_RUN)
            return ConfirmationResult.EXPIRED, decided
        return result, decided
