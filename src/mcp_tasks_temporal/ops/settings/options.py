"""A settings model on the command line: one click option per field, and the model built from what was given.

The options collect text only: every value, from a flag or from a variable, is
converted and checked by the model's own validation, so both parse alike. A flag
that was given goes to the model as an init value, which pydantic-settings puts
above the environment; a flag left out leaves the variable, then the default.
`--help` groups the options by the section each field belongs to.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar, Union, get_args, get_origin

import click
from click.core import ParameterSource
from pydantic import SecretStr, ValidationError
from pydantic.fields import FieldInfo

from mcp_tasks_temporal.ops.settings.model import Flag, Settings

S = TypeVar("S", bound=Settings)


class SettingsError(click.ClickException):
    """A flag or variable the settings do not accept; one line naming it, exit status 2."""

    exit_code = 2

    def __init__(self, command: str, message: str) -> None:
        """`command` is the command's path as the user typed it (`mcp-tasks-temporal serve`)."""
        super().__init__(message)
        self.command = command

    def show(self, file: Any = None) -> None:
        click.echo(f"{self.command}: {self.message}", err=True)


def _is_list(annotation: Any) -> bool:
    if get_origin(annotation) is list:
        return True
    return any(_is_list(arg) for arg in get_args(annotation) if arg is not type(None))


def _is_bool(annotation: Any) -> bool:
    if annotation is bool:
        return True
    origin = get_origin(annotation)
    return origin in (Union, types.UnionType) and set(get_args(annotation)) == {bool, type(None)}


def _is_secret(annotation: Any) -> bool:
    return annotation is SecretStr or any(_is_secret(arg) for arg in get_args(annotation))


def _help(model: type[Settings], name: str, flag: Flag) -> str:
    variable = model.variable(name)
    return f"{flag.help} (${variable})" if variable else flag.help


def settings_options(model: type[Settings]) -> list[click.Option]:
    """One option per flagged field of `model`, named after the field."""
    options: list[click.Option] = []
    for name, field, flag in model.flagged_fields():
        names = flag.option_names(name)
        help_text = _help(model, name, flag)
        if _is_bool(field.annotation):
            declared = [f"{names[0]}/--no-{names[0].removeprefix('--')}"] if flag.negatable else list(names)
            option = click.Option([*declared, name], is_flag=True, default=None, help=help_text)
        else:
            option = click.Option(
                [*names, name],
                type=click.STRING,
                multiple=_is_list(field.annotation),
                metavar=flag.metavar,
                help=help_text,
            )
        option.settings_section = _section_of(model, name)  # pyright: ignore[reportAttributeAccessIssue]
        options.append(option)
    return options


def _section_of(model: type[Settings], field_name: str) -> str:
    """The `--help` section of a field: that of the class that first declared it."""
    for cls in reversed(model.__mro__):
        if field_name in cls.__dict__.get("__annotations__", {}):
            return str(cls.__dict__.get("SECTION") or "Settings")
    return "Settings"


def section_order(model: type[Settings]) -> list[str]:
    """The sections in the order the model lists its groups, the model's own last."""
    titles = [str(cls.__dict__["SECTION"]) for cls in model.__mro__[1:] if "SECTION" in cls.__dict__]
    own = model.__dict__.get("SECTION")
    return [*titles, "Settings", *([str(own)] if own else [])]


def section_descriptions(model: type[Settings]) -> dict[str, str]:
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        section = cls.__dict__.get("SECTION")
        description = cls.__dict__.get("DESCRIPTION")
        if section and description:
            found[str(section)] = str(description)
    return found


def given_flags(ctx: click.Context, model: type[Settings]) -> dict[str, Any]:
    """The flags of `model` that the command line gave, as init values of the model."""
    given: dict[str, Any] = {}
    for name, field, _ in model.flagged_fields():
        if ctx.get_parameter_source(name) != ParameterSource.COMMANDLINE:
            continue
        value = ctx.params[name]
        given[name] = list(value) if _is_list(field.annotation) else value
    return given


def load_settings(model: type[S], command: str, given: Mapping[str, Any]) -> S:
    """The model from `given` flags over the environment; a value it refuses is a `SettingsError` naming it.

    Raises:
        SettingsError: A flag or variable is not valid, or a required one is missing.
    """
    try:
        return model(**given)
    except ValidationError as err:
        raise SettingsError(command, _one_line(model, err, given)) from None


def _one_line(model: type[Settings], err: ValidationError, given: Mapping[str, Any]) -> str:
    error = err.errors()[0]
    name = str(error["loc"][0]) if error["loc"] else ""
    field: FieldInfo | None = model.model_fields.get(name)
    if field is None:
        return str(error["msg"])
    flag = next((item for item in field.metadata if isinstance(item, Flag)), None)
    option = flag.option_names(name)[0] if flag is not None else None
    variable = model.variable(name)
    if error["type"] == "missing":
        ways = [way for way in (option, f"${variable}" if variable else None) if way]
        return f"{' or '.join(ways)} is required"
    where = option if name in given or variable is None else f"${variable}"
    message = str(error["msg"]).removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    if _is_secret(field.annotation):
        return f"{where}: {message}"
    shown = error.get("input")
    return f"{where}: {shown!r} is not valid: {message}" if isinstance(shown, str) else f"{where}: {message}"


class SettingsCommand(click.Command):
    """A command whose `--help` shows its settings grouped in sections, each option with its variable."""

    def __init__(self, *args: Any, settings_model: type[Settings] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings_model = settings_model
        if settings_model is not None:
            self.params.extend(settings_options(settings_model))

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {"Options": []}
        for param in self.get_params(ctx):
            if isinstance(param, click.Argument):
                continue  # named in the usage line and the description
            record = param.get_help_record(ctx)
            if record is None:
                continue
            section = getattr(param, "settings_section", "Options")
            sections.setdefault(section, []).append(record)
        descriptions: dict[str, str] = {}
        order = ["Options"]
        if self.settings_model is not None:
            descriptions = section_descriptions(self.settings_model)
            order += section_order(self.settings_model)
        ordered = sorted(sections.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order))
        for title, records in _non_empty(dict(ordered)):
            with formatter.section(title):
                if title in descriptions:
                    formatter.write_text(descriptions[title])
                formatter.write_dl(records)


def _non_empty(sections: dict[str, list[tuple[str, str]]]) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    for title, records in sections.items():
        if records:
            yield title, records
