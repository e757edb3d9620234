"""More threads for blocking AWS calls than asyncio's default (cores + 4): the checkpointer and
the stores run boto3 in threads, and under uvicorn many conversations share a process."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import AsyncIterator
from typing import Final

from fastapi import FastAPI

BLOCKING_THREADS: Final = 32


@contextlib.asynccontextmanager
async def more_blocking_threads(app: FastAPI) -> AsyncIterator[None]:
    """An app's lifespan with `BLOCKING_THREADS` threads for blocking calls."""
    asyncio.get_running_loop().set_default_executor(
        concurrent.futures.ThreadPoolExecutor(max_workers=BLOCKING_THREADS)
    )
    yield
