"""Claude on Vertex AI and Bedrock: ``anthropic-vertex:…`` and ``anthropic-bedrock:…`` models.

Both go through the SDK's platform clients (``AsyncAnthropicVertex``, ``AsyncAnthropicBedrock``)
against the Anthropic simulator serving those URL shapes:

- Vertex: ``POST /projects/{p}/locations/{r}/publishers/anthropic/models/{m}:streamRawPredict``
  (``:rawPredict`` without streaming), the model in the path, ``anthropic_version:
  vertex-2023-10-16`` in the body, a Google bearer token;
- Bedrock: ``POST /model/{id}/invoke-with-response-stream`` (``/invoke``), ``anthropic_version:
  bedrock-2023-05-31``, the stream in AWS event-stream framing (each event a ``chunk`` frame,
  errors ``exception`` frames), a bearer API key or a SigV4 signature.

Credentials are read at the first request; what is missing (region, project, credentials,
an extra) is a ``MissingCredentialsError`` or ``MissingExtraError`` saying what to set, and no
request is sent.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

import dive
import dive.testing.anthropic as anth
from dive import Agent
from dive.errors import (
    MissingCredentialsError,
    MissingExtraError,
    RateLimitedError,
    UnsupportedSettingError,
)
from dive.llm import ModelRequest, collect
from dive.messages import Message
from dive.providers import PROVIDERS, RetryPolicy
from dive.providers.anthropic import AnthropicBedrockModel, AnthropicVertexModel
from dive.tools import tool

FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
STREAMING = pytest.mark.parametrize("streaming", [True, False], ids=["stream", "json"])
BEDROCK_ID = "anthropic.claude-sonnet-4-5-20250929-v1:0"
API_VERSION = re.compile(r"^(vertex-2023-10-16|bedrock-2023-05-31|\d{4}-\d{2}-\d{2})$")
VERTEX_PATH = "/projects/my-proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-6"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in list(os.environ):
        if name.startswith(("AWS_", "ANTHROPIC_", "CLOUD_ML_", "GOOGLE_", "GCLOUD")):
            monkeypatch.delenv(name)
    # no network probe for credentials: no metadata servers, no config files
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-such-key.json"))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))


def _hide(monkeypatch: pytest.MonkeyPatch, prefix: str) -> None:
    """Make modules named ``prefix…`` look uninstalled to ``importlib.util.find_spec``."""
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name.startswith(prefix) else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.fixture
def sim() -> Iterator[anth.AnthropicSimulator]:
    with anth.simulator(assert_consumed=True) as s:
        yield s


@tool(effect_type="read_only")
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _vertex(sim: anth.AnthropicSimulator, *, streaming: bool, **options: Any) -> Any:
    options.setdefault("access_token", "ya29.test-token")
    options.setdefault("retry", FAST)
    return dive.model(
        "anthropic-vertex:claude-sonnet-4-6",
        region="us-east5",
        project_id="my-proj",
        base_url=sim.url,
        streaming=streaming,
        **options,
    )


def _bedrock(sim: anth.AnthropicSimulator, *, streaming: bool, **options: Any) -> Any:
    if "aws_access_key" not in options:
        options.setdefault("api_key", "bedrock-api-key")
    options.setdefault("retry", FAST)
    return dive.model(
        f"anthropic-bedrock:{BEDROCK_ID}",
        aws_region="us-east-1",
        base_url=sim.url,
        streaming=streaming,
        **options,
    )


# --- Vertex AI -------------------------------------------------------------------------------


@STREAMING
async def test_vertex_runs_a_tool_turn_on_the_vertex_url_shape(
    sim: anth.AnthropicSimulator, streaming: bool
) -> None:
    sim.add(sim.tool_use("weather", {"city": "Paris"}), "Sunny in Paris.")
    model = _vertex(sim, streaming=streaming)
    assert isinstance(model, AnthropicVertexModel)
    result = await Agent(model=model, tools=[weather]).run("Weather in Paris?")
    await model.aclose()
    assert result.status == "completed", result.error
    assert result.output_text == "Sunny in Paris."
    assert model.provider == "gcp.vertex_ai"
    first, second = sim.message_requests
    verb = "streamRawPredict" if streaming else "rawPredict"
    assert first.path == f"{VERTEX_PATH}:{verb}"
    assert first.headers["authorization"] == "Bearer ya29.test-token"
    assert API_VERSION.match(first["anthropic_version"])  # the SDK's version, in the body
    assert "model" not in first
    assert second["messages"][-1]["content"][0]["type"] == "tool_result"


async def test_vertex_takes_google_credentials_objects(sim: anth.AnthropicSimulator) -> None:
    from google.auth.credentials import Credentials

    class Ready(Credentials):  # a token that needs no refresh (no network)
        def __init__(self) -> None:
            super().__init__()
            self.token = "ya29.from-credentials"
            self.expiry = None

        def refresh(self, request: object) -> None:
            raise AssertionError("not expected to refresh")

    sim.add("ok")
    model = _vertex(sim, streaming=True, access_token=None, credentials=Ready())
    await collect(model, ModelRequest(messages=(Message.user("hi"),)))
    await model.aclose()
    assert sim.message_requests[0].headers["authorization"] == "Bearer ya29.from-credentials"


async def test_vertex_counts_tokens_on_its_count_tokens_route(
    sim: anth.AnthropicSimulator,
) -> None:
    model = _vertex(sim, streaming=True)
    n = await model.count_tokens(ModelRequest(messages=(Message.user("Count me, please."),)))
    await model.aclose()
    assert n > 0
    (sent,) = sim.requests
    assert sent.path == (
        "/projects/my-proj/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict"
    )
    assert sent["model"] == "claude-sonnet-4-6"


async def test_vertex_reads_region_project_and_base_url_from_the_environment(
    sim: anth.AnthropicSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    model: Any = dive.model("anthropic-vertex:claude-sonnet-4-6", access_token="ya29.t")
    monkeypatch.setenv("CLOUD_ML_REGION", "europe-west1")  # after the model was built
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "env-proj")
    monkeypatch.setenv("ANTHROPIC_VERTEX_BASE_URL", sim.url)
    sim.add("ok")
    await model.generate(ModelRequest(messages=(Message.user("hi"),)))
    await model.aclose()
    assert sim.message_requests[0].path.startswith(
        "/projects/env-proj/locations/europe-west1/publishers/anthropic/models/"
    )


@pytest.mark.parametrize(
    ("options", "needs"),
    [
        ({"project_id": "p"}, r"region.*CLOUD_ML_REGION.*region="),
        ({"region": "us-east5"}, r"project.*ANTHROPIC_VERTEX_PROJECT_ID.*project_id="),
        (
            {"region": "us-east5", "project_id": "p"},
            r"no Google credentials.*gcloud auth application-default login"
            r".*GOOGLE_APPLICATION_CREDENTIALS.*access_token=",
        ),
    ],
)
async def test_vertex_explains_what_is_missing_at_the_first_request(
    sim: anth.AnthropicSimulator, options: dict[str, str], needs: str
) -> None:
    model: Any = dive.model("anthropic-vertex:claude-sonnet-4-6", base_url=sim.url, **options)
    with pytest.raises(MissingCredentialsError, match=needs):
        await model.generate(ModelRequest(messages=(Message.user("hi"),)))
    await model.aclose()
    assert sim.requests == []


async def test_vertex_without_google_auth_names_the_extra(
    sim: anth.AnthropicSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hide(monkeypatch, "google.auth")
    model = AnthropicVertexModel("claude-sonnet-4-6", region="r", project_id="p", base_url=sim.url)
    with pytest.raises(MissingExtraError, match=r"pip install 'dive-agents\[vertex\]'"):
        await model.generate(ModelRequest(messages=(Message.user("hi"),)))


# --- Bedrock ---------------------------------------------------------------------------------


@STREAMING
async def test_bedrock_runs_a_tool_turn_on_the_bedrock_url_shape(
    sim: anth.AnthropicSimulator, streaming: bool
) -> None:
    sim.add(sim.tool_use("weather", {"city": "Oslo"}), "Sunny in Oslo.")
    model = _bedrock(sim, streaming=streaming)
    assert isinstance(model, AnthropicBedrockModel)
    result = await Agent(model=model, tools=[weather]).run("Weather in Oslo?")
    await model.aclose()
    assert result.status == "completed", result.error
    assert result.output_text == "Sunny in Oslo."
    assert model.provider == "aws.bedrock"
    first, _ = sim.message_requests
    suffix = "invoke-with-response-stream" if streaming else "invoke"
    assert first.path == f"/model/{BEDROCK_ID}/{suffix}"
    assert first.headers["authorization"] == "Bearer bedrock-api-key"
    assert API_VERSION.match(first["anthropic_version"])
    assert "model" not in first
    assert "stream" not in first


async def test_bedrock_signs_with_sigv4_from_aws_keys(sim: anth.AnthropicSimulator) -> None:
    sim.add("signed")
    model = _bedrock(
        sim, streaming=True, aws_access_key="AKIDEXAMPLE", aws_secret_key="wJalrXUtnFEMI/K7MDENG"
    )
    response = await collect(model, ModelRequest(messages=(Message.user("hi"),)))
    await model.aclose()
    assert response.text == "signed"
    headers = sim.message_requests[0].headers
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-east-1/bedrock/aws4_request" in headers["authorization"]
    assert headers["x-amz-date"]


async def test_bedrock_stream_errors_arrive_as_exception_frames_and_are_retried(
    sim: anth.AnthropicSimulator,
) -> None:
    sim.add(
        anth.SimStreamError(after_events=0, error_type="rate_limit_error", message="slow down"),
        "after the retry",
    )
    model = _bedrock(sim, streaming=True)
    response = await collect(model, ModelRequest(messages=(Message.user("hi"),)))
    await model.aclose()
    assert response.text == "after the retry"
    assert len(sim.message_requests) == 2


async def test_bedrock_throttling_is_a_rate_limit(sim: anth.AnthropicSimulator) -> None:
    sim.add(anth.SimStreamError(after_events=0, error_type="rate_limit_error", message="slow"))
    model = _bedrock(sim, streaming=True, retry=RetryPolicy(max_retries=0))
    with pytest.raises(RateLimitedError, match="slow"):
        await collect(model, ModelRequest(messages=(Message.user("hi"),)))
    await model.aclose()


async def test_bedrock_has_no_token_counting(sim: anth.AnthropicSimulator) -> None:
    model = _bedrock(sim, streaming=True)
    with pytest.raises(UnsupportedSettingError, match="Bedrock"):
        await model.count_tokens(ModelRequest(messages=(Message.user("hi"),)))
    assert sim.requests == []


@pytest.mark.parametrize(
    ("options", "needs"),
    [
        ({"api_key": "k"}, r"region.*AWS_REGION.*aws_region="),
        (
            {"aws_region": "us-east-1"},
            r"no AWS credentials.*AWS_ACCESS_KEY_ID.*AWS_PROFILE.*AWS_BEARER_TOKEN_BEDROCK"
            r".*api_key=",
        ),
    ],
)
async def test_bedrock_explains_what_is_missing_at_the_first_request(
    sim: anth.AnthropicSimulator, options: dict[str, str], needs: str
) -> None:
    model: Any = dive.model(f"anthropic-bedrock:{BEDROCK_ID}", base_url=sim.url, **options)
    with pytest.raises(MissingCredentialsError, match=needs):
        await collect(model, ModelRequest(messages=(Message.user("hi"),)))
    await model.aclose()
    assert sim.requests == []


async def test_bedrock_streaming_without_botocore_names_the_extra(
    sim: anth.AnthropicSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hide(monkeypatch, "boto")
    model = AnthropicBedrockModel(BEDROCK_ID, aws_region="us-east-1", api_key="k", base_url=sim.url)
    with pytest.raises(MissingExtraError, match=r"pip install 'dive-agents\[bedrock\]'"):
        await collect(model, ModelRequest(messages=(Message.user("hi"),)))


# --- the simulator's platform routes ----------------------------------------------------------


def test_the_simulator_checks_the_platform_bodies(sim: anth.AnthropicSimulator) -> None:
    import json
    import urllib.error
    import urllib.request

    def post(path: str, body: dict[str, Any]) -> tuple[int, str]:
        request = urllib.request.Request(
            sim.url + path,
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json", "authorization": "Bearer t"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    base = {"max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    status, text = post(f"{VERTEX_PATH}:rawPredict", base)
    assert status == 400
    assert "anthropic_version: Field required" in text
    status, text = post(f"{VERTEX_PATH}:rawPredict", {**base, "anthropic_version": "v1"})
    assert status == 400
    assert "'vertex-2023-10-16' or an API version" in text
    status, text = post(
        f"/model/{BEDROCK_ID}/invoke",
        {**base, "anthropic_version": "bedrock-2023-05-31", "model": BEDROCK_ID},
    )
    assert status == 400
    assert "model" in text
    assert [r.path for r in sim.requests] == [
        f"{VERTEX_PATH}:rawPredict",
        f"{VERTEX_PATH}:rawPredict",
        f"/model/{BEDROCK_ID}/invoke",
    ]


def test_a_platform_model_is_built_without_any_credentials() -> None:
    for spec in ("anthropic-vertex:claude-sonnet-4-6", f"anthropic-bedrock:{BEDROCK_ID}"):
        assert dive.model(spec).name == spec.split(":", 1)[1]
    assert "anthropic-vertex" in PROVIDERS
    assert "anthropic-bedrock" in PROVIDERS
