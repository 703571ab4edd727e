"""What every wire simulator shares: the server's lifecycle and the script's bookkeeping."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from dive.testing.anthropic._http import SimHTTPServer

__all__ = ["SimulatorBase"]


class SimulatorBase:
    """Start/stop (also as a context manager), the base address, and script accounting.

    Subclasses set ``_http`` (a ``SimHTTPServer``) and ``_script`` (anything with ``len``).
    """

    _http: SimHTTPServer
    _script: Any

    def start(self) -> Self:
        """Start serving (on a background thread)."""
        self._http.start()
        return self

    def stop(self) -> None:
        """Stop serving and close open connections."""
        self._http.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._http.address
        return f"http://{host}:{port}"

    @property
    def url(self) -> str:
        """The base URL the SDK is given (the origin unless the API needs a path prefix)."""
        return self.origin

    @property
    def pending(self) -> int:
        """Script items not yet consumed."""
        return len(self._script)

    def assert_consumed(self) -> None:
        """Raise AssertionError unless every script item was used."""
        if self.pending:
            raise AssertionError(f"{self.pending} scripted replies were never requested")
