"""Settings: read from the environment once, typed, with defaults that run the local stack."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sstools_agent.domain.environments import EnvironmentTier
from sstools_agent.settings import Settings
from sstools_agent.wiring.adapters import tool_policy_from, user_verifier_from


def test_defaults_run_the_local_stack():
    settings = Settings(_env_file=None)
    assert settings.environments().ids == ("ss-dev", "staging", "prod")
    assert settings.tool_timeout_s == 30
    assert settings.tool_retry_delay_s == 1
    assert settings.tool_output_budget_chars == 4000


def test_environment_variables_are_parsed(monkeypatch):
    monkeypatch.setenv("KNOWN_ENVIRONMENTS", "dev-a=dev, qa=staging ,live=prod")
    monkeypatch.setenv("CONFIRM_READ_TOOLS", "search_dashboards, get_health_summary")
    monkeypatch.setenv("TOOL_TIMEOUT_S", "12.5")
    settings = Settings()
    live = settings.environments().get("live")
    assert live is not None
    assert live.tier is EnvironmentTier.PROD
    assert settings.confirm_read_tools == ["search_dashboards", "get_health_summary"]
    assert settings.tool_timeout_s == 12.5
    policy = tool_policy_from(settings)
    assert policy.confirm_reads == {"search_dashboards", "get_health_summary"}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("KNOWN_ENVIRONMENTS", "ss-dev"),
        ("KNOWN_ENVIRONMENTS", "ss-dev=qa"),
        ("KNOWN_ENVIRONMENTS", ""),
        ("TOOL_TIMEOUT_S", "0"),
        ("JWT_ALGORITHM", "none"),
    ],
)
def test_bad_configuration_fails_at_entry(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        Settings()


def test_the_local_secret_is_refused_outside_the_local_stack(monkeypatch):
    monkeypatch.setenv("STAGE", "prod")
    with pytest.raises(ValidationError, match="JWT_HS256_SECRET"):
        Settings()
    monkeypatch.setenv("JWT_HS256_SECRET", "a-real-secret-from-secrets-manager-0123456789")
    assert Settings().stage == "prod"


def test_rs256_needs_a_jwks_url(monkeypatch):
    monkeypatch.setenv("JWT_ALGORITHM", "RS256")
    with pytest.raises(ValueError, match="JWT_JWKS_URL"):
        user_verifier_from(Settings())
