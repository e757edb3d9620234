"""The rules as Cedar: the schema every policy set is checked against, and a policy set made ready
for evaluation (validated, keyed by its policies' `@id`, its log-only policies and change windows
set apart).

Cedar answers allow or deny; what it cannot say is encoded one way (docs/policy.md):
- whether a call needs a card, and how many approvers it needs, are actions of their own
  (`RequireCard`, `RequireSecondApprover`): a permit of one of them means yes;
- `@mode("log_only")` marks a policy that is evaluated and recorded but decides nothing;
- `@window_end("2026-12-04T18:00")` with `@timezone("Europe/Moscow")` (and optionally
  `@window_start`) makes a policy hold only inside that window of local time: the condition is
  added here, from the annotations, so the window is written once and its end can be told.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import cedarpy

from sstools_agent.domain.roles import Role

NAMESPACE: Final = "SsTools"
TOOL_GROUP: Final = "tool"
"""The action group every catalog tool belongs to (a policy about tools says `action in`)."""
REQUIRE_CARD: Final = "RequireCard"
REQUIRE_SECOND_APPROVER: Final = "RequireSecondApprover"
LOG_ONLY: Final = "log_only"
NO_ENVIRONMENT: Final = "none"
"""The tier (and id) of the resource a call that acts in no environment is asked about."""
SHIPPED_POLICY_FILE: Final = Path(__file__).with_name("policies") / "shipped.cedar"


class InvalidPolicySet(ValueError):
    """A policy set that does not parse, fails the schema or breaks the encoding's rules."""

    def __init__(self, errors: Iterable[str]) -> None:
        self.errors = tuple(errors)
        super().__init__("; ".join(self.errors))


def cedar_schema(tools: Iterable[str]) -> str:
    """The schema in Cedar's own syntax: users in roles (and groups), environments with their
    tier, one action per catalog tool (all in the group `tool`) and the two question actions."""
    names = ", ".join(json.dumps(tool) for tool in tools)
    applies = "appliesTo { principal: User, resource: Environment, context: Call }"
    return f"""namespace {NAMESPACE} {{
  entity Role in [Role];
  entity Group;
  entity User in [Role, Group];
  entity Environment = {{ "tier": String }};
  type Call = {{
    "tool": String,
    "operation": String,
    "cost": Bool,
    "card_configured": Bool,
    "now": datetime
  }};
  action "{TOOL_GROUP}";
  action {names} in ["{TOOL_GROUP}"] {applies};
  action "{REQUIRE_CARD}", "{REQUIRE_SECOND_APPROVER}" {applies};
}}
"""


@dataclass(frozen=True, slots=True)
class ChangeWindow:
    """When a windowed policy holds: local wall times in a named zone."""

    policy: str
    timezone: str
    ends: datetime
    """Aware, in `timezone`: what the user is told."""
    starts: datetime | None = None

    def condition(self) -> dict[str, Any]:
        """`context.now` inside the window, as Cedar's JSON policy syntax."""
        now = {".": {"left": {"Var": "context"}, "attr": "now"}}
        before_end = {"<": {"left": now, "right": _datetime_literal(self.ends)}}
        if self.starts is None:
            return before_end
        after_start = {">=": {"left": now, "right": _datetime_literal(self.starts)}}
        return {"&&": {"left": after_start, "right": before_end}}


def role_entities() -> list[dict[str, Any]]:
    """Each role a member of the one below it: `principal in Role::"engineer"` holds for admins."""
    chain = sorted(Role, key=lambda role: role.rank)
    return [
        {
            "uid": entity_ref("Role", role.value),
            "attrs": {},
            "parents": [entity_ref("Role", chain[i - 1].value)] if i else [],
        }
        for i, role in enumerate(chain)
    ]


def entity_ref(kind: str, entity_id: str) -> dict[str, str]:
    """An entity's uid in Cedar's JSON."""
    return {"type": f"{NAMESPACE}::{kind}", "id": entity_id}


def _datetime_literal(moment: datetime) -> dict[str, Any]:
    return {"datetime": [{"Value": cedar_time(moment)}]}


def cedar_time(moment: datetime) -> str:
    """A moment as Cedar's `datetime` reads it (UTC, seconds)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True, eq=False)
class CompiledPolicies:
    """A validated policy set, ready for `PolicyEngine` (domain/policy_engine.py); two are the
    same only when they are one object (decisions are cached per set)."""

    text: str
    schema: cedarpy.Schema
    entities: cedarpy.Entities
    """The role chain and the actions the schema declares (which tool is in the group `tool`):
    what every request's own entities are added to."""
    call: cedarpy.PolicySet
    """What decides a call: every enforced policy, windows included."""
    offer: cedarpy.PolicySet
    """What decides an offer: the enforced policies without windows (a window is told when a
    call meets it, which a tool never offered could not do)."""
    trial: cedarpy.PolicySet | None
    """The enforced and the log-only policies together (None: the set has no log-only one)."""
    log_only: frozenset[str]
    windows: Mapping[str, ChangeWindow]
    annotations: Mapping[str, Mapping[str, str]]


def compile_policies(text: str, schema: str) -> CompiledPolicies:
    """The policy set `text`, validated against `schema`; raises InvalidPolicySet."""
    result = cedarpy.validate_policies(text, schema)
    if not result.validation_passed:
        raise InvalidPolicySet(f"{e.policy_id or 'set'}: {e.error}" for e in result.errors)
    est = json.loads(cedarpy.policies_to_json_str(text))
    if est.get("templates"):
        raise InvalidPolicySet(["templates are not part of the encoding; write static policies"])
    keyed, errors = _keyed_by_id(est["staticPolicies"])
    windows: dict[str, ChangeWindow] = {}
    for policy_id, policy in keyed.items():
        annotations = policy.get("annotations", {})
        mode = annotations.get("mode")
        if mode not in (None, LOG_ONLY):
            errors.append(f"{policy_id}: @mode is {mode!r}; only {LOG_ONLY!r} is known")
        try:
            window = _window(policy_id, annotations)
        except ValueError as error:
            errors.append(f"{policy_id}: {error}")
            continue
        if window is not None:
            windows[policy_id] = window
            policy["conditions"] = [
                *policy.get("conditions", []),
                {"kind": "when", "body": window.condition()},
            ]
    if errors:
        raise InvalidPolicySet(errors)
    log_only = frozenset(i for i, p in keyed.items() if p["annotations"].get("mode") == LOG_ONLY)
    enforced = {i: p for i, p in keyed.items() if i not in log_only}
    return CompiledPolicies(
        text=text,
        schema=cedarpy.Schema.from_str(schema),
        entities=cedarpy.Entities.from_json_str(json.dumps(role_entities()), schema),
        call=_policy_set(enforced),
        offer=_policy_set({i: p for i, p in enforced.items() if i not in windows}),
        trial=_policy_set(keyed) if log_only else None,
        log_only=log_only,
        windows=MappingProxyType(windows),
        annotations=MappingProxyType(
            {i: MappingProxyType(dict(p["annotations"])) for i, p in keyed.items()}
        ),
    )


def _keyed_by_id(
    policies: Mapping[str, dict[str, Any]],
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The policies keyed by their `@id` (what decisions and audit records name)."""
    keyed: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    for position, policy in enumerate(policies.values()):
        policy.setdefault("annotations", {})
        policy_id = policy["annotations"].get("id")
        if not policy_id:
            errors.append(f"policy {position + 1} has no @id")
        elif policy_id in keyed:
            errors.append(f"@id {policy_id!r} is used twice")
        else:
            keyed[policy_id] = policy
    return keyed, errors


def _window(policy_id: str, annotations: Mapping[str, str]) -> ChangeWindow | None:
    """The window a policy's annotations name; raises ValueError for a malformed one."""
    end, start, zone = (annotations.get(k) for k in ("window_end", "window_start", "timezone"))
    if end is None:
        if start is not None or zone is not None:
            raise ValueError("@window_start and @timezone need a @window_end")
        return None
    if zone is None:
        raise ValueError("@window_end needs a @timezone (an IANA name such as Europe/Moscow)")
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"@timezone {zone!r} is not a known time zone") from None
    ends = _local(end, tz)
    starts = _local(start, tz) if start is not None else None
    if starts is not None and starts >= ends:
        raise ValueError("@window_start is not before @window_end")
    return ChangeWindow(policy_id, zone, ends, starts)


def _local(stamp: str, tz: ZoneInfo) -> datetime:
    """A wall time without offset (`2026-12-04T18:00`) in the policy's zone."""
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        raise ValueError(f"{stamp!r} is not a time such as 2026-12-04T18:00") from None
    if moment.tzinfo is not None:
        raise ValueError(f"{stamp!r}: write the local time without an offset; @timezone says it")
    return moment.replace(tzinfo=tz)


def _policy_set(policies: Mapping[str, dict[str, Any]]) -> cedarpy.PolicySet:
    est = {"staticPolicies": dict(policies), "templates": {}, "templateLinks": []}
    return cedarpy.PolicySet.from_json_str(json.dumps(est))


def shipped_policy_text() -> str:
    """The policy set the layer ships: today's rules (used when no S3 object is configured)."""
    return SHIPPED_POLICY_FILE.read_text(encoding="utf-8")
