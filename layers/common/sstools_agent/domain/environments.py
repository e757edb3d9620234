"""Known ss-tools environments and the tier each belongs to."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final


class EnvironmentTier(StrEnum):
    """How much is at stake in an environment; guardrails and roles depend on it."""

    DEV = "dev"
    STAGING = "staging"
    PROD = "prod"


@dataclass(frozen=True, slots=True)
class Environment:
    """One Superset environment managed by ss-tools, such as `ss-dev` or `prod`."""

    env_id: str
    tier: EnvironmentTier


class EnvironmentRegistry:
    """The environments this deployment knows; anything else is rejected as unknown."""

    def __init__(self, environments: Iterable[Environment]) -> None:
        self._by_id: dict[str, Environment] = {}
        for environment in environments:
            if environment.env_id in self._by_id:
                raise ValueError(f"environment {environment.env_id!r} is declared twice")
            self._by_id[environment.env_id] = environment
        if not self._by_id:
            raise ValueError("at least one environment must be known")

    @classmethod
    def from_tiers(cls, tiers: Mapping[str, str]) -> EnvironmentRegistry:
        """Builds a registry from `{env_id: tier}`, e.g. `{"ss-dev": "dev", "prod": "prod"}`."""
        return cls(Environment(env_id, EnvironmentTier(tier)) for env_id, tier in tiers.items())

    def get(self, env_id: str) -> Environment | None:
        """The environment with this id, or None when it is not known."""
        return self._by_id.get(env_id)

    def __contains__(self, env_id: object) -> bool:
        return env_id in self._by_id

    def __iter__(self) -> Iterator[Environment]:
        return iter(self._by_id.values())

    @property
    def ids(self) -> tuple[str, ...]:
        """Environment ids in declaration order."""
        return tuple(self._by_id)


DEFAULT_ENVIRONMENT_TIERS: Final[Mapping[str, str]] = MappingProxyType(
    {"ss-dev": "dev", "staging": "staging", "prod": "prod"}
)
"""The three environments of the seed as `{env_id: tier}` (the default of `KNOWN_ENVIRONMENTS`)."""

DEFAULT_ENVIRONMENTS = EnvironmentRegistry.from_tiers(DEFAULT_ENVIRONMENT_TIERS)
"""The three environments of the seed; deployments override them through settings."""
