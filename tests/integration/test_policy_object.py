"""The team's policy object in S3, read through the suite's moto server: the reader's versions,
and the functions deciding with the configured object.

On the suite's moto server, not moto's in-process mock: leaving it resets every moto
backend of the process, the server's too, and the tests after it on that worker lost their
tables, keys and buses (one CI run: 37 failures)."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest

from sstools_agent.adapters.policy_object import S3PolicyReader
from sstools_agent.domain.cedar_policy import shipped_policy_text
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.policy_engine import FixedPolicies
from sstools_agent.domain.policy_loading import PolicyObjectUnreadable, ReloadingPolicies
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.ui_context import UIContext
from sstools_agent.settings import Settings
from sstools_agent.wiring.adapters import policy_source_from
from sstools_agent.wiring.chat import tool_policy_from

REGION = "eu-central-1"
NO_PROD_DEPLOYS = """
@id("no-prod-deploys")
forbid (principal, action == SsTools::Action::"deploy_dashboard", resource)
when { resource.tier == "prod" };
"""
PROD_DEPLOY = {"dashboard_ids": [10], "source_env_id": "ss-dev", "target_env_id": "prod"}
PAGE = UIContext.model_validate(
    {"contextVersion": 1, "envId": "ss-dev"}, context={"environments": DEFAULT_ENVIRONMENTS}
)


def deploys_to_prod(policy: ToolPolicy) -> bool:
    decision = policy.evaluate(Role.ADMIN, "deploy_dashboard", PROD_DEPLOY, PAGE)
    return decision.permission.allowed


def new_bucket(endpoint: str, *, versioned: bool) -> tuple[str, Any]:
    s3 = boto3.client("s3", region_name=REGION, endpoint_url=endpoint)
    bucket = f"policies-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    if versioned:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    return bucket, s3


@pytest.mark.parametrize("versioned", [True, False])
def test_the_s3_reader_reads_the_object_and_its_version(aws_endpoint: str, versioned: bool):
    bucket, s3 = new_bucket(aws_endpoint, versioned=versioned)
    reader = S3PolicyReader(bucket, "agent/policy.cedar", region=REGION, endpoint_url=aws_endpoint)
    with pytest.raises(PolicyObjectUnreadable, match=r"policy\.cedar"):
        reader.read()
    put = s3.put_object(Bucket=bucket, Key="agent/policy.cedar", Body=b"// one")
    first = reader.read()
    assert first.text == "// one"
    assert first.version == (put["VersionId"] if versioned else put["ETag"])
    s3.put_object(Bucket=bucket, Key="agent/policy.cedar", Body=b"// two")
    assert reader.read().version != first.version


def test_the_functions_decide_with_the_configured_object(stack_settings: Settings):
    endpoint = stack_settings.aws_endpoint_url or ""
    bucket, s3 = new_bucket(endpoint, versioned=True)
    body = (shipped_policy_text() + NO_PROD_DEPLOYS).encode()
    s3.put_object(Bucket=bucket, Key="agent/policy.cedar", Body=body)
    # Given a stage configured with the team's object
    configured = stack_settings.model_copy(
        update={"policy_bucket": bucket, "policy_object_key": "agent/policy.cedar"}
    )
    # Then the chat's tool policy decides with it, and the REST API's offers follow it
    assert deploys_to_prod(tool_policy_from(configured)) is False
    source = policy_source_from(configured)
    assert isinstance(source, ReloadingPolicies)
    assert source.version is not None
    # And without one, the shipped set decides (no S3 read at all)
    unconfigured = stack_settings.model_copy(update={"policy_bucket": None})
    assert deploys_to_prod(tool_policy_from(unconfigured)) is True
    assert isinstance(policy_source_from(unconfigured), FixedPolicies)
