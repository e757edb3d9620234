"""The approvals view's routes, in the chat function (where the card's call can be checked
against the approver's role, its plan read again and its token handed back):
`GET /api/assistant/approvals` and `POST /api/assistant/approvals/{confirmation_id}`; and the
pass-through path where Lambda Web Adapter hands the state machine's asynchronous invocation
with a second approver's decision (`SECOND_DECISION_PATH`).
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from fastapi import APIRouter, Depends, Path, Request
from pydantic import BaseModel, ConfigDict, Field

from sstools_agent.chat.approvals import SecondApprovals
from sstools_agent.chat.routes import Caller, RequestIdHeader
from sstools_agent.http.auth import AuthenticatedRoute, request_id_from

APPROVALS_PATH: Final = "/api/assistant/approvals"
SECOND_DECISION_PATH: Final = "/events"
"""Lambda Web Adapter's pass-through path (template: AWS_LWA_PASS_THROUGH_PATH): the events
that are not HTTP requests, here the state machine's invocation. It needs no user and no
CloudFront header (`OriginCheck` exempts it): all it can do is tell a decision already made,
once (the card's item and the call's journal decide), and it answers nothing about the card."""


class ApprovalDecisionBody(BaseModel):
    """`{"decision": "approve" | "deny"}`."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny"]


class DecidedCard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    confirmation_id: str = Field(max_length=128)


class SecondDecisionEvent(BaseModel):
    """What the state machine's `TellSecondDecision` sends."""

    second_decision: DecidedCard


def second_approvals(request: Request) -> SecondApprovals:
    approvals: SecondApprovals = request.app.state.approvals
    return approvals


Approvals = Annotated[SecondApprovals, Depends(second_approvals)]

router = APIRouter(route_class=AuthenticatedRoute)
pass_through = APIRouter(include_in_schema=False)


@router.get(APPROVALS_PATH)
async def waiting_approvals(principal: Caller, approvals: Approvals) -> dict[str, object]:
    """The cards waiting for a second person that the caller may approve."""
    return {"approvals": await approvals.waiting_for(principal)}


@router.post(APPROVALS_PATH + "/{confirmation_id}")
async def decide_approval(
    body: ApprovalDecisionBody,
    principal: Caller,
    approvals: Approvals,
    confirmation_id: Annotated[str, Path(max_length=128)],
    x_request_id: RequestIdHeader = None,
) -> dict[str, str]:
    """The caller's decision on a card waiting for a second person."""
    decided = await approvals.decide(
        principal, confirmation_id, body.decision, request_id_from(x_request_id)
    )
    return {
        "confirmation_id": decided.confirmation_id,
        "outcome": decided.outcome,
        "detail": decided.detail,
    }


@pass_through.post(SECOND_DECISION_PATH)
async def second_decision(event: SecondDecisionEvent, approvals: Approvals) -> dict[str, bool]:
    """The second person's decision told in the requester's conversation (and its call run)."""
    await approvals.tell(event.second_decision.confirmation_id)
    return {"accepted": True}
