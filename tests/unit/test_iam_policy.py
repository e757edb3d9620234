"""The offline IAM evaluator (local/iam_policy.py) on the cases the least-privilege test meets."""

from __future__ import annotations

import pytest

from local.iam_policy import Statement, decide, unspecific_grants

TABLE = "arn:aws:dynamodb:eu-central-1:123456789012:table/ConversationsTable"
BUCKET = "arn:aws:s3:::checkpointbucket"


def allow(actions: str | list[str], resources: str | list[str], **extra: object) -> Statement:
    return Statement.parse(
        {"Effect": "Allow", "Action": actions, "Resource": resources, **extra}, "test"
    )


def test_an_action_on_its_resource_is_allowed_and_another_table_is_not():
    statements = [allow(["dynamodb:GetItem", "dynamodb:PutItem"], TABLE)]
    assert decide(statements, "dynamodb:PutItem", TABLE).allowed
    assert not decide(statements, "dynamodb:PutItem", TABLE + "2").allowed
    assert not decide(statements, "dynamodb:DeleteItem", TABLE).allowed


def test_nothing_is_allowed_without_a_statement():
    assert not decide([], "s3:GetObject", BUCKET + "/key").allowed


@pytest.mark.parametrize(
    ("pattern", "action", "allowed"),
    [
        ("s3:Get*", "s3:GetObject", True),
        ("s3:Get*", "s3:PutObject", False),
        ("S3:getobject", "s3:GetObject", True),  # actions ignore case
        ("s3:*Object", "s3:DeleteObject", True),
        ("s3:?etObject", "s3:GetObject", True),
        ("s3:?etObject", "s3:GGetObject", False),
        ("*", "kms:Sign", True),
        ("s3:GetObject", "s3:GetObjectVersion", False),  # no implied prefix match
    ],
)
def test_action_wildcards(pattern: str, action: str, allowed: bool):
    assert decide([allow(pattern, "*")], action, BUCKET).allowed is allowed


@pytest.mark.parametrize(
    ("pattern", "resource", "allowed"),
    [
        (BUCKET + "/*", BUCKET + "/a/b/c.json", True),  # `*` crosses slashes
        (BUCKET + "/*", BUCKET, False),  # the bucket is not an object in it
        (BUCKET, BUCKET + "/key", False),
        (BUCKET + "/uploads/*", BUCKET + "/attachments/x", False),
        (TABLE + "/index/*", TABLE + "/index/ByOwner", True),
        (TABLE + "/index/*", TABLE, False),
        ("arn:aws:s3:::CheckpointBucket", BUCKET, False),  # resources keep their case
        ("arn:aws:s3:::checkpointbucke?", BUCKET, True),
        ("arn:aws:s3:::[c]heckpointbucket", BUCKET, False),  # no character classes in IAM
    ],
)
def test_resource_wildcards(pattern: str, resource: str, allowed: bool):
    assert decide([allow("s3:*", pattern)], "s3:GetObject", resource).allowed is allowed


def test_an_explicit_deny_wins_over_any_allow():
    statements = [
        allow("s3:*", BUCKET + "/*"),
        Statement.parse({"Effect": "Deny", "Action": "s3:DeleteObject", "Resource": "*"}, "deny"),
    ]
    assert decide(statements, "s3:GetObject", BUCKET + "/k").allowed
    decision = decide(statements, "s3:DeleteObject", BUCKET + "/k")
    assert not decision.allowed
    assert [s.source for s in decision.denying] == ["deny"]


def test_not_action_allows_everything_else_and_not_resource_everywhere_else():
    everything_but = Statement.parse(
        {"Effect": "Allow", "NotAction": "s3:Delete*", "Resource": BUCKET + "/*"}, "t"
    )
    assert decide([everything_but], "s3:GetObject", BUCKET + "/k").allowed
    assert not decide([everything_but], "s3:DeleteObject", BUCKET + "/k").allowed
    elsewhere = Statement.parse(
        {"Effect": "Allow", "Action": "s3:GetObject", "NotResource": BUCKET + "/secret/*"}, "t"
    )
    assert decide([elsewhere], "s3:GetObject", BUCKET + "/public/k").allowed
    assert not decide([elsewhere], "s3:GetObject", BUCKET + "/secret/k").allowed


def test_a_conditional_statement_is_reported_and_never_taken_as_allowing():
    conditional = allow("s3:GetObject", "*", Condition={"Bool": {"aws:SecureTransport": "true"}})
    decision = decide([conditional], "s3:GetObject", BUCKET + "/k")
    assert not decision.allowed
    assert decision.conditional == (conditional,)


def test_a_statement_that_is_not_allow_or_deny_is_refused():
    with pytest.raises(ValueError, match="Effect"):
        Statement.parse({"Effect": "allow", "Action": "s3:*", "Resource": "*"}, "t")


@pytest.mark.parametrize(
    "resource",
    [
        "*",
        "arn:aws:s3:::*",
        "arn:aws:s3:::*/uploads/*",
        "arn:aws:dynamodb:eu-central-1:123456789012:table/*",
        "arn:aws:dynamodb:*:123456789012:table/ConversationsTable",
        "arn:aws:dynamodb:eu-central-1:*:table/ConversationsTable",
        "arn:aws:secretsmanager:eu-central-1:123456789012:secret:*",
        "arn:aws:states:eu-central-1:123456789012:stateMachine:*",
        "arn:aws:kms:eu-central-1:123456789012:key/*",
    ],
)
def test_a_grant_on_no_one_resource_is_found(resource: str):
    assert unspecific_grants([allow("dynamodb:GetItem", resource)]) != []


@pytest.mark.parametrize(
    "resource",
    [
        BUCKET + "/*",
        BUCKET + "/uploads/*",
        TABLE,
        TABLE + "/index/*",
        "arn:aws:secretsmanager:eu-central-1:123456789012:secret:ServiceClientSecret-AbCdEf",
        "arn:aws:ssm:eu-central-1:123456789012:parameter/sstools-agent/dev/service-token-url",
        "arn:aws:bedrock:eu-central-1::foundation-model/amazon.titan-embed-text-v2:0",
    ],
)
def test_a_grant_on_a_named_resource_is_specific(resource: str):
    assert unspecific_grants([allow("dynamodb:GetItem", resource)]) == []


def test_star_is_allowed_only_for_actions_that_have_no_resource():
    assert unspecific_grants([allow("xray:PutTraceSegments", "*")]) == []
    mixed = allow(["xray:PutTraceSegments", "dynamodb:GetItem"], "*")
    assert unspecific_grants([mixed]) == ["test: ['dynamodb:GetItem'] on ['*']"]
    assert (
        unspecific_grants(
            [Statement.parse({"Effect": "Deny", "Action": "*", "Resource": "*"}, "d")]
        )
        == []
    )
