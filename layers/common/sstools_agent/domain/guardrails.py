"""GuardrailDecision: how risky a call is and what the confirmation card says .

Risk depends on the operation and the target environment's tier, not on the tool's name alone:
a write to prod is dangerous (destructive tone, «⚠️ PRODUCTION»), a write to dev or staging is
guarded (info tone, «Изменения в dev-окружении»), a read is safe (success tone, «чтение данных»).
A denied call carries the permission result and no confirmation: the card says «Недостаточно прав».
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Final

from pydantic import ValidationError

from sstools_agent.domain.catalog_types import CountedImpact, Operation, ToolSpec
from sstools_agent.domain.change_plans import plan_objects
from sstools_agent.domain.environments import EnvironmentTier
from sstools_agent.domain.role_policy import PermissionResult
from sstools_agent.domain.tool_calls import ResolvedToolCall
from sstools_agent.domain.wording import role_words

READ_LABEL: Final = "чтение данных"
WRITE_LABEL: Final = "изменение данных"
DENIED_TITLE: Final = "Недостаточно прав"


class RiskLevel(StrEnum):
    SAFE = "safe"
    GUARDED = "guarded"
    DANGEROUS = "dangerous"


class Tone(StrEnum):
    """Visual treatment of the card."""

    SUCCESS = "success"
    INFO = "info"
    WARNING = "warning"
    DESTRUCTIVE = "destructive"


_BADGES: Final = {
    (EnvironmentTier.PROD, Operation.WRITE): "⚠️ PRODUCTION",
    (EnvironmentTier.PROD, Operation.READ): "PRODUCTION",
    (EnvironmentTier.STAGING, Operation.WRITE): "STAGING",
    (EnvironmentTier.STAGING, Operation.READ): "STAGING",
    (EnvironmentTier.DEV, Operation.WRITE): "DEV",
    (EnvironmentTier.DEV, Operation.READ): "DEV",
}


_KEPT: Final = frozenset({"allowed", "user_role", "required_role", "reason"})
"""A permission's fields every payload has; the policy's (which policies decided, a window's
notice, a log-only trial) only when there is something to say."""


@dataclass(frozen=True, slots=True)
class GuardrailDecision:
    """Server-side verdict on one tool call; it is also the payload of `confirm_required`."""

    tool: str
    operation: Operation
    risk: RiskLevel
    tone: Tone
    label: str
    environment: str | None
    environment_tier: EnvironmentTier | None
    badge: str | None
    impact: str | None
    permission: PermissionResult
    requires_confirmation: bool
    prompt: str
    approvers: int = 1
    """How many people approve the call before it runs (`domain.approvals`)."""

    def to_payload(self) -> dict[str, Any]:
        """Plain JSON data (no enums) for the stream event, the checkpoint and the audit record."""
        payload: dict[str, Any] = json.loads(json.dumps(asdict(self)))
        payload["permission"] = {k: v for k, v in payload["permission"].items() if v or k in _KEPT}
        return payload


def policy_record(decision: Mapping[str, Any]) -> dict[str, Any]:
    """What a call's audit record takes from its decision's payload: the policies that decided
    it, what log-only policies would have decided (when one took part), and `call`, what policy
    saw of it (`make policy-check` replays it; the user's groups are added by the audit)."""
    permission = decision.get("permission") or {}
    record = {k: permission[k] for k in ("policies", "trial") if permission.get(k) is not None}
    record["call"] = {
        "operation": decision.get("operation"),
        "environment": decision.get("environment"),
        "tier": decision.get("environment_tier"),
        "role": permission.get("user_role"),
    }
    return record


def _impact(call: ResolvedToolCall) -> str | None:
    env_id = call.environment.env_id if call.environment else None
    if call.sql is not None:
        if call.operation is Operation.READ:
            return None
        if not call.sql.parsed:
            return "SQL не разобран: выполнение считается изменением данных"
        if not call.sql.statement_writes:
            # A SELECT made a write by what it calls: say which calls, not "SELECT changes data".
            calls = ", ".join(call.sql.unsafe_functions)
            return f"SQL может изменить данные или сервер: вызывает {calls}"
        return f"SQL изменит данные ({', '.join(call.sql.statement_kinds)})"
    if call.operation is Operation.READ or call.spec.impact is None:
        return None  # (a paid read's cost is its label)
    return call.spec.impact.describe(call.arguments, env_id)


def call_in_words(spec: ToolSpec | None, args: Mapping[str, Any]) -> tuple[str, list[str]]:
    """A call as text the user reads names it, in the card's words: the tool's Russian label
    (in «»), and what the card's wording says of its arguments (the objects it counts, the
    environment it changes), empty where the catalog words none of them."""
    label = f"«{spec.label_ru}»" if spec is not None and spec.label_ru else "операция"
    if spec is None:
        return label, []
    named = spec.impact.named(args) if isinstance(spec.impact, CountedImpact) else None
    env = args.get(spec.environment_argument) if spec.environment_argument else None
    return label, [part for part in (named, f"окружение {env}" if env else None) if part]


def _label(call: ResolvedToolCall) -> str:
    """What kind of call the card asks about: a change, a read, or, for a read that starts work
    with a cost, that cost in the catalog's words («запускает платную LLM-задачу»)."""
    if call.operation is Operation.WRITE:
        return WRITE_LABEL
    return call.spec.cost or READ_LABEL


def _risk_and_tone(call: ResolvedToolCall) -> tuple[RiskLevel, Tone]:
    if call.operation is Operation.READ:
        # a read with a cost (a paid LLM task) is told in the calm tone of a dev write
        return RiskLevel.SAFE, Tone.INFO if call.spec.cost else Tone.SUCCESS
    tier = call.environment.tier if call.environment else None
    if tier is EnvironmentTier.PROD:
        return RiskLevel.DANGEROUS, Tone.DESTRUCTIVE
    if call.sql is not None and call.sql.destructive:
        # DROP, TRUNCATE, DELETE without WHERE, or unparsable SQL: louder even outside prod.
        return RiskLevel.GUARDED, Tone.WARNING
    return RiskLevel.GUARDED, Tone.INFO


def _prompt(call: ResolvedToolCall, permission: PermissionResult) -> str:
    """The card's warning, in words: the action and where it acts (the badge, the plan and the
    impact are the card's other lines, each said once; never the tool's id)."""
    env = call.environment
    tool = call.spec.name
    action = call.spec.title_ru or call.spec.label_ru or tool
    role = role_words(permission.required_role, True)
    if not permission.allowed:  # a change window's refusal says its end, not a role
        return (
            f"{permission.notice}."
            if permission.notice
            else (f"{DENIED_TITLE}: «{action}» требует роль {role}.")
        )
    if call.operation is Operation.READ:
        where = f" в окружении {env.env_id}" if env else ""
        if call.spec.cost:  # a paid task: calmer than a write (its cost is the card's label)
            return f"Запустить {action}{where}?"
        return f"Чтение данных: {action}{where}. Ничего не будет изменено."
    if env is None:
        return f"Изменение данных: {action}. Подтвердить?"
    if env.tier is EnvironmentTier.PROD:
        return f"Внимание, рабочее окружение {env.env_id}: {action}. Подтвердить?"
    # «staging-окружении staging» says one thing twice: the id is named only when it differs
    named = "" if env.env_id == env.tier.value else f" {env.env_id}"
    return f"Изменения в {env.tier}-окружении{named}: {action}. Подтвердить?"


def decide_guardrail(
    call: ResolvedToolCall, permission: PermissionResult, *, needs_card: bool
) -> GuardrailDecision:
    """The decision for a resolved call; whether it needs a card is the policy's answer
    (`RequireCard`: in the shipped set, writes and calls with a cost, reads only if configured)."""
    impact = _impact(call)
    risk, tone = _risk_and_tone(call)
    env = call.environment
    return GuardrailDecision(
        tool=call.spec.name,
        operation=call.operation,
        risk=risk,
        tone=tone,
        label=_label(call),
        environment=env.env_id if env else None,
        environment_tier=env.tier if env else None,
        badge=_BADGES[(env.tier, call.operation)] if env else None,
        impact=impact,
        permission=permission,
        requires_confirmation=permission.allowed and needs_card,
        prompt=_prompt(call, permission),
    )


def decide_unknown_tool(tool: str, permission: PermissionResult) -> GuardrailDecision:
    """A tool the catalog does not know: treated as a dangerous write, and denied."""
    return GuardrailDecision(
        tool=tool,
        operation=Operation.WRITE,
        risk=RiskLevel.DANGEROUS,
        tone=Tone.DESTRUCTIVE,
        label=WRITE_LABEL,
        environment=None,
        environment_tier=None,
        badge=None,
        impact=None,
        permission=permission,
        requires_confirmation=False,
        prompt=f"{DENIED_TITLE}: инструмент {tool} неизвестен.",
    )


JUDGEMENT: Final = (
    "operation",
    "risk",
    "tone",
    "environment",
    "environment_tier",
    "badge",
    "impact",
)
"""What a card says about a call's weight (the prompt is written from these): an edit that
changes any of them needs a card of its own."""


def edit_asks_again(
    spec: ToolSpec | None,
    shown_args: Mapping[str, Any],
    shown: Mapping[str, Any],
    edited_args: Mapping[str, Any],
    edited: GuardrailDecision,
) -> bool:
    """Whether a call edited on its card needs a card of its own: the card's approval covers
    the edited call only when a card for it would say the same about its weight (`shown` is the
    card's decision payload) and its plan is the card's plan. A higher risk, another environment
    or impact asks again; so does a louder tone at the same risk (a DELETE that lost its WHERE),
    and any other change of what the card said, even a lower one: the user approved what the
    card said, nothing else. For a tool with a plan, so does an edit of what the plan is about
    (another dashboard, another statement): only its other arguments (a commit's message) may
    change under the same approval."""
    judged = edited.to_payload()
    if any(judged[name] != shown.get(name) for name in JUDGEMENT):
        return True
    if spec is None:
        return False
    return _plan_objects(spec, shown_args) != _plan_objects(spec, edited_args)


def _plan_objects(spec: ToolSpec, args: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the plan of `spec` called with `args` is about, of the arguments as the tool takes
    them (`["11"]` is 11); None for arguments it does not take."""
    if spec.plan is None:
        return None
    try:
        taken = spec.args_model.model_validate(dict(args)).model_dump(mode="json")
    except ValidationError:
        return None
    return plan_objects(spec.plan, taken)
