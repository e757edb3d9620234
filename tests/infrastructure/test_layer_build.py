"""The layer's build keeps the botocore models of every AWS service the functions call."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = ROOT / "layers" / "common" / "Makefile"
CODE = [ROOT / "layers" / "common" / "sstools_agent", ROOT / "functions"]
# Services other libraries in the layer call for us: the checkpointer (DynamoDB, S3 offload),
# langchain-aws (Bedrock), boto3's credential chain, and Powertools Tracer's X-Ray SDK (its sampler
# creates an X-Ray client when imported, so without the model no function starts).
CALLED_BY_LIBRARIES = {"dynamodb", "s3", "bedrock", "bedrock-runtime", "sts", "xray"}


def kept_services() -> set[str]:
    text = MAKEFILE.read_text()
    match = re.search(r"^KEEP_SERVICES := (.*?)(?<!\\)$", text, re.MULTILINE | re.DOTALL)
    assert match, "KEEP_SERVICES not found"
    return set(match.group(1).replace("\\\n", " ").split())


def services_called_by_our_code() -> set[str]:
    found = set()
    for folder in CODE:
        for path in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in {"client", "resource"}
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    found.add(node.args[0].value)
    return found


def test_every_service_the_functions_call_keeps_its_botocore_model():
    ours = services_called_by_our_code()
    assert {"dynamodb", "stepfunctions", "events", "kms", "secretsmanager", "ssm"} <= ours
    missing = (ours | CALLED_BY_LIBRARIES) - kept_services()
    assert not missing, f"add to KEEP_SERVICES in layers/common/Makefile: {sorted(missing)}"
