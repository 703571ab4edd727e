"""``AnthropicBedrockModel``: Claude on Amazon Bedrock, through ``AsyncAnthropicBedrock``.

The SDK client is built at the first request from what was given and the environment: the
region (``aws_region=``, ``AWS_REGION`` or ``AWS_DEFAULT_REGION``, or the profile's), the
server (``base_url=`` or ``ANTHROPIC_BEDROCK_BASE_URL``) and the credentials — a Bedrock API
key (``api_key=`` or ``AWS_BEARER_TOKEN_BEDROCK``, sent as a bearer token), or AWS
credentials (``aws_access_key=`` / ``aws_secret_key=`` / ``aws_session_token=``,
``aws_profile=``, or boto3's chain: ``AWS_ACCESS_KEY_ID``, ``AWS_PROFILE``, …) with which each
request is signed (SigV4, boto3). The SDK sends each call to ``/model/{id}/invoke`` or
``/model/{id}/invoke-with-response-stream``, whose AWS event-stream framing botocore decodes.
Both come with ``pip install 'dive-agents[bedrock]'``.

What is missing is reported at that first request as a ``MissingCredentialsError`` (or
``MissingExtraError``) naming what to set; credentials boto3 cannot find are reported the
same way, not retried. Bedrock's stream exceptions (``throttlingException``,
``serviceUnavailableException``, …) are classified like the API's errors.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from anthropic.lib.bedrock import AsyncAnthropicBedrock

from dive.errors import MissingCredentialsError, MissingExtraError, ProviderError, UserError
from dive.llm import PricingInfo
from dive.providers._retry import RetryPolicy
from dive.providers.anthropic._model import AnthropicModel
from dive.redaction import register_secret

__all__ = ["AnthropicBedrockModel"]

LABEL = "aws.bedrock"
_CREDENTIALS = (
    "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK "
    "(a Bedrock API key), or pass aws_access_key= and aws_secret_key=, aws_profile= or api_key="
)


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _bedrock_client(options: dict[str, Any], *, streaming: bool) -> Any:
    """An ``AsyncAnthropicBedrock`` from ``options`` and the environment, read now."""
    region = (
        options.get("aws_region")
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
    )
    if not region and not options.get("aws_profile"):
        raise MissingCredentialsError(
            "Claude on Bedrock needs an AWS region: set AWS_REGION (or AWS_DEFAULT_REGION) or "
            "pass aws_region= (e.g. 'us-east-1')"
        )
    key = options.get("api_key") or os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
    if key is None and not _installed("boto3"):
        raise MissingExtraError(
            "Claude on Bedrock signs requests with AWS credentials through boto3: "
            "pip install 'dive-agents[bedrock]' (or use a Bedrock API key: api_key=)"
        )
    if streaming and not _installed("botocore"):
        raise MissingExtraError(
            "streaming from Bedrock needs botocore to decode its event stream: "
            "pip install 'dive-agents[bedrock]' (or streaming=False)"
        )
    timeout = options.get("timeout")
    extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    try:
        return AsyncAnthropicBedrock(
            aws_secret_key=options.get("aws_secret_key"),
            aws_access_key=options.get("aws_access_key"),
            aws_region=region or None,
            aws_profile=options.get("aws_profile"),
            aws_session_token=options.get("aws_session_token"),
            api_key=key,
            base_url=options.get("base_url")
            or os.environ.get("ANTHROPIC_BEDROCK_BASE_URL")
            or None,
            max_retries=0,
            **extra,
        )
    except ValueError as exc:  # a region the profile lacks, a key together with AWS keys
        raise MissingCredentialsError(f"Claude on Bedrock: {exc}") from None


def bedrock_error(exc: BaseException) -> UserError | None:
    """A credentials problem the Bedrock client raised, as what to do; None for others."""
    module = type(exc).__module__
    if module.startswith("botocore") and type(exc).__name__ in (
        "NoCredentialsError",
        "PartialCredentialsError",
        "ProfileNotFound",
        "NoRegionError",
    ):
        return MissingCredentialsError(
            f"Claude on Bedrock found no AWS credentials ({exc}): {_CREDENTIALS}"
        )
    if isinstance(exc, RuntimeError) and "AWS credentials" in str(exc):
        return MissingCredentialsError(
            f"Claude on Bedrock found no AWS credentials: {_CREDENTIALS}"
        )
    return None


class AnthropicBedrockModel(AnthropicModel):
    """Claude on Amazon Bedrock: ``dive.model("anthropic-bedrock:anthropic.claude-…")``.

    Nothing is read or checked when the model is built; see the module docstring for what
    the first request reads. Bedrock has no token counting (``count_tokens`` refuses).

    Args:
        model: the Bedrock model id or inference profile
            (``anthropic.claude-sonnet-4-5-20250929-v1:0``, ``us.anthropic.claude-…``).
        aws_region: the AWS region (default: ``AWS_REGION``, ``AWS_DEFAULT_REGION``, or the
            profile's).
        aws_access_key: an AWS access key id (with ``aws_secret_key``).
        aws_secret_key: its secret.
        aws_session_token: a session token for temporary credentials.
        aws_profile: a named profile of the AWS config files.
        api_key: a Bedrock API key (default: ``AWS_BEARER_TOKEN_BEDROCK``); not with AWS keys.
        base_url: another server (default: ``ANTHROPIC_BEDROCK_BASE_URL``, then the region's
            ``bedrock-runtime`` endpoint).
        client: a ready ``anthropic.AsyncAnthropicBedrock`` (the options above are then not
            used); its own retries are turned off.
        retry: the retry policy (default ``RetryPolicy()``).
        streaming: stream responses (``invoke-with-response-stream``), or not (``invoke``).
        pricing: prices that replace the ``genai-prices`` ones.
        timeout: the SDK's request timeout in seconds.

    Raises:
        MissingCredentialsError: at the first request, without a region or credentials.
        MissingExtraError: at the first request, when boto3 (signing) or botocore
            (streaming) is needed and not installed.
    """

    def __init__(
        self,
        model: str,
        *,
        aws_region: str | None = None,
        aws_access_key: str | None = None,
        aws_secret_key: str | None = None,
        aws_session_token: str | None = None,
        aws_profile: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        retry: RetryPolicy | None = None,
        streaming: bool = True,
        pricing: PricingInfo | None = None,
        timeout: float | None = None,
    ) -> None:
        for secret in (aws_secret_key, aws_session_token, api_key):
            register_secret(secret)
        options: dict[str, Any] = {
            "aws_region": aws_region,
            "aws_access_key": aws_access_key,
            "aws_secret_key": aws_secret_key,
            "aws_session_token": aws_session_token,
            "aws_profile": aws_profile,
            "api_key": api_key,
            "base_url": base_url,
            "timeout": timeout,
        }

        def build() -> Any:
            return _bedrock_client(options, streaming=streaming)

        self._setup(model, build, client, LABEL, retry, streaming, pricing)

    def _translate(self, exc: BaseException) -> ProviderError | UserError:
        return bedrock_error(exc) or super()._translate(exc)
