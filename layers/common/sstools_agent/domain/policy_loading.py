"""The policy set in force: read from the team's object, cached for a short TTL, validated
before use. A set that fails validation (or an object that cannot be read) is refused with an
ERROR log line, and the last good set stays; with no good set yet, that is the shipped one.

Decisions are made inside the chat's event loop, so a decision never waits for the object: it is
read once when the function initialises, and after each TTL by a thread of its own while the set
in force keeps deciding (a new version decides from the first call after its read lands)."""

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
DEFAULT_POLICY_OBJECT_KEY: Final = "policy.cedar"
"""The object's key in the team's bucket unless the template says otherwise."""
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
        on_refused: Callable[[], None] = lambda: None,
    ) -> None:
        self.reader = reader
        self.schema = cedar_schema(tools)
        self.ttl_s = ttl_s
        self.monotonic = monotonic
        self.on_refused = on_refused
        """Told of each refusal (the refused-set metric)."""
        self._good = compile_policies(shipped_policy_text(), self.schema)
        self.version: str | None = None
        """The object version in force (None: the shipped set)."""
        self._lock = threading.Lock()
        self._reloading: threading.Thread | None = None
        self._read_at = monotonic()
        self._reload()

    def current(self) -> CompiledPolicies:
        """The set in force; once the TTL has passed, a read of the object is started on a
        thread of its own (one at a time), never awaited here."""
        if self.monotonic() - self._read_at < self.ttl_s:
            return self._good
        with self._lock:
            now = self.monotonic()
            if now - self._read_at >= self.ttl_s and self._reloading is None:
                self._read_at = now
                reloading = threading.Thread(
                    target=self._reload_in_background, name="policy-reload", daemon=True
                )
                self._reloading = reloading
                reloading.start()
        return self._good

    def wait_for_reload(self, timeout_s: float | None = None) -> None:
        """Waits for a read in flight, if any (tests, and `make policy-check`)."""
        reloading = self._reloading
        if reloading is not None:
            reloading.join(timeout_s)

    def _reload_in_background(self) -> None:
        try:
            self._reload()
        finally:
            self._reloading = None

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
            self.on_refused()
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
            self.on_refused()
            return
        logger.info("policy set version %s in force", stored.version)
        self.version = stored.version
