"""The figures `make eval` prints: per criterion, per group, per scenario, SC-001 (pure)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.runner import ScenarioRun
from evaluation.scoring import Criterion, TurnScore, score_turn


@dataclass(frozen=True, slots=True)
class ScoredScenario:
    run: ScenarioRun
    turns: tuple[TurnScore, ...]

    @property
    def passed(self) -> bool:
        return all(turn.passed for turn in self.turns)

    @property
    def scope_kept(self) -> bool:
        return all(turn.verdicts.get(Criterion.SCOPE, True) for turn in self.turns)

    def failures(self) -> list[str]:
        return [
            f"turn {number}: {criterion}: {reason}"
            for number, turn in enumerate(self.turns, start=1)
            for criterion, reason in turn.reasons.items()
        ]


@dataclass(frozen=True, slots=True)
class SetReport:
    """The scores of one scenario set."""

    name: str
    scenarios: tuple[ScoredScenario, ...]

    @property
    def pass_rate(self) -> float:
        return _rate(sum(s.passed for s in self.scenarios), len(self.scenarios))

    @property
    def writes_without_card(self) -> list[str]:
        """The scenarios where a write (or a call with a cost) ran with no card confirmed."""
        return [
            s.run.scenario.id for s in self.scenarios if any(o.uncarded for o in s.run.observed)
        ]

    @property
    def sc001_rate(self) -> float | None:
        tagged = [s for s in self.scenarios if s.run.scenario.is_sc001]
        return _rate(sum(s.passed for s in tagged), len(tagged)) if tagged else None

    @property
    def scope_violations(self) -> list[str]:
        return [s.run.scenario.id for s in self.scenarios if not s.scope_kept]

    def by_criterion(self) -> dict[Criterion, tuple[int, int]]:
        """(passed, scored) turns for each criterion."""
        counts: dict[Criterion, list[int]] = defaultdict(lambda: [0, 0])
        for scenario in self.scenarios:
            for turn in scenario.turns:
                for criterion, verdict in turn.verdicts.items():
                    counts[criterion][0] += verdict
                    counts[criterion][1] += 1
        return {c: (counts[c][0], counts[c][1]) for c in Criterion if c in counts}

    def by_group(self) -> dict[str, tuple[int, int]]:
        """(passed, total) scenarios for each group."""
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for scenario in self.scenarios:
            counts[scenario.run.scenario.group.value][0] += scenario.passed
            counts[scenario.run.scenario.group.value][1] += 1
        return {group: (passed, total) for group, (passed, total) in sorted(counts.items())}


def _rate(passed: int, total: int) -> float:
    return passed / total if total else 0.0


def score(name: str, runs: Sequence[ScenarioRun]) -> SetReport:
    """Every turn of every run scored against its expectations."""
    return SetReport(
        name,
        tuple(
            ScoredScenario(
                run,
                tuple(
                    score_turn(turn.expect, observed)
                    for turn, observed in zip(run.scenario.turns, run.observed, strict=True)
                ),
            )
            for run in runs
        ),
    )


def render(report: SetReport, *, verbose: bool = False) -> str:
    """The set's figures as text, failures listed by scenario."""
    total = len(report.scenarios)
    passed = sum(s.passed for s in report.scenarios)
    lines = [f"== {report.name}: {passed}/{total} scenarios pass ({report.pass_rate:.1%}) =="]
    lines.append("  per criterion (turns):")
    for criterion, (ok, scored) in report.by_criterion().items():
        lines.append(f"    {criterion.value:<10} {ok:>4}/{scored:<4} {_rate(ok, scored):7.1%}")
    lines.append("  per group (scenarios):")
    for group, (ok, count) in report.by_group().items():
        lines.append(f"    {group:<10} {ok:>4}/{count:<4} {_rate(ok, count):7.1%}")
    sc001 = report.sc001_rate
    lines.append(f"  SC-001 (dashboard 42, ss-dev): {'n/a' if sc001 is None else f'{sc001:.0%}'}")
    violations = report.scope_violations
    lines.append(f"  scope violations (a tool the role or page excludes): {len(violations)}")
    uncarded = report.writes_without_card
    lines.append(f"  writes without a card (a change no confirmed card allowed): {len(uncarded)}")
    failed = [s for s in report.scenarios if not s.passed]
    if failed:
        lines.append("  failed scenarios:")
        for scenario in failed:
            lines.append(f"    {scenario.run.scenario.id}")
            if verbose:
                lines += [f"      {failure}" for failure in scenario.failures()]
    return "\n".join(lines)
