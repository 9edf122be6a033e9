"""Checks of the numbers and the nesting of user input, shared by every reader,
and of the output paths a command will write (:func:`check_output_file`).

Python's :mod:`json` accepts ``NaN``, ``Infinity`` and literals that overflow
to infinity (``1e400``), and integers of any size; YAML accepts ``.nan`` and
``.inf``. None of them is a usable time, size or option, so every reader
checks the numbers it reads with :func:`non_finite` /
:func:`check_finite` and says which field of which file is wrong.

Times are bounded by :data:`MAX_TIME` (the rule: at 2**32 s, about 136
years, a double still resolves 2**-20 s < 1 µs, the precision of the
outputs; beyond it a job's duration could vanish in float precision, e.g. a
5 s job submitted at 1e20 s would end at its start).

Deep nesting (``[[[[...``) makes the :mod:`json` decoder recurse;
:func:`loads_json` turns the resulting :class:`RecursionError` into a
one-line :class:`~iosched.errors.InputError`.
"""

from __future__ import annotations

import json
import math
import numbers
import sys
from pathlib import Path

from iosched.errors import InputError

__all__ = ["MAX_TIME", "MAX_FLOAT", "TIME_RULE", "NUMBER_TYPES", "all_finite_numbers", "non_finite",
           "check_finite", "check_time",
           "loads_json", "option_number", "check_output_file", "MAX_AMOUNT", "argument"]

#: Largest time accepted in an input (s): 2**32 s, about 136 years.
MAX_TIME = float(2 ** 32)
#: Largest finite double.
MAX_FLOAT = sys.float_info.max
#: The time rule, quoted in error messages.
TIME_RULE = ("times must be <= 2^32 s (about 136 years): beyond, durations of a microsecond "
             "vanish in float precision")

#: The types of a plain number (``bool`` excluded: JSON's ``true`` is no number).
NUMBER_TYPES = frozenset((float, int))


def all_finite_numbers(xs: list) -> bool:
    """Whether every item of the list ``xs`` is a finite ``int`` or
    ``float`` (exactly these types), checked in C (a ``parallel`` profile
    holds ``n ** 2`` numbers): the set of the item types, then a finite sum,
    which a NaN or an infinity makes NaN or infinite. False also when the
    sum of finite numbers overflows or an int is beyond a double: the
    caller then looks at each item (e.g. :func:`check_finite`). Never raises
    for a list."""
    if not NUMBER_TYPES >= set(map(type, xs)):
        return False
    try:
        return math.isfinite(sum(xs))
    except OverflowError:   # an int beyond a double
        return False


def _bad_number(x) -> bool:
    """True for a float NaN or infinity, or an int beyond the largest double."""
    t = type(x)
    if t is float:
        return not (-MAX_FLOAT <= x <= MAX_FLOAT)
    if t is int:
        return not (-MAX_FLOAT <= x <= MAX_FLOAT)
    return False


def non_finite(obj, path: str = "") -> tuple[str, object] | None:
    """The first non-finite number in *obj* (nested dicts and lists), or None.

    :param obj: a decoded JSON / YAML value.
    :param path: prefix of the returned path.
    :returns: ``(path, value)``: *path* is ``/``-separated keys and indices
        (``""`` for *obj* itself); a value is non-finite when it is a float NaN
        or infinity, or an int too large for a double. Iterative (no
        recursion limit).
    """
    stack = [(path, obj)]
    while stack:
        p, x = stack.pop()
        if type(x) is dict:
            for k, v in reversed(list(x.items())):
                stack.append((f"{p}/{k}" if p else str(k), v))
        elif type(x) is list:
            for i in range(len(x) - 1, -1, -1):
                stack.append((f"{p}/{i}" if p else str(i), x[i]))
        elif _bad_number(x):
            return p, x
    return None


def _show(x) -> str:
    if type(x) is int:
        return f"an integer of {len(str(abs(x)))} digits"
    return repr(x)


def check_finite(obj, where: str) -> None:
    """Refuse a non-finite number anywhere in *obj*.

    :param where: names the file and the object (job, profile...); the path
        of the bad field is appended.
    :raises InputError: ``WHERE: field 'PATH': VALUE is not a finite number``.
    """
    bad = non_finite(obj)
    if bad is not None:
        p, x = bad
        loc = f"{where}: field '{p}'" if p else where
        raise InputError(f"{loc}: {_show(x)} is not a finite number "
                         "(NaN, Infinity and numbers beyond 1.8e308 are refused)")


def check_time(value, where: str, field: str) -> None:
    """Refuse a finite time (s) above :data:`MAX_TIME`.

    :raises InputError: naming *where* and *field*, quoting :data:`TIME_RULE`.
    """
    if value > MAX_TIME:
        raise InputError(f"{where}: field '{field}': {value:g} s is too large ({TIME_RULE})")


def loads_json(text, where: str):
    """``json.loads`` with one-line errors.

    :param text: str or bytes.
    :param where: names the file in messages.
    :raises InputError: invalid JSON (with the decoder's line and column), or
        nesting too deep for the decoder.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError(f"{where}: invalid JSON: nesting too deep") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{where}: invalid JSON: {exc}") from None


def _range_text(minimum, exclusive_minimum: bool, maximum) -> str:
    """`` >= 0 and <= 1e+30``: the bounds quoted in a range error (empty
    without bounds)."""
    rng = ""
    if minimum is not None:
        rng += f" {'>' if exclusive_minimum else '>='} {minimum:g}"
    if maximum is not None:
        rng += f"{' and' if rng else ''} <= {maximum:g}"
    return rng


def option_number(options: dict, key: str, default, *, integer: bool = False,
                  minimum: float | None = None, maximum: float | None = None,
                  exclusive_minimum: bool = False):
    """A scheduler option read as a number, checked finite and in range.

    :param options: the options dict (``-o`` JSON).
    :param default: returned when *key* is absent.
    :param integer: an int is required (bools refused), else any real number.
    :param minimum: lower bound (strict if *exclusive_minimum*); *maximum*:
        upper bound (inclusive).
    :returns: an int or a float.
    :raises InputError: ``option 'KEY': expected ..., got VALUE``.
    """
    value = options.get(key, default)
    kind = "an integer" if integer else "a finite number"
    rng = _range_text(minimum, exclusive_minimum, maximum)
    ok = type(value) is int or (not integer and type(value) is float and not _bad_number(value))
    if ok and (minimum is not None and (value <= minimum if exclusive_minimum else value < minimum)
               or maximum is not None and value > maximum):
        ok = False
    if not ok:
        raise InputError(f"option '{key}': expected {kind}{rng}, got {value!r}")
    return value if integer else float(value)


#: Largest magnitude (bytes, bytes/s, flops, GB...) a generator argument may
#: have: products of two such with a count stay far below the largest double.
MAX_AMOUNT = 1e30


def argument(value, name: str, *, integer: bool = False, minimum: float | None = 0,
             exclusive_minimum: bool = False, maximum: float | None = MAX_AMOUNT, where: str = ""):
    """A generator's numeric argument, checked where it is read (issue 31).

    :param value: the argument; an int (bools refused) if *integer*, else an
        int or a float (numpy numbers accepted), finite.
    :param name: the argument's name, quoted in the message.
    :param minimum: lower bound (strict if *exclusive_minimum*; None: none);
        *maximum*: upper bound, inclusive (default :data:`MAX_AMOUNT`;
        :data:`MAX_TIME` for times; None: none).
    :param where: prefix of the message (the generator's name).
    :returns: *value* unchanged (so that outputs stay the same).
    :raises InputError: one line ``WHERE: NAME=VALUE: expected ...``.
    """
    kind = "an integer" if integer else "a finite number"
    rng = _range_text(minimum, exclusive_minimum, maximum)
    ok = (isinstance(value, numbers.Integral) if integer else isinstance(value, numbers.Real)) \
        and not isinstance(value, bool)
    if ok and not integer:
        ok = math.isfinite(float(value)) if not isinstance(value, numbers.Integral) or abs(value) < 2 ** 1000 \
            else False
    if ok and (minimum is not None and (value <= minimum if exclusive_minimum else value < minimum)
               or maximum is not None and value > maximum):
        ok = False
    if not ok:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise InputError(f"{where + ': ' if where else ''}{name}={shown}: expected {kind}{rng}")
    return value


def check_output_file(path) -> None:
    """Check, before any work, that the file *path* can be written: its
    folder exists and it is not a folder itself.

    :raises InputError: one line naming the path.
    """
    p = Path(path).expanduser()
    if p.is_dir():
        raise InputError(f"{path}: is a folder, not an output file")
    parent = p.resolve().parent
    if not parent.is_dir():
        raise InputError(f"{path}: its folder {parent} does not exist")
