"""AWS resources for the local stack and the tests, created from template.yaml's own definitions.

Nothing here keeps a copy of a key schema: tables and buckets are created from the translated
template, so the local stack cannot drift from what SAM deploys. Local names: a table is named
after its logical id, a bucket after its logical id in lower case (settings default to these).
"""

from __future__ import annotations

import io
import json
import secrets
import zipfile
from dataclasses import dataclass, field
from typing import Any, Final

import boto3
import httpx

from local.sam_template import TEMPLATE_PATH, load_template, packaged, translate

_TABLE_PROPERTIES: Final = (
    "AttributeDefinitions",
    "KeySchema",
    "BillingMode",
    "GlobalSecondaryIndexes",
    "LocalSecondaryIndexes",
    "StreamSpecification",
    "ProvisionedThroughput",
)


@dataclass
class LocalResources:
    """What was created, by logical id."""

    tables: dict[str, str] = field(default_factory=dict)
    buckets: dict[str, str] = field(default_factory=dict)
    event_buses: dict[str, str] = field(default_factory=dict)
    state_machines: dict[str, str] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    """KMS key ids; each key also has the alias `alias/<logical id>`."""
    secrets: dict[str, str] = field(default_factory=dict)

    def local_name(self, logical_id: str) -> str:
        """The local name of a resource, for `!Ref` in definition substitutions."""
        for names in (self.tables, self.buckets, self.event_buses):
            if logical_id in names:
                return names[logical_id]
        raise KeyError(f"no local resource {logical_id!r}")


def generated_secret(properties: dict[str, Any]) -> str:
    """A secret's value as its `GenerateSecretString` describes it: a random string, or a JSON
    template with the random string under `GenerateStringKey`."""
    spec = properties.get("GenerateSecretString", {})
    value = secrets.token_urlsafe(max(int(spec.get("PasswordLength", 32)), 16))
    if "SecretStringTemplate" not in spec:
        return value
    template = json.loads(spec["SecretStringTemplate"])
    return json.dumps({**template, spec["GenerateStringKey"]: value})


def local_bucket_name(logical_id: str) -> str:
    """S3 bucket names are lower case."""
    return logical_id.lower()


def cloudformation_resources() -> dict[str, Any]:
    """The template's resources after the SAM transform."""
    template, _ = packaged(load_template(), TEMPLATE_PATH.parent)
    resources: dict[str, Any] = translate(template)["Resources"]
    return resources


def create_resources(endpoint_url: str, region: str = "eu-central-1") -> LocalResources:
    """Creates every table and bucket of the template at `endpoint_url` (a moto server)."""
    session = boto3.session.Session(
        region_name=region,
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106 (moto accepts any credentials)
    )
    dynamodb = session.client("dynamodb", endpoint_url=endpoint_url)
    s3 = session.client("s3", endpoint_url=endpoint_url)
    created = LocalResources()
    for logical_id, resource in cloudformation_resources().items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::DynamoDB::Table":
            spec = {k: properties[k] for k in _TABLE_PROPERTIES if k in properties}
            dynamodb.create_table(TableName=logical_id, **spec)
            ttl = properties.get("TimeToLiveSpecification")
            if ttl:
                dynamodb.update_time_to_live(TableName=logical_id, TimeToLiveSpecification=ttl)
            created.tables[logical_id] = logical_id
        elif resource["Type"] == "AWS::S3::Bucket":
            name = local_bucket_name(logical_id)
            s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
            created.buckets[logical_id] = name
        elif resource["Type"] == "AWS::Events::EventBus":
            session.client("events", endpoint_url=endpoint_url).create_event_bus(Name=logical_id)
            created.event_buses[logical_id] = logical_id
        elif resource["Type"] == "AWS::KMS::Key":
            kms = session.client("kms", endpoint_url=endpoint_url)
            key_id = kms.create_key(
                KeySpec=properties.get("KeySpec", "SYMMETRIC_DEFAULT"),
                KeyUsage=properties.get("KeyUsage", "ENCRYPT_DECRYPT"),
                Description=properties.get("Description", logical_id),
            )["KeyMetadata"]["KeyId"]
            kms.create_alias(AliasName=f"alias/{logical_id}", TargetKeyId=key_id)
            created.keys[logical_id] = key_id
        elif resource["Type"] == "AWS::SecretsManager::Secret":
            session.client("secretsmanager", endpoint_url=endpoint_url).create_secret(
                Name=logical_id, SecretString=generated_secret(properties)
            )
            created.secrets[logical_id] = logical_id
    _create_state_machines(session, endpoint_url, created)
    return created


LOCAL_CHAT_FUNCTION: Final = "ChatFunction"
"""The moto function the confirmation machine invokes with a second approver's decision
(`settings.chat_function` locally): moto cannot run its code, so its invocation succeeds
without effect and `local.state_machine_tasks` hands the payload to the chat app."""


def _create_chat_function_stand_in(session: Any, endpoint_url: str) -> None:
    iam = session.client("iam", endpoint_url=endpoint_url)
    role = iam.create_role(RoleName="local-chat-function", AssumeRolePolicyDocument="{}")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as code:
        code.writestr("run.py", "# moto does not run it: local.state_machine_tasks does\n")
    session.client("lambda", endpoint_url=endpoint_url).create_function(
        FunctionName=LOCAL_CHAT_FUNCTION,
        Runtime="python3.12",
        Role=role["Role"]["Arn"],
        Handler="run.handler",
        Code={"ZipFile": archive.getvalue()},
    )


def _create_state_machines(session: Any, endpoint_url: str, created: LocalResources) -> None:
    """State machines from their ASL files, substitutions resolved to local names; moto is told
    to execute them (it only records executions otherwise), and to answer a Lambda task
    without running a container (the chat function's stand-in)."""
    httpx.post(
        f"{endpoint_url}/moto-api/config",
        json={"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}},
    ).raise_for_status()
    _create_chat_function_stand_in(session, endpoint_url)
    client = session.client("stepfunctions", endpoint_url=endpoint_url)
    for logical_id, resource in load_template().get("Resources", {}).items():
        if resource.get("Type") != "AWS::Serverless::StateMachine":
            continue
        properties = resource["Properties"]
        definition = (TEMPLATE_PATH.parent / properties["DefinitionUri"]).read_text()
        for name, value in properties.get("DefinitionSubstitutions", {}).items():
            definition = definition.replace("${" + name + "}", created.local_name(value["Ref"]))
        arn = client.create_state_machine(
            name=logical_id,
            definition=definition,
            type=properties.get("Type", "STANDARD"),
            roleArn="arn:aws:iam::123456789012:role/local-state-machine",
        )["stateMachineArn"]
        created.state_machines[logical_id] = arn
