"""The words the page shows for the catalog's identifiers."""

from __future__ import annotations

from sstools_agent.domain.glossary import ARGUMENT_LABELS, glossary, tool_label
from sstools_agent.domain.tool_catalog import CATALOG


def test_every_argument_of_every_tool_has_words_of_its_own():
    arguments = {name for spec in CATALOG for name in spec.args_model.model_fields}
    assert arguments == set(ARGUMENT_LABELS)
    assert all(label and label != name for name, label in ARGUMENT_LABELS.items())


def test_every_tool_is_named_in_words_as_a_heading():
    labels = glossary()["tools"]
    assert set(labels) == set(CATALOG.names)
    for name, label in labels.items():
        assert label[0].isupper(), (name, label)
        assert "_" not in label, (name, label)
        assert len(label) <= 40, (name, label)
    assert tool_label("deploy_dashboard") == "Деплой дашбордов в другое окружение"
    assert tool_label("superset_execute_sql") == "Выполнение SQL"


def test_the_environment_arguments_are_the_ones_that_name_an_environment():
    assert glossary()["environmentArguments"] == ["source_env_id", "target_env_id"]
