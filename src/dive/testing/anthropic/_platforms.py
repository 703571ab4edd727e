"""Claude's cloud-platform routes: Vertex AI's and Bedrock's URL shapes onto the Messages handler.

- Vertex AI: ``POST [/v1]/projects/{project}/locations/{region}/publishers/anthropic/models/
  {model}:rawPredict`` (``:streamRawPredict`` streams), and ``…/models/count-tokens:rawPredict``.
  The model is in the path (a body ``model`` is refused), ``anthropic_version`` is
  ``vertex-2023-10-16`` or an API version date (what the SDK sends: its ``anthropic-version``).
- Bedrock: ``POST /model/{model id}/invoke`` (``/invoke-with-response-stream`` streams). The
  body carries neither ``model`` nor ``stream`` (refused), ``anthropic_version`` is
  ``bedrock-2023-05-31`` or an API version date, and beta flags come as ``anthropic_beta`` in
  the body. A streamed answer is AWS event-stream framing
  (``application/vnd.amazon.eventstream``): each SSE event a ``chunk`` frame whose payload is
  ``{"bytes": <base64 of the event's JSON>}``, an ``event: error`` an ``exception`` frame
  (``:exception-type`` such as ``throttlingException``, payload ``{"message": …}``). Errors
  before the stream are ``{"message": …}`` bodies with an ``x-amzn-errortype`` header.

Each frame is ``total length, headers length, prelude CRC32`` (big-endian ``u32`` each), the
headers (name length ``u8``, name, type ``7`` = string, value length ``u16``, value), the
payload and the message CRC32.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from dataclasses import dataclass, replace
from typing import Any, Literal, cast
from urllib.parse import unquote

from dive.testing.anthropic._errors import invalid_request
from dive.testing.anthropic._http import Outcome
from dive.testing.anthropic._request import as_dict

__all__ = ["PlatformRoute", "bedrock_outcome", "match_platform", "platform_body"]

VERTEX_VERSION = "vertex-2023-10-16"
BEDROCK_VERSION = "bedrock-2023-05-31"
_VERTEX = re.compile(
    r"^(?:/v1)?/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/publishers/anthropic/"
    r"models/(?P<model>[^/:]+):(?P<verb>rawPredict|streamRawPredict)$"
)
_API_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_BEDROCK = re.compile(r"^/model/(?P<model>[^/]+)/(?P<verb>invoke|invoke-with-response-stream)$")
_EXCEPTIONS = {
    "rate_limit_error": "throttlingException",
    "overloaded_error": "serviceUnavailableException",
    "api_error": "internalServerException",
    "timeout_error": "modelTimeoutException",
}
_STATUS_ERRORS = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    413: "ValidationException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
    529: "ServiceUnavailableException",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformRoute:
    """A Vertex AI or Bedrock request path.

    Attributes:
        platform: ``vertex`` or ``bedrock``.
        model: the model named by the path (``count-tokens`` on Vertex's counting route).
        stream: whether the path asks for a stream.
        count: Vertex's token-counting route.
    """

    platform: Literal["vertex", "bedrock"]
    model: str
    stream: bool
    count: bool = False


def match_platform(route: str) -> PlatformRoute | None:
    """The platform route of a request path (without its query), or None."""
    if m := _VERTEX.match(route):
        model = unquote(m["model"])
        stream = m["verb"] == "streamRawPredict"
        return PlatformRoute(
            platform="vertex", model=model, stream=stream, count=model == "count-tokens"
        )
    if m := _BEDROCK.match(route):
        stream = m["verb"] == "invoke-with-response-stream"
        return PlatformRoute(platform="bedrock", model=unquote(m["model"]), stream=stream)
    return None


def platform_body(
    route: PlatformRoute, body: object, betas: frozenset[str]
) -> tuple[dict[str, Any], frozenset[str]]:
    """The Messages API body (and beta flags) a platform request stands for; 400 if invalid."""
    data = as_dict(body)
    if data is None:
        raise invalid_request("Request body must be a JSON object.")
    legacy = VERTEX_VERSION if route.platform == "vertex" else BEDROCK_VERSION
    version = data.get("anthropic_version")
    if version is None:
        raise invalid_request("anthropic_version: Field required")
    if version != legacy and not (isinstance(version, str) and _API_VERSION.match(version)):
        raise invalid_request(
            f"anthropic_version: Input should be '{legacy}' or an API version (YYYY-MM-DD)"
        )
    out = {k: v for k, v in data.items() if k not in ("anthropic_version", "anthropic_beta")}
    if route.platform == "bedrock":
        for key in ("model", "stream"):
            if key in data:
                raise invalid_request(f"extraneous key [{key}] is not permitted")
        flags: object = data.get("anthropic_beta") or []
        if isinstance(flags, list):
            betas = betas | frozenset(str(f) for f in cast("list[object]", flags))
    elif "model" in data and not route.count:
        raise invalid_request("model: Extra inputs are not permitted (the model is in the path)")
    if not route.count:
        out["model"] = route.model
        out["stream"] = route.stream
    return out, betas


def _header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return struct.pack("!B", len(n)) + n + struct.pack("!BH", 7, len(v)) + v


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message."""
    encoded = b"".join(_header(k, v) for k, v in headers.items())
    prelude = struct.pack("!II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack("!I", zlib.crc32(message))


def _sse_parts(chunk: bytes) -> tuple[str, bytes]:
    name, data = "", b""
    for line in chunk.split(b"\n"):
        if line.startswith(b"event: "):
            name = line[7:].decode()
        elif line.startswith(b"data: "):
            data = line[6:]
    return name, data


def _to_frame(chunk: bytes) -> bytes:
    name, data = _sse_parts(chunk)
    if name == "error":
        error = as_dict(as_dict(json.loads(data)) or {}) or {}
        info = as_dict(error.get("error")) or {}
        kind = _EXCEPTIONS.get(str(info.get("type")), "validationException")
        payload = json.dumps({"message": info.get("message") or ""}).encode()
        headers = {":exception-type": kind, ":content-type": "application/json"}
        return frame({**headers, ":message-type": "exception"}, payload)
    payload = json.dumps({"bytes": base64.b64encode(data).decode()}).encode()
    headers = {":event-type": "chunk", ":content-type": "application/json"}
    return frame({**headers, ":message-type": "event"}, payload)


def bedrock_outcome(outcome: Outcome, request_id: str) -> Outcome:
    """``outcome`` as Bedrock writes it: event-stream frames, or its error body and header."""
    headers = [(k, v) for k, v in outcome.headers if k.lower() != "content-type"]
    headers.append(("x-amzn-requestid", request_id))
    if outcome.events is not None:
        headers.append(("content-type", "application/vnd.amazon.eventstream"))
        return replace(outcome, headers=headers, events=[_to_frame(e) for e in outcome.events])
    if outcome.status < 400:
        return replace(outcome, headers=[*headers, ("content-type", "application/json")])
    error = as_dict(as_dict(json.loads(outcome.body)) or {}) or {}
    message = (as_dict(error.get("error")) or {}).get("message") or ""
    kind = _STATUS_ERRORS.get(outcome.status, "InternalServerException")
    headers += [("content-type", "application/json"), ("x-amzn-errortype", kind)]
    return replace(outcome, headers=headers, body=json.dumps({"message": message}).encode())
