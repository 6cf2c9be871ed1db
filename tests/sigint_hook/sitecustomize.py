"""Ctrl-C at a chosen point of a ``latency-wizard`` subprocess (tests/test_ctrl_c.py).

Put this folder on the child's PYTHONPATH with ``WIZARD_TEST_SIGINT=module:function:call:how``
(``function`` may be ``Class.method``): the ``call``-th call of ``module.function`` first sends the
process a SIGINT, then runs as usual; with ``:return`` added, it sends it as the call returns.
``how`` is where the signal's KeyboardInterrupt is raised: ``plain`` (the caller's own code),
``weakref`` (a weakref callback, where CPython prints "Exception ignored" and drops it: what an
interrupt landing during an import often met), ``exec`` (code compiled from a string, as the
dataclasses and namedtuples of a lazy import are: it marks a ``python -m`` interpreter to exit by
SIGINT at the end).
"""

import functools
import importlib
import os
import signal
import weakref

_WHERE = os.environ.get("WIZARD_TEST_SIGINT")


def _interrupt(how: str) -> None:
    if how == "plain":
        signal.raise_signal(signal.SIGINT)
    elif how == "weakref":

        class Referent:
            pass

        referent = Referent()
        keep = weakref.ref(referent, lambda _: signal.raise_signal(signal.SIGINT))
        del referent  # the callback runs here, and the interrupt raised inside it is dropped
        del keep
    elif how == "exec":
        exec("import signal\nsignal.raise_signal(signal.SIGINT)\n")
    else:
        raise ValueError(f"WIZARD_TEST_SIGINT: unknown how {how!r}")


def _install(where: str) -> None:
    module_name, name, call, how, *at = where.split(":")
    owner = importlib.import_module(module_name)
    *path, name = name.split(".")
    for part in path:
        owner = getattr(owner, part)
    original = getattr(owner, name)
    calls = 0

    @functools.wraps(original)
    def wrapped(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == int(call) and at != ["return"]:
            _interrupt(how)
        result = original(*args, **kwargs)
        if calls == int(call) and at == ["return"]:
            _interrupt(how)
        return result

    setattr(owner, name, wrapped)


if _WHERE:
    _install(_WHERE)
