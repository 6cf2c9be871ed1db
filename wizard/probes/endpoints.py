"""The server's entry points: which model it serves (more checks land with the evidence probes)."""

from __future__ import annotations

import httpx

from wizard.errors import WizardError


async def served_model(client: httpx.AsyncClient, base_url: str, headers: dict[str, str]) -> str:
    """The first model id from ``/v1/models``; a one-line error when it cannot be listed."""
    url = base_url.rstrip("/") + "/v1/models"
    try:
        response = await client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        raise WizardError(f"cannot list models at {url}: {type(exc).__name__}: {exc}") from None
    if response.status_code == 401:
        raise WizardError(
            f"{url} answered 401 Unauthorized: put the API key in $VLLM_API_KEY "
            "(or name another variable with --api-key-env)"
        )
    if response.status_code != 200:
        raise WizardError(
            f"{url} answered HTTP {response.status_code}; is --target the server's base URL?"
        )
    try:
        return str(response.json()["data"][0]["id"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise WizardError(f"{url} did not return an OpenAI model list") from None
