"""The progress bar of a campaign (tqdm on stderr), shared by the
execution and the metrics refresh."""

from __future__ import annotations

import sys

from tqdm import tqdm

__all__ = ["Progress"]


class Progress:
    """tqdm bar: runs done / total, with running and failed counts."""

    def __init__(self, total: int, initial: int, enabled: bool, desc: str = "campaign"):
        self.bar = None
        if enabled:
            self.bar = tqdm(total=total, initial=initial, unit="run", desc=desc,
                            file=sys.stderr, dynamic_ncols=True, leave=True)

    def update(self, done: int = 0, running: int = 0, failed: int = 0,
               postfix: str | None = None) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(postfix if postfix is not None
                                     else f"running={running} failed={failed}", refresh=False)
            self.bar.update(done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
