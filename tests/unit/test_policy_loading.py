"""The policy set in force, read from the team's object: TTL, validation, the last good set."""

from __future__ import annotations

import logging
import threading
from typing import Any

from sstools_agent.adapters.memory import InMemoryPolicyReader
from sstools_agent.domain.cedar_policy import shipped_policy_text
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.policy_engine import PolicyEngine
from sstools_agent.domain.policy_loading import (
    POLICY_REFUSED,
    ReloadingPolicies,
)
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.ui_context import UIContext

NO_PROD_DEPLOYS = """
@id("no-prod-deploys")
forbid (principal, action == SsTools::Action::"deploy_dashboard", resource)
when { resource.tier == "prod" };
"""
INVALID = (
    '@id("typo")\npermit (principal, action == SsTools::Action::"deploy_dashbaord", resource);'
)
PROD_DEPLOY = {"dashboard_ids": [10], "source_env_id": "ss-dev", "target_env_id": "prod"}
PAGE = UIContext.model_validate(
    {"contextVersion": 1, "envId": "ss-dev"}, context={"environments": DEFAULT_ENVIRONMENTS}
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def loaded(reader: Any, clock: Clock) -> tuple[ReloadingPolicies, ToolPolicy]:
    source = ReloadingPolicies(reader, CATALOG.names, ttl_s=60, monotonic=clock)
    return source, ToolPolicy(CATALOG, DEFAULT_ENVIRONMENTS, engine=PolicyEngine(source))


def deploys_to_prod(policy: ToolPolicy) -> bool:
    decision = policy.evaluate(Role.ADMIN, "deploy_dashboard", PROD_DEPLOY, PAGE)
    return decision.permission.allowed


def test_the_objects_set_is_used_and_read_again_only_after_the_ttl():
    clock = Clock()
    reader = InMemoryPolicyReader(shipped_policy_text() + NO_PROD_DEPLOYS)
    source, policy = loaded(reader, clock)
    assert deploys_to_prod(policy) is False
    assert source.version == "v1"
    # A new version is not read within the TTL, and is in force after it
    reader.put(shipped_policy_text())
    clock.now = 59
    assert deploys_to_prod(policy) is False
    clock.now = 61
    deploys_to_prod(policy)  # starts the read (the set in force decides meanwhile)
    source.wait_for_reload()
    assert deploys_to_prod(policy) is True
    assert source.version == "v2"
    assert reader.reads == 2


def test_an_invalid_set_is_refused_and_the_last_good_one_stays(caplog):
    # Given a good set in force
    clock = Clock()
    reader = InMemoryPolicyReader(shipped_policy_text() + NO_PROD_DEPLOYS)
    source, policy = loaded(reader, clock)
    assert deploys_to_prod(policy) is False
    # When the team uploads a set that fails the schema (a tool name misspelt)
    reader.put(shipped_policy_text() + INVALID)
    clock.now = 61
    with caplog.at_level(logging.ERROR):
        deploys_to_prod(policy)
        source.wait_for_reload()
        allowed = deploys_to_prod(policy)
    # Then the last good set still decides, and an ERROR line says why
    assert allowed is False
    assert source.version == "v1"
    (line,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert line.getMessage().startswith(POLICY_REFUSED)
    assert "v2" in line.getMessage()
    assert "deploy_dashbaord" in line.getMessage()


def test_with_no_readable_object_the_shipped_set_decides(caplog):
    reader = InMemoryPolicyReader()
    with caplog.at_level(logging.ERROR):
        source, policy = loaded(reader, Clock())
        assert deploys_to_prod(policy) is True
    assert source.version is None
    assert any(r.getMessage().startswith(POLICY_REFUSED) for r in caplog.records)


class HeldReader(InMemoryPolicyReader):
    """A reader whose reads wait until the test lets them go (the S3 request in flight)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.held = False
        self.release = threading.Event()
        self.reading = threading.Event()

    def read(self) -> Any:
        if self.held:
            self.reading.set()
            self.release.wait(timeout=30)  # a bound on a hang, not what the test decides
        return super().read()


def test_a_reload_after_the_ttl_never_holds_the_caller():
    # Given a set read at start, and a newer version whose read hangs (S3 slow)
    clock = Clock()
    reader = HeldReader(shipped_policy_text() + NO_PROD_DEPLOYS)
    source, policy = loaded(reader, clock)
    assert reader.reads == 1  # read while the function initialises, not in a turn
    reader.put(shipped_policy_text())
    reader.held = True
    clock.now = 61
    # When a call is decided after the TTL, the read has begun elsewhere, and the call is
    # decided at once by the set in force (the event loop it runs on is not held)
    assert deploys_to_prod(policy) is False
    assert reader.reading.wait(timeout=30)
    assert source.version == "v1"
    # Then once the read lands, the new set decides
    reader.release.set()
    source.wait_for_reload()
    assert deploys_to_prod(policy) is True
    assert source.version == "v2"
