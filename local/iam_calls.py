"""Every AWS request each function makes, as IAM sees it: the principal that makes it (a function
or the state machine, by its logical id in template.yaml), the action and the resource's ARN as
deployed. For the least-privilege test (tests/integration/test_least_privilege.py).

All the functions run in this one process, so a call is attributed by the client that makes it:
each botocore client is stamped, when it is created, with the principal being built then
(`IamCallTrace.building`, around a function's own composition: `build_chat`, `build_api`...);
the functions create their clients when they are built, as Lambda's init phase does. A client
created by moto's state machine interpreter (its Task states) is the state machine's. One created
with nothing being built is the harness's (the test's own reads, the stand-in for EventBridge's
rule targets) and is not recorded, unless it is created off the main thread: a function that
created a client lazily, in a request, would be missed; such calls are kept as `unattributed`.

A presigned request is signed with the function's role and authorized against it when the browser
uses it: a presigned GET is seen like a call (botocore emits the same parameter events), a
presigned POST (which botocore builds on CreateBucket's model) as the `s3:PutObject` it grants.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote

import botocore.session

from local.iam_template import ACCOUNT, StackNames

STATE_MACHINE_INTERPRETER: Final = "moto.stepfunctions.parser"
HARNESS: Final = ""

_S3_ACTIONS: Final = {
    "HeadObject": "GetObject",
    "HeadBucket": "ListBucket",
    "ListObjects": "ListBucket",
    "ListObjectsV2": "ListBucket",
    "GetBucketLifecycleConfiguration": "GetLifecycleConfiguration",
    "PutBucketLifecycleConfiguration": "PutLifecycleConfiguration",
    "CreateMultipartUpload": "PutObject",
    "UploadPart": "PutObject",
    "CompleteMultipartUpload": "PutObject",
}
"""S3 operations authorized as another action (the service authorization reference's)."""
_TRANSACT_ACTIONS: Final = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}
"""DynamoDB transactions are authorized item by item, as the single-item action."""


@dataclass(frozen=True, slots=True, order=True)
class IamCall:
    """One (principal, action, resource) a run needed; `operation` is the API call it came from."""

    principal: str
    action: str
    resource: str
    operation: str = field(compare=False)


@dataclass
class LocalNames:
    """The local stack's names (moto's) of the template's resources, mapped to their deployed
    ARNs (`StackNames`): tables, buses, secrets and state machines are named after their logical
    ids, buckets in lower case, KMS keys by the ids moto gave them (`key_ids`: id -> logical id),
    SSM parameters by their deployed names."""

    stack: StackNames
    key_ids: dict[str, str] = field(default_factory=dict)
    region: str = "eu-central-1"

    def _logical(self, kind: str, local: str) -> str | None:
        for logical_id, resource in self.stack.cloudformation.items():
            if resource["Type"] != kind:
                continue
            if kind == "AWS::S3::Bucket":
                known = {logical_id.lower(), self.stack.name(logical_id)}
            elif kind == "AWS::SSM::Parameter":
                known = {self.stack.name(logical_id)}
            else:
                known = {logical_id}
            if local in known:
                return logical_id
        return None

    def table(self, local: str, index: str | None = None) -> str:
        logical = self._logical("AWS::DynamoDB::Table", local)
        arn = (
            self.stack.arn(logical)
            if logical
            else f"arn:aws:dynamodb:{self.region}:{ACCOUNT}:table/{local}"
        )
        return f"{arn}/index/{index}" if index else arn

    def bucket(self, local: str, key: str | None = None) -> str:
        logical = self._logical("AWS::S3::Bucket", local)
        arn = self.stack.arn(logical) if logical else f"arn:aws:s3:::{local}"
        return arn if key is None else f"{arn}/{key}"

    def bus(self, name_or_arn: str | None) -> str:
        name = (name_or_arn or "default").rsplit("/", 1)[-1]
        logical = self._logical("AWS::Events::EventBus", name)
        if logical:
            return self.stack.arn(logical)
        return f"arn:aws:events:{self.region}:{ACCOUNT}:event-bus/{name}"

    def secret(self, secret_id: str) -> str:
        name = secret_id.split(":secret:", 1)[-1]
        logical = self._logical("AWS::SecretsManager::Secret", name)
        if logical:
            return self.stack.arn(logical)
        return f"arn:aws:secretsmanager:{self.region}:{ACCOUNT}:secret:{name}"

    def key(self, key_id: str) -> str:
        bare = key_id.rsplit("/", 1)[-1] if key_id.startswith("arn:") else key_id
        logical = self.key_ids.get(bare) or bare.removeprefix("alias/")
        if self._logical("AWS::KMS::Key", logical):
            return self.stack.arn(logical)
        return f"arn:aws:kms:{self.region}:{ACCOUNT}:key/{bare}"

    def state_machine(self, arn: str) -> str:
        logical = self._logical("AWS::StepFunctions::StateMachine", arn.rsplit(":", 1)[-1])
        return self.stack.arn(logical) if logical else arn

    def state_machine_id(self) -> str:
        """The logical id of the stack's one state machine."""
        (logical,) = (
            logical_id
            for logical_id, resource in self.stack.cloudformation.items()
            if resource["Type"] == "AWS::StepFunctions::StateMachine"
        )
        return logical

    def the_state_machine(self) -> str:
        """The stack's one state machine's ARN (a task token names none: see `requests`)."""
        return self.stack.arn(self.state_machine_id())

    def execution(self, arn: str) -> str:
        # arn:aws:states:<region>:<account>:execution:<machine>:<name>
        parts = arn.split(":")
        machine = self.state_machine(":".join([*parts[:5], "stateMachine", parts[6]]))
        return machine.replace(":stateMachine:", ":execution:") + f":{parts[7]}"

    def parameter(self, name: str) -> str:
        logical = self._logical("AWS::SSM::Parameter", name)
        if logical:
            return self.stack.arn(logical)
        return f"arn:aws:ssm:{self.region}:{ACCOUNT}:parameter/{name.lstrip('/')}"


Request = tuple[str, str]
"""(action, resource ARN)."""


def requests(
    names: LocalNames, prefix: str, operation: str, params: dict[str, Any]
) -> list[Request]:
    """What IAM authorizes for one API call: an action on a resource, or several (a batch over
    tables, a copy reads one object and writes another)."""
    by_service: dict[str, Callable[[LocalNames, str, dict[str, Any]], list[Request]]] = {
        "dynamodb": _dynamodb,
        "s3": _s3,
        "events": _events,
        "states": _states,
        "kms": lambda n, op, p: [(f"kms:{op}", n.key(p["KeyId"]))],
        "secretsmanager": lambda n, op, p: [(f"secretsmanager:{op}", n.secret(p["SecretId"]))],
        "ssm": _ssm,
    }
    if prefix not in by_service:
        # A service the functions did not call before: its ARN is to be written here
        return [(f"{prefix}:{operation}", f"(no ARN known for {prefix} calls)")]
    return by_service[prefix](names, operation, params)


def _dynamodb(names: LocalNames, operation: str, params: dict[str, Any]) -> list[Request]:
    if operation in ("BatchWriteItem", "BatchGetItem"):
        return [(f"dynamodb:{operation}", names.table(t)) for t in params["RequestItems"]]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        found = []
        for item in params["TransactItems"]:
            ((kind, body),) = item.items()
            found.append((f"dynamodb:{_TRANSACT_ACTIONS[kind]}", names.table(body["TableName"])))
        return found
    return [(f"dynamodb:{operation}", names.table(params["TableName"], params.get("IndexName")))]


def _s3(names: LocalNames, operation: str, params: dict[str, Any]) -> list[Request]:
    bucket = params["Bucket"]
    if operation == "DeleteObjects":
        keys = [o["Key"] for o in params["Delete"]["Objects"]]
        return [("s3:DeleteObject", names.bucket(bucket, key)) for key in keys]
    if operation == "CopyObject":
        source = params["CopySource"]
        if isinstance(source, str):
            source_bucket, source_key = unquote(source).lstrip("/").split("/", 1)
        else:
            source_bucket, source_key = source["Bucket"], source["Key"]
        return [
            ("s3:GetObject", names.bucket(source_bucket, source_key)),
            ("s3:PutObject", names.bucket(bucket, params["Key"])),
        ]
    action = f"s3:{_S3_ACTIONS.get(operation, operation)}"
    found = [(action, names.bucket(bucket, params.get("Key")))]
    if operation == "PutObject" and params.get("Tagging"):  # tags on the put need their own
        found.append(("s3:PutObjectTagging", names.bucket(bucket, params["Key"])))
    return found


def _events(names: LocalNames, operation: str, params: dict[str, Any]) -> list[Request]:
    if operation != "PutEvents":
        return [(f"events:{operation}", names.bus(params.get("EventBusName")))]
    buses = {entry.get("EventBusName") for entry in params["Entries"]}
    return [("events:PutEvents", names.bus(bus)) for bus in sorted(buses, key=str)]


def _states(names: LocalNames, operation: str, params: dict[str, Any]) -> list[Request]:
    if "stateMachineArn" in params:
        return [(f"states:{operation}", names.state_machine(params["stateMachineArn"]))]
    if "executionArn" in params:
        return [(f"states:{operation}", names.execution(params["executionArn"]))]
    if operation.startswith("SendTask"):
        # A token names no resource; AWS authorizes a callback token's answer on the state
        # machine whose execution issued it (CDK's grantTaskResponse grants it there). The
        # stack has one state machine that issues tokens.
        return [(f"states:{operation}", names.the_state_machine())]
    return [(f"states:{operation}", "(no ARN known for this Step Functions call)")]


def _ssm(names: LocalNames, operation: str, params: dict[str, Any]) -> list[Request]:
    if "Names" in params:
        return [(f"ssm:{operation}", names.parameter(name)) for name in params["Names"]]
    return [(f"ssm:{operation}", names.parameter(params.get("Name") or params["Path"]))]


@dataclass
class IamCallTrace:
    """The requests made while `installed`, by the principal that made each."""

    names: LocalNames
    calls: set[IamCall] = field(default_factory=set)
    unattributed: list[str] = field(default_factory=list)
    """Calls by clients created in a request (off the main thread) with nothing being built."""
    _building: str = HARNESS
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def building(self, principal: str) -> Iterator[None]:
        """The clients created meanwhile (on the main thread) are `principal`'s."""
        previous, self._building = self._building, principal
        try:
            yield
        finally:
            self._building = previous

    def by(self, principal: str) -> set[IamCall]:
        with self._lock:  # the rule targets' threads add calls meanwhile
            return {call for call in self.calls if call.principal == principal}

    def _principal_now(self) -> str | None:
        """Who a client created now belongs to (None: off the main thread, unknown)."""
        frame = sys._getframe(0)
        while frame is not None:
            if str(frame.f_globals.get("__name__", "")).startswith(STATE_MACHINE_INTERPRETER):
                return self.names.state_machine_id()
            frame = frame.f_back  # type: ignore[assignment]
        return self._building if threading.current_thread() is threading.main_thread() else None

    def _record(self, principal: str | None, client: Any, operation: str, params: Any) -> None:
        if principal == HARNESS:
            return
        prefix = client.meta.service_model.signing_name
        found = requests(self.names, prefix, operation, params)
        with self._lock:
            if principal is None:
                self.unattributed += [f"{action} {resource}" for action, resource in found]
                return
            for action, resource in found:
                self.calls.add(IamCall(principal, action, resource, f"{prefix}.{operation}"))

    def _stamp(self, client: Any) -> None:
        principal = self._principal_now()

        def seen(params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
            # A presigned POST is built on CreateBucket's model: recorded as its PutObject below
            if not (context.get("is_presign_request") and model.name == "CreateBucket"):
                self._record(principal, client, model.name, params)

        client.meta.events.register("before-parameter-build", seen)
        presign_post = getattr(client, "generate_presigned_post", None)
        if presign_post is not None:

            def presigned_post(Bucket: str, Key: str, **rest: Any) -> Any:
                self._record(principal, client, "PutObject", {"Bucket": Bucket, "Key": Key})
                return presign_post(Bucket, Key, **rest)

            client.generate_presigned_post = presigned_post

    @contextmanager
    def installed(self) -> Iterator[IamCallTrace]:
        """Stamps every botocore client created meanwhile (and records its calls)."""
        original = botocore.session.Session.create_client
        trace = self

        def create_client(session: Any, *args: Any, **kwargs: Any) -> Any:
            client = original(session, *args, **kwargs)
            trace._stamp(client)
            return client

        botocore.session.Session.create_client = create_client
        try:
            yield self
        finally:
            botocore.session.Session.create_client = original
