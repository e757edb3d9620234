"""The agent about itself: what it can do for this user on this page."""

from __future__ import annotations

from typing import Final

from sstools_agent.domain.catalog_types import (
    EnvironmentSource,
    IntentTag,
    Operation,
    Routing,
    ToolSpec,
)
from sstools_agent.domain.roles import READ_ACCESS
from sstools_agent.domain.tools.arguments import (
    EVERY_OBJECT,
    NoArgs,
)

_SHOW_CAPABILITIES_WORDS: Final = (
    "что ты умеешь",
    "что умеешь",
    "help",
    "capabilit",
    "возможност",
    "what can you",
)
"""Words that route to show_capabilities."""


TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        name="show_capabilities",
        description="List what the agent can do for this user on this page.",
        label_ru="что я умею на этой странице",
        args_model=NoArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.NONE,
        affinity=EVERY_OBJECT,
        routing=Routing(
            keywords=(
                *_SHOW_CAPABILITIES_WORDS,
                "помощ",
                "помоги",
                "what do you do",
                "команды",
                "commands",
            ),
            examples=(
                "что ты умеешь делать?",
                "what can you help me with?",
            ),
        ),
        intents=frozenset({IntentTag.CAPABILITIES}),
    ),
)
