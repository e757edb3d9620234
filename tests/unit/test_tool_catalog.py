"""The tool catalog: the seeds' tools, each declared once and consistent with itself."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import BaseModel, ValidationError

from sstools_agent.domain.catalog_types import EnvironmentSource, IntentTag, Operation, ToolSpec
from sstools_agent.domain.roles import READ_ACCESS
from sstools_agent.domain.tool_catalog import CATALOG, NoArgs, ToolCatalog
from sstools_agent.domain.ui_context import ObjectType
from tests.support.seed import (
    SEED_CATALOG_SIZE,
    SEED_DEFAULT_TOOLS,
    SEED_MAINTENANCE_TOOLS,
    SEED_NAMED_TOOLS,
)


def test_the_catalog_declares_the_seeds_tools_once_each():
    # Every tool a seed names is declared, none twice, and none of the seeds' 22 was dropped
    assert set(CATALOG.names) >= SEED_NAMED_TOOLS
    assert len(set(CATALOG.names)) == len(CATALOG)
    assert len(CATALOG) >= SEED_CATALOG_SIZE


@pytest.mark.parametrize("spec", list(CATALOG), ids=lambda spec: spec.name)
def test_every_declaration_is_complete(spec):
    assert spec.description
    assert spec.label_ru
    schema = spec.input_schema()
    assert schema["type"] == "object"
    assert schema.get("additionalProperties") is False
    # Writes never retry; a tool without an upstream call is answered in-process
    if spec.operation is Operation.WRITE and spec.sql_argument is None:
        assert spec.may_retry is False
    if spec.is_local:
        assert spec.name == "show_capabilities"
    else:
        assert spec.path is not None
        assert spec.path.startswith("/api/")


def test_read_tools_are_open_to_every_role():
    reads = [s for s in CATALOG if s.operation is Operation.READ]
    assert all(spec.required_roles == READ_ACCESS for spec in reads)


class _Args(BaseModel):
    target: str


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"operation": Operation.WRITE, "may_retry": True}, "must not retry"),
        ({"environment_source": EnvironmentSource.ARGUMENT}, "environment_argument"),
        ({"environment_argument": "target"}, "environment_argument"),
        ({"method": "GET"}, "method and path"),
        ({"method": "GET", "path": "/api/{missing}"}, "'missing'"),
        ({"method": "GET", "path": "/api/{env_id}/x"}, "no environment"),
        ({"sql_argument": "sql"}, "no argument 'sql'"),
        ({"example_args": {}}, "example_args are not a valid call"),
    ],
)
def test_inconsistent_declarations_are_refused(changes, message):
    fields = {
        "name": "broken",
        "description": "d",
        "args_model": _Args,
        "operation": Operation.READ,
        "required_roles": READ_ACCESS,
        "environment_source": EnvironmentSource.NONE,
        "example_args": {"target": "dashboards"},
    } | changes
    with pytest.raises(ValueError, match=message):
        ToolSpec(**fields)


def test_a_tool_declared_twice_is_refused():
    spec = ToolSpec("x", "d", NoArgs, Operation.READ, READ_ACCESS, EnvironmentSource.NONE)
    with pytest.raises(ValueError, match="declared twice"):
        ToolCatalog([spec, spec])


def test_the_intent_tags_are_the_seeds_intent_table():
    # The router's intents offer these tools unasked; the tags are their only record.
    assert set(CATALOG.tagged(IntentTag.CAPABILITIES)) == {"show_capabilities"}
    assert set(CATALOG.tagged(IntentTag.DEFAULT)) == SEED_DEFAULT_TOOLS
    assert set(CATALOG.tagged(IntentTag.MAINTENANCE)) == SEED_MAINTENANCE_TOOLS
    assert set(CATALOG.tagged(IntentTag.DASHBOARD_QUERY)) == {"search_dashboards"}


def test_each_page_object_is_described_by_one_read_tool():
    readers = {t: CATALOG.reader_for(t) for t in ObjectType}
    assert {t: s.name for t, s in readers.items() if s} == {
        ObjectType.DASHBOARD: "search_dashboards",
        ObjectType.DATASET: "superset_explore_database",
        ObjectType.MIGRATION: "get_migration_plan",
    }
    spec = CATALOG.get("search_dashboards")
    assert spec is not None
    twice = replace(spec, name="search_again")
    with pytest.raises(ValueError, match="describe the same page object"):
        ToolCatalog([spec, twice])


def _integer_arguments() -> list[tuple[ToolSpec, str, bool]]:
    """Every integer argument of every tool, read from the schema the model is shown: the tool,
    the argument, and whether it is a list of integers."""
    found = []
    for spec in CATALOG:
        for name, schema in spec.input_schema()["properties"].items():
            for shape in schema.get("anyOf", [schema]):
                if shape.get("type") == "integer":
                    found.append((spec, name, False))
                elif shape.get("items", {}).get("type") == "integer":
                    found.append((spec, name, True))
    return found


INTEGER_ARGUMENTS = _integer_arguments()


def test_the_integer_arguments_are_found():
    names = {(spec.name, name) for spec, name, _ in INTEGER_ARGUMENTS}
    assert {("deploy_dashboard", "dashboard_ids"), ("start_maintenance", "duration_minutes")} <= (
        names
    )


@pytest.mark.parametrize("value", [True, False, 11.0, 11.5, "11.0", "1_1", "+11"])
@pytest.mark.parametrize(
    ("spec", "argument", "listed"),
    INTEGER_ARGUMENTS,
    ids=[f"{spec.name}.{name}" for spec, name, _ in INTEGER_ARGUMENTS],
)
def test_an_integer_argument_refuses_booleans_and_fractions(
    spec: ToolSpec, argument: str, listed: bool, value: object
):
    # `true` would be 1 and 11.0 would be 11: a call that names neither is refused
    args = {**spec.example_args, argument: [value] if listed else value}
    with pytest.raises(ValidationError) as refused:
        spec.args_model.model_validate(args)
    assert "целое число" in str(refused.value)


@pytest.mark.parametrize(
    ("spec", "argument", "listed"),
    INTEGER_ARGUMENTS,
    ids=[f"{spec.name}.{name}" for spec, name, _ in INTEGER_ARGUMENTS],
)
def test_an_integer_argument_takes_a_number_or_its_digits(
    spec: ToolSpec, argument: str, listed: bool
):
    # Models often send ids as strings: "11" is 11
    for value in (11, "11"):
        args = {**spec.example_args, argument: [value] if listed else value}
        taken = spec.args_model.model_validate(args)
        assert getattr(taken, argument) == ([11] if listed else 11)


def test_every_status_check_is_a_read_whose_arguments_the_write_gives():
    checked = [spec for spec in CATALOG if spec.status_check is not None]
    assert {spec.name for spec in checked} >= {"deploy_dashboard", "execute_migration"}
    for spec in checked:
        check = spec.status_check
        assert check is not None
        read = CATALOG.get(check.tool)
        assert read is not None, spec.name
        assert read.operation is Operation.READ, spec.name
        assert set(check.arguments) <= set(read.args_model.model_fields), spec.name
        assert set(check.arguments.values()) <= set(spec.args_model.model_fields), spec.name
        # the read takes the arguments the write's example gives it
        read.args_model.model_validate(check.read_arguments(dict(spec.example_args)))
