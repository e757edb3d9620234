"""The labelled scenarios `make eval` runs: what a person would check in each turn of a chat.

The format is documented in docs/evaluation.md; the sets live in `tests/data/eval/`: the
tuning part (`tuning.jsonl`, which the rule-based models were tuned against), the held-out part
(`held_out.jsonl`, written before any tuning and never read while tuning) and the fresh batch
(`fresh.jsonl`, written blind from the docs and the seed data; a model is judged on it).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DATA_DIR: Final = Path(__file__).resolve().parents[1] / "tests" / "data" / "eval"
SC001_TAG: Final = "sc001"


class ScenarioSet(StrEnum):
    """The parts of the labelled set."""

    TUNING = "tuning"
    HELD_OUT = "held_out"
    FRESH = "fresh"
    """The newest blind batch: written from the docs and the seed data alone, by someone who
    never read a stand-in model; scored as it came, the figure of how a model generalises."""

    @property
    def path(self) -> Path:
        return DATA_DIR / f"{self.value}.jsonl"


class Group(StrEnum):
    """What a scenario is mostly about, for the per-group scores."""

    DASHBOARD = "dashboard"
    DATASET = "dataset"
    MIGRATION = "migration"
    NO_OBJECT = "no_object"
    NO_ENV = "no_env"
    MULTI_TURN = "multi_turn"
    CONFIRM = "confirm"
    ROLE = "role"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Expect(_Strict):
    """What a person checks in one turn; every key optional."""

    calls: tuple[str, ...] = ()
    not_calls: tuple[str, ...] = ()
    no_calls: bool = False
    card: bool | None = None
    args: dict[str, dict[str, Any]] = Field(default_factory=dict)
    facts: tuple[str, ...] = ()
    facts_any: tuple[tuple[str, ...], ...] = ()
    not_facts: tuple[str, ...] = ()
    language: Literal["ru", "en"] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Expect:
        if self.no_calls and self.calls:
            raise ValueError("no_calls contradicts calls")
        if set(self.calls) & set(self.not_calls):
            raise ValueError("a tool is both in calls and not_calls")
        return self


class Turn(_Strict):
    """One user action: a message, or the confirm / deny of the card the last turn showed."""

    say: str | None = None
    confirm: bool = False
    deny: bool = False
    expect: Expect = Expect()

    @model_validator(mode="after")
    def _one_action(self) -> Turn:
        if sum((self.say is not None, self.confirm, self.deny)) != 1:
            raise ValueError("a turn is exactly one of say, confirm, deny")
        return self

    @property
    def action(self) -> Literal["confirm", "deny"] | None:
        if self.confirm:
            return "confirm"
        return "deny" if self.deny else None


class Scenario(_Strict):
    """One conversation of the labelled set."""

    id: str = Field(pattern=r"^[a-z0-9-]+$")
    group: Group
    tags: tuple[str, ...] = ()
    role: Literal["analyst", "engineer", "admin"]
    page: dict[str, Any] | None
    turns: tuple[Turn, ...] = Field(min_length=1, max_length=4)

    @property
    def is_sc001(self) -> bool:
        return SC001_TAG in self.tags


def load(scenario_set: ScenarioSet) -> list[Scenario]:
    """The set's scenarios, in file order; a malformed line fails with its line number."""
    scenarios = []
    lines = scenario_set.path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            scenarios.append(Scenario.model_validate_json(line))
        except ValueError as error:
            raise ValueError(f"{scenario_set.path.name}:{number}: {error}") from error
    return scenarios
