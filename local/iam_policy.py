"""Whether an identity policy allows an action on a resource: the part of IAM's evaluation that
can be decided offline, for the least-privilege test (docs/deploy.md, «Least privilege, tested»).

What it decides: `Action`/`NotAction` and `Resource`/`NotResource` with IAM's wildcards (`*` any
run of characters, `:` and `/` included; `?` one character; actions case-insensitive, resources
case-sensitive), an explicit `Deny` over any `Allow`, nothing allowed unless a statement says so.
What it cannot: a statement with a `Condition` is reported as such (`Decision.conditional`), never
taken as allowing; resource policies, KMS key policies, permission boundaries and SCPs are not
read (an account's own are unknown here).

No maintained library does this much and no more: policyuniverse 1.5.1 (2023) parses and expands
statements but decides nothing; parliament 1.6.4 lints statements against AWS's action list;
policyglass 0.8.0 (2022) computes effective permissions, unmaintained.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any, Final, Literal

STAR_ONLY_ACTIONS: Final = {
    "xray:PutTraceSegments": "X-Ray has no resource type: traces are per account",
    "xray:PutTelemetryRecords": "X-Ray has no resource type: telemetry is per account",
    "cloudwatch:PutMetricData": "metrics name no resource (a namespace is a condition key)",
    "ssm:DescribeParameters": "lists the account's parameters: no resource type",
}
"""Actions AWS authorizes only against `Resource: "*"` (no resource-level permissions), each with
why: the one place a statement may name `*`."""


_ARN_PARTS: Final = 6  # arn:partition:service:region:account:resource
_RESOURCE_TYPES: Final = frozenset(
    {"table", "key", "secret", "event-bus", "stateMachine", "execution", "parameter"}
    | {"foundation-model", "inference-profile", "function", "log-group", "alias"}
)
"""The resource-type words an ARN's resource part starts with before the resource's name."""


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a policy, its lists normalised; `source` says where it was written,
    `origin` how (a SAM policy template's name, or `Statement` for one written out)."""

    source: str
    effect: Literal["Allow", "Deny"]
    actions: tuple[str, ...] = ()
    not_actions: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    not_resources: tuple[str, ...] = ()
    conditional: bool = False
    origin: str = "Statement"

    @classmethod
    def parse(cls, document: dict[str, Any], source: str, origin: str = "Statement") -> Statement:
        """A statement from its JSON form (intrinsics already resolved to strings)."""
        effect = document["Effect"]
        if effect not in ("Allow", "Deny"):
            raise ValueError(f"{source}: Effect {effect!r}")
        return cls(
            source=source,
            effect=effect,
            actions=_strings(document.get("Action")),
            not_actions=_strings(document.get("NotAction")),
            resources=_strings(document.get("Resource")),
            not_resources=_strings(document.get("NotResource")),
            conditional="Condition" in document,
            origin=origin,
        )

    def covers_action(self, action: str) -> bool:
        if self.not_actions:
            return not any(_matches(p, action, case=False) for p in self.not_actions)
        return any(_matches(p, action, case=False) for p in self.actions)

    def covers_resource(self, resource: str) -> bool:
        if self.not_resources:
            return not any(_matches(p, resource, case=True) for p in self.not_resources)
        return any(_matches(p, resource, case=True) for p in self.resources)

    def applies(self, action: str, resource: str) -> bool:
        return self.covers_action(action) and self.covers_resource(resource)


@dataclass(frozen=True, slots=True)
class Decision:
    """What the statements say of one request, and which of them said it."""

    allowed: bool
    allowing: tuple[Statement, ...] = ()
    denying: tuple[Statement, ...] = ()
    conditional: tuple[Statement, ...] = ()
    """Statements that would apply but for a condition not evaluated here."""


def decide(statements: list[Statement], action: str, resource: str) -> Decision:
    """IAM's order for one identity policy set: an explicit deny wins, then an allow, then the
    implicit deny. A conditional statement decides nothing here (see the module's docstring)."""
    applying = [s for s in statements if s.applies(action, resource)]
    denying = tuple(s for s in applying if s.effect == "Deny" and not s.conditional)
    allowing = tuple(s for s in applying if s.effect == "Allow" and not s.conditional)
    conditional = tuple(s for s in applying if s.conditional)
    return Decision(not denying and bool(allowing), allowing, denying, conditional)


def unspecific_grants(statements: list[Statement]) -> list[str]:
    """The allows of any resource: `*`, or an ARN whose service, region, account or resource
    part is only a wildcard, for an action not in `STAR_ONLY_ACTIONS` (a named bucket's `/*`, a
    named table's `/index/*` are specific)."""
    found = []
    for statement in statements:
        if statement.effect != "Allow":
            continue
        broad = [r for r in statement.resources if _unspecific(r)] + [
            f"NotResource {r}" for r in statement.not_resources
        ]
        actions = set(statement.actions) - STAR_ONLY_ACTIONS.keys()
        if statement.not_actions or (broad and actions):
            found.append(f"{statement.source}: {sorted(actions)} on {broad or ['(NotAction)']}")
    return found


def _unspecific(resource: str) -> bool:
    """`*`, or an ARN that names no one resource: a wildcard for its service, region or account,
    or for the resource's own name (`table/*`, `secret:*`, `arn:aws:s3:::*`)."""
    parts = resource.split(":", 5)
    if len(parts) < _ARN_PARTS or parts[0] != "arn":
        return True
    *_, service, region, account, rest = parts
    if any(part and _only_wildcards(part) for part in (service, region, account)):
        return True
    kind, _, named = rest.partition("/") if "/" in rest else rest.partition(":")
    name = named if kind in _RESOURCE_TYPES else rest
    return _only_wildcards(re.split(r"[/:]", name, maxsplit=1)[0])


def _only_wildcards(text: str) -> bool:
    return text.strip("*?") == ""


def _strings(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TypeError(f"not a string or a list of strings: {value!r}")


@cache
def _pattern(pattern: str, case: bool) -> re.Pattern[str]:
    # fnmatch would also read `[...]` as a character class; IAM knows only `*` and `?`
    regex = "".join(
        ".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern
    )
    return re.compile(f"^{regex}$", re.DOTALL if case else re.DOTALL | re.IGNORECASE)


def _matches(pattern: str, value: str, *, case: bool) -> bool:
    return _pattern(pattern, case).match(value) is not None
