"""Structured outputs: a request's constraint as vLLM 0.32-0.34 take it, and how large it is.

A request is constrained by ``structured_outputs`` (``{"json": schema}``, ``{"regex": ...}``,
``{"choice": [...]}``, ``{"grammar": ...}``, ``{"json_object": true}``, ``{"structural_tag":
...}``) or by ``response_format`` (``{"type": "json_schema", "json_schema": {"schema": ...}}`` or
``{"type": "json_object"}``). The ``guided_json``/``guided_regex``/... fields of older releases are
not in 0.32's request models: like any unknown field they are ignored, and the request runs
unconstrained (read in the real 0.32 build: no ``guided_*`` left in its OpenAI entrypoints).

Before every step the engine core fills each constrained sequence's token bitmask on its CPU,
walking the grammar's state; the simulator takes the grammar's size (the characters of its
canonical text: a schema's compact JSON, the regex, the choices) as the measure of that work
(``StepCosts.grammar_mask_ms`` + ``grammar_mask_ms_per_kchar``), so a large schema slows every
step it is in while a small one barely shows. Grammar compilation (cached per schema) is not
modelled.
"""

from __future__ import annotations

import json
from typing import Any

CONSTRAINT_FIELDS = ("structured_outputs", "response_format")
# A generic JSON object grammar (json_object): about the size of a small schema.
JSON_OBJECT_CHARS = 64


def grammar_chars(body: dict[str, Any]) -> int:
    """The size of the request's constraint in characters; 0 when it has none."""
    structured = body.get("structured_outputs")
    if isinstance(structured, dict):
        for key in ("json", "regex", "grammar", "choice", "structural_tag"):
            if structured.get(key) is not None:
                return _size(structured[key])
        if structured.get("json_object"):
            return JSON_OBJECT_CHARS
    response_format = body.get("response_format")
    if isinstance(response_format, dict):
        kind = response_format.get("type")
        if kind == "json_schema":
            schema = response_format.get("json_schema")
            if isinstance(schema, dict):
                return _size(schema.get("schema", schema))
        if kind == "json_object":
            return JSON_OBJECT_CHARS
    return 0


def _size(constraint: Any) -> int:
    if isinstance(constraint, str):
        return max(1, len(constraint))
    if isinstance(constraint, list):
        return max(1, sum(len(str(item)) for item in constraint))
    return max(1, len(json.dumps(constraint, separators=(",", ":"), sort_keys=True)))
