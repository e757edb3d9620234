"""The shape of a tool declaration; the declarations live in `domain/tools/` (one module per area),
assembled into `tool_catalog.CATALOG`.

A declaration carries every fact about its tool that some part of the backend needs: the schema and
the upstream call, the role and the page affinity, and also how the router recognises a request for
it, which page object it can describe for the prefetch and for which intents it is offered
unasked. No other module keeps a table keyed by
tool names.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import BaseModel, ValidationError

from sstools_agent.domain.roles import READ_ACCESS, RoleRequirement
from sstools_agent.domain.ui_context import ObjectType

DEFAULT_TOOL_TIMEOUT_S: Final = 30.0
"""A tool call that has not answered by then is a timeout (a write's status is then unknown)."""
DEFAULT_RETRY_DELAY_S: Final = 1.0
"""The fixed wait before a read's single retry."""
DEFAULT_SQL_DIALECT: Final = "postgres"
"""The dialect SQL tools' statements are parsed in (Superset's databases are mostly Postgres)."""


class Operation(StrEnum):
    """Whether a call changes anything."""

    READ = "read"
    WRITE = "write"


class EnvironmentSource(StrEnum):
    """Where a tool call's target environment comes from."""

    NONE = "none"
    """The tool touches no particular environment (formatting SQL, listing environments)."""
    UI_CONTEXT = "ui_context"
    """The environment the user is looking at (the UI context's envId)."""
    ARGUMENT = "argument"
    """An argument of the call names it (e.g. a deployment's target)."""


@dataclass(frozen=True, slots=True)
class RussianNoun:
    """A noun's three plural forms and its participle, for «2 дашборда будут изменены»."""

    one: str
    few: str
    many: str
    changed_one: str
    changed_many: str
    plural: str
    """The plural that names objects: «дашборды 10, 11»."""

    def counted(self, count: int) -> str:
        """«1 дашборд», «3 дашборда», «5 дашбордов»."""
        return f"{count} {self._form(count)}"

    def count_phrase(self, count: int) -> str:
        """«1 дашборд будет изменён», «3 дашборда будут изменены», «5 дашбордов будут изменены»."""
        if self._form(count) == self.one:
            return f"{self.counted(count)} будет {self.changed_one}"
        return f"{self.counted(count)} будут {self.changed_many}"

    def _form(self, count: int) -> str:
        last_two, last = count % 100, count % 10
        if last == 1 and last_two != 11:
            return self.one
        if 2 <= last <= 4 and not 12 <= last_two <= 14:
            return self.few
        return self.many


DASHBOARD_NOUN: Final = RussianNoun(
    "дашборд", "дашборда", "дашбордов", "изменён", "изменены", "дашборды"
)


@dataclass(frozen=True, slots=True)
class CountedImpact:
    """Impact measured by how many objects an argument names (a list of ids or one id)."""

    argument: str
    noun: RussianNoun

    def describe(self, args: Mapping[str, Any], env_id: str | None) -> str:
        """The sentence shown on the confirmation card."""
        value = args.get(self.argument)
        count = len(value) if isinstance(value, list | tuple | set) else int(value is not None)
        return self.noun.count_phrase(count)

    def named(self, args: Mapping[str, Any]) -> str | None:
        """The objects the call names, «дашборд 11» or «дашборды 10, 11»; None without any."""
        value = args.get(self.argument)
        ids = list(value) if isinstance(value, list | tuple) else [value] if value else []
        if not ids:
            return None
        noun = self.noun.one if len(ids) == 1 else self.noun.plural
        return f"{noun} {', '.join(str(each) for each in ids)}"


@dataclass(frozen=True, slots=True)
class DescribedImpact:
    """Impact described by a sentence; `{env}` and argument names are filled from the call."""

    template: str

    def describe(self, args: Mapping[str, Any], env_id: str | None) -> str:
        """The sentence shown on the confirmation card."""
        return self.template.format_map({**args, "env": env_id or "—"})


Impact = CountedImpact | DescribedImpact


@dataclass(frozen=True, slots=True)
class Routing:
    """How the router recognises a request for a tool: keyword stems (matched at word starts, or
    as phrases) and example requests (embedded once, for the fallback below three keyword hits)."""

    keywords: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


class IntentTag(StrEnum):
    """The router's intents for which a tool is offered although the query did not name it."""

    CAPABILITIES = "capabilities"
    """The tool that says what the agent can do: offered with every routed answer; its keywords
    are what marks the capabilities intent."""
    DEFAULT = "default"
    """Offered when nothing in the query matched (the default set)."""
    MAINTENANCE = "maintenance"
    """Offered whenever the query is about maintenance."""
    DASHBOARD_QUERY = "dashboard_query"
    """Offered for a question about a dashboard, unless the page's summary was prefetched and
    already answers it."""


@dataclass(frozen=True, slots=True)
class StatusCheck:
    """How to find out whether a write whose answer never came applied: the read that shows
    the state it changes, and where its arguments come from (a read argument <- the write's;
    in `as_list`, the write's value goes as a one-element list). With `environment_from`, the
    read runs in the environment that write argument names (a deploy's target), else where
    the write ran."""

    tool: str
    arguments: Mapping[str, str] = field(default_factory=dict, hash=False)
    as_list: frozenset[str] = frozenset()
    environment_from: str | None = None

    def read_arguments(self, write_args: Mapping[str, Any]) -> dict[str, Any]:
        """The read's arguments, from the write's (what the write did not get is left out)."""
        read: dict[str, Any] = {}
        for argument, source in self.arguments.items():
            if source in write_args:
                value = write_args[source]
                as_list = argument in self.as_list and not isinstance(value, list)
                read[argument] = [value] if as_list else value
        return read


@dataclass(frozen=True, slots=True)
class PageReader:
    """The page object a read tool describes, for the prefetch: the argument the object's id goes
    in (as a one-element list when `many`)."""

    object_type: ObjectType
    argument: str
    many: bool = False

    def arguments(self, object_id: int) -> dict[str, Any]:
        """The call's arguments for the page's object."""
        return {self.argument: [object_id] if self.many else object_id}


class PlanRecipe(StrEnum):
    """How a write tool's plan is read before its card and written on it (`change_plans`)."""

    DEPLOY = "deploy"
    """Each dashboard in the source and in the target environment (`search_dashboards`)."""
    SQL_WRITE = "sql_write"
    """The statement, formatted, and the rows an UPDATE or DELETE would touch, counted by a
    `count(*)` derived from its own WHERE (`superset_execute_sql`, as a read)."""
    MIGRATION = "migration"
    """The migration's own plan (`get_migration_plan`): what it creates and replaces where."""
    COMMIT = "commit"
    """The dashboard's git status now (`search_dashboards`): what the commit takes in."""
    BRANCH = "branch"
    """The dashboard's branches now (`search_dashboards`)."""
    DOCUMENTATION = "documentation"
    """The dashboard's description now (`search_dashboards`), which the generated one replaces."""
    DATASET = "dataset"
    """The datasets of the schema now (`superset_explore_database`): is the table one already."""
    BACKUP = "backup"
    """No read: a backup only adds a copy."""
    MAINTENANCE_START = "maintenance_start"
    """The maintenance windows now (`list_maintenance_events`)."""
    MAINTENANCE_END = "maintenance_end"
    """The window it ends, as it is now (`list_maintenance_events`)."""
    VALIDATION = "validation"
    """The dashboard's last LLM review now (`search_dashboards`), which a new one replaces."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """Everything the backend knows about one agent tool, declared once in the catalog."""

    name: str
    description: str
    args_model: type[BaseModel]
    operation: Operation
    required_roles: RoleRequirement
    environment_source: EnvironmentSource
    method: Literal["GET", "POST"] | None = None
    """HTTP method of the upstream call; None for a tool answered inside the agent."""
    path: str | None = None
    """Upstream path; `{env_id}` is the resolved environment, other fields come from the args."""
    affinity: frozenset[ObjectType] = frozenset()
    """Object pages this tool belongs to; with no object on the page every tool may be offered."""
    environment_argument: str | None = None
    sql_argument: str | None = None
    """For SQL tools: the argument whose text decides, per call, between read and write."""
    timeout_s: float | None = None
    """Per-tool timeout; None means the configured default (30 s unless configured otherwise)."""
    may_retry: bool = False
    """Whether a failed call may be retried; only ever true for reads (and read SQL)."""
    impact: Impact | None = None
    read_roles: RoleRequirement = field(default=READ_ACCESS)
    """What a SQL tool requires when its statement turns out to be a read."""
    routing: Routing = field(default=Routing())
    describes: PageReader | None = None
    """The page object this read tool describes, read by the prefetch when the page shows one."""
    intents: frozenset[IntentTag] = frozenset()
    label_ru: str = ""
    """What the tool does, in a few Russian words (the Russian answers list tools by it)."""
    title_ru: str = ""
    """The action as a card names it, when the label is longer than a heading should be
    («Поиск дашбордов»); empty: the label is the title (`glossary.tool_label`)."""
    plan: PlanRecipe | None = None
    """How the plan of a write (or of a call with a cost) is read before its card (None: the
    card has no plan)."""
    cost: str = ""
    """What a call costs or starts besides its answer, in words («запускает платную
    LLM-задачу»): a call with a cost is never made without a card that says so, even a read."""
    status_check: StatusCheck | None = None
    """For a write: the read that tells whether it applied when its answer never came (the
    card of such a call offers it); None: there is no such read."""
    example_args: Mapping[str, Any] = field(default_factory=dict, hash=False)
    """One valid call's arguments (checked when the module loads): shown in the generated tool
    reference, and the call tests make when they need one of every tool."""

    def __post_init__(self) -> None:
        self._check_environment_and_sql()
        self._check_path()
        try:
            self.args_model.model_validate(self.example_args)
        except ValidationError as error:
            raise ValueError(f"{self.name}: example_args are not a valid call: {error}") from None
        if self.plan is not None and self.operation is not Operation.WRITE and not self.cost:
            raise ValueError(f"{self.name}: only a write or a call with a cost has a plan")
        if self.status_check is not None and self.operation is not Operation.WRITE:
            raise ValueError(f"{self.name}: only a write has a status check")
        if self.describes is not None:
            if self.operation is not Operation.READ:
                raise ValueError(f"{self.name}: only a read may describe the page's object")
            if self.describes.argument not in self.args_model.model_fields:
                raise ValueError(f"{self.name}: no argument {self.describes.argument!r}")

    def _check_environment_and_sql(self) -> None:
        fields = set(self.args_model.model_fields)
        if self.operation is Operation.WRITE and self.may_retry and self.sql_argument is None:
            raise ValueError(f"{self.name}: a write tool must not retry")
        if (self.environment_source is EnvironmentSource.ARGUMENT) != (
            self.environment_argument is not None
        ):
            raise ValueError(f"{self.name}: environment_argument goes with ARGUMENT, only")
        if self.environment_argument is not None and self.environment_argument not in fields:
            raise ValueError(f"{self.name}: no argument {self.environment_argument!r}")
        if self.sql_argument is not None and self.sql_argument not in fields:
            raise ValueError(f"{self.name}: no argument {self.sql_argument!r}")

    def _check_path(self) -> None:
        fields = set(self.args_model.model_fields)
        if (self.method is None) != (self.path is None):
            raise ValueError(f"{self.name}: method and path go together")
        for placeholder in self.path_placeholders:
            if placeholder != "env_id" and placeholder not in fields:
                raise ValueError(f"{self.name}: path needs {placeholder!r}, not an argument")
        if "env_id" in self.path_placeholders and (
            self.environment_source is EnvironmentSource.NONE
        ):
            raise ValueError(f"{self.name}: path names {{env_id}} but the tool has no environment")

    @property
    def path_placeholders(self) -> tuple[str, ...]:
        """Names between braces in the upstream path."""
        if self.path is None:
            return ()
        return tuple(name for _, name, _, _ in string.Formatter().parse(self.path) if name)

    @property
    def is_environment_specific(self) -> bool:
        """Whether calls act in one environment (such tools are out when the page has no envId)."""
        return self.environment_source is not EnvironmentSource.NONE

    @property
    def is_local(self) -> bool:
        """Whether the agent answers this tool itself, without the upstream."""
        return self.path is None

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments, as offered to the model."""
        return self.args_model.model_json_schema()
