"""The labelled evaluation sets cover what the evaluation promises, and say nothing unknowable.

Every line follows the format, every tool and page it names exists, and together the sets cover
every tool, every page kind with and without an environment, both languages, follow-ups, and
both ends of a confirmation.
"""

from __future__ import annotations

from itertools import chain

import pytest

from evaluation.scenarios import Scenario, ScenarioSet, load
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.ui_context import UIContext, parse_ui_context

SETS = {scenario_set: load(scenario_set) for scenario_set in ScenarioSet}
ALL = list(chain.from_iterable(SETS.values()))


def named_tools(scenario: Scenario) -> set[str]:
    return {
        tool
        for turn in scenario.turns
        for tool in (*turn.expect.calls, *turn.expect.not_calls, *turn.expect.args)
    }


def test_the_sets_hold_at_least_100_scenarios_with_unique_ids():
    assert len(ALL) >= 100
    assert len({scenario.id for scenario in ALL}) == len(ALL)
    assert all(SETS.values())


@pytest.mark.parametrize("scenario", ALL, ids=lambda scenario: scenario.id)
def test_every_scenario_names_real_tools_and_a_valid_page(scenario: Scenario):
    assert named_tools(scenario) <= set(CATALOG.names)
    if scenario.page is not None:
        assert isinstance(parse_ui_context(scenario.page, DEFAULT_ENVIRONMENTS), UIContext)


def test_every_tool_is_expected_to_be_called_somewhere():
    called = {tool for scenario in ALL for turn in scenario.turns for tool in turn.expect.calls}
    assert set(CATALOG.names) - called == set()


@pytest.mark.parametrize("scenario_set", list(ScenarioSet))
def test_each_set_covers_every_page_kind_both_languages_and_both_confirmation_ends(
    scenario_set: ScenarioSet,
):
    scenarios = SETS[scenario_set]
    pages = [scenario.page for scenario in scenarios]
    kinds = {page.get("objectType") if page else None for page in pages}
    assert kinds == {"dashboard", "dataset", "migration", None}
    assert any(page and page.get("envId") for page in pages)
    assert any(not page or not page.get("envId") for page in pages)
    languages = {turn.expect.language for s in scenarios for turn in s.turns}
    assert {"ru", "en"} <= languages
    actions = {turn.action for s in scenarios for turn in s.turns}
    assert {"confirm", "deny"} <= actions
    assert any(len([t for t in s.turns if t.say]) > 1 for s in scenarios)  # follow-ups


def test_sc001_scenarios_are_on_the_page_of_dashboard_42_in_ss_dev():
    tagged = [scenario for scenario in ALL if scenario.is_sc001]
    assert tagged
    for scenario in tagged:
        assert scenario.page is not None
        assert (scenario.page["objectType"], scenario.page["objectId"]) == ("dashboard", "42")
        assert scenario.page["envId"] == "ss-dev"
