"""The one client of an OpenAI-compatible chat-completions endpoint: a request for text (an agent's
reply) or for an answer in a JSON schema (structured output), the tokens each used, and every way
the endpoint can fail turned into one exception.

The endpoint, key, model and timeout come from the caller (the settings stay above the domain).
The ``openai`` library speaks the dialect every compatible server (OpenAI, vLLM, llama.cpp,
Ollama, LiteLLM) answers; its own retries are off, because the caller's work is leased and retried
as a whole (models.kernel.leases), which outlives a process. A failure's sentence names the
endpoint (its address without any user or password in it) and what went wrong, never the key.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import contextmanager
from typing import NamedTuple
from urllib.parse import urlsplit, urlunsplit

import openai

from models.kernel.errors import Unavailable


class Endpoint(NamedTuple):
    """Where to ask: the settings' LLM_BASE_URL, LLM_API_KEY, LLM_MODEL and LLM_TIMEOUT_S, or a
    workspace's own endpoint, whose URL is a stranger's: ``http_client`` then makes the HTTP client
    of one request (given its timeout), which connects only where the outbound address rules allow."""
    base_url: str
    api_key: str | None
    model: str
    timeout_s: float
    http_client: Callable[[float], object] | None = None


# The endpoint of the settings, for the domain's services (core.boot configures it); None when
# LLM_BASE_URL is not set, so that what needs it fails with a clear sentence, never with invented output.
_configured: Endpoint | None = None
NOT_CONFIGURED = ("No language model endpoint is configured: set LLM_BASE_URL (and LLM_API_KEY, LLM_MODEL) "
                  "to an OpenAI-compatible chat-completions endpoint.")


def configure(endpoint: Endpoint | None) -> None:
    global _configured
    _configured = endpoint


def configured() -> Endpoint | None:
    """The settings' endpoint, or None when LLM_BASE_URL is not set (see NOT_CONFIGURED)."""
    return _configured


def required() -> Endpoint:
    """The settings' endpoint; Unavailable (503) saying which setting to set when there is none.
    Retry-After is a minute: setting it means a restart, which is about that long."""
    if _configured is None:
        raise Unavailable(NOT_CONFIGURED, retry_after_s=60)
    return _configured


class Usage(NamedTuple):
    """Tokens an answer cost, as the endpoint counted them (0 when it did not say)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other):  # type: ignore[override]  # a sum of usages, not a longer tuple
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)


class Completion(NamedTuple):
    text: str
    usage: Usage


class ChatCompletionError(Exception):
    """The endpoint gave no usable answer; ``message`` says why in a sentence fit for a run's
    ``error``, and ``retryable`` whether asking again may help (unreachable, timeout, 429, 5xx,
    a malformed answer) or not (a refused key, a bad request)."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


def shown(base_url: str) -> str:
    """The endpoint's address as a message shows it: without user, password, query or fragment."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def complete_json(*, base_url: str, api_key: str | None, model: str, timeout_s: float, messages: list[dict],
                  schema_name: str, schema: dict, strict: bool = True) -> dict:
    """The endpoint's answer to ``messages`` as the JSON object ``schema`` describes (structured
    output; ``strict`` where every value of the schema is typed, as strict mode requires);
    ChatCompletionError otherwise. The caller still checks the object: a server may not enforce
    the schema."""
    endpoint = Endpoint(base_url, api_key, model, timeout_s)
    return ask_json(endpoint, messages, schema_name=schema_name, schema=schema, strict=strict)[0]


def ask_json(endpoint: Endpoint, messages: list[dict], *, schema_name: str, schema: dict, strict: bool = True,
             temperature: float = 0) -> tuple[dict, Usage]:
    """``complete_json`` with the tokens the answer cost."""
    with _asking(endpoint) as client:
        response = client.chat.completions.create(
            model=endpoint.model, messages=messages, temperature=temperature,
            response_format={"type": "json_schema",
                             "json_schema": {"name": schema_name, "schema": schema, "strict": strict}})
    where = shown(endpoint.base_url)
    return _json_object(_content(response, where), where), _usage(response)


def complete_text(endpoint: Endpoint, messages: list[dict], *, temperature: float = 0.7,
                  max_tokens: int | None = None) -> Completion:
    """The endpoint's reply to ``messages`` as text, with the tokens it cost; ChatCompletionError
    when it gives none."""
    with _asking(endpoint) as client:
        response = client.chat.completions.create(model=endpoint.model, messages=messages, temperature=temperature,
                                                  **({"max_tokens": max_tokens} if max_tokens else {}))
    return Completion(_content(response, shown(endpoint.base_url)), _usage(response))


@contextmanager
def _asking(endpoint: Endpoint):
    """A client of ``endpoint`` for one request, every failure of the request turned into a
    ChatCompletionError."""
    where, timeout_s, model = shown(endpoint.base_url), endpoint.timeout_s, endpoint.model
    try:
        # Closed after the answer: its connections are not kept between runs minutes apart.
        guarded = endpoint.http_client(timeout_s) if endpoint.http_client is not None else None
        with openai.OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key or "none", timeout=timeout_s,
                           max_retries=0, http_client=guarded) as client:
            yield client
    except openai.APITimeoutError:
        raise ChatCompletionError(f"The language model endpoint {where} did not answer within {timeout_s:g} s.",
                                  retryable=True) from None
    except openai.APIConnectionError:
        raise ChatCompletionError(f"The language model endpoint {where} could not be reached.",
                                  retryable=True) from None
    except openai.AuthenticationError:
        raise ChatCompletionError(f"The language model endpoint {where} refused the API key (401): "
                                  "check LLM_API_KEY.", retryable=False) from None
    except openai.PermissionDeniedError:
        raise ChatCompletionError(f"The language model endpoint {where} refused access (403).",
                                  retryable=False) from None
    except openai.RateLimitError:
        raise ChatCompletionError(f"The language model endpoint {where} is rate limiting requests (429).",
                                  retryable=True) from None
    except openai.NotFoundError:
        raise ChatCompletionError(f"The language model endpoint {where} answered 404: check LLM_BASE_URL "
                                  f"(it should end where /chat/completions starts) and LLM_MODEL ({model}).",
                                  retryable=False) from None
    except openai.APIStatusError as exc:
        raise ChatCompletionError(f"The language model endpoint {where} answered HTTP {exc.status_code}.",
                                  retryable=exc.status_code >= 500 or exc.status_code == 408) from None
    except (openai.APIError, ValueError):  # a body that is not a chat completion (nor JSON) at all
        raise ChatCompletionError(f"The language model endpoint {where} answered something that is not a "
                                  "chat completion.", retryable=True) from None


def _usage(response) -> Usage:
    usage = getattr(response, "usage", None)
    counts = [getattr(usage, name, 0) for name in ("prompt_tokens", "completion_tokens")]
    return Usage(*(count if isinstance(count, int) and count >= 0 else 0 for count in counts))


def _content(response, where: str) -> str:
    choices = getattr(response, "choices", None) or []
    message = choices[0].message if choices else None
    content = getattr(message, "content", None)
    if not isinstance(content, str) or not content.strip():
        refusal = getattr(message, "refusal", None)
        reason = f" (it refused: {refusal[:200]})" if isinstance(refusal, str) and refusal else ""
        raise ChatCompletionError(f"The language model endpoint {where} answered no content{reason}.",
                                  retryable=True)
    return content


def _json_object(content: str, where: str) -> dict:
    try:
        value = json.loads(content)
    except ValueError:
        raise ChatCompletionError(f"The language model endpoint {where} answered content that is not valid JSON.",
                                  retryable=True) from None
    if not isinstance(value, dict):
        raise ChatCompletionError(f"The language model endpoint {where} answered JSON that is not an object.",
                                  retryable=True)
    return value
