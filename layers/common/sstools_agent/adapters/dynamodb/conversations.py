"""`DynamoDBConversationStore`: records, the turn lock and queries on one table."""

from __future__ import annotations

from sstools_agent.adapters.dynamodb.queries import ConversationQueries
from sstools_agent.adapters.dynamodb.records import ConversationRecords
from sstools_agent.adapters.dynamodb.turns import TurnLock


class DynamoDBConversationStore(ConversationRecords, TurnLock, ConversationQueries):
    """`domain.ports.ConversationStore` on the conversations table."""
