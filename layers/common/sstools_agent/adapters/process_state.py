"""What a process must renew when Lambda SnapStart restores it, in one place.

A snapshot is taken once and restored in many execution environments: whatever the process
drew, opened or fetched before it is shared by all of them. `renew_after_restore` renews the
process-wide part (the `random` module's state, the boto3 clients' pooled connections) and each
collaborator that keeps some of its own (`RenewsAfterRestore`: a cached service token, an HTTP
client's pool). The chat and REST API functions' deps call it from their after-restore hooks.
"""

from __future__ import annotations

import importlib
import logging
import random
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from sstools_agent.adapters.aws_session import drop_pooled_connections

logger = logging.getLogger(__name__)


@runtime_checkable
class RenewsAfterRestore(Protocol):
    """A collaborator holding state no two restored environments may share."""

    def renew_after_restore(self) -> None:
        """Forgets or reopens that state; the next use builds it afresh."""


def renew_after_restore(*parts: object) -> None:
    """Renews the process's shared state and every part that keeps some (others are skipped)."""
    # Seeded from os.urandom again: restored copies would otherwise draw the same numbers.
    random.seed()
    clients = drop_pooled_connections()
    renewed = [part for part in parts if isinstance(part, RenewsAfterRestore)]
    for part in renewed:
        part.renew_after_restore()
    logger.info(
        "renewed after a SnapStart restore",
        extra={"aws_clients": clients, "renewed": [type(part).__name__ for part in renewed]},
    )


def register_runtime_hooks(
    before_snapshot: Callable[[], None], after_restore: Callable[[], None]
) -> bool:
    """Registers the hooks with the Lambda Python runtime's SnapStart module, where there is one
    (only Lambda's runtime has `snapshot_restore_py`); whether it did."""
    try:
        runtime = importlib.import_module("snapshot_restore_py")
    except ImportError:
        return False
    runtime.register_before_snapshot(before_snapshot)
    runtime.register_after_restore(after_restore)
    return True
