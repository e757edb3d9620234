"""`ConfirmationStore` contract: a card leaves `pending` exactly once, only by its user, never
after its time; the execution journal only moves forwards."""

from __future__ import annotations

import time
import uuid

import pytest

from sstools_agent.adapters.dynamodb.confirmations import DynamoDBConfirmationStore
from sstools_agent.adapters.memory import InMemoryConfirmationStore
from sstools_agent.domain.confirmations import (
    Confirmation,
    ConfirmationDecided,
    ConfirmationEdit,
    ConfirmationExpired,
    ConfirmationForbidden,
    ConfirmationNotFound,
    ConfirmationStatus,
    ExecutionState,
    FirstApproval,
    OwnSecondApproval,
)
from sstools_agent.domain.ports import ConfirmationStore

pytestmark = pytest.mark.anyio
S = ConfirmationStatus
E = ExecutionState


def card(*, expires_in_s: float = 300, user: str = "egor.engineer") -> Confirmation:
    return Confirmation(
        confirmation_id=uuid.uuid4().hex,
        conversation_id=uuid.uuid4().hex,
        user=user,
        tool_call_id="call-1",
        tool="deploy_dashboard",
        fingerprint="f" * 64,
        risk="dangerous",
        status=S.PENDING,
        expires_at=time.time() + expires_in_s,
    )


async def created(store: ConfirmationStore, *, expires_in_s: float = 300) -> Confirmation:
    confirmation = card(expires_in_s=expires_in_s)
    await store.create(confirmation)
    return confirmation


async def test_a_created_card_reads_back_pending_with_whole_second_expiry(
    confirmations: ConfirmationStore,
):
    confirmation = await created(confirmations)
    stored = await confirmations.get(confirmation.confirmation_id)
    assert stored is not None
    assert stored.status is S.PENDING
    assert stored.execution is None
    assert stored.task_token is None
    assert stored.expires_at == float(int(confirmation.expires_at))
    assert (stored.user, stored.tool, stored.fingerprint) == (
        confirmation.user,
        confirmation.tool,
        confirmation.fingerprint,
    )
    assert await confirmations.get(uuid.uuid4().hex) is None


@pytest.mark.parametrize("status", [S.CONFIRMED, S.DENIED, S.CANCELLED])
async def test_a_card_is_decided_exactly_once(confirmations: ConfirmationStore, status):
    confirmation = await created(confirmations)
    decided = await confirmations.decide(confirmation.confirmation_id, confirmation.user, status)
    assert decided.status is status
    for again in (S.CONFIRMED, S.DENIED):
        with pytest.raises(ConfirmationDecided):
            await confirmations.decide(confirmation.confirmation_id, confirmation.user, again)
    stored = await confirmations.get(confirmation.confirmation_id)
    assert stored is not None
    assert stored.status is status


def an_edit(asks_again: bool = False) -> ConfirmationEdit:
    return ConfirmationEdit(
        edited_args={"dashboard_ids": [11], "note": "дашборд «Энергия»"},
        fingerprint="e" * 64,
        asks_again=asks_again,
        edited_by="egor.engineer",
    )


@pytest.mark.parametrize(("status", "asks_again"), [(S.CONFIRMED, False), (S.SUPERSEDED, True)])
async def test_an_edit_is_kept_in_the_decisions_own_write(
    confirmations: ConfirmationStore, status: ConfirmationStatus, asks_again: bool
):
    # The edited arguments are on the card from the decision on: before the call can leave
    confirmation = await created(confirmations)
    edit = an_edit(asks_again)
    decided = await confirmations.decide(
        confirmation.confirmation_id, confirmation.user, status, edit
    )
    assert (decided.status, decided.edit) == (status, edit)
    stored = await confirmations.get(confirmation.confirmation_id)
    assert stored is not None
    assert (stored.edit, stored.fingerprint) == (edit, confirmation.fingerprint)
    assert stored.edited_args == edit.edited_args


async def test_a_refused_decision_keeps_no_edit(confirmations: ConfirmationStore):
    confirmation = await created(confirmations)
    await confirmations.decide(confirmation.confirmation_id, confirmation.user, S.DENIED)
    with pytest.raises(ConfirmationDecided):
        await confirmations.decide(
            confirmation.confirmation_id, confirmation.user, S.CONFIRMED, an_edit()
        )
    with pytest.raises(ConfirmationForbidden):
        await confirmations.decide(
            (await created(confirmations)).confirmation_id, "anna.admin", S.CONFIRMED, an_edit()
        )
    stored = await confirmations.get(confirmation.confirmation_id)
    assert stored is not None
    assert (stored.status, stored.edit, stored.edited_args) == (S.DENIED, None, None)


async def test_another_users_decision_is_forbidden_and_changes_nothing(
    confirmations: ConfirmationStore,
):
    confirmation = await created(confirmations)
    with pytest.raises(ConfirmationForbidden):
        await confirmations.decide(confirmation.confirmation_id, "anna.analyst", S.CONFIRMED)
    stored = await confirmations.get(confirmation.confirmation_id)
    assert stored is not None
    assert stored.status is S.PENDING


async def test_a_missing_card_is_not_found(confirmations: ConfirmationStore):
    with pytest.raises(ConfirmationNotFound):
        await confirmations.decide(uuid.uuid4().hex, "egor.engineer", S.CONFIRMED)


async def test_a_card_past_its_time_comes_back_unchanged(confirmations: ConfirmationStore):
    confirmation = await created(confirmations, expires_in_s=-5)
    answered = await confirmations.decide(
        confirmation.confirmation_id, confirmation.user, S.CONFIRMED
    )
    assert answered.status is S.PENDING
    assert answered.expired(time.time())
    with pytest.raises(ConfirmationForbidden):  # still another user's first
        await confirmations.decide(confirmation.confirmation_id, "anna.analyst", S.CONFIRMED)


async def test_the_journal_moves_forwards_only_on_a_confirmed_card(
    confirmations: ConfirmationStore,
):
    confirmation = await created(confirmations)
    cid = confirmation.confirmation_id
    assert not await confirmations.record_execution(cid, E.STARTED)  # not confirmed yet
    await confirmations.decide(cid, confirmation.user, S.CONFIRMED)
    assert not await confirmations.record_execution(cid, E.SUCCEEDED)  # never started
    assert await confirmations.record_execution(cid, E.STARTED)
    assert not await confirmations.record_execution(cid, E.STARTED)  # started once
    assert not await confirmations.record_execution(cid, E.NOT_RUN)  # it left already
    assert await confirmations.record_execution(cid, E.UNKNOWN)
    stored = await confirmations.get(cid)
    assert stored is not None
    assert stored.execution is E.UNKNOWN


async def test_a_call_given_up_before_it_left_never_starts(confirmations: ConfirmationStore):
    confirmation = await created(confirmations)
    cid = confirmation.confirmation_id
    await confirmations.decide(cid, confirmation.user, S.CONFIRMED)
    assert await confirmations.record_execution(cid, E.NOT_RUN)
    assert not await confirmations.record_execution(cid, E.STARTED)
    stored = await confirmations.get(cid)
    assert stored is not None
    assert stored.interrupted_outcome is E.NOT_RUN


async def test_a_denied_card_journals_nothing(confirmations: ConfirmationStore):
    confirmation = await created(confirmations)
    await confirmations.decide(confirmation.confirmation_id, confirmation.user, S.DENIED)
    assert not await confirmations.record_execution(confirmation.confirmation_id, E.STARTED)
    assert not await confirmations.record_execution(confirmation.confirmation_id, E.NOT_RUN)


# A card two people approve: its requester's confirm is the first approval, a second person's
# decision the last; each is one conditional write.


def first_approval(requester: str, *, expires_in_s: float = 3600) -> FirstApproval:
    return FirstApproval(
        by=requester, expires_at=time.time() + expires_in_s, role="admin", token="jwt-of-requester"
    )


def second_wait_holds_its_token(store: ConfirmationStore, confirmation_id: str) -> None:
    """What the state machine's WaitForSecondApproval does: the item keeps its token."""
    if isinstance(store, InMemoryConfirmationStore):
        store.set_approval_token(confirmation_id, "second-token")
        return
    assert isinstance(store, DynamoDBConfirmationStore)
    # The state machine's own write, on the store's table (not an operation of the store)
    store._table.update_item(
        Key={"PK": f"CONF#{confirmation_id}", "SK": "CONFIRMATION"},
        UpdateExpression="SET approval_token = :token",
        ConditionExpression="#status = :awaiting",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":token": "second-token", ":awaiting": "awaiting_approval"},
    )


async def approved_once(
    store: ConfirmationStore, *, expires_in_s: float = 3600, token: bool = True
) -> Confirmation:
    confirmation = await created(store)
    approval = first_approval(confirmation.user, expires_in_s=expires_in_s)
    decided = await store.decide(
        confirmation.confirmation_id, confirmation.user, S.AWAITING_APPROVAL, None, approval
    )
    assert decided.status is S.AWAITING_APPROVAL
    if token:
        second_wait_holds_its_token(store, confirmation.confirmation_id)
    stored = await store.get(confirmation.confirmation_id)
    assert stored is not None
    return stored


async def test_the_first_approval_is_kept_and_cannot_be_given_twice(
    confirmations: ConfirmationStore,
):
    card = await approved_once(confirmations)
    assert card.approval is not None
    assert (card.approval.by, card.approval.role, card.approval.token) == (
        card.user,
        "admin",
        "jwt-of-requester",
    )
    assert card.approval.expires_at == float(int(card.approval.expires_at))
    assert card.approval_token == "second-token"
    again = first_approval(card.user)
    for status, approval in ((S.AWAITING_APPROVAL, again), (S.CONFIRMED, None)):
        with pytest.raises(ConfirmationDecided):
            await confirmations.decide(card.confirmation_id, card.user, status, None, approval)


async def test_a_card_approved_once_can_still_be_denied_by_its_requester(
    confirmations: ConfirmationStore,
):
    card = await approved_once(confirmations)
    decided = await confirmations.decide(card.confirmation_id, card.user, S.DENIED)
    assert decided.status is S.DENIED
    with pytest.raises(ConfirmationDecided):
        await confirmations.decide_second(card.confirmation_id, "boris.admin", S.CONFIRMED)


async def test_the_second_decision_is_another_persons_and_taken_once(
    confirmations: ConfirmationStore,
):
    waiting = await approved_once(confirmations, token=False)
    # Before the second wait holds its token there is nothing to decide
    with pytest.raises(ConfirmationNotFound):
        await confirmations.decide_second(waiting.confirmation_id, "boris.admin", S.CONFIRMED)
    second_wait_holds_its_token(confirmations, waiting.confirmation_id)
    listed = [c.confirmation_id for c in await confirmations.awaiting_approval()]
    assert waiting.confirmation_id in listed
    with pytest.raises(OwnSecondApproval):
        await confirmations.decide_second(waiting.confirmation_id, waiting.user, S.CONFIRMED)
    decided = await confirmations.decide_second(waiting.confirmation_id, "boris.admin", S.CONFIRMED)
    assert (decided.status, decided.second_approver) == (S.CONFIRMED, "boris.admin")
    for status in (S.CONFIRMED, S.DENIED):
        with pytest.raises(ConfirmationDecided):
            await confirmations.decide_second(waiting.confirmation_id, "vera.admin", status)
    listed = [c.confirmation_id for c in await confirmations.awaiting_approval()]
    assert waiting.confirmation_id not in listed


async def test_a_second_approval_after_its_deadline_is_refused(confirmations: ConfirmationStore):
    card = await approved_once(confirmations, expires_in_s=-5)
    with pytest.raises(ConfirmationExpired):
        await confirmations.decide_second(card.confirmation_id, "boris.admin", S.CONFIRMED)
    stored = await confirmations.get(card.confirmation_id)
    assert stored is not None
    assert stored.status is S.AWAITING_APPROVAL
