"""How an API call is authorized (local/iam_calls.py): its action and the deployed ARN of the
resource, from the call's parameters and the local stack's names."""

from __future__ import annotations

import functools

import pytest

from local.iam_calls import LocalNames, requests
from local.iam_template import StackNames

REGION_ACCOUNT = "eu-central-1:123456789012"
ATTACHMENTS = "arn:aws:s3:::sstools-agent-dev-attachments-123456789012"
CONVERSATIONS = f"arn:aws:dynamodb:{REGION_ACCOUNT}:table/ConversationsTable"


@functools.cache
def names() -> LocalNames:
    return LocalNames(StackNames(), key_ids={"0f1e-local-id": "ServiceTokenKey"})


@pytest.mark.parametrize(
    ("prefix", "operation", "params", "expected"),
    [
        # A local name becomes the deployed one (the bucket's own name in the template)
        (
            "s3",
            "HeadObject",
            {"Bucket": "attachmentbucket", "Key": "uploads/u/f"},
            [("s3:GetObject", f"{ATTACHMENTS}/uploads/u/f")],
        ),
        (
            "s3",
            "CopyObject",
            {
                "Bucket": "attachmentbucket",
                "Key": "attachments/u/f",
                "CopySource": {"Bucket": "attachmentbucket", "Key": "uploads/u/f"},
            },
            [
                ("s3:GetObject", f"{ATTACHMENTS}/uploads/u/f"),
                ("s3:PutObject", f"{ATTACHMENTS}/attachments/u/f"),
            ],
        ),
        (
            "s3",
            "PutBucketLifecycleConfiguration",
            {"Bucket": "checkpointbucket", "LifecycleConfiguration": {}},
            [("s3:PutLifecycleConfiguration", "arn:aws:s3:::checkpointbucket")],
        ),
        (
            "dynamodb",
            "Query",
            {"TableName": "ConversationsTable", "IndexName": "ByOwner"},
            [("dynamodb:Query", f"{CONVERSATIONS}/index/ByOwner")],
        ),
        (
            "dynamodb",
            "TransactWriteItems",
            {
                "TransactItems": [
                    {"Put": {"TableName": "ConversationsTable"}},
                    {"ConditionCheck": {"TableName": "CheckpointTable"}},
                ]
            },
            [
                ("dynamodb:PutItem", CONVERSATIONS),
                (
                    "dynamodb:ConditionCheckItem",
                    f"arn:aws:dynamodb:{REGION_ACCOUNT}:table/CheckpointTable",
                ),
            ],
        ),
        (
            "events",
            "PutEvents",
            {"Entries": [{"EventBusName": "AuditBus"}]},
            [
                (
                    "events:PutEvents",
                    f"arn:aws:events:{REGION_ACCOUNT}:event-bus/sstools-agent-audit-dev",
                )
            ],
        ),
        # A key by moto's id or by its alias is the template's key
        (
            "kms",
            "Sign",
            {"KeyId": "0f1e-local-id"},
            [("kms:Sign", f"arn:aws:kms:{REGION_ACCOUNT}:key/ServiceTokenKey")],
        ),
        (
            "kms",
            "GetPublicKey",
            {"KeyId": "alias/ServiceTokenKey"},
            [("kms:GetPublicKey", f"arn:aws:kms:{REGION_ACCOUNT}:key/ServiceTokenKey")],
        ),
        (
            "secretsmanager",
            "GetSecretValue",
            {"SecretId": "CursorSigningSecret"},
            [
                (
                    "secretsmanager:GetSecretValue",
                    f"arn:aws:secretsmanager:{REGION_ACCOUNT}:secret:CursorSigningSecret-AbCdEf",
                )
            ],
        ),
        (
            "states",
            "SendTaskSuccess",
            {"taskToken": "opaque", "output": "{}"},
            [
                (
                    "states:SendTaskSuccess",
                    f"arn:aws:states:{REGION_ACCOUNT}:stateMachine:ConfirmationStateMachine",
                )
            ],
        ),
        (
            "ssm",
            "GetParameter",
            {"Name": "/sstools-agent/dev/service-token-url"},
            [
                (
                    "ssm:GetParameter",
                    f"arn:aws:ssm:{REGION_ACCOUNT}:parameter/sstools-agent/dev/service-token-url",
                )
            ],
        ),
    ],
)
def test_a_call_is_authorized_as_its_action_on_the_deployed_resource(
    prefix, operation, params, expected
):
    assert requests(names(), prefix, operation, params) == expected


def test_a_resource_the_template_does_not_declare_keeps_its_local_name():
    # (so no statement of the template allows it: the test names it)
    assert requests(names(), "dynamodb", "GetItem", {"TableName": "Elsewhere"}) == [
        ("dynamodb:GetItem", f"arn:aws:dynamodb:{REGION_ACCOUNT}:table/Elsewhere")
    ]


def test_a_service_no_function_called_before_is_named_as_such():
    ((action, resource),) = requests(names(), "sqs", "SendMessage", {"QueueUrl": "q"})
    assert action == "sqs:SendMessage"
    assert "no ARN known" in resource
