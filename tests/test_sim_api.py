"""The simulator's HTTP API behaves like vLLM 0.34's (facts/vllm.md §4)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.conftest import SimProcess

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def events(body: str) -> list[str]:
    """The data payloads of an SSE body, in order."""
    assert body.endswith("\n\n")
    out = []
    for raw in body.split("\n\n"):
        if raw:
            assert raw.startswith("data: "), raw
            out.append(raw[len("data: ") :])
    return out


def post(sim: SimProcess, path: str, body: Any, **kwargs: Any) -> httpx.Response:
    return httpx.post(sim.url + path, json=body, timeout=30, **kwargs)


def test_models_version_health(healthy_sim: SimProcess) -> None:
    models = httpx.get(healthy_sim.url + "/v1/models").json()
    assert models["object"] == "list"
    assert models["data"][0]["id"] == MODEL
    assert models["data"][0]["max_model_len"] == 8192
    assert httpx.get(healthy_sim.url + "/version").json() == {"version": "0.34.0"}
    health = httpx.get(healthy_sim.url + "/health")
    assert health.status_code == 200
    assert health.content == b""


def test_completion_stream_framing_and_usage(healthy_sim: SimProcess) -> None:
    body = {"model": MODEL, "prompt": "one two three four", "max_tokens": 7, "ignore_eos": True,
            "stream": True, "stream_options": {"include_usage": True}}  # fmt: skip
    response = post(healthy_sim, "/v1/completions", body)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert "x-accel-buffering" not in response.headers
    data = events(response.text)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    usage = chunks[-1]
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 4, "total_tokens": 11, "completion_tokens": 7}
    text_chunks = chunks[:-1]
    assert all(c["object"] == "text_completion" for c in text_chunks)
    text = "".join(c["choices"][0]["text"] for c in text_chunks)
    assert len(text.split()) == 7  # one word per token: counts match usage exactly
    assert text_chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert all(c["choices"][0]["finish_reason"] is None for c in text_chunks[:-1])


def test_chat_stream_role_chunk_first(healthy_sim: SimProcess) -> None:
    body = {"messages": [{"role": "user", "content": "hello there"}], "max_tokens": 4,
            "ignore_eos": True, "stream": True}  # fmt: skip
    data = events(post(healthy_sim, "/v1/chat/completions", body).text)
    chunks = [json.loads(d) for d in data[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert chunks[0]["object"] == "chat.completion.chunk"
    contents = [c["choices"][0]["delta"]["content"] for c in chunks[1:]]
    assert len("".join(contents).split()) == 4
    assert "usage" not in chunks[-1]  # usage only when asked for


def test_chat_continuous_usage_counts(healthy_sim: SimProcess) -> None:
    body = {"messages": [{"role": "user", "content": "a b c"}], "max_tokens": 5, "ignore_eos": True,
            "stream": True, "stream_options": {"include_usage": True, "continuous_usage_stats": True}}  # fmt: skip
    chunks = [
        json.loads(d) for d in events(post(healthy_sim, "/v1/chat/completions", body).text)[:-1]
    ]
    # Chat prompt = BOS + 5 per message + words + 3 for the generation prompt.
    prompt_tokens = 1 + 5 + 3 + 3
    assert chunks[0]["usage"] == {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens,
                                  "completion_tokens": 0}  # fmt: skip
    words = 0
    for chunk in chunks[1:-1]:
        words += len(chunk["choices"][0]["delta"]["content"].split())
        assert chunk["usage"]["completion_tokens"] == words
    assert chunks[-1]["usage"]["completion_tokens"] == 5


def test_non_streamed_and_early_stop(healthy_sim: SimProcess) -> None:
    response = post(
        healthy_sim, "/v1/completions", {"prompt": "why is it slow", "max_tokens": 2000}
    )
    body = response.json()
    generated = body["usage"]["completion_tokens"]
    # Without ignore_eos the "model" stops on its own before the requested length.
    assert body["choices"][0]["finish_reason"] == "stop"
    assert 16 <= generated < 2000
    assert len(body["choices"][0]["text"].split()) == generated
    again = post(
        healthy_sim, "/v1/completions", {"prompt": "why is it slow", "max_tokens": 2000}
    ).json()
    assert again["usage"]["completion_tokens"] == generated  # deterministic per prompt


@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        ("/v1/completions", {"prompt": "x", "max_tokens": -5}, 400, "max_tokens must be at least 1, got -5."),
        ("/v1/completions", {"prompt": "x", "max_tokens": "many"}, 400, "max_tokens"),
        ("/v1/completions", {"prompt": "x", "max_tokens": True}, 400, "max_tokens"),
        ("/v1/completions", {"prompt": "x", "stream": "yes"}, 400, "stream"),
        ("/v1/completions", {"model": "gpt-4", "prompt": "x"}, 404, "The model `gpt-4` does not exist."),
        ("/v1/completions", {"max_tokens": 3}, 400, "prompt"),
        ("/v1/completions", {"prompt": ""}, 400, "The decoder prompt cannot be empty"),
        ("/v1/completions", {"prompt": "x", "stream_options": {"include_usage": True}}, 400,
         "Stream options can only be defined when `stream=True`."),
        ("/v1/completions", {"prompt": "x", "suffix": "y"}, 400, "suffix is only supported"),
        ("/v1/completions", {"prompt": "w " * 9000}, 400, "maximum context length is 8192 tokens"),
        ("/v1/completions", {"prompt": "w " * 100, "max_tokens": 8100}, 400,
         "you requested 8200 tokens (100 in the messages, 8100 in the completion)"),
        ("/v1/chat/completions", {"messages": "hi"}, 400, "messages"),
        ("/v1/completions", [1, 2, 3], 400, "valid dictionary"),
    ],
)  # fmt: skip
def test_bad_requests_get_vllm_errors(
    healthy_sim: SimProcess, path: str, body: Any, status: int, message: str
) -> None:
    response = post(healthy_sim, path, body)
    assert response.status_code == status
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == status
    assert message in error["message"]


def test_malformed_json_and_oversized_body(healthy_sim: SimProcess) -> None:
    response = httpx.post(healthy_sim.url + "/v1/completions", content=b'{"prompt": "unterminated')
    assert response.status_code == 400
    assert "JSON decode error" in response.json()["error"]["message"]
    big = b'{"prompt": "' + b"w " * (5 * 1024 * 1024) + b'"}'
    response = httpx.post(healthy_sim.url + "/v1/completions", content=big, timeout=30)
    assert response.status_code == 413
    # The server is still fine afterwards.
    assert post(healthy_sim, "/v1/completions", {"prompt": "x", "max_tokens": 1}).status_code == 200


def test_unknown_fields_are_ignored_and_logged(healthy_sim: SimProcess) -> None:
    response = post(
        healthy_sim, "/v1/completions", {"prompt": "x", "max_tokens": 1, "frobnicate": 3}
    )
    assert response.status_code == 200
    assert (
        "The following fields were present in the request but ignored: {'frobnicate'}"
        in healthy_sim.log()
    )


def test_api_key_guards_only_v1(sim_factory: Any) -> None:
    sim = sim_factory("--scenario", "auth-required", env={"VLLM_API_KEY": "canary-key-123"})
    unauthorized = post(sim, "/v1/completions", {"prompt": "x", "max_tokens": 1})
    assert unauthorized.status_code == 401
    assert unauthorized.json() == {"error": "Unauthorized"}
    wrong = httpx.get(sim.url + "/v1/models", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    ok = httpx.get(sim.url + "/v1/models", headers={"Authorization": "Bearer canary-key-123"})
    assert ok.status_code == 200
    assert httpx.get(sim.url + "/health").status_code == 200
    assert httpx.get(sim.url + "/metrics").status_code == 200
    assert "canary-key-123" not in sim.log()
    assert "'api_key': '[REDACTED]'" in sim.log()


def test_x_accel_buffering_header_on_request(sim_factory: Any) -> None:
    sim = sim_factory("--x-accel-buffering-no")
    body = {"prompt": "x", "max_tokens": 2, "stream": True}
    with httpx.stream("POST", sim.url + "/v1/completions", json=body) as response:
        assert response.headers["x-accel-buffering"] == "no"
        response.read()


def test_no_chat_template_scenario(sim_factory: Any) -> None:
    sim = sim_factory("--scenario", "no-chat-template")
    chat = post(sim, "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
    assert chat.status_code == 400
    assert chat.json()["error"]["message"].startswith(
        "As of transformers v4.44, default chat template is no longer allowed"
    )
    completion = post(sim, "/v1/completions", {"prompt": "hi", "max_tokens": 2})
    assert completion.status_code == 200


def test_keep_alive_comments_while_idle(sim_factory: Any) -> None:
    # A long prefill (tiny budget) keeps the stream idle; keep-alives must fill the gap.
    sim = sim_factory("--sse-keep-alive-interval", "0.02", "--max-num-batched-tokens", "64",
                      "--max-num-seqs", "64")  # fmt: skip
    body = {"prompt": "w " * 4000, "max_tokens": 1, "stream": True}
    text = post(sim, "/v1/completions", body).text
    assert ": keep-alive\n\n" in text
    assert text.endswith("data: [DONE]\n\n")
