"""MkDocs hook: the site's home page (``docs/index.md``) is the README.

The README sits at the repository root and links the pages as ``docs/X.md``;
on the site the home page sits beside them, so those links become ``X.md``
(``mkdocs build --strict`` then checks every one of them). Declared in
``mkdocs.yml`` (``hooks:``).
"""

from __future__ import annotations

import re
from pathlib import Path

#: a Markdown link target that starts with the docs folder
_DOCS_LINK = re.compile(r"\]\(docs/")


def home_markdown(readme_text: str) -> str:
    """The README's Markdown with its ``](docs/...)`` link targets made
    relative to the docs folder."""
    return _DOCS_LINK.sub("](", readme_text)


def on_page_markdown(markdown, page, config, files):
    """Replace the home page's text with the README's (MkDocs hook event)."""
    if page.file.src_uri != "index.md":
        return markdown
    readme = Path(config.config_file_path).parent / "README.md"
    return home_markdown(readme.read_text(encoding="utf-8"))
