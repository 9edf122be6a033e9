"""Pieces shared by the ``iosched`` subcommands (click)."""

from __future__ import annotations

import argparse
import sys

import click

from iosched.errors import one_line


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


class OneLineArgumentParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors are one line
    on stderr, ``PROG: error: message``, with exit status 2 (argparse prints
    its whole usage text first by default); ``--help`` is unchanged."""

    def error(self, message):
        """Print the one-line error and exit 2 (overrides argparse's)."""
        sys.stderr.write(f"{self.prog}: error: {one_line(message)}\n")
        sys.exit(2)
