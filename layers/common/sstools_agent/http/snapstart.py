"""Lambda SnapStart's hooks on the chat app: Lambda Web Adapter POSTs an empty body to
`BEFORE_CHECKPOINT_PATH` before the snapshot is taken and to `AFTER_RESTORE_PATH` when a
restored environment resumes (template.yaml names both paths to the adapter).

The adapter answers requests from outside to these paths with 403 itself, so only it reaches
them: they carry no `X-Origin-Verify` and no user token, and `OriginCheck` lets them through.
Both are idempotent and reveal nothing: called again (locally anyone may), they warm what is
already warm or renew what is already fresh.
"""

from __future__ import annotations

from typing import Final

BEFORE_CHECKPOINT_PATH: Final = "/snapstart/before-checkpoint"
AFTER_RESTORE_PATH: Final = "/snapstart/after-restore"
HOOK_PATHS: Final = frozenset({BEFORE_CHECKPOINT_PATH, AFTER_RESTORE_PATH})
