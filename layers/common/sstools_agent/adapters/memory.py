"""In-memory adapters of every storage port (and a tool runner), for tests and local experiments.

Each one keeps the semantics of its DynamoDB (or AWS) twin, which the contract suite
(tests/contract/) checks against both: conditional writes refuse exactly when the table's
conditions would, leases lapse by the clock, a card leaves `pending` once, the execution journal
only moves forwards. Each takes `fail_on`, the names of the operations that should fail
(`InMemoryConversationStore(fail_on={"append_events"})`); the set may change while a test runs.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sstools_agent.adapters.dynamodb.items import bounded_json, event_chunks
from sstools_agent.domain.attachments import PresignedUpload, StoredFile
from sstools_agent.domain.audit import AuditRecord, EmissionClock
from sstools_agent.domain.confirmations import (
    Confirmation,
    ConfirmationEdit,
    ConfirmationStatus,
    ExecutionState,
    FirstApproval,
    decide_refusal,
    execution_may_follow,
    second_decision_refusal,
)
from sstools_agent.domain.conversations import (
    Conversation,
    ConversationNotFound,
    IdempotencyKeyReused,
    InvalidPageToken,
    Page,
    StoredMessage,
    search_words,
    turn_refusal,
)
from sstools_agent.domain.gradio_queue import RUNNING_FOR_S, GradioTurnState, QueuedTurn
from sstools_agent.domain.policy_loading import PolicyObject, PolicyObjectUnreadable
from sstools_agent.domain.ports import BlobStoreError, StoredEvent
from sstools_agent.domain.tool_calls import ResolvedToolCall
from sstools_agent.domain.tool_runs import ToolCallOutcome, UpstreamCredentials

audit_logger = logging.getLogger("sstools_agent.audit")


class SimulatedFailure(Exception):
    """An operation a test asked to fail (`fail_on`), as a storage outage would."""


class FailureSwitches:
    """`fail_on`: the operations that raise `SimulatedFailure` (or the port's own error)."""

    def __init__(self, fail_on: Iterable[str] = ()) -> None:
        self.fail_on: set[str] = set(fail_on)

    def _check(self, operation: str) -> None:
        if operation in self.fail_on:
            raise SimulatedFailure(operation)


def _token(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _untoken(token: str) -> Any:
    try:
        return json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode())
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidPageToken("not a page token of this store") from None


def _ms(epoch_s: float | None) -> int:
    """A lease time as the table keeps it (whole milliseconds)."""
    return round((epoch_s or 0) * 1000)


def _stored(message: StoredMessage) -> str:
    """The message as the table keeps it (JSON, bounded by the item limit)."""
    return bounded_json(asdict(message))


def _read(text: str, key: str) -> StoredMessage:
    seq = key.split("#")[1]
    return StoredMessage.from_record(
        json.loads(text), key=key, seq=int(seq) if seq.isdigit() else 0
    )


@dataclass
class _Thread:
    """One conversation: its record, cancel request, history, events and idempotency keys."""

    record: Conversation
    cancel_run: str | None = None
    messages: dict[str, str] = field(default_factory=dict)
    """Sort key (`MSG#<seq>#<n>`) -> the message's JSON."""
    events: dict[int, dict[str, Any]] = field(default_factory=dict)
    idempotency: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Idempotency key -> (fingerprint, the message's JSON)."""


class InMemoryConversationStore(FailureSwitches):
    """`domain.ports.ConversationStore` in dicts (times from `clock`, epoch seconds)."""

    def __init__(
        self, *, fail_on: Iterable[str] = (), clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(fail_on)
        self.clock = clock
        self._threads: dict[str, _Thread] = {}

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _thread(self, conversation_id: str) -> _Thread | None:
        return self._threads.get(conversation_id)

    def _free(self, thread: _Thread, owner: str) -> bool:
        """LOCK_CONDITION: the owner's, live, and no lease holds it."""
        if thread.record.owner != owner or thread.record.is_archived:
            return False
        record = thread.record
        return record.locked_by is None or _ms(record.locked_until) < self._now_ms()

    async def get(self, conversation_id: str) -> Conversation | None:
        self._check("get")
        thread = self._thread(conversation_id)
        return thread.record if thread else None

    async def get_owned(self, conversation_id: str, owner: str) -> Conversation:
        self._check("get_owned")
        thread = self._thread(conversation_id)
        if thread is None or thread.record.owner != owner:
            raise ConversationNotFound(conversation_id)
        return thread.record

    @staticmethod
    def _fresh(conversation: Conversation) -> Conversation:
        context = conversation.ui_context
        return Conversation(
            conversation.conversation_id,
            conversation.owner,
            conversation.title,
            conversation.created_at,
            conversation.updated_at,
            ui_context=json.loads(json.dumps(context)) if context is not None else None,
            subject=conversation.subject,
        )

    async def create(self, conversation: Conversation) -> Conversation:
        self._check("create")
        if conversation.conversation_id in self._threads:
            raise SimulatedFailure(f"conversation {conversation.conversation_id} exists")
        record = self._fresh(conversation)
        self._threads[conversation.conversation_id] = _Thread(record)
        return record

    async def archive(self, conversation_id: str, owner: str) -> Conversation:
        self._check("archive")
        thread = self._thread(conversation_id)
        if thread is None or thread.record.owner != owner:
            raise ConversationNotFound(conversation_id)
        thread.record = replace(thread.record, is_archived=True)
        await self.request_cancel(conversation_id, owner)
        return thread.record

    async def start_turn(
        self, conversation: Conversation, run_id: str, lease_s: float, *, new: bool
    ) -> Conversation:
        self._check("start_turn")
        now_ms = self._now_ms()
        conversation_id, owner = conversation.conversation_id, conversation.owner
        thread = self._thread(conversation_id)
        if new and thread is None:
            thread = _Thread(self._fresh(conversation))
            self._threads[conversation_id] = thread
        elif new or thread is None or not self._free(thread, owner):
            raise turn_refusal(conversation_id, owner, thread.record if thread else None)
        else:
            thread.cancel_run = None
            if thread.record.locked_by is not None and thread.events:  # a run that never ended
                last = max(thread.record.last_seq, *thread.events)
                thread.record = replace(thread.record, last_seq=last)
        context = self._fresh(conversation).ui_context
        if context is None:  # a turn that names no page keeps the stored one
            context = thread.record.ui_context
        thread.record = replace(
            thread.record,
            ui_context=context,
            locked_by=run_id,
            locked_until=(now_ms + int(lease_s * 1000)) / 1000,
            locked_at=now_ms / 1000,
        )
        return thread.record

    async def renew(self, conversation_id: str, run_id: str, lease_s: float) -> None:
        self._check("renew")
        thread = self._thread(conversation_id)
        if thread is not None and thread.record.locked_by == run_id:
            until = int((self.clock() + lease_s) * 1000) / 1000
            thread.record = replace(thread.record, locked_until=until)

    async def finish_turn(
        self, conversation_id: str, run_id: str, last_seq: int, updated_at: str
    ) -> None:
        self._check("finish_turn")
        thread = self._thread(conversation_id)
        if thread is None or thread.record.locked_by != run_id:
            return
        thread.record = replace(
            thread.record,
            last_seq=last_seq,
            updated_at=updated_at,
            locked_by=None,
            locked_until=None,
            locked_at=None,
        )
        thread.cancel_run = None

    async def request_cancel(self, conversation_id: str, owner: str) -> bool:
        self._check("request_cancel")
        thread = self._thread(conversation_id)
        if thread is None or thread.record.owner != owner or thread.record.locked_by is None:
            return False
        if _ms(thread.record.locked_until) <= self._now_ms():
            return False
        thread.cancel_run = thread.record.locked_by
        return True

    async def cancel_requested(self, conversation_id: str, run_id: str) -> bool:
        self._check("cancel_requested")
        thread = self._thread(conversation_id)
        return thread is not None and thread.cancel_run == run_id

    async def set_pending_confirmation(self, conversation_id: str, confirmation_id: str) -> None:
        self._check("set_pending_confirmation")
        thread = self._thread(conversation_id)
        if thread is not None:
            thread.record = replace(thread.record, pending_confirmation_id=confirmation_id)

    async def clear_pending_confirmation(self, conversation_id: str, confirmation_id: str) -> None:
        self._check("clear_pending_confirmation")
        thread = self._thread(conversation_id)
        if thread is not None and thread.record.pending_confirmation_id == confirmation_id:
            thread.record = replace(thread.record, pending_confirmation_id=None)

    async def append_events(
        self, conversation_id: str, run_id: str, events: Sequence[StoredEvent]
    ) -> None:
        self._check("append_events")
        thread = self._thread(conversation_id)
        if thread is None:
            return
        for chunk in event_chunks(events):  # the same bound on each event's size
            for seq, wire in chunk:
                thread.events[seq] = json.loads(json.dumps(wire, ensure_ascii=False, default=str))

    async def events_after(self, conversation_id: str, seq: int) -> list[StoredEvent]:
        self._check("events_after")
        thread = self._thread(conversation_id)
        if thread is None:
            return []
        return sorted((s, wire) for s, wire in thread.events.items() if s > seq)

    async def add_messages(self, conversation_id: str, messages: Sequence[StoredMessage]) -> None:
        self._check("add_messages")
        stored = {
            f"MSG#{message.seq:012d}#{index:03d}": _stored(message)
            for index, message in enumerate(messages)
        }
        thread = self._thread(conversation_id)
        if thread is not None:
            thread.messages |= stored

    async def append_message(
        self,
        conversation_id: str,
        owner: str,
        message: StoredMessage,
        *,
        idempotency_key: str,
        fingerprint: str,
    ) -> tuple[StoredMessage, bool]:
        self._check("append_message")
        thread = self._thread(conversation_id)
        kept = thread.idempotency.get(idempotency_key) if thread else None
        if kept is not None:
            if kept[0] != fingerprint:
                raise IdempotencyKeyReused(idempotency_key)
            return _read(kept[1], f"IDEM#{idempotency_key}"), True
        if thread is None or not self._free(thread, owner):
            raise turn_refusal(conversation_id, owner, thread.record if thread else None)
        seq = thread.record.last_seq + 1
        message = replace(message, seq=seq)
        text = _stored(message)
        thread.record = replace(thread.record, last_seq=seq, updated_at=message.created_at)
        thread.idempotency[idempotency_key] = (fingerprint, text)
        thread.messages[f"MSG#{seq:012d}#000"] = text
        return message, False

    async def messages(self, conversation_id: str) -> list[StoredMessage]:
        self._check("messages")
        thread = self._thread(conversation_id)
        stored = thread.messages if thread else {}
        return [_read(stored[key], key) for key in sorted(stored)]

    async def list_owned(
        self,
        owner: str,
        *,
        limit: int,
        after: str | None,
        search: str | None,
        include_archived: bool,
    ) -> Page[Conversation]:
        self._check("list_owned")
        wanted = search_words(search or "")
        records = sorted(
            (
                thread.record
                for thread in self._threads.values()
                if thread.record.owner == owner
                and (include_archived or not thread.record.is_archived)
                and all(word in thread.record.search_key() for word in wanted)
            ),
            key=lambda record: (record.updated_at, record.conversation_id),
            reverse=True,
        )
        if after is not None:
            position = _untoken(after)
            if not isinstance(position, list) or len(position) != 3 or position[0] != owner:
                raise InvalidPageToken("not a page token of this listing")
            start = (str(position[1]), str(position[2]))
            records = [r for r in records if (r.updated_at, r.conversation_id) < start]
        page = records[:limit]
        token = None
        if len(records) > limit:
            token = _token([owner, page[-1].updated_at, page[-1].conversation_id])
        return Page(page, token)

    async def message_page(
        self, conversation_id: str, *, limit: int, after: str | None
    ) -> Page[StoredMessage]:
        self._check("message_page")
        thread = self._thread(conversation_id)
        stored = thread.messages if thread else {}
        keys = sorted(stored)
        if after is not None:
            position = _untoken(after)
            if (
                not isinstance(position, list)
                or len(position) != 2
                or position[0] != conversation_id
                or not str(position[1]).startswith("MSG#")
            ):
                raise InvalidPageToken("position outside this conversation's history")
            keys = [key for key in keys if key > str(position[1])]
        page = keys[:limit]
        token = _token([conversation_id, page[-1]]) if len(keys) > limit else None
        return Page([_read(stored[key], key) for key in page], token)


class InMemoryConfirmationStore(FailureSwitches):
    """`domain.ports.ConfirmationStore` in a dict; `expire` and `set_task_token` do what the
    state machine does to the item (its timer, its wait state)."""

    def __init__(
        self, *, fail_on: Iterable[str] = (), clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(fail_on)
        self.clock = clock
        self._cards: dict[str, Confirmation] = {}

    async def create(self, confirmation: Confirmation) -> None:
        self._check("create")
        if confirmation.confirmation_id in self._cards:
            raise SimulatedFailure(f"confirmation {confirmation.confirmation_id} exists")
        # The table keeps whole seconds.
        self._cards[confirmation.confirmation_id] = replace(
            confirmation, expires_at=float(int(confirmation.expires_at))
        )

    async def get(self, confirmation_id: str) -> Confirmation | None:
        self._check("get")
        return self._cards.get(confirmation_id)

    async def decide(
        self,
        confirmation_id: str,
        user: str,
        status: ConfirmationStatus,
        edit: ConfirmationEdit | None = None,
        approval: FirstApproval | None = None,
    ) -> Confirmation:
        self._check("decide")
        now = self.clock()
        current = self._cards.get(confirmation_id)
        reopened = approval is None and status is not ConfirmationStatus.CONFIRMED
        if (
            current is None
            or current.user != user
            or not (
                (current.status is ConfirmationStatus.PENDING and current.expires_at > int(now))
                or (reopened and current.open and not current.expired(now))
            )
        ):
            return decide_refusal(confirmation_id, user, current, now)
        if approval is not None:  # the table keeps whole seconds
            approval = replace(approval, expires_at=float(int(approval.expires_at)))
        decided = replace(current, status=status, edit=edit, approval=approval or current.approval)
        self._cards[confirmation_id] = decided
        return decided

    async def decide_second(
        self, confirmation_id: str, approver: str, status: ConfirmationStatus
    ) -> Confirmation:
        self._check("decide_second")
        now = self.clock()
        current = self._cards.get(confirmation_id)
        if (
            current is None
            or current.approval is None
            or current.status is not ConfirmationStatus.AWAITING_APPROVAL
            or current.approval.by == approver
            or current.expired(now)
            or current.approval_token is None
        ):
            raise second_decision_refusal(confirmation_id, approver, current, now)
        decided = replace(current, status=status, second_approver=approver)
        self._cards[confirmation_id] = decided
        return decided

    async def awaiting_approval(self) -> list[Confirmation]:
        return [
            card
            for card in self._cards.values()
            if card.status is ConfirmationStatus.AWAITING_APPROVAL and card.approval_token
        ]

    async def record_execution(self, confirmation_id: str, state: ExecutionState) -> bool:
        self._check("record_execution")
        current = self._cards.get(confirmation_id)
        if current is None or not execution_may_follow(state, current.status, current.execution):
            return False
        self._cards[confirmation_id] = replace(current, execution=state)
        return True

    def set_task_token(self, confirmation_id: str, task_token: str) -> None:
        """What the state machine's wait state does: the card holds its task token."""
        current = self._cards.get(confirmation_id)
        if current is not None:
            self._cards[confirmation_id] = replace(current, task_token=task_token)

    def set_approval_token(self, confirmation_id: str, task_token: str) -> None:
        """What the state machine's second wait does: a card approved once holds its token."""
        current = self._cards.get(confirmation_id)
        if current is not None and current.status is ConfirmationStatus.AWAITING_APPROVAL:
            self._cards[confirmation_id] = replace(current, approval_token=task_token)

    def expire(self, confirmation_id: str) -> bool:
        """What the state machine's timer does: expired, only if still pending."""
        current = self._cards.get(confirmation_id)
        if current is None or current.status is not ConfirmationStatus.PENDING:
            return False
        self._cards[confirmation_id] = replace(current, status=ConfirmationStatus.EXPIRED)
        return True


class InMemoryConfirmationWorkflow(FailureSwitches):
    """`domain.ports.ConfirmationWorkflow` without Step Functions: a started card gets a task
    token in `store` (when given); `time_out` plays the timer; a token is handed back once."""

    def __init__(
        self, store: InMemoryConfirmationStore | None = None, *, fail_on: Iterable[str] = ()
    ) -> None:
        super().__init__(fail_on)
        self.store = store
        self.started: dict[str, int] = {}
        """Confirmation id -> timeout, for every execution started."""
        self.results: dict[str, str] = {}
        """Task token -> the result handed back."""
        self._open: dict[str, str] = {}

    async def start(self, confirmation: Confirmation, timeout_s: int) -> None:
        self._check("start")
        if confirmation.confirmation_id in self.started:  # an execution name is unique
            raise SimulatedFailure(f"execution {confirmation.confirmation_id} exists")
        self.started[confirmation.confirmation_id] = timeout_s
        token = f"token-{confirmation.confirmation_id}"
        self._open[token] = confirmation.confirmation_id
        if self.store is not None:
            self.store.set_task_token(confirmation.confirmation_id, token)

    async def hand_back(
        self, task_token: str, result: str, details: Mapping[str, Any] | None = None
    ) -> bool:
        self._check("hand_back")
        if self._open.pop(task_token, None) is None:
            return False
        self.results[task_token] = result
        return True

    def time_out(self, confirmation_id: str, *, card_expires: bool = True) -> None:
        """The wait timed out: the token is closed and the card expires if still pending
        (`card_expires=False`: the timer closed the token but lost the race for the card, as
        when a confirm's conditional write lands first)."""
        self._open = {t: c for t, c in self._open.items() if c != confirmation_id}
        if self.store is not None and card_expires:
            self.store.expire(confirmation_id)


class InMemoryGradioQueue(FailureSwitches):
    """`domain.ports.GradioQueue` in a dict keyed by (subject, session, event id): another
    subject's key never matches, as the table's partition by both never does."""

    def __init__(self, *, fail_on: Iterable[str] = ()) -> None:
        super().__init__(fail_on)
        self.turns: dict[tuple[str, str, str], QueuedTurn] = {}

    async def enqueue(self, turn: QueuedTurn) -> None:
        self._check("enqueue")
        self.turns[(turn.subject, turn.session, turn.event_id)] = turn

    async def claim(self, session: str, subject: str, now: float) -> list[QueuedTurn]:
        self._check("claim")
        waiting = sorted(
            (
                turn
                for (owner, held, _), turn in self.turns.items()
                if (owner, held) == (subject, session)
                and turn.state == GradioTurnState.QUEUED
                and turn.live(now)
            ),
            key=lambda turn: turn.queued_at,
        )
        for turn in waiting:
            claimed = replace(turn, state=GradioTurnState.CLAIMED, expires_at=now + RUNNING_FOR_S)
            self.turns[(subject, session, turn.event_id)] = claimed
        return waiting

    async def opened(self, session: str, subject: str, event_id: str, conversation_id: str) -> bool:
        self._check("opened")
        turn = self.turns.get((subject, session, event_id))
        if turn is None:
            return False
        self.turns[(subject, session, event_id)] = replace(turn, conversation_id=conversation_id)
        return turn.cancel_requested

    async def request_cancel(
        self, session: str, subject: str, event_id: str, now: float
    ) -> QueuedTurn | None:
        self._check("request_cancel")
        turn = self.turns.get((subject, session, event_id))
        if turn is None or not turn.live(now):
            return None
        marked = replace(turn, cancel_requested=True)
        self.turns[(subject, session, event_id)] = marked
        return marked

    async def finish(self, session: str, subject: str, event_id: str) -> None:
        self._check("finish")
        self.turns.pop((subject, session, event_id), None)


class MemoryAuditSink(FailureSwitches):
    """`domain.ports.AuditSink` in a list, stamped in emission order as the bus sink does; an
    `emit` switched to fail goes to the log, as a refused put does."""

    def __init__(self, *, fail_on: Iterable[str] = ()) -> None:
        super().__init__(fail_on)
        self.records: list[AuditRecord] = []
        self._clock = EmissionClock()

    def emit(self, record: AuditRecord) -> None:
        stamped = record.stamped(self._clock)
        if "emit" in self.fail_on:
            audit_logger.error("audit sink refused a record: %s", stamped.to_payload())
            return
        self.records.append(stamped)

    def flush(self) -> None:
        """Nothing is held: every record is in `records` when `emit` returns."""


class MemoryBlobStore(FailureSwitches):
    """`domain.ports.BlobStore` in a dict; a switched-off operation fails as a missing bucket
    does (BlobStoreError)."""

    def __init__(self, *, fail_on: Iterable[str] = ()) -> None:
        super().__init__(fail_on)
        self.blobs: dict[str, bytes] = {}

    def _check(self, operation: str) -> None:
        if operation in self.fail_on:
            raise BlobStoreError(f"memory://: {operation} failing on purpose")

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        self._check("put")
        self.blobs[key] = data

    async def get(self, key: str) -> bytes | None:
        self._check("get")
        return self.blobs.get(key)


class MemoryAttachmentStore(FailureSwitches):
    """`domain.ports.AttachmentStore` in a dict (`objects`: key -> bytes and what HEAD says);
    a switched-off operation fails as a missing bucket does (BlobStoreError)."""

    def __init__(self, *, fail_on: Iterable[str] = ()) -> None:
        super().__init__(fail_on)
        self.objects: dict[str, tuple[bytes, StoredFile]] = {}

    def _check(self, operation: str) -> None:
        if operation in self.fail_on:
            raise BlobStoreError(f"memory://: {operation} failing on purpose")

    async def presigned_upload(
        self, key: str, content_type: str, max_bytes: int, name: str, expires_s: int
    ) -> PresignedUpload:
        self._check("presigned_upload")
        return PresignedUpload(f"memory://{key}", {"key": key, "Content-Type": content_type})

    async def stat(self, key: str) -> StoredFile | None:
        self._check("stat")
        kept = self.objects.get(key)
        return kept[1] if kept else None

    async def read(self, key: str) -> bytes | None:
        self._check("read")
        kept = self.objects.get(key)
        return kept[0] if kept else None

    async def keep(self, key: str, data: bytes, content_type: str, name: str) -> None:
        self._check("keep")
        self.objects.setdefault(key, (data, StoredFile(len(data), content_type, name)))

    async def remove(self, key: str) -> None:
        self._check("remove")
        self.objects.pop(key, None)

    async def download_url(self, key: str, name: str, content_type: str, expires_s: int) -> str:
        self._check("download_url")
        return f"memory://download/{key}"


class InMemoryToolRunner:
    """`domain.ports.ToolRunner` without an upstream, for turns that need no wire: every call
    is answered at once with an object naming the call and the page's dashboard 10, and
    remembered. It has no contract case: the upstream's own behaviour is the sample upstream's
    (tests/integration), not a storage semantics to match."""

    def __init__(self) -> None:
        self.calls: list[ResolvedToolCall] = []

    @property
    def called(self) -> list[str]:
        """The tools called, in order."""
        return [call.spec.name for call in self.calls]

    async def call(
        self,
        call: ResolvedToolCall,
        credentials: UpstreamCredentials,
        request_id: str | None = None,
        *,
        timeout_s: float | None = None,
    ) -> ToolCallOutcome:
        self.calls.append(call)
        output = {"id": 10, "title": "Продажи", "status": "ok", "tool": call.spec.name}
        return ToolCallOutcome(output, 200, 1, 0.0)


class InMemoryPolicyReader:
    """`domain.ports.PolicyObjectReader` over a text a test sets; each `put` is a new version,
    and `unreadable` makes the next reads fail as a missing object would."""

    def __init__(self, text: str | None = None) -> None:
        self._object: PolicyObject | None = None
        self._versions = 0
        self.unreadable = False
        self.reads = 0
        if text is not None:
            self.put(text)

    def put(self, text: str) -> None:
        self._versions += 1
        self._object = PolicyObject(text, f"v{self._versions}")

    def read(self) -> PolicyObject:
        self.reads += 1
        if self.unreadable or self._object is None:
            raise PolicyObjectUnreadable("no policy object")
        return self._object
