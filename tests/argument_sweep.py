"""The argument sweeps' one rule: a public function given bad arguments returns or raises its
package's own error, unchained, printable, within a few seconds (issue 37 item 9)."""

from __future__ import annotations

import signal


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang


def problem(fn, args, kwargs, error: type, seconds: int) -> str | None:
    """None when `fn(*args, **kwargs)` succeeds or raises a clean `error` within `seconds`."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        fn(*args, **kwargs)
    except error as e:
        if e.__cause__ is not None or (e.__context__ is not None and not e.__suppress_context__):
            return f"{error.__name__} chained onto {type(e.__cause__ or e.__context__).__name__}"
        str(e)  # the message can be printed
    except _Hang:
        return f"no answer within {seconds} s"
    except BaseException as e:  # noqa: BLE001 - any other exception is the finding
        return f"{type(e).__name__}: {str(e)[:200]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return None


def nested(value, values, depth: int = 2):
    """`value` with one element of a tuple or list in it (down to `depth` levels) replaced by each
    of `values` in turn: hostile entries inside a good argument (`(8, nan)`, `((1, 2**64),)`)."""
    if depth == 0 or not isinstance(value, (tuple, list)):
        return
    for i, item in enumerate(value):
        for v in list(values) + list(nested(item, values, depth - 1)):
            out = list(value)
            out[i] = v
            yield tuple(out) if isinstance(value, tuple) else out


def findings(name, fn, args, kwargs, values, error: type, seconds: int, label, inner=()) -> list[str]:
    """Each argument of the good call `fn(*args, **kwargs)` replaced by each bad value in turn,
    then by itself with each of `inner` nested in it (`nested`): the problems found (the good
    call itself must pass)."""
    assert problem(fn, args, kwargs, error, seconds) is None, f"{name} refuses the table's good arguments"
    bad = []
    for i in range(len(args)):
        for value in list(values) + list(nested(args[i], inner)):
            found = problem(fn, args[:i] + (value,) + args[i + 1:], kwargs, error, seconds)
            if found:
                bad.append(f"{name} argument {i} = {label(value)}: {found}")
    for key in kwargs:
        for value in list(values) + list(nested(kwargs[key], inner)):
            found = problem(fn, args, {**kwargs, key: value}, error, seconds)
            if found:
                bad.append(f"{name}({key}={label(value)}): {found}")
    return bad
