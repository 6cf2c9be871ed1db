"""The errors the tool raises on purpose, and the exit code each one maps to.

WizardError            anything the user can fix; printed as one line, never as a traceback
├── UsageError         bad flags or arguments (exit 2)
└── ConfigError        a configuration that cannot work, e.g. a simulator that would not start (exit 1)
"""

from __future__ import annotations


class WizardError(Exception):
    """An error with a one-line message meant for the operator."""

    exit_code = 1


class UsageError(WizardError):
    """The command line asks for something impossible."""

    exit_code = 2


class ConfigError(WizardError):
    """A configuration that cannot work (the message says what and how to fix it)."""

    exit_code = 1
