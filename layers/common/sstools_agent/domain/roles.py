"""User roles and what each tool requires of them, per environment tier."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from sstools_agent.domain.environments import EnvironmentTier


class Role(StrEnum):
    """ss-tools roles, from least to most privileged."""

    ANALYST = "analyst"
    ENGINEER = "engineer"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        """Position in the privilege order: a higher rank may do all a lower one may."""
        return _ROLE_ORDER.index(self)

    def satisfies(self, required: Role) -> bool:
        """Whether this role meets `required`."""
        return self.rank >= required.rank

    @classmethod
    def highest_of(cls, names: Iterable[str]) -> Role | None:
        """The most privileged known role among `names`; unknown names are ignored."""
        known = [cls(name) for name in names if name in cls._value2member_map_]
        return max(known, key=lambda role: role.rank, default=None)


_ROLE_ORDER = (Role.ANALYST, Role.ENGINEER, Role.ADMIN)


@dataclass(frozen=True, slots=True)
class RoleRequirement:
    """The least role a tool call needs in each environment tier."""

    dev: Role
    staging: Role
    prod: Role

    @classmethod
    def everywhere(cls, role: Role) -> RoleRequirement:
        """The same role in every tier (and for calls that touch no environment)."""
        return cls(dev=role, staging=role, prod=role)

    def for_tier(self, tier: EnvironmentTier | None) -> Role:
        """The role needed in `tier`; with no known tier, the strictest of all tiers."""
        if tier is None:
            return self.strictest
        return {
            EnvironmentTier.DEV: self.dev,
            EnvironmentTier.STAGING: self.staging,
            EnvironmentTier.PROD: self.prod,
        }[tier]

    @property
    def strictest(self) -> Role:
        """The most privileged role this requirement asks for anywhere."""
        return max((self.dev, self.staging, self.prod), key=lambda role: role.rank)

    @property
    def most_lenient(self) -> Role:
        """The least privileged role that can make at least some call."""
        return min((self.dev, self.staging, self.prod), key=lambda role: role.rank)


READ_ACCESS = RoleRequirement.everywhere(Role.ANALYST)
"""Reads: every role, every environment."""

WRITE_ACCESS = RoleRequirement(dev=Role.ENGINEER, staging=Role.ENGINEER, prod=Role.ADMIN)
"""Writes: engineers in ss-dev and staging, admins also in prod."""

ADMIN_ONLY = RoleRequirement.everywhere(Role.ADMIN)
"""Backups and maintenance: admins only, whatever the environment."""
