"""The structured-output contrast: which bodies carry an output constraint, and the round that
sends the same body without it (LAT019's evidence), fingerprinted as a body of its own."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from wizard.probes.http.measure_probe import DEFAULTS, request_spec
from wizard.workload import Workload, body_sha256

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}
BASE = {"model": "m", "prompt": "fill in the record", "max_tokens": 16}


@pytest.mark.parametrize(
    ("extra", "fields"),
    [
        ({}, []),
        ({"response_format": {"type": "text"}}, []),
        ({"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}},
         ["response_format"]),
        ({"structured_outputs": {"regex": "[0-9]+"}}, ["structured_outputs"]),
        # Older releases' field: still the client's constraint (0.32 would ignore it).
        ({"guided_json": SCHEMA, "temperature": 0}, ["guided_json"]),
    ],
)  # fmt: skip
def test_the_constraint_fields_of_a_body(extra: dict[str, Any], fields: list[str]) -> None:
    workload = Workload(body={**BASE, **extra})
    assert workload.constraint_fields == fields
    assert (workload.constraint_chars > 0) == bool(fields)
    assert workload.unconstrained_body() == {
        k: v for k, v in {**BASE, **extra}.items() if k not in fields
    }


def test_no_body_no_constraint() -> None:
    assert Workload(model="m").constraint_fields == []
    assert Workload(model="m").unconstrained_body() is None


def test_the_contrast_round_sends_the_body_without_its_constraint() -> None:
    body = {**BASE, "response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}}
    ctx = SimpleNamespace(workload=Workload(endpoint="completions", body=body), max_model_len=None)
    settings = {**DEFAULTS, "replay_body": True}
    incident = request_spec(ctx, settings, "m")
    contrast = request_spec(ctx, {**settings, "unconstrained": True}, "m")
    assert incident.template == body
    assert contrast.template == BASE
    assert (incident.input_tokens, incident.max_tokens) == (contrast.input_tokens, 16)
    # Two bodies, two fingerprints: the contrast never passes for a repeat of the baseline.
    assert body_sha256(contrast.template) != Workload(body=body).body_sha256
