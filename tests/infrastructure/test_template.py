"""template.yaml, translated offline by aws-sam-translator and linted by cfn-lint.

A broken copy of the template must fail the same check, or the check proves nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from local.sam_template import TEMPLATE_PATH, check_template, load_template, packaged, translate


def test_the_template_passes_the_check():
    assert check_template() == []


def layer_resources() -> dict[str, dict[str, Any]]:
    resources = load_template()["Resources"].items()
    return {name: r for name, r in resources if r["Type"] == "AWS::Serverless::LayerVersion"}


def test_the_layer_translates_to_a_python312_layer_version_per_architecture():
    template, missing = packaged(load_template(), TEMPLATE_PATH.parent)
    assert missing == []
    resources = translate(template)["Resources"]
    layers = [r for r in resources.values() if r["Type"] == "AWS::Lambda::LayerVersion"]
    # One per architecture, each created only when the stack deploys that architecture
    assert sorted(layer["Properties"]["CompatibleArchitectures"][0] for layer in layers) == [
        "arm64",
        "x86_64",
    ]
    conditions = load_template()["Conditions"]
    for layer in layers:
        assert layer["Properties"]["CompatibleRuntimes"] == ["python3.12"]
        (architecture,) = layer["Properties"]["CompatibleArchitectures"]
        assert conditions[layer["Condition"]] == {
            "Fn::Equals": [{"Ref": "Architecture"}, architecture]
        }


@pytest.mark.parametrize("name", sorted(layer_resources()))
def test_the_layer_build_ships_the_package_with_compiled_bytecode(tmp_path, name):
    # Given the layer as SAM builds it (BuildMethod makefile runs build-<LogicalId> in ContentUri)
    layer = layer_resources()[name]
    assert layer["Metadata"]["BuildMethod"] == "makefile"
    (architecture,) = layer["Properties"]["CompatibleArchitectures"]
    assert layer["Metadata"]["BuildArchitecture"] == architecture
    content = TEMPLATE_PATH.parent / layer["Properties"]["ContentUri"]
    assert (content / "requirements.txt").is_file()
    # When the build runs (dependencies skipped: tests/infrastructure/test_sam_build.py runs them)
    python = subprocess.run(
        [TEMPLATE_PATH.parent / "scripts" / "find-python"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run(
        [
            "make",
            "-C",
            str(content),
            f"build-{name}",
            f"ARTIFACTS_DIR={tmp_path}",
            "SKIP_DEPENDENCIES=1",
            f"PYTHON={python}",
        ],
        check=True,
        capture_output=True,
    )
    # Then every module of the package is there with its bytecode, for the build's Python
    package = tmp_path / "python" / "sstools_agent"
    modules = sorted(
        p.relative_to(content / "sstools_agent") for p in (content / "sstools_agent").rglob("*.py")
    )
    assert sorted(p.relative_to(package) for p in package.rglob("*.py")) == modules
    compiled = list(package.rglob("__pycache__/*.pyc"))
    assert len(compiled) == len(modules)


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
        (
            lambda t: t.replace(
                "Value: !If [IsArm64, !Ref CommonLayerArm64",
                "Value: !If [IsArm64, !Ref NoSuchLayer",
            ),
            "NoSuchLayer",
        ),
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
