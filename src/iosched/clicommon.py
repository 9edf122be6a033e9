"""Pieces shared by the ``iosched`` subcommands (click)."""

from __future__ import annotations

import functools
import shlex

import click
from click.core import ParameterSource

from iosched.errors import InputError, one_line


class OneLineErrorCommand(click.Command):
    """A click command whose usage errors are one line too, like its other
    errors (click prints the usage text by default).

    By default the line is click's error line, ``Error: NAME: message``
    (status 1). With ``error_prefix`` (a keyword of ``@click.command(...,
    cls=OneLineErrorCommand, error_prefix="iosched run")``) it is
    ``PREFIX: message`` on stderr and the status is 2, as for the command's
    other input errors.
    """

    def __init__(self, *args, error_prefix: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.error_prefix = error_prefix

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:
            if self.error_prefix is None:
                raise click.ClickException(f"{info_name}: {exc.format_message()}") from None
            click.echo(f"{self.error_prefix}: {one_line(exc.format_message())}", err=True)
            raise click.exceptions.Exit(2) from None


class OneLineUsageError(click.UsageError):
    """A usage error shown as one line on stderr, ``Error: message``, exit
    status 2, without click's usage text (the ``iosched`` experiment groups
    raise it for any usage error of their commands)."""

    def show(self, file=None):
        """Print ``Error: message`` (one line) to ``file`` (default stderr)."""
        click.echo(f"Error: {one_line(self.format_message())}", file=file, err=file is None)


def input_errors_one_line(fn):
    """Decorate a click callback so that an :class:`~iosched.errors.InputError`
    it raises becomes click's one-line error, ``Error: message`` (status 1)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            raise click.ClickException(one_line(exc)) from None
    return wrapper


def command_line(ctx: click.Context) -> str:
    """The command line of the running click command, for result files:
    its command path (e.g. ``iosched bench scale``) and the options and
    arguments given on the command line (not their defaults), in the
    command's parameter order, shell-quoted."""
    parts = [ctx.command_path]
    for param in ctx.command.params:
        if ctx.get_parameter_source(param.name) is not ParameterSource.COMMANDLINE:
            continue
        value = ctx.params.get(param.name)
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if isinstance(param, click.Option):
            flag = max(param.opts, key=len)
            if param.is_flag:
                parts.append(flag if value else (param.secondary_opts or [flag])[0])
            else:
                parts += [f"{flag} {shlex.quote(str(v))}" for v in values]
        else:
            parts += [shlex.quote(str(v)) for v in values]
    return " ".join(parts)
