"""Pieces shared by the ``iosched`` subcommands (click)."""

from __future__ import annotations

import click


class OneLineErrorCommand(click.Command):
    """A click command whose usage errors are one line (``Error: ...``) too,
    like its other errors (click prints the usage text by default)."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:
            raise click.ClickException(f"{info_name}: {exc.format_message()}") from None
