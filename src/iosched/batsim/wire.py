"""Batsim 4.2.1's wire format: how the numbers of a message to the
scheduler are written.

Batsim serializes every message it sends with its own rapidjson writer
(``Writer::Double`` in ``src/protocol.hpp`` at tag v4.2.1, used by
``JsonProtocolWriter::generate_current_message`` in ``src/protocol.cpp``):
each double is printed with ``snprintf("%6f")``, i.e. rounded to 6
decimals, while integers stay integers. It applies to every number of the
message: ``now``, the events' ``timestamp``, and the numbers inside the
forwarded job and profile descriptions (which Batsim re-serializes). A
scheduler therefore sees ``now`` = 250222.00015 where the engine's clock
is 250222.000150000xxx; pybatsim echoes that rounded time in its replies,
and Batsim applies a reply's event at its (rounded) timestamp if that is
still ahead of its clock (``JsonProtocolReader::send_message_at_time``).

:func:`batsim_numbers` gives a message the values a scheduler parses from
Batsim's text: each float replaced by the double nearest to its 6-decimal
rendering (what ``float("%.6f" % x)`` is, and what the scheduler's JSON
parser gets from Batsim's bytes); ints, strings, booleans and None
unchanged. The text differs from Batsim's (``0.3`` for ``0.300000``), the
numbers the scheduler reads do not.

:func:`parse_reply` reads a scheduler's reply text as Batsim does: with
rapidjson's default flags (``Document::Parse`` in
``JsonProtocolReader::parse_and_apply_message``, ``src/protocol.cpp``),
which refuse ``NaN``, ``Infinity`` and ``-Infinity`` ("Invalid JSON
message: could not be parsed") where Python's ``json`` reads them;
:func:`not_json` is the error both the text and the in-process path raise.
"""

from __future__ import annotations

import json

__all__ = ["batsim_float", "batsim_numbers", "parse_reply", "not_json"]


def not_json(x) -> ValueError:
    """The error for a non-finite number in a reply: what ``json.dumps``
    writes for it (``NaN``, ``Infinity``, ``-Infinity``) is not JSON, and
    Batsim 4.2.1 refuses the message.

    :param x: the float (NaN or an infinity), or that token's text (str).
    :returns: the ``ValueError`` to raise, its message starting with the token.
    """
    name = x if isinstance(x, str) else json.dumps(x)
    return ValueError(f"{name} is not JSON (Batsim 4.2.1 refuses the message: could not be parsed)")


def _refuse_constant(name: str):
    raise not_json(name)


def parse_reply(text):
    """A scheduler's reply (str or UTF-8 bytes) parsed as Batsim 4.2.1
    parses it: ``json.loads``, but ``NaN``, ``Infinity`` and ``-Infinity``
    are refused (:func:`not_json`).

    :raises ValueError: the text is not JSON (``json.JSONDecodeError``,
        ``UnicodeDecodeError``) or holds one of those three.
    :raises RecursionError: nesting too deep for ``json.loads``.
    """
    return json.loads(text, parse_constant=_refuse_constant)


def batsim_float(x: float) -> float:
    """The double a scheduler reads for *x* written by Batsim (6 decimals).

    :param x: a finite float (s, bytes, flops...).
    :returns: ``float("%.6f" % x)``.
    """
    return float("%.6f" % x)


def batsim_numbers(obj):
    """A copy of a JSON-like message with every float as Batsim writes it.

    :param obj: dicts, lists, floats, ints, strings, booleans, None, nested
        (a message ``{"now": t, "events": [...]}`` or any part of it).
    :returns: the same structure (new dicts and lists where they hold a
        float or a container; other values shared) with each float ``x``
        replaced by :func:`batsim_float` ``(x)``.
    """
    # the scalars of a container are handled in place (no call per value)
    t = type(obj)
    if t is dict:
        out = {}
        for k, v in obj.items():
            tv = type(v)
            if tv is float:
                out[k] = float("%.6f" % v)
            elif tv is dict or tv is list:
                out[k] = batsim_numbers(v)
            else:
                out[k] = v
        return out
    if t is list:
        out = []
        for v in obj:
            tv = type(v)
            if tv is float:
                out.append(float("%.6f" % v))
            elif tv is dict or tv is list:
                out.append(batsim_numbers(v))
            else:
                out.append(v)
        return out
    if t is float:
        return float("%.6f" % obj)
    return obj
