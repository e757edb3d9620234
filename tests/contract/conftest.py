"""The store contract: every backend of a storage port runs the same cases.

Each fixture is parametrised over the backends (the in-memory one, and DynamoDB on a moto server
holding the template's tables), so a new backend joins by adding one parameter here. moto runs in
its own process: its state is per process, and the suite's other stacks must not meet these
tables.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from local.moto import aws_subprocess_stack
from sstools_agent.adapters.dynamodb.confirmations import DynamoDBConfirmationStore
from sstools_agent.adapters.dynamodb.conversations import DynamoDBConversationStore
from sstools_agent.adapters.memory import InMemoryConfirmationStore, InMemoryConversationStore
from sstools_agent.domain.ports import ConfirmationStore, ConversationStore
from sstools_agent.settings import Settings

BACKENDS = ["memory", "dynamodb"]


@pytest.fixture(scope="session")
def moto_settings() -> Iterator[Settings]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    with aws_subprocess_stack() as (endpoint, _):
        yield Settings(aws_endpoint_url=endpoint)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> ConversationStore:
    if request.param == "memory":
        return InMemoryConversationStore()
    settings: Settings = request.getfixturevalue("moto_settings")
    return DynamoDBConversationStore(
        settings.conversations_table,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )


@pytest.fixture(params=BACKENDS)
def confirmations(request: pytest.FixtureRequest) -> ConfirmationStore:
    if request.param == "memory":
        return InMemoryConfirmationStore()
    settings: Settings = request.getfixturevalue("moto_settings")
    return DynamoDBConfirmationStore(
        settings.conversations_table,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )
