"""The expiry function: a card whose timer ran out is told in its conversation at once.

The confirmation's state machine publishes `confirmation_decided` with `decision.result =
expired` on the audit bus; this function's rule (template.yaml) hands it here, and the
conversation gets `confirm_resolved(expired)` and the cancellation text
(`chat/expired_cards.py`). `main.py` builds the chat function's collaborators once per
container and exposes `handler`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from sstools_agent.chat.expired_cards import ExpiryRecorder, ExpiryTold

logger = Logger(service="sstools-agent-expiry")


class ExpiredCard(BaseModel):
    """What the event says of the card (the rest of its detail is the audit record's)."""

    confirmation_id: str


class ExpiryEvent(EventBridgeModel):
    """A `confirmation_decided` event whose decision is `expired` (the rule's pattern)."""

    detail: ExpiredCard


def tell(recorder: ExpiryRecorder, event: ExpiryEvent) -> ExpiryTold:
    """Tells the event's expiry in its conversation; the turn's audit records leave before the
    invocation ends (Lambda freezes the container between invocations)."""
    try:
        return asyncio.run(recorder.tell(event.detail.confirmation_id))
    finally:
        recorder.audit.flush()


def create_handler(
    recorder: ExpiryRecorder,
) -> Callable[[dict[str, Any], LambdaContext], dict[str, Any]]:
    """The Lambda handler over `recorder`."""

    @logger.inject_lambda_context
    @event_parser(model=ExpiryEvent)
    def handler(event: ExpiryEvent, context: LambdaContext) -> dict[str, Any]:
        told = tell(recorder, event)
        logger.info("expiry", extra={"event_id": event.id, "told": told.value})
        return {"told": told.value, "event_id": event.id}

    return handler
