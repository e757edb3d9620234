"""Every declared tool can be reached: the router finds it by its own examples (the stand-in model
calls what the router ranks first, so there is no second vocabulary to check), the sample upstream
serves its call, and the docs list it.

The catalog is the only tool registry, so these checks run over the declarations; the second test
proves that a declaration stripped of its routing data fails them (the labelled set's 95 % top-3
threshold alone let an unreachable tool pass).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import httpx
import pytest

from local.agent_stack import SampleUpstream
from scripts.tool_reference import REFERENCE
from sstools_agent.adapters.embeddings import OfflineEmbedder
from sstools_agent.domain.catalog_types import Routing, ToolSpec
from sstools_agent.domain.tool_catalog import CATALOG, ToolCatalog
from sstools_agent.domain.tool_routing import Embedder, ToolRouter, Vector, Vectors
from sstools_agent.domain.ui_context import ObjectType

TOP_K = 3
"""The rank within which the labelled set counts a tool as found."""


class MemoEmbedder:
    """The offline sentence encoder, each text embedded once for every router these tests build."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._vectors: dict[str, Vector] = {}

    def embed(self, texts: Sequence[str]) -> Vectors:
        missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self._embedder.embed(missing), strict=True))
        return [self._vectors[text] for text in texts]


@pytest.fixture(scope="module")
def embedder() -> MemoEmbedder:
    return MemoEmbedder(OfflineEmbedder())


def served(upstream: SampleUpstream) -> Callable[[ToolSpec], int]:
    """The sample upstream's status for the tool's call, made without credentials: 401 for a
    route it serves, 404 or 405 for one it does not."""

    def status(spec: ToolSpec) -> int:
        assert spec.method is not None
        assert spec.path is not None
        values = {name: "ss-dev" if name == "env_id" else "1" for name in spec.path_placeholders}
        url = upstream.base_url + spec.path.format(**values)
        return httpx.request(
            spec.method, url, json={} if spec.method == "POST" else None
        ).status_code

    return status


def routing_problems(spec: ToolSpec, catalog: ToolCatalog, embedder: Embedder) -> list[str]:
    """Whether the router, built from `catalog`, finds the tool by its declared examples."""
    names, examples = catalog.names, spec.routing.examples
    if not examples:
        return ["declares no routing examples"]
    hybrid, keywords = ToolRouter(embedder, catalog), ToolRouter(None, catalog)
    problems = [
        f"not in the router's top {TOP_K} for its example {example!r}"
        for example in examples
        if spec.name not in hybrid.route(example, names).ranked[:TOP_K]
    ]
    if not any(spec.name in keywords.route(e, names).ranked[:TOP_K] for e in examples):
        problems.append("no example of it is routed by keywords alone (TOOL_ROUTING=keywords)")
    return problems


def upstream_and_docs_problems(
    spec: ToolSpec, upstream_status: Callable[[ToolSpec], int]
) -> list[str]:
    """Whether the sample upstream serves the tool's call and the tool reference lists it."""
    problems = []
    if not spec.is_local and upstream_status(spec) in (404, 405):
        problems.append(f"the sample upstream does not serve {spec.method} {spec.path}")
    if f"| `{spec.name}` |" not in REFERENCE.read_text(encoding="utf-8"):
        problems.append("missing from the tool reference (docs/tools.md): run `make docs`")
    return problems


def reach_problems(
    spec: ToolSpec,
    catalog: ToolCatalog,
    embedder: Embedder,
    upstream_status: Callable[[ToolSpec], int],
) -> list[str]:
    """What keeps `spec` from being reached through `catalog`; empty when nothing does."""
    return [
        *routing_problems(spec, catalog, embedder),
        *upstream_and_docs_problems(spec, upstream_status),
    ]


@pytest.mark.parametrize("spec", list(CATALOG), ids=lambda spec: spec.name)
def test_every_tool_is_routable_callable_served_and_documented(
    spec: ToolSpec, embedder: MemoEmbedder, upstream_server: SampleUpstream
):
    assert reach_problems(spec, CATALOG, embedder, served(upstream_server)) == []


def test_every_page_object_has_a_reader_for_the_prefetch():
    for object_type in ObjectType:
        reader = CATALOG.reader_for(object_type)
        assert reader is not None, object_type
        assert reader.describes is not None


# What is stripped, and the problem the reach check must then name.
STRIPPED: dict[str, tuple[Callable[[Routing], Routing], str]] = {
    "keywords": (
        lambda routing: Routing(examples=routing.examples),
        "no example of it is routed by keywords alone",
    ),
    "examples": (lambda routing: Routing(keywords=routing.keywords), "no routing examples"),
    "router entry": (lambda routing: Routing(), "no routing examples"),
}


@pytest.mark.parametrize("stripped", list(STRIPPED))
@pytest.mark.parametrize("name", CATALOG.names)
def test_a_tool_stripped_of_its_routing_data_fails_the_reach_check(
    name: str, stripped: str, embedder: MemoEmbedder, upstream_server: SampleUpstream
):
    spec = CATALOG.get(name)
    assert spec is not None
    strip, expected = STRIPPED[stripped]
    broken = dataclasses.replace(spec, routing=strip(spec.routing))
    catalog = ToolCatalog(broken if s.name == name else s for s in CATALOG)
    problems = reach_problems(broken, catalog, embedder, served(upstream_server))
    assert any(expected in problem for problem in problems), problems


def test_a_tool_the_upstream_does_not_serve_fails_the_reach_check(
    embedder: MemoEmbedder, upstream_server: SampleUpstream
):
    spec = CATALOG.get("get_migration_plan")
    assert spec is not None
    assert spec.path is not None
    moved = dataclasses.replace(spec, path=spec.path.replace("/plan", "/blueprint"))
    problems = reach_problems(moved, CATALOG, embedder, served(upstream_server))
    assert any("sample upstream does not serve" in problem for problem in problems)
