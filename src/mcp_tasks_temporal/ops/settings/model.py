"""The base of every process's settings: one flat `pydantic-settings` model, its flags and variables declared once.

A field carries a `Flag` in its `Annotated` metadata: the command line gets that
option (`ops.settings.options`), `--help` names the field's variable beside it, and
the environment supplies the value the command line leaves unset. A variable is
`MCP_TASKS_` plus the field's name in capitals unless the `Flag` names another.
A value from either source goes through the same pydantic validation, so a
variable parses exactly as its flag would. Fields without a `Flag` come from the
environment only (secrets a process list must not show).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

PREFIX: Final = "MCP_TASKS_"


@dataclass(frozen=True)
class Flag:
    """How a settings field appears on the command line.

    Attributes:
        help: One line for `--help`; the variable is added after it.
        names: The option's names, the first one shown first (default `--field-name`).
        metavar: What `--help` shows for the value.
        env: The variable, when it is not `MCP_TASKS_` plus the field's name in capitals.
        temporal: The variable belongs to Temporal's own configuration (`TEMPORAL_*`, read by
            `temporalio.envconfig` when the connection is made), so it is named in `--help` but not read here.
        negatable: A switch that also has a `--no-...` form.
    """

    help: str
    names: tuple[str, ...] = ()
    metavar: str | None = None
    env: str | None = None
    temporal: bool = False
    negatable: bool = False

    def option_names(self, field_name: str) -> tuple[str, ...]:
        return self.names or (f"--{field_name.replace('_', '-')}",)


@dataclass(frozen=True)
class Env:
    """A field set by its variable only (no flag): a secret, or a setting only deployments tune."""

    name: str


def flag_of(field: FieldInfo) -> Flag | None:
    return next((item for item in field.metadata if isinstance(item, Flag)), None)


def variable_of(field_name: str, field: FieldInfo) -> str | None:
    """The variable that sets the field (`None` for one that only the command line sets)."""
    flag = flag_of(field)
    if flag is not None:
        return flag.env or PREFIX + field_name.upper()
    named = next((item for item in field.metadata if isinstance(item, Env)), None)
    return named.name if named is not None else None


class _Variables(EnvSettingsSource):
    """The environment, each field under the variable its metadata names; Temporal's own are left to Temporal."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        flag = flag_of(field)
        name = variable_of(field_name, field)
        if name is None or (flag is not None and flag.temporal):
            return None, field_name, False
        value = self.env_vars.get(name if self.case_sensitive else name.lower())
        return value, field_name, self.field_is_complex(field)


class Settings(BaseSettings):
    """A process's settings: flags given on the command line over variables over defaults, validated once."""

    model_config: ClassVar[SettingsConfigDict] = SettingsConfigDict(
        case_sensitive=True,
        env_ignore_empty=True,  # compose files and manifests set `VAR: ""` for "unset"
        extra="forbid",
        frozen=True,
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, _Variables(settings_cls, case_sensitive=True, env_ignore_empty=True)

    @classmethod
    def flagged_fields(cls) -> Iterator[tuple[str, FieldInfo, Flag]]:
        """Each field that has a command-line option, in declaration order."""
        for name, field in cls.model_fields.items():
            flag = flag_of(field)
            if flag is not None:
                yield name, field, flag

    @classmethod
    def variable(cls, field_name: str) -> str | None:
        """The variable of one field."""
        return variable_of(field_name, cls.model_fields[field_name])
