"""The per-request part of a request body (``wizard.prompt_shape``): found, and moved."""

from __future__ import annotations

from typing import Any

import pytest

from wizard.prompt_shape import find_varying, texts, with_fresh_part

FIXED = "You are a support assistant. Answer briefly and cite the policy."


def chat(system: str, user: str = "Where is my order?") -> dict[str, Any]:
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}


@pytest.mark.parametrize(
    ("text", "kind", "found"),
    [
        ("Current time: 2026-12-05T00:41:07Z. " + FIXED, "timestamp", "2026-12-05T00:41:07Z"),
        ("Now 2026-12-05 00:41:07 UTC. " + FIXED, "timestamp", "2026-12-05 00:41:07 UTC"),
        ("trace 3f2b1c4e-9a8d-4e21-b7c6-1d2e3f4a5b6c " + FIXED, "uuid",
         "3f2b1c4e-9a8d-4e21-b7c6-1d2e3f4a5b6c"),
        ("request_id=abc-123 " + FIXED, "request id", "request_id=abc-123"),
        ("ts 1764895267123 " + FIXED, "epoch time", "1764895267123"),
        ("Today is 2026-12-05. " + FIXED, "date", "2026-12-05"),
    ],
)  # fmt: skip
def test_the_first_per_request_value_is_found(text: str, kind: str, found: str) -> None:
    part = find_varying(chat(text))
    assert part is not None and (part.kind, part.text) == (kind, found)


def test_a_body_without_one_has_none_and_the_first_wins() -> None:
    assert find_varying(chat(FIXED)) is None
    assert find_varying({"prompt": "Section 12 of 40, version 3.2: " + FIXED}) is None
    late = find_varying(chat(FIXED, "Order 2026-11-30, asked at 2026-12-05T00:41:07Z"))
    assert late is not None and late.kind == "date" and late.text == "2026-11-30"
    assert late.word_index == len(FIXED.split()) + 1 and late.words == len(
        " ".join(texts(chat(FIXED, "Order 2026-11-30, asked at 2026-12-05T00:41:07Z"))).split()
    )


def test_a_fresh_value_stays_in_place_or_moves_after_the_prompt() -> None:
    body = chat("Current time: 2026-12-05T00:41:07Z. " + FIXED)
    part = find_varying(body)
    assert part is not None
    first, second = (with_fresh_part(body, part, at_end=False) for _ in range(2))
    one, two = first["messages"][0]["content"], second["messages"][0]["content"]
    assert one != two and one.startswith("Current time: ") and one.endswith(FIXED)
    assert body["messages"][0]["content"].startswith("Current time: 2026-12-05T00:41:07Z")
    moved = with_fresh_part(body, part, at_end=True)
    system, user = (m["content"] for m in moved["messages"])
    assert system == "Current time: . " + FIXED and "2026-12-05T00:41:07Z" not in system
    assert user.startswith("Where is my order?\n") and user != "Where is my order?\n"
    # A completions prompt: the one text it has.
    prompt = with_fresh_part({"prompt": "id: 2026-12-05T00:41:07Z " + FIXED}, part, at_end=True)
    assert prompt["prompt"].startswith("id:  " + FIXED + "\n")
