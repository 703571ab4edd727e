"""``AnthropicVertexModel``: Claude on Google Cloud Vertex AI, through ``AsyncAnthropicVertex``.

The SDK client is built at the first request from what was given and the environment: the
region (``region=`` or ``CLOUD_ML_REGION``), the project (``project_id=`` or
``ANTHROPIC_VERTEX_PROJECT_ID``), the server (``base_url=`` or ``ANTHROPIC_VERTEX_BASE_URL``)
and the credentials — an ``access_token=``, a ``google.auth`` ``credentials=`` object, or
Application Default Credentials found by google-auth (``pip install 'dive-agents[vertex]'``).
The SDK sends each call to ``…/projects/{p}/locations/{r}/publishers/anthropic/models/{m}:
streamRawPredict`` (``:rawPredict`` without streaming). What is missing is reported at that
first request as a ``MissingCredentialsError`` (or ``MissingExtraError``) naming what to set;
credentials that cannot be found or refreshed are reported the same way, not retried.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from anthropic.lib.vertex import AsyncAnthropicVertex

from dive.errors import MissingCredentialsError, MissingExtraError, ProviderError, UserError
from dive.llm import PricingInfo
from dive.providers._retry import RetryPolicy
from dive.providers.anthropic._model import AnthropicModel
from dive.redaction import register_secret

__all__ = ["AnthropicVertexModel"]

LABEL = "gcp.vertex_ai"
_LOGIN = (
    "run `gcloud auth application-default login`, set GOOGLE_APPLICATION_CREDENTIALS to a "
    "service-account key file, or pass access_token= (or credentials=)"
)


def _vertex_client(
    region: str | None,
    project_id: str | None,
    access_token: str | None,
    credentials: Any,
    base_url: str | None,
    timeout: float | None,
) -> Any:
    """An ``AsyncAnthropicVertex`` from what was given and the environment, read now."""
    region = region or os.environ.get("CLOUD_ML_REGION")
    if not region:
        raise MissingCredentialsError(
            "Claude on Vertex AI needs a Google Cloud region: set CLOUD_ML_REGION or pass "
            "region= (e.g. 'us-east5', 'europe-west1' or 'global')"
        )
    project = project_id or os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID")
    if not project:
        raise MissingCredentialsError(
            "Claude on Vertex AI needs a Google Cloud project: set ANTHROPIC_VERTEX_PROJECT_ID "
            "or pass project_id="
        )
    if access_token is None and credentials is None and not _has_google_auth():
        raise MissingExtraError(
            "Claude on Vertex AI finds Google credentials with google-auth: "
            "pip install 'dive-agents[vertex]' (or pass access_token=)"
        )
    options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    return AsyncAnthropicVertex(
        region=region,
        project_id=project,
        access_token=access_token,
        credentials=credentials,
        base_url=base_url or os.environ.get("ANTHROPIC_VERTEX_BASE_URL") or None,
        max_retries=0,
        **options,
    )


def _has_google_auth() -> bool:
    try:
        return importlib.util.find_spec("google.auth") is not None
    except ModuleNotFoundError:  # no ``google`` namespace at all
        return False


def vertex_error(exc: BaseException) -> UserError | None:
    """A credentials problem the Vertex client raised, as what to do; None for others."""
    module = type(exc).__module__
    name = type(exc).__name__
    if module.startswith("google.auth") and name == "DefaultCredentialsError":
        return MissingCredentialsError(
            f"Claude on Vertex AI found no Google credentials ({exc}): {_LOGIN}"
        )
    if module.startswith("google.auth") and name == "RefreshError":
        return MissingCredentialsError(
            f"Claude on Vertex AI could not refresh its Google credentials ({exc}): {_LOGIN}"
        )
    if isinstance(exc, RuntimeError) and "API token" in str(exc):
        return MissingCredentialsError(f"Claude on Vertex AI got no access token: {_LOGIN}")
    return None


class AnthropicVertexModel(AnthropicModel):
    """Claude on Vertex AI: ``dive.model("anthropic-vertex:claude-sonnet-4-6")``.

    Nothing is read or checked when the model is built; see the module docstring for what
    the first request reads.

    Args:
        model: the Claude model id on Vertex (``claude-sonnet-4-6``, ``claude-opus-4-1@…``).
        region: the Google Cloud region (default: ``CLOUD_ML_REGION``).
        project_id: the Google Cloud project (default: ``ANTHROPIC_VERTEX_PROJECT_ID``).
        access_token: an OAuth access token to send as is (no google-auth needed).
        credentials: a ``google.auth.credentials.Credentials`` to take tokens from.
        base_url: another server (default: ``ANTHROPIC_VERTEX_BASE_URL``, then the
            region's Vertex AI endpoint).
        client: a ready ``anthropic.AsyncAnthropicVertex`` (the options above are then not
            used); its own retries are turned off.
        retry: the retry policy (default ``RetryPolicy()``).
        streaming: stream responses (``:streamRawPredict``), or not (``:rawPredict``).
        pricing: prices that replace the ``genai-prices`` ones.
        timeout: the SDK's request timeout in seconds.

    Raises:
        MissingCredentialsError: at the first request, without a region, a project or
            credentials.
        MissingExtraError: at the first request, when credentials must be found and
            google-auth is not installed.
    """

    def __init__(
        self,
        model: str,
        *,
        region: str | None = None,
        project_id: str | None = None,
        access_token: str | None = None,
        credentials: Any = None,
        base_url: str | None = None,
        client: Any = None,
        retry: RetryPolicy | None = None,
        streaming: bool = True,
        pricing: PricingInfo | None = None,
        timeout: float | None = None,
    ) -> None:
        register_secret(access_token)

        def build() -> Any:
            return _vertex_client(region, project_id, access_token, credentials, base_url, timeout)

        self._setup(model, build, client, LABEL, retry, streaming, pricing)

    def _translate(self, exc: BaseException) -> ProviderError | UserError:
        return vertex_error(exc) or super()._translate(exc)
