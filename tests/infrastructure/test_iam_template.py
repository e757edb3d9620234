"""The template's IAM statements, resolved as deployed (local/iam_template.py): every resource a
statement allows is one named resource, except for actions AWS authorizes only on `*`."""

from __future__ import annotations

import functools

from local.iam_policy import STAR_ONLY_ACTIONS, Statement, decide, unspecific_grants
from local.iam_template import StackNames


@functools.cache
def names() -> StackNames:
    return StackNames()


def test_no_statement_allows_any_resource_but_for_actions_that_have_none():
    statements = names().identity_statements()
    assert statements, "no statement found: the resolver reads nothing"
    assert unspecific_grants(statements) == []


def test_a_statement_on_any_resource_would_be_found():
    # Given the template's statements and one more, as a careless edit would add it
    broad = Statement.parse(
        {"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": "*"}, "added"
    )
    # Then the check names it
    statements = [*names().identity_statements(), broad]
    assert unspecific_grants(statements) == ["added: ['dynamodb:GetItem'] on ['*']"]


def test_each_star_only_action_says_why():
    assert all(reason for reason in STAR_ONLY_ACTIONS.values())


def test_sam_policy_templates_are_expanded_and_intrinsics_resolved():
    statements = names().role_statements()
    conversations = "arn:aws:dynamodb:eu-central-1:123456789012:table/ConversationsTable"
    # DynamoDBCrudPolicy: the table and its indexes
    assert decide(
        statements["ApiFunction"], "dynamodb:Query", conversations + "/index/ByOwner"
    ).allowed
    assert decide(statements["ApiFunction"], "dynamodb:PutItem", conversations).allowed
    # The attachment bucket's name from its !Sub, the audit bus's from its Name
    bucket = "arn:aws:s3:::sstools-agent-dev-attachments-123456789012"
    assert decide(statements["ApiFunction"], "s3:PutObject", bucket + "/uploads/u/f").allowed
    assert not decide(
        statements["ApiFunction"], "s3:PutObject", bucket + "/attachments/u/f"
    ).allowed
    bus = "arn:aws:events:eu-central-1:123456789012:event-bus/sstools-agent-audit-dev"
    assert decide(statements["ConfirmationStateMachine"], "events:PutEvents", bus).allowed
    # The audit function writes its table and nothing else
    audit = "arn:aws:dynamodb:eu-central-1:123456789012:table/AuditTable"
    assert decide(statements["AuditFunction"], "dynamodb:PutItem", audit).allowed
    assert not decide(statements["AuditFunction"], "dynamodb:PutItem", conversations).allowed
    assert not decide(statements["AuditFunction"], "dynamodb:GetItem", audit).allowed


POLICY_OBJECT = "arn:aws:s3:::team-policies/agent/policy.cedar"


def test_the_functions_that_decide_may_read_the_policy_object_and_nothing_else_of_its_bucket():
    # Given a stage whose team keeps its policy set in S3
    configured = StackNames(
        overrides={"PolicyBucket": "team-policies", "PolicyObjectKey": "agent/policy.cedar"}
    ).role_statements()
    # Then the chat and the REST API may read that object, not another of the bucket
    for function in ("ChatFunction", "ApiFunction"):
        assert decide(configured[function], "s3:GetObject", POLICY_OBJECT).allowed, function
        other = "arn:aws:s3:::team-policies/agent/other.cedar"
        assert not decide(configured[function], "s3:GetObject", other).allowed, function
        assert not decide(configured[function], "s3:PutObject", POLICY_OBJECT).allowed
    # And the expiry function, which decides nothing, may not; without a bucket nobody may
    assert not decide(configured["ExpiryFunction"], "s3:GetObject", POLICY_OBJECT).allowed
    shipped = names().role_statements()
    anywhere = "arn:aws:s3:::/policy.cedar"
    assert not any(decide(found, "s3:GetObject", anywhere).allowed for found in shipped.values())
