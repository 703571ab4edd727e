"""dive's Temporal client: the pydantic-aware data converter and the payload size guard.

Payloads are JSON through ``temporalio.contrib.pydantic`` (dataclasses, pydantic models and
datetimes round-trip). A turn's start payload (its new input and ``deps``) is measured before
the workflow starts: Temporal refuses blobs over its limit (2 MB by default) and a refused
workflow task is retried forever, so an oversized or unserialisable start is a ``UserError``
instead, before anything is sent.
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter

from dive.errors import UserError

__all__ = ["DATA_CONVERTER", "DEFAULT_MAX_PAYLOAD_BYTES", "check_payload", "connect"]

DATA_CONVERTER: DataConverter = pydantic_data_converter
"""The data converter of every dive client and worker."""

DEFAULT_MAX_PAYLOAD_BYTES = 2 * 1024 * 1024
"""Temporal's default blob size limit (``limit.blobSize.error``)."""


async def connect(target: str, *, namespace: str = "default", **options: Any) -> Client:
    """Connect to a Temporal server with dive's data converter.

    Args:
        target: ``host:port`` of the Temporal frontend (``127.0.0.1:7233`` for a dev server).
        namespace: the Temporal namespace.
        **options: passed to ``temporalio.client.Client.connect`` (``tls``, ``api_key``,
            ``identity``, …); ``data_converter`` is dive's and cannot be replaced.
    """
    if "data_converter" in options:
        raise UserError(
            "connect() sets dive's data converter itself; call "
            "temporalio.client.Client.connect(...) directly to use another one"
        )
    return await Client.connect(
        target, namespace=namespace, data_converter=DATA_CONVERTER, **options
    )


async def check_payload(converter: DataConverter, value: object, *, what: str, limit: int) -> None:
    """Raise ``UserError`` if ``value`` does not serialise, or serialises over ``limit`` bytes."""
    try:
        payloads = await converter.encode([value])
    except Exception as exc:
        raise UserError(
            f"{what} cannot be serialised for Temporal ({type(exc).__name__}: {exc}); pass "
            "JSON-serialisable values (pydantic models, dataclasses, plain data)"
        ) from exc
    size = sum(p.ByteSize() for p in payloads)
    if size > limit:
        raise UserError(
            f"{what} is {size:,} bytes, over the {limit:,}-byte Temporal payload limit; keep "
            "large data out of the turn's arguments (store it and pass a reference), or raise "
            "max_payload_bytes if your server allows larger blobs"
        )
