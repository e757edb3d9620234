"""The policy set in force: read from the team's object, cached for a short TTL, validated
before use. A set that fails validation (or an object that cannot be read) is refused with an
ERROR log line, and the last good set stays; with no good set yet, that is the shipped one."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from sstools_agent.domain.cedar_policy import (
    CompiledPolicies,
    InvalidPolicySet,
    cedar_schema,
    compile_policies,
    shipped_policy_text,
)

if TYPE_CHECKING:
    from sstools_agent.domain.ports import PolicyObjectReader

logger = logging.getLogger(__name__)

POLICY_TTL_S: Final = 60.0
"""How long a read policy set is used before the object is read again."""
POLICY_REFUSED: Final = "policy set refused"
"""The start of the ERROR line a refused set logs (the template's metric filter counts it)."""


@dataclass(frozen=True, slots=True)
class PolicyObject:
    """The stored policy set: its text and the object's version."""

    text: str
    version: str


class PolicyObjectUnreadable(Exception):
    """The policy object could not be read (missing, no permission, the store failing)."""


class ReloadingPolicies:
    """`PolicySource` over the team's policy object."""

    def __init__(
        self,
        reader: PolicyObjectReader,
        tools: Sequence[str],
        *,
        ttl_s: float = POLICY_TTL_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reader = reader
        self.schema = cedar_schema(tools)
        self.ttl_s = ttl_s
        self.monotonic = monotonic
        self._good = compile_policies(shipped_policy_text(), self.schema)
        self.version: str | None = None
        """The object version in force (None: the shipped set)."""
        self._read_at: float | None = None
        self._lock = threading.Lock()

    def current(self) -> CompiledPolicies:
        """The set in force, read again once the TTL has passed."""
        now = self.monotonic()
        if self._read_at is not None and now - self._read_at < self.ttl_s:
            return self._good
        with self._lock:
            if self._read_at is None or now - self._read_at >= self.ttl_s:
                self._read_at = now
                self._reload()
        return self._good

    def _reload(self) -> None:
        try:
            stored = self.reader.read()
        except PolicyObjectUnreadable as error:
            logger.error(
                "%s: the policy object cannot be read (%s); keeping version %s",
                POLICY_REFUSED,
                error,
                self.version or "shipped",
            )
            return
        if stored.version == self.version:
            return
        try:
            self._good = compile_policies(stored.text, self.schema)
        except InvalidPolicySet as invalid:
            logger.error(
                "%s: version %s fails validation; keeping version %s: %s",
                POLICY_REFUSED,
                stored.version,
                self.version or "shipped",
                "; ".join(invalid.errors),
            )
            return
        logger.info("policy set version %s in force", stored.version)
        self.version = stored.version
