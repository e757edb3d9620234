"""Lambda SnapStart's hooks on the chat app: Lambda Web Adapter POSTs an empty body to
`BEFORE_CHECKPOINT_PATH` before the snapshot is taken and to `AFTER_RESTORE_PATH` when a
restored environment resumes (template.yaml names both paths to the adapter).

The adapter answers requests from outside to these paths with 403 itself, so only it reaches
them: they carry no `X-Origin-Verify` and no user token, and `OriginCheck` lets them through.
Both are idempotent and reveal nothing: called again (locally anyone may), they warm what is
already warm or renew what is already fresh.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import anyio.to_thread
from fastapi import APIRouter, Response

BEFORE_CHECKPOINT_PATH: Final = "/snapstart/before-checkpoint"
AFTER_RESTORE_PATH: Final = "/snapstart/after-restore"
HOOK_PATHS: Final = frozenset({BEFORE_CHECKPOINT_PATH, AFTER_RESTORE_PATH})


def snapstart_router(
    before_checkpoint: Callable[[], None], after_restore: Callable[[], None]
) -> APIRouter:
    """The two hook routes over the deps' `prepare_snapshot` and `renew_after_restore`: 200 with
    no body once done (the adapter fails the phase on anything else)."""
    router = APIRouter(include_in_schema=False)

    @router.post(BEFORE_CHECKPOINT_PATH)
    async def before_checkpoint_hook() -> Response:
        # In a thread: it waits for the router's embeddings (Bedrock calls)
        await anyio.to_thread.run_sync(before_checkpoint)
        return Response(status_code=200)

    @router.post(AFTER_RESTORE_PATH)
    async def after_restore_hook() -> Response:
        # On the event loop, before any request: it replaces clients the loop's tasks use
        after_restore()
        return Response(status_code=200)

    return router
