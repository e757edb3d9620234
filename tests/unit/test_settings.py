"""Settings: read from the environment once, typed, with defaults that run the local stack."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from local.sam_template import load_template
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENT_TIERS, EnvironmentTier
from sstools_agent.settings import (
    ApiSettings,
    AuditFunctionSettings,
    ChatSettings,
    FunctionSettings,
    Settings,
)
from sstools_agent.wiring.adapters import user_verifier_from
from sstools_agent.wiring.chat import tool_policy_from
from tests.infrastructure.test_sam_build import Resolver


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


# What template.yaml sets for the Lambda runtime, Powertools and the Web Adapter, not for us.
PLATFORM_VARIABLES = {"AWS_LAMBDA_EXEC_WRAPPER", "PORT"}
PLATFORM_PREFIXES = ("POWERTOOLS_", "AWS_LWA_")
FUNCTION_SETTINGS: dict[str, type[FunctionSettings]] = {
    "ChatFunction": ChatSettings,
    "ApiFunction": ApiSettings,
    "AuditFunction": AuditFunctionSettings,
    "ExpiryFunction": ChatSettings,  # the chat function's collaborators, without the web
}


def template_variables(function: str) -> dict[str, str]:
    """The environment template.yaml gives `function` (Globals included), intrinsics resolved
    to the parameters' defaults and the resources' logical ids."""
    template = load_template()
    resolver = Resolver(template, {})
    variables = {
        **template["Globals"]["Function"]["Environment"]["Variables"],
        **template["Resources"][function]["Properties"]["Environment"]["Variables"],
    }
    return {name: str(resolver.value(value)) for name, value in variables.items()}


def ours(variables: dict[str, str]) -> dict[str, str]:
    return {
        name: value
        for name, value in variables.items()
        if name not in PLATFORM_VARIABLES and not name.startswith(PLATFORM_PREFIXES)
    }


def test_every_function_has_a_settings_class():
    resources = load_template()["Resources"].items()
    functions = {name for name, r in resources if r["Type"] == "AWS::Serverless::Function"}
    assert functions == set(FUNCTION_SETTINGS)


@pytest.mark.parametrize("function", sorted(FUNCTION_SETTINGS))
def test_every_variable_the_template_sets_is_a_field_of_the_functions_settings(function):
    fields = {name.upper() for name in FUNCTION_SETTINGS[function].model_fields}
    assert set(ours(template_variables(function))) - fields == set()


@pytest.mark.parametrize("function", sorted(FUNCTION_SETTINGS))
def test_each_functions_settings_load_from_the_template_variables(monkeypatch, function):
    # Given the variables the template sets (a deployed stage, the HS256 secret resolved)
    variables = ours(template_variables(function))
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    # When the function's settings are read at entry, they validate
    settings = FUNCTION_SETTINGS[function]()
    # Then every text variable arrived as it was set
    assert settings.stage == "dev"
    for name, value in variables.items():
        loaded = getattr(settings, name.lower())
        if isinstance(loaded, SecretStr):
            loaded = loaded.get_secret_value()
        if isinstance(loaded, str):
            assert loaded == value, name


def test_the_templates_parameter_defaults_are_the_settings_defaults():
    parameters = load_template()["Parameters"]
    settings = Settings(_env_file=None)
    assert parameters["KnownEnvironments"]["Default"] == ",".join(
        f"{env_id}={tier}" for env_id, tier in DEFAULT_ENVIRONMENT_TIERS.items()
    )
    assert settings.known_environments == dict(DEFAULT_ENVIRONMENT_TIERS)
    assert parameters["ConfirmationTimeoutSeconds"]["Default"] == settings.confirmation_timeout_s
