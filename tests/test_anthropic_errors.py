"""Vendor exceptions → dive's error tree, and the retry policy's decisions."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2 as httpx
import pytest

from dive.errors import (
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitedError,
)
from dive.providers import RetryPolicy
from dive.providers.anthropic._errors import translate

REQ = httpx.Request("POST", "http://127.0.0.1/v1/messages")


def status_error(status: int, error_type: str, message: str, **headers: str) -> Exception:
    body: dict[str, Any] = {"type": "error", "error": {"type": error_type, "message": message}}
    response = httpx.Response(
        status, json=body, request=REQ, headers={"request-id": "req_123", **headers}
    )
    client = anthropic.Anthropic(api_key="x", base_url="http://127.0.0.1")
    return client._make_status_error(message, body=body, response=response)  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize(
    ("status", "error_type", "cls", "retryable"),
    [
        (400, "invalid_request_error", InvalidRequestError, False),
        (401, "authentication_error", AuthenticationError, False),
        (429, "rate_limit_error", RateLimitedError, True),
        (500, "api_error", ProviderError, True),
        (502, "api_error", ProviderError, True),
        (408, "timeout_error", ProviderTimeoutError, True),
        (409, "conflict_error", ProviderError, True),
        (403, "permission_error", PermissionDeniedError, False),
        (404, "not_found_error", NotFoundError, False),
        (503, "overloaded_error", OverloadedError, True),
        (504, "timeout_error", ProviderTimeoutError, True),
        (529, "overloaded_error", OverloadedError, True),
    ],
)
def test_status_errors(
    status: int, error_type: str, cls: type[ProviderError], retryable: bool
) -> None:
    err = translate(status_error(status, error_type, "boom", **{"retry-after": "2"}))
    assert type(err) is cls
    assert err.status == status
    assert err.request_id == "req_123"
    assert err.retry_after == 2.0
    assert err.retryable is retryable
    assert "boom" in str(err)


def test_retry_after_ms_wins_and_should_retry_overrides() -> None:
    err = translate(status_error(429, "rate_limit_error", "slow down", **{"retry-after-ms": "250"}))
    assert err.retry_after == 0.25
    no = translate(status_error(529, "overloaded_error", "x", **{"x-should-retry": "false"}))
    assert no.retryable is False
    yes = translate(status_error(400, "invalid_request_error", "x", **{"x-should-retry": "true"}))
    assert yes.retryable is True


def test_terminal_429_is_never_retried() -> None:
    err = translate(
        status_error(
            429, "rate_limit_error", "Your credit balance is too low", **{"x-should-retry": "true"}
        )
    )
    assert isinstance(err, RateLimitedError)
    assert err.retryable is False


def test_connection_and_timeout_errors() -> None:
    conn = translate(anthropic.APIConnectionError(request=REQ))
    assert isinstance(conn, ProviderConnectionError)
    assert conn.retryable
    timeout = translate(anthropic.APITimeoutError(request=REQ))
    assert isinstance(timeout, ProviderTimeoutError)
    assert timeout.retryable


def test_retry_policy_delays() -> None:
    policy = RetryPolicy(max_retries=3, initial_backoff=1.0, max_backoff=5.0, jitter=0.0)
    plain = ProviderError("x")
    assert [policy.delay(k, plain) for k in range(4)] == [1.0, 2.0, 4.0, 5.0]
    told = ProviderError("x", retry_after=30.0)
    assert policy.delay(0, told) == 5.0  # capped at max_backoff
    retryable = RateLimitedError("x")
    assert policy.should_retry(2, retryable)
    assert not policy.should_retry(3, retryable)
    assert not policy.should_retry(0, InvalidRequestError("x"))
