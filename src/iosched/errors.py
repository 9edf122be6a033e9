"""Exceptions shared by the whole package.

Every error a user can cause is one of these, and its message is a single
line naming the file, field or event at fault, so that command-line tools can
print it as-is and exit non-zero without a traceback.
"""


def one_line(text) -> str:
    """Collapse *text* (any object, via ``str``) to one line: whitespace runs,
    newlines included, become single spaces."""
    return " ".join(str(text).split())


class InputError(ValueError):
    """Bad user input: one-line message naming the file, field or event."""


class ProfileError(ValueError):
    """An availability profile would be over-committed (a scheduler bug)."""


class ProtocolError(RuntimeError):
    """A Batsim protocol peer sent something that breaks the protocol.

    The message names the event (type, job id, timestamp) at fault.
    """
