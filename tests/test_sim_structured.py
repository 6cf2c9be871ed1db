"""The simulator's structured outputs: the constraint read from the request as vLLM 0.32-0.34
take it (``guided_*`` ignored, as 0.32's request models no longer have them), and the engine
core's bitmask work growing with the grammar's size in every step it is in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import SimProcess
from wizard.sim.config import SimConfig
from wizard.sim.protocol import parse_generation
from wizard.sim.steptime import step_time_ms
from wizard.sim.structured import JSON_OBJECT_CHARS

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
SCHEMA_CHARS = len('{"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"}')


def parsed(**fields: Any) -> Any:
    body = {"prompt": "a b c", "max_tokens": 4, **fields}
    return parse_generation(body, chat=False, served_model="m", max_model_len=8192,
                            chat_template=True)  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "chars"),
    [
        ({}, 0),
        ({"structured_outputs": {"json": SCHEMA}}, SCHEMA_CHARS),
        ({"structured_outputs": {"regex": "[a-z]{3,9}"}}, 10),
        ({"structured_outputs": {"choice": ["yes", "no"]}}, 5),
        ({"structured_outputs": {"json_object": True}}, JSON_OBJECT_CHARS),
        ({"response_format": {"type": "json_schema",
                              "json_schema": {"name": "n", "schema": SCHEMA}}}, SCHEMA_CHARS),
        ({"response_format": {"type": "json_object"}}, JSON_OBJECT_CHARS),
        ({"response_format": {"type": "text"}}, 0),
        # Gone from 0.32's request models: an unknown field, the request runs unconstrained.
        ({"guided_json": SCHEMA}, 0),
    ],
)  # fmt: skip
def test_the_constraint_and_its_size_come_from_the_request(
    fields: dict[str, Any], chars: int
) -> None:
    request = parsed(**fields)
    assert request.grammar_chars == chars
    assert request.ignored_fields == (["guided_json"] if "guided_json" in fields else [])


def test_each_constrained_sequence_pays_its_grammar_in_the_step() -> None:
    config = SimConfig()
    costs = config.costs
    plain = step_time_ms(config, 0, 4)
    # Two constrained sequences of four: one a 10,000-character schema, one a short regex.
    constrained = step_time_ms(config, 0, 4, grammar_chars=(10_000, 10))
    mask = 2 * costs.grammar_mask_ms + 10.01 * costs.grammar_mask_ms_per_kchar
    assert constrained == pytest.approx(plain + mask)


def test_the_server_serves_a_constrained_stream(
    sim_factory: Callable[..., SimProcess],
) -> None:
    sim = sim_factory()
    body = {"prompt": "a b c", "max_tokens": 5, "ignore_eos": True,
            "response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}}  # fmt: skip
    response = httpx.post(sim.url + "/v1/completions", json=body, timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["completion_tokens"] == 5
    assert "response_format" not in sim.log()  # not an ignored field
