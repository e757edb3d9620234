"""Shared fixtures: the anyio backend, the policy objects and signing keys used across the suite."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import settings

from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS, EnvironmentRegistry
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_policy import ToolPolicy
from tests.support.fuzzing import PROFILE

settings.load_profile(PROFILE)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def environments() -> EnvironmentRegistry:
    return DEFAULT_ENVIRONMENTS


@pytest.fixture(scope="session")
def policy(environments: EnvironmentRegistry) -> ToolPolicy:
    return ToolPolicy(CATALOG, environments)


@pytest.fixture(scope="session")
def rsa_private_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)
