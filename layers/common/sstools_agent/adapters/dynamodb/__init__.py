"""DynamoDB adapters, one module per responsibility.

The conversations table (template.yaml `ConversationsTable`) holds, under PK `CONV#<id>`:
- `META`: the record, the turn lock (`locked_by`, `locked_until`: a lease taken with a
  conditional write, so a second tab gets 409, never an interleaved turn) and a cancel request;
- `MSG#<seq>#<n>`: history messages, written at each turn;
- `EVT#<first seq>`: stream events in chunks, for replay after a reconnect;
- `IDEM#<key>`: a message appended through the REST API under a client's idempotency key;
and under PK `CONF#<id>` the confirmations. Owners find their conversations through the
`ByOwner` index (newest first by `updated_at`). The audit table is the audit function's.

- `table`: the table handle, worker threads, and the old item of a refused conditional write;
- `items`: keys and the item <-> domain mappings (and the page tokens);
- `records`: create, read, archive, and the REST API's idempotent append;
- `turns`: the turn lock, cancel requests, stream events and the turn's history;
- `queries`: history and listings, page by page;
- `conversations`: `DynamoDBConversationStore`, the three above on one table;
- `confirmations`: `DynamoDBConfirmationStore`;
- `audit_table`: `DynamoDBAuditRecordStore`.

A refused conditional write asks for the item as it was (`ReturnValuesOnConditionCheckFailure`)
so the refusal is explained without a second read.
"""
