"""The simulator's HTTP API behaves like vLLM's (facts/vllm.md §4; real-vllm.md for the shapes)."""

from __future__ import annotations

import json
import re
import socket
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
    entry = models["data"][0]
    assert list(entry) == ["id", "object", "created", "owned_by", "root", "parent",
                           "max_model_len", "permission"]  # fmt: skip
    assert entry["id"] == entry["root"] == MODEL and entry["parent"] is None
    assert entry["max_model_len"] == 8192
    (permission,) = entry["permission"]
    assert permission["object"] == "model_permission"
    assert re.fullmatch(r"modelperm-[0-9a-f]{16}", permission["id"])
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
                                  "completion_tokens": 0, "completion_tokens_details": None}  # fmt: skip
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
    ("path", "body", "status", "message", "kind", "param"),
    [
        ("/v1/completions", {"prompt": "x", "max_tokens": -5}, 400,
         "max_tokens must be at least 1, got -5. (parameter=max_tokens, value=-5)", "BadRequestError", "max_tokens"),
        ("/v1/completions", {"prompt": "x", "max_tokens": "many"}, 400,
         "'type': 'int_parsing', 'loc': 'body.max_tokens'", "Bad Request", "body.max_tokens"),
        ("/v1/completions", {"prompt": "x", "max_tokens": 1.5}, 400, "int_from_float", "Bad Request", "body.max_tokens"),
        ("/v1/completions", {"prompt": "x", "stream": "maybe"}, 400,
         "Input should be a valid boolean, unable to interpret input", "Bad Request", "body.stream"),
        ("/v1/completions", {"model": "gpt-4", "prompt": "x"}, 404,
         f"The model `gpt-4` does not exist. Valid aliases: {MODEL}.", "NotFoundError", "model"),
        ("/v1/completions", {"max_tokens": 3}, 400,
         "Either prompt or prompt_embeds must be provided and non-empty. (parameter=prompt)", "BadRequestError", "prompt"),
        ("/v1/completions", {"prompt": ""}, 400, "Either prompt or prompt_embeds", "BadRequestError", "prompt"),
        ("/v1/completions", {"prompt": "x", "stream_options": {"include_usage": True}}, 400,
         "Stream options can only be defined when `stream=True`. (parameter=stream_options)", "BadRequestError",
         "stream_options"),
        ("/v1/completions", {"prompt": "x", "suffix": "y"}, 400, "suffix is only supported", "BadRequestError", "suffix"),
        ("/v1/completions", {"prompt": "w " * 9000}, 400,
         "This model's maximum context length is 8192 tokens. However, your prompt contains at least 8193 input "
         "tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input "
         "prompt. (parameter=input_tokens, value=8193)", "BadRequestError", "input_tokens"),
        ("/v1/completions", {"prompt": [7] * 8200}, 400, "your prompt contains 8200 input tokens", "BadRequestError",
         "input_tokens"),
        ("/v1/completions", {"prompt": [7] * 8192}, 400, "max_tokens must be at least 1, got 0.", "BadRequestError",
         "max_tokens"),
        ("/v1/completions", {"prompt": "x", "max_tokens": 9000}, 400,
         "max_tokens=9000 cannot be greater than max_model_len=8192. Please request fewer output tokens. "
         "(parameter=max_tokens, value=9000)", "BadRequestError", "max_tokens"),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 9000}, 400,
         "max_completion_tokens=9000 cannot be greater than max_model_len=8192.", "BadRequestError",
         "max_completion_tokens"),
        ("/v1/chat/completions", {"messages": "hi"}, 400, "'msg': 'Input should be a valid list'", "Bad Request",
         "body.messages"),
        ("/v1/completions", [1, 2, 3], 400,
         "'type': 'model_attributes_type', 'loc': 'body', 'msg': 'Input should be a valid dictionary or object to "
         "extract fields from', 'input': '<list of 3 items>'", "Bad Request", "body"),
    ],
)  # fmt: skip
def test_bad_requests_get_vllm_errors(
    healthy_sim: SimProcess, path: str, body: Any, status: int, message: str, kind: str, param: str
) -> None:
    response = post(healthy_sim, path, body)
    assert response.status_code == status
    error = response.json()["error"]
    assert list(error) == ["message", "type", "param", "code"]
    assert (error["code"], error["type"], error["param"]) == (status, kind, param)
    assert message in error["message"]


def test_fields_are_coerced_as_pydantic_does(healthy_sim: SimProcess) -> None:
    # A real vLLM accepts these (pydantic's lax mode): "yes" is true, True is 1, "3" is 3.
    body = {"prompt": "x", "max_tokens": "3", "ignore_eos": "yes", "stream": "true"}
    data = events(post(healthy_sim, "/v1/completions", body).text)
    assert data[-1] == "[DONE]" and len(data) == 4
    one = post(healthy_sim, "/v1/completions", {"prompt": "x", "max_tokens": True, "ignore_eos": 1})
    assert one.json()["usage"]["completion_tokens"] == 1


def test_output_is_clamped_to_the_context_and_completions_default_to_16(
    healthy_sim: SimProcess,
) -> None:
    # vLLM clamps max_tokens to what the context leaves instead of refusing the request.
    clamped = post(healthy_sim, "/v1/completions",
                   {"prompt": [7] * 8150, "max_tokens": 100, "ignore_eos": True}).json()  # fmt: skip
    assert clamped["usage"]["completion_tokens"] == 42
    default = post(healthy_sim, "/v1/completions", {"prompt": "x", "ignore_eos": True}).json()
    assert default["usage"]["completion_tokens"] == 16


def test_malformed_json_and_oversized_body(healthy_sim: SimProcess) -> None:
    response = httpx.post(healthy_sim.url + "/v1/completions", content=b'{"prompt": "unterminated')
    assert response.status_code == 400
    error = response.json()["error"]
    # FastAPI's error: the character where json.loads failed, as the param.
    assert (error["type"], error["param"]) == ("Bad Request", "body.11")
    assert error["message"] == (
        "1 validation error:\n  {'type': 'json_invalid', 'loc': 'body.11', 'msg': 'JSON decode error', "
        "'input': '<dict of 0 items>', 'ctx': {'error': 'Unterminated string starting at'}}"
    )
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


# -- HTTP framing and SSE details as a real vLLM 0.32 writes them ------------------------------


def raw_request(url: str, request: bytes) -> bytes:
    """Send ``request`` on a fresh socket and read until the server closes it."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


def post_raw(url: str, body: dict[str, Any], version: str = "1.1") -> tuple[str, bytes]:
    """An HTTP request as nginx sends it upstream by default (1.0) or as a client does (1.1)."""
    payload = json.dumps(body).encode()
    head = (f"POST /v1/completions HTTP/{version}\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n")  # fmt: skip
    if version == "1.1":
        head += "Connection: close\r\n"
    response = raw_request(url, head.encode() + b"\r\n" + payload)
    headers, _, rest = response.partition(b"\r\n\r\n")
    return headers.decode(), rest


def chunks_of(body: bytes) -> list[bytes]:
    """The HTTP chunks of a chunked body, in order (the closing empty chunk excluded)."""
    out = []
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return out
        out.append(body[:size])
        assert body[size : size + 2] == b"\r\n"
        body = body[size + 2 :]


STREAM = {"prompt": "a b", "max_tokens": 4, "ignore_eos": True, "stream": True}


def test_http10_gets_a_chunked_body_by_default_as_real_vllm(healthy_sim: SimProcess) -> None:
    # uvicorn with httptools (a stock vLLM install): HTTP/1.1 status, connection: close, chunked.
    headers, body = post_raw(healthy_sim.url, STREAM, version="1.0")
    lines = headers.split("\r\n")
    assert lines[0] == "HTTP/1.1 200 OK"
    assert lines[1:] == [
        lines[1], "server: uvicorn", "content-type: text/event-stream; charset=utf-8",
        "vary: Origin", "connection: close", "transfer-encoding: chunked",
    ]  # fmt: skip
    assert lines[1].startswith("date: ")
    events_ = chunks_of(body)
    assert len(events_) == 5 and events_[-1] == b"data: [DONE]\n\n"  # one HTTP chunk per event


def test_http10_gets_a_close_delimited_body_with_h11(sim_factory: Any) -> None:
    sim = sim_factory("--http", "h11")
    headers, body = post_raw(sim.url, STREAM, version="1.0")
    assert "transfer-encoding" not in headers.lower() and "content-length" not in headers.lower()
    assert "Connection: close" in headers
    assert body.startswith(b"data: {") and body.endswith(b"data: [DONE]\n\n")


def test_chat_role_chunk_is_an_http_chunk_of_its_own(healthy_sim: SimProcess) -> None:
    payload = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3,
                          "ignore_eos": True, "stream": True}).encode()  # fmt: skip
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(payload))  # fmt: skip
    _, body = raw_request(healthy_sim.url, request + payload).partition(b"\r\n\r\n")[::2]
    parts = chunks_of(body)
    assert parts[-1] == b"data: [DONE]\n\n"
    parsed = [json.loads(part.removeprefix(b"data: ")) for part in parts[:-1]]
    assert all(part.count(b"data: ") == 1 for part in parts)
    role, *content = parsed
    assert list(role) == ["id", "object", "created", "model", "choices", "prompt_token_ids",
                          "prompt_text"]  # fmt: skip
    assert role["choices"] == [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                "logprobs": None, "finish_reason": None}]  # fmt: skip
    assert re.fullmatch(r"chatcmpl-[0-9a-f]{16}", role["id"])
    assert list(content[0]["choices"][0]) == ["index", "delta", "logprobs", "finish_reason",
                                              "token_ids"]  # fmt: skip
    last = content[-1]
    assert list(last["choices"][0]) == ["index", "delta", "logprobs", "finish_reason",
                                        "stop_reason", "token_ids"]  # fmt: skip
    assert re.fullmatch(r"vllm-0\.34\.0-[0-9a-f]{8}", last["system_fingerprint"])
    assert all("system_fingerprint" not in c for c in content[:-1])


def test_completion_chunks_ids_and_fingerprint(healthy_sim: SimProcess) -> None:
    data = events(post(healthy_sim, "/v1/completions", STREAM).text)
    chunks = [json.loads(d) for d in data[:-1]]
    assert {c["id"] for c in chunks} == {chunks[0]["id"]}
    assert re.fullmatch(r"cmpl-[0-9a-f]{16}", chunks[0]["id"])
    for c in chunks:
        assert list(c["choices"][0]) == ["index", "text", "logprobs", "finish_reason",
                                         "stop_reason", "prompt_token_ids", "token_ids"]  # fmt: skip
    assert "system_fingerprint" in chunks[-1] and "usage" not in chunks[-1]
    # With include_usage the fingerprint moves to the usage chunk.
    body = {**STREAM, "stream_options": {"include_usage": True}}
    chunks = [json.loads(d) for d in events(post(healthy_sim, "/v1/completions", body).text)[:-1]]
    assert list(chunks[-1]) == ["id", "object", "created", "model", "choices", "usage",
                                "system_fingerprint"]  # fmt: skip
    assert all("system_fingerprint" not in c for c in chunks[:-1])


def test_headers_vary_not_found_and_method_not_allowed(sim_factory: Any) -> None:
    sim = sim_factory("--served-model-name", "tiny", env={"VLLM_API_KEY": "k"})
    ok = httpx.get(sim.url + "/health")
    assert ok.headers["vary"] == "Origin" and ok.content == b""
    unauthorized = httpx.get(sim.url + "/v1/models")
    assert unauthorized.status_code == 401 and "vary" not in unauthorized.headers
    missing = httpx.get(sim.url + "/nope")
    assert (missing.status_code, missing.json()) == (404, {"detail": "Not Found"})
    wrong = httpx.get(sim.url + "/v1/completions", headers={"Authorization": "Bearer k"})
    assert (wrong.status_code, wrong.json()) == (405, {"detail": "Method Not Allowed"})
    assert wrong.headers["allow"] == "POST"
    models = httpx.get(sim.url + "/v1/models", headers={"Authorization": "Bearer k"}).json()
    assert models["data"][0]["id"] == "tiny" and models["data"][0]["root"] == MODEL
    full = httpx.post(sim.url + "/v1/completions", headers={"Authorization": "Bearer k"},
                      json={"model": "tiny", "prompt": "x", "max_tokens": 2}).json()  # fmt: skip
    assert full["model"] == "tiny"
    assert list(full) == ["id", "object", "created", "model", "choices", "service_tier",
                          "system_fingerprint", "usage", "kv_transfer_params",
                          "ec_transfer_params", "metrics"]  # fmt: skip
    assert list(full["usage"]) == ["prompt_tokens", "total_tokens", "completion_tokens",
                                   "prompt_tokens_details", "completion_tokens_details"]  # fmt: skip
