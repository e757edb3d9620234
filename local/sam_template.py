"""The SAM template, read and checked offline; the local stack builds its resources from it.

`sam validate --lint` misses most mistakes inside SAM resources, so the check translates
the template to CloudFormation with aws-sam-translator, as the SAM transform would, and lints the
result with cfn-lint.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import boto3
from cfnlint.api import ManualArgs, lint
from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator
from samtranslator.yaml_helper import yaml_parse

# The translator warns of its own feature toggles on every translation (on make run's and make
# eval's consoles): nothing a reader of the template can act on.
logging.getLogger("samtranslator").setLevel(logging.ERROR)

TEMPLATE_PATH: Final = Path(__file__).resolve().parent.parent / "template.yaml"
CHECK_REGION: Final = "eu-central-1"
# AWS managed policies the template may name, so translation needs no IAM call.
MANAGED_POLICIES: Final = {
    "AWSLambdaBasicExecutionRole": (
        "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
    ),
    "AWSXrayWriteOnlyAccess": "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
}


@dataclass(frozen=True, slots=True)
class LintFinding:
    """One cfn-lint match on the translated template."""

    rule: str
    level: str
    message: str
    path: str

    def __str__(self) -> str:
        return f"{self.rule} [{self.level}] {self.message} ({self.path})"


def load_template(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    """The template as a dict, CloudFormation tags (!Ref, !Sub...) turned into their long form."""
    template: dict[str, Any] = yaml_parse(path.read_text(encoding="utf-8"))
    return template


# Properties naming local code that `sam package` uploads to S3 before the transform runs.
_PACKAGED_PROPERTIES: Final = {
    "AWS::Serverless::Function": "CodeUri",
    "AWS::Serverless::LayerVersion": "ContentUri",
    "AWS::Serverless::StateMachine": "DefinitionUri",
}


def packaged(template: dict[str, Any], root: Path) -> tuple[dict[str, Any], list[str]]:
    """The template as `sam package` would leave it (local paths as S3 URIs), and missing paths."""
    result = json.loads(json.dumps(template))
    missing: list[str] = []
    for name, resource in result.get("Resources", {}).items():
        prop = _PACKAGED_PROPERTIES.get(resource.get("Type"))
        value = (resource.get("Properties") or {}).get(prop) if prop else None
        if isinstance(value, str) and not value.startswith("s3://"):
            if not (root / value).exists():
                missing.append(f"{name}: {prop} {value!r} does not exist")
            resource["Properties"][prop] = f"s3://packaged-artifacts/{name}/{value.strip('/')}"
    return result, missing


def translate(template: dict[str, Any], region: str = CHECK_REGION) -> dict[str, Any]:
    """The CloudFormation the SAM transform would produce from a packaged template, offline."""
    session = boto3.session.Session(
        region_name=region,
        aws_access_key_id="offline",
        aws_secret_access_key="offline",  # noqa: S106 (no AWS call is made)
    )
    translator = Translator(MANAGED_POLICIES, Parser(), boto_session=session)
    cloudformation: dict[str, Any] = translator.translate(
        sam_template=json.loads(json.dumps(template)),
        parameter_values={},
        get_managed_policy_map=lambda: MANAGED_POLICIES,
    )
    return cloudformation


def lint_cloudformation(
    cloudformation: dict[str, Any], region: str = CHECK_REGION
) -> list[LintFinding]:
    """cfn-lint's errors and warnings on a CloudFormation template."""
    matches = lint(json.dumps(cloudformation), config=ManualArgs(regions=[region]))
    return [
        LintFinding(
            rule=match.rule.id,
            level=match.rule.severity,
            message=match.message,
            path="/".join(str(part) for part in match.path),
        )
        for match in matches
        if match.rule.severity in {"error", "warning"}
    ]


def check_template(path: Path = TEMPLATE_PATH) -> list[str]:
    """Every problem found in the template: translation errors, then lint findings."""
    template, missing = packaged(load_template(path), path.parent)
    try:
        cloudformation = translate(template)
    except InvalidDocumentException as error:
        return missing + [f"translation: {cause.message}" for cause in error.causes]
    return missing + [str(finding) for finding in lint_cloudformation(cloudformation)]


if __name__ == "__main__":
    problems = check_template()
    for problem in problems:
        print(problem)  # noqa: T201
    raise SystemExit(1 if problems else 0)
