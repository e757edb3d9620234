"""What the chat function does for a request, whatever its wire encoding.

`ChatService.open` makes every decision that ends in a plain HTTP refusal, before the stream:
the page context (validated, a rejection audited), the service token, the resume point, the
conversation, the card a confirm or deny answers, the lock. What it returns streams the turn
(or replays it); `cancel` asks a run held by another connection to stop. Refusals are the
domain exceptions of the refusal table (http/refusals.py).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from sstools_agent.adapters.service_tokens import ServiceTokenSource, ServiceTokenUnavailable
from sstools_agent.agent.context import AgentRunContext
from sstools_agent.chat.attachments import CheckedFile
from sstools_agent.chat.prepared_turn import CHAT_THREADS, PreparedTurn, ThreadRules
from sstools_agent.chat.request import ChatRequestBody
from sstools_agent.chat.turns import ChatTurns
from sstools_agent.domain.attachments import AttachmentRejected
from sstools_agent.domain.audit import AuditKind, AuditRecord, audited_ui_context
from sstools_agent.domain.chat_events import ChatEvent
from sstools_agent.domain.conversations import parse_event_id
from sstools_agent.domain.environments import EnvironmentRegistry
from sstools_agent.domain.identity import Principal
from sstools_agent.domain.ports import AuditSink

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class OpenedTurn:
    """A turn that passed every check: its prepared state and the run context it streams with."""

    turn: PreparedTurn
    context: AgentRunContext

    @property
    def conversation_id(self) -> str:
        return self.turn.conversation.conversation_id


class ChatService:
    """Open, stream and cancel chat turns for an authenticated user."""

    def __init__(
        self,
        turns: ChatTurns,
        *,
        environments: EnvironmentRegistry,
        audit: AuditSink,
        service_token: ServiceTokenSource,
    ) -> None:
        self.turns = turns
        self.environments = environments
        self.audit = audit
        self.service_token = service_token

    async def open(
        self,
        principal: Principal,
        body: ChatRequestBody,
        *,
        request_id: str,
        last_event_id: str | None = None,
        rules: ThreadRules = CHAT_THREADS,
    ) -> OpenedTurn:
        """Every check before the stream, in the order that keeps refusals free of side effects:
        nothing is written unless the turn opens (the service token is fetched before the lock).

        A confirm or deny resumes in the card's own page context, whatever this request says
        (ChatAgent.resolve binds it); the request's context is validated all the same."""
        ui_context = audited_ui_context(
            body.ui_context,
            self.environments,
            self.audit.emit,
            principal.subject,
            body.conversation_id,
        )
        attachments = await self._attachments(principal, body)
        try:
            service_token = await self.service_token()
        except ServiceTokenUnavailable as failure:
            logger.error("no service token", extra={"reason": str(failure)})
            raise
        resume_after = 0
        resume_from = last_event_id or body.last_event_id
        if body.action == "resume" and resume_from and body.conversation_id:
            resume_after = parse_event_id(resume_from, body.conversation_id) or 0
        context = AgentRunContext(principal, ui_context, service_token, request_id)
        turn = await self.turns.prepare(
            owner=principal.subject,
            conversation_id=body.conversation_id,
            action=body.action,
            # A message of files alone is a message (it has no words)
            message=body.message or ("" if body.files else None),
            confirmation_id=body.confirmation_id,
            ui_context=ui_context.to_payload() if ui_context else None,
            resume_after=resume_after,
            role=principal.role,
            edited_args=body.edited_args,
            rules=rules,
            attachments=attachments,
            context=context,
        )
        return OpenedTurn(turn, context)

    async def _attachments(self, principal: Principal, body: ChatRequestBody) -> list[CheckedFile]:
        """The message's files, checked; a refusal is audited (and nothing is written)."""
        if not body.files:
            return []
        try:
            return await self.turns.checked_files(
                principal.subject, [ref.file_id for ref in body.files]
            )
        except AttachmentRejected as rejected:
            self.audit.emit(
                AuditRecord(
                    AuditKind.ATTACHMENT_REJECTED,
                    principal.subject,
                    rejected.reason,
                    body.conversation_id,
                    {
                        "file_id": rejected.file_id,
                        "files": len(body.files),
                        "detail": str(rejected),
                    },
                )
            )
            raise

    def events(self, opened: OpenedTurn) -> AsyncIterator[tuple[str | None, ChatEvent]]:
        """The turn's events with their ids (None for one said anew on a reconnect): a replay
        for `resume`, else the run itself."""
        if opened.turn.action == "resume":
            return self.turns.replay(opened.turn)
        return self.turns.stream(opened.turn, opened.context)

    async def cancel(self, principal: Principal, conversation_id: str) -> None:
        """Asks the run holding `conversation_id` (the caller's) to stop; NotRunning if none."""
        await self.turns.request_stop(conversation_id, principal.subject)
