"""One change names one thing (P0.2): one parameter name and one new value."""

from __future__ import annotations

import re

# One parameter is one name: a flag, a directive, an environment variable.
PARAMETER = re.compile(r"^-{0,2}[A-Za-z_][\w.\-]*$")


# Two values in one field: a second directive, a second flag, or a list of alternatives.
SECOND_VALUE = re.compile(r";|\n|(?:^|\s)--\w|\s(?:and|&|\+)\s|,\s*--")


def more_than_one_change(parameter: str, after: str | None) -> str | None:
    """Why a declared change names more than one thing (P0.2), or None when it names one."""
    if not PARAMETER.match(parameter.strip()):
        return f"'{parameter}' is not one parameter name"
    if after and SECOND_VALUE.search(after.strip().rstrip(";")):
        return f"its new value '{after}' holds more than one change"
    return None
