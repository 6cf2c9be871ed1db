"""The errors the tool raises on purpose, and the exit code each one maps to.

WizardError            anything the user can fix; printed as one line, never as a traceback
├── UsageError         bad flags or arguments (exit 2)
└── ConfigError        a configuration that cannot work, e.g. a simulator that would not start (exit 1)
"""

from __future__ import annotations

from typing import Self


class WizardError(Exception):
    """An error with a one-line message meant for the operator; ``texts`` holds the same line in
    every language the words table has (the message is its English)."""

    exit_code = 1

    def __init__(self, message: str, texts: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.texts = texts or {"en": message}

    @classmethod
    def said(cls, key: str, **values: object) -> Self:
        """The error worded by ``key`` in the words table, in every language."""
        from wizard.i18n.words import texts

        worded = texts(key, **values)
        return cls(worded["en"], worded)

    @classmethod
    def cannot_read(cls, path: object, exc: OSError) -> Self:
        """``cannot read PATH: why``, the system's reason in every language the table knows."""
        return cls.said("error.cannot_read", path=path, why=_reason(exc) or str(exc.strerror))

    @classmethod
    def os_said(cls, key: str, exc: OSError, **values: object) -> Self:
        """The error worded by ``key``, its ``{why}`` the system's reason: in English as the
        system says it (as these errors always did), in another language as the table does."""
        return cls.said(key, why={**_reason(exc), "en": str(exc.strerror)}, **values)


class UsageError(WizardError):
    """The command line asks for something impossible."""

    exit_code = 2


class ConfigError(WizardError):
    """A configuration that cannot work (the message says what and how to fix it)."""

    exit_code = 1


def _reason(exc: OSError) -> dict[str, str]:
    """The system's reason for ``exc`` in every language the words table has, if it has it."""
    import errno

    from wizard.i18n.words import WORDS

    return WORDS.get(f"oserror.{errno.errorcode.get(exc.errno or 0, '')}", {})


# The optional parts of the install: what each extra brings (pyproject.toml's extras).
EXTRAS = {"sim": ("starlette", "uvicorn"), "loadgen": ("mlperf_loadgen",)}


def missing_modules(extra: str) -> list[str]:
    """The modules of an extra this install lacks: found, not imported (the demo checks before
    it starts the simulator, whose process imports them; uvicorn alone is ~40 ms of its start)."""
    from importlib.util import find_spec

    return [name for name in EXTRAS[extra] if find_spec(name) is None]


def require_extra(extra: str, command: str) -> None:
    """Raise a one-line ConfigError naming the extra when a module it brings is missing."""
    missing = missing_modules(extra)
    if missing:
        raise ConfigError.said("error.missing_extra", command=command, extra=extra,
                               missing=", ".join(missing))  # fmt: skip
