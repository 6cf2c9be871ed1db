"""The incident's workload (P1.1): the request shape every round of the walk is measured with.

``run --model --endpoint --input-tokens --output-tokens --concurrency`` give the shape, or
``--request-body FILE`` a JSON body the service really receives, replayed as is. Without them the
playbook's own shape stands (64 words in, 64 tokens out, 4 streams) and the API is the one the
server answers (asked when it answers both).

Which rounds take what:
- the incident's rounds (``shape: incident`` in the playbook: the baselines, their A/A repeat and
  every repeat after a change) take the whole shape: its lengths (or body) and its concurrency;
- the load round (``shape: incident_load``) takes the incident's lengths (or body) at twice its
  concurrency: the load the incident's traffic meets when it doubles;
- LoadGen (``shape: incident_single``) takes the incident's lengths (or body), one query at a
  time (SingleStream);
- the rounds that test one dimension on purpose (long prompts, a shared prefix) keep their own
  prompt and output lengths and concurrency;
and every round uses the incident's model and API, and with a body its other fields (sampling,
``max_tokens``). A body is sent as given except that streaming and usage are always asked for
(the wizard times the stream and counts its tokens) and each request's prompt begins with a word
of its own (no request is served from the prefix cache another one filled, as for every round).
``--rounds brief`` halves every load round's requests (ROUND_DEPTHS, below).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from wizard.errors import UsageError

ENDPOINTS = ("completions", "chat")
# The playbook's numbers a shape replaces.
LENGTH_KEYS = ("input_tokens", "max_tokens")
SHAPES = {"incident": 1, "incident_load": 2, "incident_single": None}
# A body larger than this is not a request anyone pastes into an incident.
MAX_BODY_BYTES = 4 * 1024 * 1024
# The fields that constrain the output to a grammar: vLLM's structured_outputs (0.11 on) and
# OpenAI's response_format, and the guided_* of older releases (0.32 no longer reads them).
CONSTRAINT_FIELDS = (
    "structured_outputs", "response_format", "guided_json", "guided_regex", "guided_choice",
    "guided_grammar",
)  # fmt: skip


# `--rounds`: how much each round measures. "full" is the playbook's rounds as written; "brief"
# halves each load round's steady requests, never below one look of the sequential engine (at
# least measure.MIN_SAMPLES and one request per stream), and leaves every request's shape, the
# concurrency and the warm-ups alone. Percentiles then rest on half the samples: the noise bands
# are wider and more verdicts "inconclusive" (sequential.py stops a compared round once it has
# answered, whatever its budget); the rules' thresholds do not move. LoadGen keeps its queries:
# SingleStream's early stopping needs at least 64 ("Only processed 32 queries. Need to process at
# least 64 queries for early stopping": INVALID), the playbook's count. The depths: ROUND_DEPTHS.
BRIEF_SHARE = 0.5


@dataclass(frozen=True)
class Workload:
    """The incident's request shape; None everywhere: the playbook's own shape. ``rounds`` is how
    much each round measures (ROUND_DEPTHS; None: full), recorded apart from the shape."""

    model: str | None = None
    endpoint: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    concurrency: int | None = None
    body: dict[str, Any] | None = None
    body_file: str | None = None
    rounds: str | None = None

    @property
    def given(self) -> bool:
        """True when anything of the shape was given (it is then recorded and shown)."""
        return any(v is not None for k, v in asdict(self).items() if k != "rounds")

    @property
    def body_sha256(self) -> str | None:
        """The body's fingerprint (canonical JSON): rounds of two different bodies never compare."""
        return None if self.body is None else body_sha256(self.body)

    @property
    def constraint_fields(self) -> list[str]:
        """The body's fields that constrain its output (a ``response_format`` of text does not)."""
        if self.body is None:
            return []
        return [
            name for name in CONSTRAINT_FIELDS
            if self.body.get(name) not in (None, False, {})
            and not (name == "response_format" and _is_text_format(self.body[name]))
        ]  # fmt: skip

    @property
    def constraint_chars(self) -> int:
        """The constraint's size: the characters of its fields' compact JSON (0 without one)."""
        if self.body is None:
            return 0
        body = self.body
        return sum(len(json.dumps(body[name], separators=(",", ":"), sort_keys=True))
                   for name in self.constraint_fields)  # fmt: skip

    def unconstrained_body(self) -> dict[str, Any] | None:
        """The same body without its output constraint: the contrast that prices the constraint."""
        if self.body is None:
            return None
        return {k: v for k, v in self.body.items() if k not in self.constraint_fields}

    def to_header(self) -> dict[str, Any] | None:
        """The transcript header's ``workload`` (the body itself, so resume replays the same)."""
        if not self.given:
            return None
        shape = {k: v for k, v in asdict(self).items() if k != "rounds"}
        return {**shape, "body_sha256": self.body_sha256}

    @classmethod
    def from_header(cls, data: dict[str, Any] | None, rounds: str | None = None) -> Workload:
        """The workload a transcript header recorded (none: the playbook's own shape), and its
        ``rounds`` (the header's own key)."""
        shape = {k: (data or {}).get(k) for k in cls.__dataclass_fields__ if k != "rounds"}
        return cls(**shape, rounds=rounds)

    def round_params(self, name: str, params: dict[str, Any], api: str | None) -> dict[str, Any]:
        """A round's parameters under this workload (see the module's docstring)."""
        if name not in ("measure", "validate"):
            return params
        shape = params.get("shape")
        out = {k: v for k, v in params.items() if k != "shape"}
        out["endpoint"] = self.endpoint or api or out.get("endpoint") or "completions"
        if shape in SHAPES:
            if self.input_tokens is not None:
                out["input_tokens"] = self.input_tokens
            if self.output_tokens is not None:
                out["max_tokens"] = self.output_tokens
            if self.body is not None:
                out["replay_body"] = True
            factor = SHAPES[shape]
            if factor is not None and self.concurrency is not None:
                out["concurrency"] = self.concurrency * factor
        return brief_round(name, out) if self.rounds == "brief" else out


def brief_round(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """A round's parameters under ``--rounds brief`` (ROUND_DEPTHS)."""
    from wizard.measure.sequential import first_look

    out = dict(params)
    if name != "measure" or "requests" not in out:
        return out
    wanted = math.ceil(int(out["requests"]) * BRIEF_SHARE)
    one_look = first_look(int(out.get("concurrency", 1)))
    out["requests"] = min(int(out["requests"]), max(one_look, wanted))
    return out


def _is_text_format(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "text"


def body_sha256(body: dict[str, Any]) -> str:
    """A body's fingerprint (canonical JSON): rounds of two different bodies never compare."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def from_arguments(
    model: str | None,
    endpoint: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
    concurrency: int | None,
    body_file: str | None,
    rounds: str | None = None,
) -> Workload:
    """The workload ``run``'s flags give; a bad value or body is one line (UsageError)."""
    for flag, value in (("--input-tokens", input_tokens), ("--output-tokens", output_tokens),
                        ("--concurrency", concurrency)):  # fmt: skip
        if value is not None and value < 1:
            raise UsageError.said("error.at_least_1", flag=flag)
    if body_file is None:
        return Workload(model, endpoint, input_tokens, output_tokens, concurrency, rounds=rounds)
    if input_tokens is not None:
        raise UsageError.said("error.body_and_input_tokens")
    body = read_body(Path(body_file))
    body_endpoint = "chat" if "messages" in body else "completions"
    if endpoint is not None and endpoint != body_endpoint:
        raise UsageError.said("error.body_endpoint", endpoint=endpoint, path=body_file,
                              kind=body_endpoint, field="messages" if body_endpoint == "chat" else "prompt")  # fmt: skip
    body_model = body.get("model")
    if model is not None and isinstance(body_model, str) and body_model != model:
        raise UsageError.said(
            "error.body_model", model=model, path=body_file, body_model=body_model
        )
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if output_tokens is not None:  # the body's own limit field (chat also takes the newer name)
        body["max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"] = (
            output_tokens
        )
    elif isinstance(limit, int) and not isinstance(limit, bool):
        output_tokens = limit
    return Workload(
        model=model or (body_model if isinstance(body_model, str) else None),
        endpoint=body_endpoint, input_tokens=None, output_tokens=output_tokens,
        concurrency=concurrency, body=body, body_file=str(Path(body_file).resolve()), rounds=rounds,
    )  # fmt: skip


def read_body(path: Path) -> dict[str, Any]:
    """A request body file: one JSON object with a ``prompt`` (completions) or ``messages`` (chat)."""
    if path.is_dir():
        raise UsageError.said("error.body_folder", path=path)
    try:
        with path.open("rb") as handle:  # at most one byte past the bound (a FIFO may not end)
            raw = handle.read(MAX_BODY_BYTES + 1)
    except FileNotFoundError:
        raise UsageError.said("error.body_missing", path=path) from None
    except OSError as exc:
        raise UsageError.os_said("error.body_unreadable", exc, path=path) from None
    if len(raw) > MAX_BODY_BYTES:
        raise UsageError.said("error.body_large", path=path, mib=MAX_BODY_BYTES // 2**20)
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError.said(
            "error.not_utf8", path=f"--request-body {path}", byte=exc.start
        ) from None
    except json.JSONDecodeError as exc:
        # The parser's reason is English only: other languages give the place instead.
        raise UsageError.said("error.body_json", path=path, line=exc.lineno, column=exc.colno,
                              why=exc.msg) from None  # fmt: skip
    if not isinstance(body, dict):
        raise UsageError.said("error.body_not_object", path=path)
    prompt_ok = isinstance(body.get("prompt"), str)
    messages_ok = isinstance(body.get("messages"), list) and bool(body["messages"])
    if prompt_ok == messages_ok:
        raise UsageError.said("error.body_prompt_or_messages", path=path)
    return body


def prompt_words(body: dict[str, Any]) -> int:
    """The body's prompt in words (the spec's input length; the server counts its tokens)."""
    from wizard.prompt_shape import texts

    return sum(len(text.split()) for text in texts(body))
