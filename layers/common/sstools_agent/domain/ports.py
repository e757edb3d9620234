"""The ports: what the chat, the REST API and the agent need from storage, workflows and tools.

Callers (chat/, rest/, agent/, functions/) depend on these Protocols only; adapters implement
them: DynamoDB, Step Functions, EventBridge, S3 and HTTP in production (`adapters/`), dicts in
tests (`adapters/memory.py`). Every backend of a store passes the same contract suite
(tests/contract/), so the semantics written here (conditional writes, leases, exactly-once
decisions, the execution journal) hold whichever backend runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from sstools_agent.domain.attachments import PresignedUpload, StoredFile
from sstools_agent.domain.audit import AuditRecord
from sstools_agent.domain.confirmations import (
    Confirmation,
    ConfirmationEdit,
    ConfirmationStatus,
    ExecutionState,
    FirstApproval,
)
from sstools_agent.domain.conversations import Conversation, Page, StoredMessage
from sstools_agent.domain.gradio_queue import QueuedTurn
from sstools_agent.domain.policy_loading import PolicyObject
from sstools_agent.domain.tool_runs import ToolCallOutcome, UpstreamCredentials

if TYPE_CHECKING:  # the REST API never resolves tool calls: no SQL parser at its start
    from sstools_agent.domain.tool_calls import ResolvedToolCall

StoredEvent = tuple[int, dict[str, Any]]
"""A stream event as stored for replay: its sequence number and its wire form."""


class ConversationStore(Protocol):
    """Conversation records, history, stream events and the per-conversation turn lock.

    The lock is a lease: a run takes it with a conditional write, renews it while it streams and
    releases it at the end; a lapsed lease may be taken by the next run. Refusals are domain
    exceptions (`ConversationNotFound`, `ConversationBusy`, `ConversationArchived`,
    `IdempotencyKeyReused`, `StoredItemTooLarge`, `InvalidPageToken`).
    """

    # Records.
    async def get(self, conversation_id: str) -> Conversation | None:
        """The record, whoever owns it (None when there is none)."""
        ...

    async def get_owned(self, conversation_id: str, owner: str) -> Conversation:
        """The owner's record; ConversationNotFound when missing or another user's."""
        ...

    async def create(self, conversation: Conversation) -> Conversation:
        """Stores a new, empty, unlocked conversation."""
        ...

    async def archive(self, conversation_id: str, owner: str) -> Conversation:
        """Soft delete (nothing is removed), and asks a running answer to stop;
        ConversationNotFound when missing or another user's."""
        ...

    # The turn lock.
    async def start_turn(
        self, conversation: Conversation, run_id: str, lease_s: float, *, new: bool
    ) -> Conversation:
        """Takes the lock for `run_id` (creating the record when `new`; a given `ui_context`
        replaces the stored one); ConversationBusy, ConversationArchived or
        ConversationNotFound, writing nothing, when it may not."""
        ...

    async def renew(self, conversation_id: str, run_id: str, lease_s: float) -> None:
        """Extends the run's lease (a no-op when the run no longer holds the lock)."""
        ...

    async def finish_turn(
        self, conversation_id: str, run_id: str, last_seq: int, updated_at: str
    ) -> None:
        """Records the turn's end and releases the lock (a no-op when the run lost it)."""
        ...

    async def request_cancel(self, conversation_id: str, owner: str) -> bool:
        """Asks the run holding the owner's conversation to stop; False when none holds it."""
        ...

    async def cancel_requested(self, conversation_id: str, run_id: str) -> bool:
        """Whether a cancel of this run was requested."""
        ...

    async def set_pending_confirmation(self, conversation_id: str, confirmation_id: str) -> None:
        """Remembers the card the conversation has open."""
        ...

    async def clear_pending_confirmation(self, conversation_id: str, confirmation_id: str) -> None:
        """Forgets the open card if it is still this one (a newer card stays)."""
        ...

    # Stream events and history.
    async def append_events(
        self, conversation_id: str, run_id: str, events: Sequence[StoredEvent]
    ) -> None:
        """Stores events for replay: one write per item their bytes need, nothing else (the
        record's `last_seq` moves when the turn ends; a turn that takes the lock from a run
        that never ended numbers its events after what that run stored)."""
        ...

    async def events_after(self, conversation_id: str, seq: int) -> list[StoredEvent]:
        """Stored events with a sequence number above `seq`, in order."""
        ...

    async def add_messages(self, conversation_id: str, messages: Sequence[StoredMessage]) -> None:
        """Writes history messages (a message's key is its `seq` and its place in the call);
        StoredItemTooLarge, with nothing written, when one would not fit an item."""
        ...

    async def append_message(
        self,
        conversation_id: str,
        owner: str,
        message: StoredMessage,
        *,
        idempotency_key: str,
        fingerprint: str,
    ) -> tuple[StoredMessage, bool]:
        """Appends `message` once per idempotency key, numbered after everything before it;
        returns it and whether it was appended earlier. Refuses (writing nothing) while a run
        holds the conversation, after it was archived, or for a key reused for another message."""
        ...

    # Queries.
    async def messages(self, conversation_id: str) -> list[StoredMessage]:
        """The whole history, in order."""
        ...

    async def list_owned(
        self,
        owner: str,
        *,
        limit: int,
        after: str | None,
        search: str | None,
        include_archived: bool,
    ) -> Page[Conversation]:
        """The owner's conversations, most recently updated first; `after` is a token of an
        earlier page of this listing."""
        ...

    async def message_page(
        self, conversation_id: str, *, limit: int, after: str | None
    ) -> Page[StoredMessage]:
        """A page of the history, oldest first; InvalidPageToken for a token of another
        conversation's history."""
        ...


class ConfirmationStore(Protocol):
    """Pending confirmations: created pending, decided exactly once, then journaled."""

    async def create(self, confirmation: Confirmation) -> None: ...

    async def get(self, confirmation_id: str) -> Confirmation | None: ...

    async def decide(
        self,
        confirmation_id: str,
        user: str,
        status: ConfirmationStatus,
        edit: ConfirmationEdit | None = None,
        approval: FirstApproval | None = None,
    ) -> Confirmation:
        """Moves a pending, unexpired card of `user` to `status`, exactly once, keeping `edit`
        (the arguments it was answered with) and `approval` (the first of two) in the same
        write; an expired card comes back unchanged; otherwise ConfirmationNotFound,
        ConfirmationForbidden or ConfirmationDecided (see `domain.confirmations.decide_refusal`).
        A card waiting for its second approver can still be denied or cancelled by its user."""
        ...

    async def decide_second(
        self, confirmation_id: str, approver: str, status: ConfirmationStatus
    ) -> Confirmation:
        """Moves a card approved once to `status` by `approver`, exactly once, while its second
        wait holds a token; the refusal of `domain.confirmations.second_decision_refusal`."""
        ...

    async def awaiting_approval(self) -> list[Confirmation]:
        """Every card approved once whose second wait holds a token."""
        ...

    async def record_execution(self, confirmation_id: str, state: ExecutionState) -> bool:
        """Moves a confirmed call's execution to `state` if it may follow the current one
        (`domain.confirmations.execution_may_follow`); False when it may not."""
        ...


class ConfirmationWorkflow(Protocol):
    """The timer behind a pending card: it holds a task token and expires the card."""

    async def start(self, confirmation: Confirmation, timeout_s: int) -> None: ...

    async def hand_back(
        self, task_token: str, result: str, details: Mapping[str, Any] | None = None
    ) -> bool:
        """Ends the wait with `result` (and `details` beside it); False when the token already
        timed out (or is unknown)."""
        ...


class GradioQueue(Protocol):
    """Turns joined through the Gradio endpoint, waiting for the stream that runs them
    (`domain.gradio_queue`). Every call names the subject: a turn is only ever its own."""

    async def enqueue(self, turn: QueuedTurn) -> None:
        """Records a joined turn, queued until `turn.expires_at`."""

    async def claim(self, session: str, subject: str, now: float) -> list[QueuedTurn]:
        """The session's queued, unexpired turns of `subject`, oldest first, each moved to
        claimed by one conditional write (so two streams never run one turn); the ones another
        stream claimed first are left out."""

    async def opened(self, session: str, subject: str, event_id: str, conversation_id: str) -> bool:
        """Records the conversation a claimed turn runs in; whether a cancel came before."""

    async def request_cancel(
        self, session: str, subject: str, event_id: str, now: float
    ) -> QueuedTurn | None:
        """Marks `subject`'s live turn as to be stopped, and returns it; None if there is none
        (another subject's, finished, expired or never joined)."""

    async def finish(self, session: str, subject: str, event_id: str) -> None:
        """Forgets a turn its stream ended."""


class AuditSink(Protocol):
    """Where the chat and the REST API send audit records; `emit` never raises or waits."""

    def emit(self, record: AuditRecord) -> None: ...

    def flush(self) -> None:
        """Waits until every record emitted so far has left the process (each function calls it
        before a response ends: Lambda freezes the container between invocations)."""
        ...


class AuditRecordStore(Protocol):
    """Where the audit function keeps each record once (append-only)."""

    def store_once(self, item: dict[str, Any]) -> bool:
        """Writes the item unless one with its key exists; False for a redelivery."""
        ...


class BlobStoreError(Exception):
    """The store could not keep or read a blob (the bucket is missing, access denied...)."""


class BlobStore(Protocol):
    """Blobs by key: tool outputs too large for a history item, kept whole."""

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        """Keeps `data` under `key` (replacing what was there); BlobStoreError on failure."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The blob under `key`, or None when there is none; BlobStoreError on failure."""
        ...


class AttachmentStore(Protocol):
    """Uploaded files by key (`domain.attachments` builds the keys): the browser uploads with a
    presigned POST, the chat reads and keeps what a message attaches, the owner downloads
    through a short-lived link. BlobStoreError when the store fails."""

    async def presigned_upload(
        self, key: str, content_type: str, max_bytes: int, name: str, expires_s: int
    ) -> PresignedUpload:
        """A POST whose policy fixes the key, the type, the name's metadata and a length of
        1 to `max_bytes` bytes."""
        ...

    async def stat(self, key: str) -> StoredFile | None:
        """The object's size, type and name, or None when there is none."""
        ...

    async def read(self, key: str) -> bytes | None:
        """The object's bytes, or None when there is none."""
        ...

    async def keep(self, key: str, data: bytes, content_type: str, name: str) -> None:
        """Writes `data` under `key` unless an object is there already (never replacing one:
        what is kept is exactly what was checked)."""
        ...

    async def remove(self, key: str) -> None:
        """Removes the object (nothing when there is none)."""
        ...

    async def download_url(self, key: str, name: str, content_type: str, expires_s: int) -> str:
        """A GET link that serves the object as an attachment named `name`."""
        ...


class ToolRunner(Protocol):
    """What the agent needs from an upstream: run one resolved call."""

    async def call(
        self,
        call: ResolvedToolCall,
        credentials: UpstreamCredentials,
        request_id: str | None = None,
        *,
        timeout_s: float | None = None,
    ) -> ToolCallOutcome:
        """Runs the call within the tool's timeout, or `timeout_s` when that is shorter;
        raises ToolCallFailed (TOOL_TIMEOUT when the deadline passes)."""
        ...


class PolicyObjectReader(Protocol):
    """The team's Cedar policy set as stored (a versioned S3 object in AWS): read synchronously,
    at most once per TTL (`domain.policy_loading.ReloadingPolicies`)."""

    def read(self) -> PolicyObject:
        """The object's text and version; raises PolicyObjectUnreadable."""
        ...
