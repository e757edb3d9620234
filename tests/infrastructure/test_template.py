"""template.yaml, translated offline by aws-sam-translator and linted by cfn-lint.

A broken copy of the template must fail the same check, or the check proves nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from local.sam_template import TEMPLATE_PATH, check_template, load_template, packaged, translate


def test_the_template_passes_the_check():
    assert check_template() == []


def test_the_layer_translates_to_a_python312_layer_version():
    template, missing = packaged(load_template(), TEMPLATE_PATH.parent)
    assert missing == []
    resources = translate(template)["Resources"]
    layers = [r for r in resources.values() if r["Type"] == "AWS::Lambda::LayerVersion"]
    assert len(layers) == 1
    assert layers[0]["Properties"]["CompatibleRuntimes"] == ["python3.12"]


def test_the_layer_is_built_from_the_package_folder():
    layer = load_template()["Resources"]["CommonLayer"]
    assert layer["Metadata"]["BuildMethod"] == "python3.12"
    content = TEMPLATE_PATH.parent / layer["Properties"]["ContentUri"]
    assert (content / "requirements.txt").is_file()
    assert (content / "sstools_agent" / "__init__.py").is_file()


def broken_copy(tmp_path: Path, edit) -> Path:
    """A copy of the template (with its folders linked) after `edit` changed its text."""
    text = TEMPLATE_PATH.read_text(encoding="utf-8")
    copy = tmp_path / "template.yaml"
    copy.write_text(edit(text), encoding="utf-8")
    (tmp_path / "layers").symlink_to(TEMPLATE_PATH.parent / "layers")
    return copy


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        # A runtime Lambda does not have, inside a SAM resource
        (lambda t: t.replace("        - python3.12\n", "        - python3.99\n"), "python3.99"),
        # An output that references nothing
        (lambda t: t.replace("Value: !Ref CommonLayer", "Value: !Ref NoSuchLayer"), "NoSuchLayer"),
        # A property the SAM layer does not have
        (
            lambda t: t.replace("      RetentionPolicy: Retain", "      RetentionPolicy: Forever"),
            "RetentionPolicy",
        ),
        # Code that is not there
        (lambda t: t.replace("ContentUri: layers/common/", "ContentUri: layers/gone/"), "gone"),
        # A parameter nobody uses
        (
            lambda t: t.replace(
                "Parameters:\n", "Parameters:\n  Unused:\n    Type: String\n    Default: x\n"
            ),
            "Unused",
        ),
    ],
    ids=["runtime", "dangling-ref", "sam-property", "missing-code", "unused-parameter"],
)
def test_a_broken_template_fails_the_check(tmp_path, edit, expected):
    problems = check_template(broken_copy(tmp_path, edit))
    assert problems, "the check passed a broken template"
    assert any(expected in problem for problem in problems), problems
