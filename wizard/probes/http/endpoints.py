"""The server's entry points: which model it serves (more checks land with the evidence probes)."""

from __future__ import annotations

from typing import Any

import httpx

from wizard.errors import WizardError
from wizard.numbers import parse_int
from wizard.probes.http.bounded import BoundedRequestError, fetch
from wizard.probes.http.lean_http import tls_context
from wizard.probes.http.reach import explain_texts
from wizard.record import safejson


async def served_model(client: httpx.AsyncClient, base_url: str, headers: dict[str, str]) -> str:
    """The first model id from ``/v1/models``; a one-line error when it cannot be listed."""
    return (await served_models(client, base_url, headers))[0]


async def served_models(
    client: httpx.AsyncClient, base_url: str, headers: dict[str, str]
) -> list[str]:
    """Every model id ``/v1/models`` lists (at least one); a one-line error when it cannot."""
    url = base_url.rstrip("/") + "/v1/models"
    try:
        status, body = await fetch(client, "GET", url, headers=headers)
    except httpx.HTTPError as exc:
        raise WizardError.said(
            "error.cannot_list_models", url=url, why=explain_texts(exc, base_url)
        ) from None
    except BoundedRequestError as exc:
        raise WizardError(f"cannot list models: {exc}") from None
    if status == 401:
        raise WizardError(
            f"{url} answered 401 Unauthorized: put the API key in $VLLM_API_KEY "
            "(or name another variable with --api-key-env)"
        )
    if status != 200:
        raise WizardError(f"{url} answered HTTP {status}; is --target the server's base URL?")
    try:
        models = [entry["id"] for entry in safejson.loads(body)["data"]]
        if not models or not all(isinstance(model, str) for model in models):
            raise TypeError(models)
        return models
    except (ValueError, KeyError, IndexError, TypeError):
        raise WizardError(f"{url} did not return an OpenAI model list") from None


async def _status(
    client: httpx.AsyncClient, method: str, url: str, **kwargs: Any
) -> tuple[int | None, str, dict[str, str] | None]:
    """The status and body, or no status and why in every language the reason has."""
    try:
        status, body = await fetch(client, method, url, **kwargs)
    except httpx.HTTPError as exc:
        why = {lang: f"{url}: {text}" for lang, text in explain_texts(exc, url).items()}
        return None, why["en"], why
    except BoundedRequestError as exc:
        return None, str(exc), None
    return status, body[:2000], None


def _message(body: str) -> str:
    try:
        payload = safejson.loads(body)
    except ValueError:
        return body.strip()[:200]
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        return str(error.get("message", ""))
    return str(error or body)[:200]


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Walk probe: health, version, models, auth, and whether completions and chat answer."""
    base = ctx.target.rstrip("/")
    async with httpx.AsyncClient(
        verify=tls_context(), timeout=httpx.Timeout(ctx.timeout_s, connect=10.0)
    ) as client:
        health, health_body, health_why = await _status(client, "GET", base + "/health")
        version_status: int | None = None
        models_status: int | None = None
        version_body = models_body = ""
        version_why = models_why = None
        # A server that gave /health no HTTP answer (refused, reset, past its deadline) is asked
        # nothing more: each question would wait out the same deadline.
        if health is not None:
            version_status, version_body, version_why = await _status(
                client, "GET", base + "/version"
            )
            models_status, models_body, models_why = await _status(
                client, "GET", base + "/v1/models", headers=ctx.headers
            )
        unanswered = [(body, why) for status, body, why in (
            (health, health_body, health_why), (version_status, version_body, version_why),
            (models_status, models_body, models_why)) if status is None and body]  # fmt: skip
        facts: dict[str, Any] = {
            "reachable": health is not None,
            # Why a request got no HTTP answer (refused, reset, a deadline), the first of them.
            "error": unanswered[0][0] if unanswered else None,
            "error_texts": unanswered[0][1] if unanswered else None,
            "health_status": health,
            "version": json_field(version_body, "version") if version_status == 200 else None,
            "models_status": models_status,
            "wrong_base_path": models_status == 404,
            "auth": _auth(models_status, bool(ctx.headers)),
            "model": None,
            "max_model_len": None,
        }
        if models_status == 200:
            try:
                first = safejson.loads(models_body)["data"][0]
                model, max_model_len = first.get("id"), first.get("max_model_len")
                # Another tool's (or a hostile) server may put anything there.
                facts["model"] = model if isinstance(model, str) else None
                facts["max_model_len"] = parse_int(str(max_model_len))
            except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                facts["models_status"] = "not an OpenAI model list"
        # An HTTP server that lists no models (a static file server, nginx's status page) is no
        # OpenAI API: nothing can be measured there, and the walk stops (LAT021). A key the
        # server wants (401) is another finding (LAT022); no HTTP answer, the server's log.
        facts["openai_api"] = (
            None if not facts["reachable"] or models_status == 401 else bool(facts["model"])
        )
        if facts["model"]:
            ctx.model = ctx.model or facts["model"]
            ctx.max_model_len = ctx.max_model_len or facts["max_model_len"]
            for api, path, body in (
                ("completions", "/v1/completions", {"prompt": "ping", "max_tokens": 1}),
                ("chat", "/v1/chat/completions", {"messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}),
            ):  # fmt: skip
                status, text, _ = await _status(
                    client,
                    "POST",
                    base + path,
                    json={"model": facts["model"], **body},
                    headers=ctx.headers,
                )
                facts[f"{api}_status"] = status
                facts[f"{api}_ok"] = status == 200
                facts[f"{api}_error"] = None if status == 200 else _message(text)
            facts["chat_template_missing"] = "chat template" in (facts.get("chat_error") or "")
            # P2.1: the API the service uses, when only one answers (both or neither: ask).
            answering = [api for api in ("completions", "chat") if facts[f"{api}_ok"]]
            facts["api"] = answering[0] if len(answering) == 1 else None
            facts["suffix"] = await _suffix(client, base, facts["model"], ctx.headers)
            # Each of these pings is a request the server answers: they, not the first round's
            # warm-up, are a fresh server's first requests (LAT042 counts them out).
            facts["generation_requests_sent"] = 3
    return facts


async def _suffix(client: httpx.AsyncClient, base: str, model: str, headers: dict[str, str]) -> str:
    """P2.2: the procedure's vLLM rejected ``suffix``; vLLM 0.34 accepts it for FIM models only."""
    status, text, _ = await _status(
        client, "POST", base + "/v1/completions", headers=headers,
        json={"model": model, "prompt": "def f(", "suffix": "\n", "max_tokens": 1},
    )  # fmt: skip
    if status == 200:
        return "accepted (a fill-in-the-middle model)"
    return f"rejected ({_message(text) or status})"


def json_field(body: str, key: str) -> str | None:
    """The string at ``key`` of a JSON object body, else None."""
    try:
        payload = safejson.loads(body)
    except ValueError:
        return None
    value = payload.get(key) if isinstance(payload, dict) else None
    return value if isinstance(value, str) else None


def _auth(models_status: int | None, key_sent: bool) -> str:
    if models_status == 401:
        return "rejected" if key_sent else "required"
    if models_status == 200:
        return "ok" if key_sent else "none"
    return "unknown"
