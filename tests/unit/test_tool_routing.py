"""The tool router: the seed's intent table, the embedding fallback, the labelled set, and that it
never offers a tool the policy or the page's affinity removed."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from hypothesis import given
from hypothesis import strategies as st

from sstools_agent.adapters.embeddings import TITAN_V2, BedrockTitanEmbedder, OfflineEmbedder
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_routing import (
    Intent,
    ToolRouter,
)
from sstools_agent.wiring import chat as wiring_chat
from tests.support.seed import SEED_DEFAULT_TOOLS, SEED_MAINTENANCE_TOOLS

ALL_TOOLS = tuple(spec.name for spec in CATALOG)
LABELLED = Path(__file__).resolve().parents[1] / "data" / "routing_queries.jsonl"


def labelled() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def router() -> ToolRouter:
    router = ToolRouter(OfflineEmbedder())
    router.warm()
    return router


# --- The seed's intent table ----------------------------------------------------------------


@pytest.mark.parametrize("query", ["что ты умеешь?", "What can you do?", "помощь"])
def test_capabilities_offers_show_capabilities_and_what_matched(router: ToolRouter, query: str):
    decision = router.route(query, ALL_TOOLS)
    assert decision.intent is Intent.CAPABILITIES
    assert decision.offered[-1] == "show_capabilities"
    assert set(decision.offered) <= {"show_capabilities", *decision.ranked}


@pytest.mark.parametrize("query", ["какой статус у этого дашборда?", "what is the status of it?"])
def test_a_dashboard_query_with_prefetch_suppresses_search(router: ToolRouter, query: str):
    with_prefetch = router.route(query, ALL_TOOLS, prefetch_available=True, page_object="dashboard")
    without = router.route(query, ALL_TOOLS, prefetch_available=False, page_object="dashboard")
    assert with_prefetch.intent is Intent.DASHBOARD_QUERY
    assert "search_dashboards" not in with_prefetch.offered
    assert "show_capabilities" in with_prefetch.offered
    assert without.intent is Intent.DASHBOARD_QUERY
    assert "search_dashboards" in without.offered
    assert "show_capabilities" in without.offered


@pytest.mark.parametrize("query", ["что с обслуживанием?", "maintenance", "нужны техработы"])
def test_maintenance_offers_the_maintenance_tools(router: ToolRouter, query: str):
    decision = router.route(query, ALL_TOOLS)
    assert decision.intent is Intent.MAINTENANCE
    assert {"show_capabilities", *SEED_MAINTENANCE_TOOLS} <= set(decision.offered)


@pytest.mark.parametrize("query", ["привет", "расскажи анекдот", "thanks a lot"])
def test_unknown_offers_the_default_set(router: ToolRouter, query: str):
    decision = router.route(query, ALL_TOOLS)
    assert decision.intent is Intent.UNKNOWN
    assert set(decision.offered) == {"show_capabilities", *SEED_DEFAULT_TOOLS}


def test_embeddings_only_when_keywords_name_fewer_than_three_tools(router: ToolRouter):
    many = router.route("задеплой дашборд, сделай бэкап и покажи миграции", ALL_TOOLS)
    assert len(many.keyword_matches) >= 3
    assert not many.used_embeddings
    typo = router.route("какие графкии падают с ошибкми", ALL_TOOLS)
    assert typo.used_embeddings
    assert "get_health_summary" in typo.ranked[:3]


def test_a_specific_query_offers_far_fewer_tools(router: ToolRouter):
    decision = router.route("создай ветку для этого дашборда", ALL_TOOLS)
    assert decision.ranked[0] == "create_branch"
    assert len(decision.offered) <= len(ALL_TOOLS) // 2
    # The record names every removed tool with its rule: the policy's, then the router's
    allowed = tuple(tool for tool in ALL_TOOLS if tool != "run_backup")
    routed = router.route("создай ветку", allowed, policy_removed={"run_backup": "role"})
    removed = routed.to_record()["removed"]
    assert removed["run_backup"] == "role"
    assert {tool for tool, rule in removed.items() if rule == "router"} == set(routed.removed)
    assert set(removed) | set(routed.offered) == set(ALL_TOOLS)


# --- Never wider than the policy ----------------------------------------------------------


@given(
    st.sampled_from([row["query"] for row in labelled()]),
    st.sets(st.sampled_from(ALL_TOOLS)),
    st.booleans(),
    st.sampled_from([None, "dashboard", "dataset", "migration"]),
)
def test_the_router_never_offers_a_tool_the_policy_removed(
    router: ToolRouter, query, allowed, prefetch, page
):
    allowed_tools = tuple(tool for tool in ALL_TOOLS if tool in allowed)
    decision = router.route(query, allowed_tools, prefetch_available=prefetch, page_object=page)
    assert set(decision.offered) <= set(allowed_tools)
    assert set(decision.offered) | set(decision.removed) == set(allowed_tools)
    assert not set(decision.offered) & set(decision.removed)


# --- The labelled set ------------------------------------------------------------------------


def test_the_labelled_set_is_large_and_covers_every_tool_and_intent():
    rows = labelled()
    assert len(rows) >= 150
    expected = {row["expect"] for row in rows}
    assert set(ALL_TOOLS) <= expected
    assert {"intent:unknown", "intent:maintenance"} <= expected
    assert any(row.get("typo") for row in rows)
    russian = sum(any("а" <= c <= "я" for c in row["query"].lower()) for row in rows)
    assert 0.3 < russian / len(rows) < 0.8  # both languages


def test_top3_accuracy_on_the_labelled_set_stays_above_95_percent(router: ToolRouter):
    rows = labelled()
    hits = 0
    for row in rows:
        decision = router.route(row["query"], ALL_TOOLS)
        expect = row["expect"]
        if expect.startswith("intent:"):
            hits += decision.intent.value == expect.removeprefix("intent:")
        else:
            hits += expect in decision.ranked[:3]
    assert hits / len(rows) >= 0.95


@pytest.mark.parametrize(
    ("query", "expect"),
    [
        ("запусти эту миграцию", "execute_migration"),
        ("Execute this migration", "execute_migration"),
        ("кто имеет доступ к этому датасету?", "superset_audit_permissions"),
        ("какие дашборды падают на проде?", "get_health_summary"),
        ("back up the environment", "run_backup"),
        ("выключи режим обслуживания", "end_maintenance"),
    ],
)
def test_an_action_outranks_the_listing_of_its_object(query: str, expect: str):
    # A phrase's words may stand apart («запусти эту миграцию»), and an object's name says what
    # about, not what to do: it weighs less than the words of the action
    assert ToolRouter(None).route(query, ALL_TOOLS).ranked[0] == expect


def test_keywords_alone_rank_the_labelled_tool_first_for_most_queries():
    rows = [row for row in labelled() if not row["expect"].startswith("intent:")]
    keywords = ToolRouter(None)
    first = sum(
        keywords.route(row["query"], ALL_TOOLS).ranked[:1] == (row["expect"],) for row in rows
    )
    assert (
        first / len(rows) >= 0.86
    )  # 0.81 when phrases had to be contiguous and nouns weighed fully


# --- Embedders --------------------------------------------------------------------------------


def test_the_offline_embedder_is_multilingual_and_normalised():
    embedder = OfflineEmbedder()
    vectors = np.asarray(
        embedder.embed(["сделай бэкап окружения", "back up the environment", "привет"])
    )
    assert vectors.shape == (3, 512)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_titan_v2_is_called_as_bedrock_documents_it():
    embedder = BedrockTitanEmbedder(region="eu-central-1")
    client = embedder._client
    vector = [0.0] * 512
    vector[7] = 1.0
    body = json.dumps({"embedding": vector, "inputTextTokenCount": 5}).encode()
    with Stubber(client) as stubber:
        stubber.add_response(
            "invoke_model",
            {"body": StreamingBody(io.BytesIO(body), len(body)), "contentType": "application/json"},
            {
                "modelId": TITAN_V2,
                "contentType": "application/json",
                "accept": "application/json",
                "body": json.dumps(
                    {"inputText": "сделай бэкап", "dimensions": 512, "normalize": True}
                ),
            },
        )
        vectors = embedder.embed(["сделай бэкап"])
        stubber.assert_no_pending_responses()
    assert len(vectors) == 1
    assert len(vectors[0]) == 512
    assert vectors[0][7] == 1.0


def test_the_router_uses_titan_vectors_through_the_same_interface():
    class Stubbed(BedrockTitanEmbedder):
        calls = 0

        def _one(self, text: str) -> list[float]:
            Stubbed.calls += 1
            vector = [0.0] * 512
            vector[hash(text.split(maxsplit=1)[0]) % 512] = 1.0
            return vector

    router = ToolRouter(Stubbed(region="eu-central-1"))
    router.warm()
    examples = Stubbed.calls
    router.route("hello", ALL_TOOLS)
    router.route("привет", ALL_TOOLS)
    assert Stubbed.calls == examples + 2  # tool vectors once; one embedding per query


# --- Warming in the background ------------------------------------------------------------------


class GatedEmbedder:
    """Embeds (one-hot by first word) once `gate` is set; fails the first `failures` times."""

    def __init__(self, failures: int = 0) -> None:
        self.gate = threading.Event()
        self.entered = threading.Event()
        """Set once a call is under way (the warm-up thread may start late)."""
        self.calls = 0
        self.failures = failures

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.entered.set()
        if self.failures:
            self.failures -= 1
            raise RuntimeError("throttled")
        self.gate.wait(10)
        rows = []
        for text in texts:
            row = [0.0] * 64
            row[hash(text.split(maxsplit=1)[0]) % 64] = 1.0
            rows.append(row)
        return rows


def test_a_router_warmed_elsewhere_routes_on_keywords_until_its_examples_are_embedded():
    embedder = GatedEmbedder()
    router = ToolRouter(embedder, warmed_elsewhere=True)
    # While the examples embed in the background, a query keywords miss is routed at once
    warming = threading.Thread(target=router.warm)
    warming.start()
    assert embedder.entered.wait(10)  # the warm-up is embedding, held at the gate
    started = time.monotonic()
    before = router.route("hello there", ALL_TOOLS)
    assert time.monotonic() - started < 5  # it did not wait for the gate's 10 s
    assert before.used_embeddings is False
    assert before.intent is Intent.UNKNOWN
    assert embedder.calls == 1  # the warm-up's only: the request embedded nothing
    # Once they are, the fallback runs
    embedder.gate.set()
    warming.join(5)
    assert router.embeddings_ready
    after = router.route("hello there", ALL_TOOLS)
    assert after.used_embeddings is True


def test_the_background_warm_up_tries_again_after_a_failure(monkeypatch):
    monkeypatch.setattr(wiring_chat, "WARM_RETRY_S", 0.01)
    embedder = GatedEmbedder(failures=1)
    embedder.gate.set()
    router = ToolRouter(embedder, warmed_elsewhere=True)
    wiring_chat._warm(router)
    assert embedder.calls == 2
    assert router.embeddings_ready
