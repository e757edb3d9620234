"""Each function's IAM statements as deployed: template.yaml through the SAM transform (policy
templates such as DynamoDBCrudPolicy expanded by aws-sam-translator), intrinsics resolved to
concrete ARNs in one fixed account and region.

A resource's name is what CloudFormation would give it: its own name property where the template
sets one (the attachment bucket, the audit bus, the parameter), otherwise its local name (the
local stack names tables, buses, secrets and state machines after their logical ids, buckets in
lower case), so that `StackNames` maps a call seen on moto to the same ARN the policy names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

from local.aws_resources import cloudformation_resources, local_bucket_name
from local.iam_policy import Statement
from local.sam_template import CHECK_REGION, load_template

ACCOUNT: Final = "123456789012"
"""moto's default account: what the local stack's ARNs carry, and the one the policies get."""
PARTITION: Final = "aws"
SECRET_SUFFIX: Final = "-AbCdEf"  # noqa: S105 (an ARN's suffix, no secret)
"""Secrets Manager appends six random characters to a secret's ARN."""
ROLE_HOLDERS: Final = ("AWS::Lambda::Function", "AWS::StepFunctions::StateMachine")
_SUB_VARIABLE: Final = re.compile(r"\$\{([^}!]+)\}")


class UnresolvedError(ValueError):
    """An intrinsic the resolver does not know."""


@dataclass
class StackNames:
    """The deployed names and ARNs of the template's resources, with its parameters' defaults
    (`overrides` replaces some), in account `ACCOUNT` and region `region`."""

    overrides: dict[str, str] = field(default_factory=dict)
    region: str = CHECK_REGION

    @cached_property
    def template(self) -> dict[str, Any]:
        return load_template()

    @cached_property
    def cloudformation(self) -> dict[str, Any]:
        return cloudformation_resources()

    @cached_property
    def parameters(self) -> dict[str, str]:
        declared = self.template.get("Parameters", {})
        values = {name: str(spec.get("Default", "")) for name, spec in declared.items()}
        return {**values, **self.overrides}

    def resource(self, logical_id: str) -> dict[str, Any]:
        resources = self.cloudformation
        if logical_id not in resources:
            raise UnresolvedError(f"no resource {logical_id!r} in the template")
        resource: dict[str, Any] = resources[logical_id]
        return resource

    def _own_name(self, logical_id: str, prop: str) -> str | None:
        value = self.resource(logical_id).get("Properties", {}).get(prop)
        return None if value is None else str(self.resolve(value))

    def name(self, logical_id: str) -> str:
        """The resource's physical name (a table's, a bucket's, a bus's...)."""
        kind = self.resource(logical_id)["Type"]
        own = {
            "AWS::DynamoDB::Table": "TableName",
            "AWS::S3::Bucket": "BucketName",
            "AWS::Events::EventBus": "Name",
            "AWS::SSM::Parameter": "Name",
            "AWS::SecretsManager::Secret": "Name",
            "AWS::StepFunctions::StateMachine": "StateMachineName",
            "AWS::SQS::Queue": "QueueName",
        }.get(kind)
        named = self._own_name(logical_id, own) if own else None
        if named is not None:
            return named
        return local_bucket_name(logical_id) if kind == "AWS::S3::Bucket" else logical_id

    def arn(self, logical_id: str) -> str:
        """`!GetAtt <logical id>.Arn` (and `!Ref` for what returns an ARN)."""
        kind, name = self.resource(logical_id)["Type"], self.name(logical_id)
        region, account = self.region, ACCOUNT
        arns = {
            "AWS::DynamoDB::Table": f"arn:aws:dynamodb:{region}:{account}:table/{name}",
            "AWS::S3::Bucket": f"arn:aws:s3:::{name}",
            "AWS::Events::EventBus": f"arn:aws:events:{region}:{account}:event-bus/{name}",
            "AWS::SecretsManager::Secret": (
                f"arn:aws:secretsmanager:{region}:{account}:secret:{name}{SECRET_SUFFIX}"
            ),
            "AWS::KMS::Key": f"arn:aws:kms:{region}:{account}:key/{name}",
            "AWS::StepFunctions::StateMachine": (
                f"arn:aws:states:{region}:{account}:stateMachine:{name}"
            ),
            "AWS::SSM::Parameter": f"arn:aws:ssm:{region}:{account}:parameter/{name.lstrip('/')}",
            "AWS::SQS::Queue": f"arn:aws:sqs:{region}:{account}:{name}",
        }
        if kind not in arns:
            raise UnresolvedError(f"no ARN known for {logical_id} ({kind})")
        return arns[kind]

    def ref(self, name: str) -> str:
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": PARTITION,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": "sstools-agent",
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.parameters:
            return self.parameters[name]
        kind = self.resource(name)["Type"]
        by_arn = ("AWS::SecretsManager::Secret", "AWS::StepFunctions::StateMachine")
        return self.arn(name) if kind in by_arn else self.name(name)

    def get_att(self, logical_id: str, attribute: str) -> str:
        if attribute == "Arn":
            return self.arn(logical_id)
        if attribute == "Name":
            return self.name(logical_id)
        raise UnresolvedError(f"!GetAtt {logical_id}.{attribute}")

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.template["Conditions"][name]))

    def resolve(self, value: Any) -> Any:  # noqa: PLR0911 (one branch per intrinsic)
        """`value` with every intrinsic replaced by its value (`AWS::NoValue` items dropped)."""
        if isinstance(value, list):
            items = [self.resolve(item) for item in value]
            return [item for item in items if item is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) != 1 or not next(iter(value)).startswith(("Fn::", "Ref", "Condition")):
            resolved = {k: self.resolve(v) for k, v in value.items()}
            return {k: v for k, v in resolved.items() if v is not _NO_VALUE}
        ((function, argument),) = value.items()
        if function == "Ref":
            return _NO_VALUE if argument == "AWS::NoValue" else self.ref(argument)
        if function == "Fn::GetAtt":
            logical_id, attribute = (
                argument.split(".", 1) if isinstance(argument, str) else argument
            )
            return self.get_att(logical_id, attribute)
        if function == "Fn::Sub":
            return self._sub(argument)
        if function == "Fn::If":
            name, then, otherwise = argument
            return self.resolve(then if self.condition(name) else otherwise)
        if function == "Condition":
            return self.condition(argument)
        return self._logic(function, self.resolve(argument))

    def _logic(self, function: str, argument: Any) -> Any:
        if function == "Fn::Equals":
            return argument[0] == argument[1]
        if function == "Fn::And":
            return all(argument)
        if function == "Fn::Or":
            return any(argument)
        if function == "Fn::Not":
            return not argument[0]
        if function == "Fn::Join":
            return str(argument[0]).join(str(item) for item in argument[1])
        raise UnresolvedError(function)

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        values = {name: str(self.resolve(v)) for name, v in variables.items()}

        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in values:
                return values[name]
            if "." in name:
                return self.get_att(*name.split(".", 1))
            return self.ref(name)

        return _SUB_VARIABLE.sub(one, text)

    def role_statements(self) -> dict[str, list[Statement]]:
        """Each role holder's (function's or state machine's) inline statements, by its logical
        id in template.yaml."""
        statements: dict[str, list[Statement]] = {}
        for logical_id, resource in self.cloudformation.items():
            if resource["Type"] not in ROLE_HOLDERS:
                continue
            properties = resource["Properties"]
            role_ref = properties.get("Role") or properties["RoleArn"]
            statements[logical_id] = self._inline(logical_id, role_ref["Fn::GetAtt"][0])
        return statements

    def identity_statements(self) -> list[Statement]:
        """Every statement of every role and identity policy in the translated template (a role
        SAM makes for an event source, a DLQ..., not only the functions')."""
        found = []
        for logical_id, resource in self.cloudformation.items():
            properties = resource.get("Properties", {})
            if resource["Type"] == "AWS::IAM::Role":
                # (a policy under a condition, `Fn::If`, is there or not as the parameters say)
                policies = self.resolve(properties.get("Policies", []))
                documents = [p["PolicyDocument"] for p in policies]
            elif resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
                documents = [properties["PolicyDocument"]]
            else:
                continue
            for document in documents:
                for number, statement in enumerate(self.resolve(document)["Statement"]):
                    found.append(Statement.parse(statement, f"{logical_id}#{number}"))
        return found

    def managed_policies(self, holder: str) -> list[str]:
        """The AWS managed policies a holder's role attaches (AWS's statements, not read here)."""
        role = self.resource(f"{holder}Role")
        return [str(arn) for arn in self.resolve(role["Properties"].get("ManagedPolicyArns", []))]

    def _inline(self, holder: str, role_id: str) -> list[Statement]:
        """The role's statements, each named after the template's `Policies` item it came from
        (SAM names the role's policies `<role>Policy<index in Policies>`)."""
        declared = self.template["Resources"][holder]["Properties"].get("Policies", [])
        found = []
        for policy in self.resolve(self.resource(role_id)["Properties"].get("Policies", [])):
            suffix = policy["PolicyName"].removeprefix(role_id)
            if suffix.removeprefix("Policy").isdigit():
                index = int(suffix.removeprefix("Policy"))
                # a SAM policy template's name, or Statement (the chosen branch of an `Fn::If`)
                origin = next(iter(self.resolve(declared[index])))
                where = f"{holder}.Policies[{index}] {origin}"
            else:  # SAM's own, for a function property (DeadLetterQueue: `…DeadLetterQueuePolicy`)
                origin = where = f"{holder}.{suffix}"
            document = self.resolve(policy["PolicyDocument"])
            for number, statement in enumerate(document["Statement"]):
                found.append(Statement.parse(statement, f"{where}#{number}", origin))
        return found


class _NoValue:
    """`AWS::NoValue`: the item is left out."""


_NO_VALUE: Final = _NoValue()
