"""Griffe extension for the API reference: the docstrings' Sphinx roles
(``:func:`iosched.api.simulate```, ``:class:`~iosched.sched.core.Scheduler```)
become cross-references of the site (mkdocs-autorefs), shown as code.

The code's docstrings use Sphinx's field lists and roles; mkdocstrings reads
the fields (``docstring_style: sphinx``) but renders the roles' text as it is.
Each role becomes an *optional* reference: a link when the target is
documented on the site, plain code otherwise (a private name, a command-line
module, another package). A dotted name is taken as absolute when it starts
with ``iosched``, else relative to the docstring's class (methods and
attributes) or module. A leading ``~`` shows the last part only, as in Sphinx.
Declared in ``mkdocs.yml`` (``extensions`` of the python handler).
"""

from __future__ import annotations

import html
import re

import griffe

#: a Sphinx Python role: kind, optional ``~``, the dotted target (or a title),
#: optional ``()``, optional ``<target>`` after a title
ROLE = re.compile(r":(?:py:)?(mod|func|class|meth|attr|data|obj|exc|const):`(~?)([\w.]+)(\(\))?"
                  r"(?:\s+<([\w.]+)>)?`")


def cross_reference(title: str, target: str, parens: str, scope: str) -> str:
    """The HTML of one role: an optional autorefs reference to ``target``
    (resolved against the dotted path ``scope`` when relative), shown as
    ``title`` followed by ``parens``."""
    identifier = target if target.split(".", 1)[0] == "iosched" or not scope else f"{scope}.{target}"
    return (f'<autoref identifier="{html.escape(identifier)}" optional>'
            f"<code>{html.escape(title)}{parens}</code></autoref>")


def convert(text: str, module_path: str, class_path: str | None) -> str:
    """``text`` with every Sphinx role replaced by :func:`cross_reference`."""
    def one(match):
        kind, tilde, text, parens, explicit = match.groups()
        target = explicit or text
        title = text.rsplit(".", 1)[-1] if tilde and not explicit else text
        scope = class_path if kind in ("meth", "attr") and class_path and "." not in target else module_path
        return cross_reference(title, target, parens or "", scope)
    return ROLE.sub(one, text)


class SphinxRoles(griffe.Extension):
    """Rewrites each object's docstring once it is loaded."""

    def on_instance(self, *, node, obj, agent, **kwargs) -> None:
        if obj.docstring is None:
            return
        module_path = obj.module.path if not obj.is_module else obj.path
        if obj.is_class:
            class_path = obj.path
        elif obj.parent is not None and obj.parent.is_class:
            class_path = obj.parent.path
        else:
            class_path = None
        obj.docstring.value = convert(obj.docstring.value, module_path, class_path)
