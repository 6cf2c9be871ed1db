"""Walk probe ``request-shape``: the per-request part of the incident's body, and where it stands.

Reads the body ``run --request-body`` gave (no request is sent): the first value that changes
from one request to the next (``prompt_shape.find_varying``) and how far into the prompt it
stands. Without a body, or without such a part, there is nothing for the shape rounds to vary.
"""

from __future__ import annotations

from typing import Any

from wizard.prompt_shape import find_varying


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The body's varying part as facts (``varying_kind`` None: no body, or nothing varies)."""
    body = ctx.workload.body if ctx.workload is not None else None
    if body is None:
        return {"body": False, "varying_kind": None}
    part = find_varying(body)
    return {"body": True, **(part.to_facts() if part is not None else {"varying_kind": None})}
