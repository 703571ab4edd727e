"""The dive error tree.

Every exception dive raises on purpose derives from :class:`DiveError`. The families::

    DiveError
    ├── UserError                      misuse: bad arguments, bad definitions (also a ValueError)
    │   ├── InvalidRunError            an invalid combination of run() arguments
    │   │   └── ContinueWithInputError
    │   ├── ToolDefinitionError        a tool that cannot be built (bad types, duplicate names…)
    │   ├── UnsupportedSettingError    a model setting the provider cannot honour
    │   ├── UnsupportedContentError    an image or document type the provider cannot take
    │   ├── UnknownProviderError / UnknownModelError / MissingExtraError / MissingCredentialsError
    │   ├── ResumeError                resume arguments that do not match the stored suspension
    │   │   ├── NoSuspendedTurnError
    │   │   ├── UnknownToolCallError
    │   │   └── ToolCallNotPendingError
    │   │       └── ConflictingToolResultError
    │   ├── InputOnSuspendedSessionError / ResumeRequiredError / UnreconciledToolCallsError
    │   ├── ReentrantSessionError
    │   ├── HookPolicyError            a hook changed what its hook point does not allow
    │   ├── PromptError                a prompt template, binding or build that dive.prompts refuses
    │   └── OutputUnavailableError     result.output read on a suspended or incomplete result
    ├── MessageValidationError         a message or history that is malformed (also a ValueError)
    │   ├── MessageFieldError          a record built with a missing or unknown field (a TypeError)
    │   ├── IncompleteToolTurnError    a tool exchange that a provider would reject
    │   └── ProviderStateError         provider replay data of the wrong shape
    ├── ProviderError                  a model call failed (status, request_id, retry_after)
    │   ├── RateLimitedError, OverloadedError, ProviderTimeoutError, ProviderConnectionError
    │   ├── AuthenticationError, PermissionDeniedError, InvalidRequestError, NotFoundError
    │   └── StreamInterruptedError     the stream died after content had been delivered
    ├── StoreError                     a session store failed
    │   ├── SaveRejectedError          refused before writing: nothing landed
    │   │   ├── RevisionConflictError, SuspendedSessionError, NoTurnError
    │   │   └── StoreFileReplacedError the SQLite file was deleted or replaced while open
    │   ├── SessionClaimedError        another owner holds a live claim
    │   ├── SessionCorruptedError      a stored record does not decode
    │   ├── StoreUnavailableError      locked, disk full, I/O error, connection refused
    │   ├── StoreCorruptedError        the file or database is not a readable dive store
    │   └── UnsupportedSchemaError     the database or a record is newer than this dive
    ├── ToolError                      recorded on tool calls, never raised out of run()
    │   ├── UnknownToolError, BatchHaltedError, ToolPermissionError, ToolTimeoutError
    ├── StepCheckpointError            a step checkpoint failed: the step it guarded did not run
    ├── ToolResolutionError            a toolset failed, or tools of one call share a name
    ├── OutputValidationError          structured output never validated
    ├── TurnError                      raised by RunResult.raise_for_status()
    ├── LimitError                     a configured limit was reached
    ├── RunCanceledError               the run was canceled
    │   └── SoftCanceled               … at a step boundary, after soft_cancel()
    ├── DeadlineExceededError          limits.response_timeout expired
    └── EventHandlerError              the on_event handler raised

Control-flow signals are not errors: :class:`HookAbort` (a hook ends the turn) and
:class:`ToolFatalError` (a tool forbids retries) derive from ``Exception`` directly.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthenticationError",
    "BatchHaltedError",
    "ConflictingToolResultError",
    "ContinueWithInputError",
    "DeadlineExceededError",
    "DiveError",
    "EventHandlerError",
    "HookAbort",
    "HookPolicyError",
    "IncompleteToolTurnError",
    "InputOnSuspendedSessionError",
    "InvalidRequestError",
    "InvalidRunError",
    "LimitError",
    "MessageFieldError",
    "MessageValidationError",
    "MissingCredentialsError",
    "MissingExtraError",
    "NoSuspendedTurnError",
    "NoTurnError",
    "NotFoundError",
    "OutputUnavailableError",
    "OutputValidationError",
    "OverloadedError",
    "PermissionDeniedError",
    "PromptError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderStateError",
    "ProviderTimeoutError",
    "RateLimitedError",
    "ReentrantSessionError",
    "ResumeError",
    "ResumeRequiredError",
    "RevisionConflictError",
    "RunCanceledError",
    "SaveRejectedError",
    "SessionClaimedError",
    "SessionCorruptedError",
    "SoftCanceled",
    "StoreCorruptedError",
    "StoreError",
    "StoreFileReplacedError",
    "StepCheckpointError",
    "StoreUnavailableError",
    "StreamInterruptedError",
    "SuspendedSessionError",
    "ToolCallNotPendingError",
    "ToolDefinitionError",
    "ToolError",
    "ToolFatalError",
    "ToolPermissionError",
    "ToolResolutionError",
    "ToolTimeoutError",
    "TurnError",
    "UnknownModelError",
    "UnknownProviderError",
    "UnknownToolCallError",
    "UnknownToolError",
    "UnreconciledToolCallsError",
    "UnsupportedContentError",
    "UnsupportedSchemaError",
    "UnsupportedSettingError",
    "UserError",
]


class DiveError(Exception):
    """Root of every error dive raises on purpose."""


# --- misuse -------------------------------------------------------------------------------


class UserError(DiveError, ValueError):
    """The caller used dive in a way it does not support; the message says how to fix it."""


class InvalidRunError(UserError):
    """An invalid combination of ``run()`` arguments, raised before the turn begins."""


class ContinueWithInputError(InvalidRunError):
    """``continue_turn=True`` was combined with new input or tool results."""


class ToolDefinitionError(UserError):
    """A tool could not be built from its definition or function."""


class UnsupportedSettingError(UserError):
    """A model setting that the chosen provider or model cannot honour."""


class UnsupportedContentError(UserError):
    """Content the provider cannot take (an image or document type, a URL without a type)."""


class UnknownProviderError(UserError):
    """A ``"provider:model"`` string named a provider dive does not know."""


class UnknownModelError(UserError):
    """A bare model name matched no known provider prefix."""


class MissingExtraError(UserError):
    """A provider's SDK is not installed; the message names the extra to install."""


class MissingCredentialsError(UserError):
    """A provider's API key was not given and its environment variable is unset."""


class ResumeError(UserError):
    """Resume arguments do not match the stored suspension; nothing was changed."""


class NoSuspendedTurnError(ResumeError):
    """Tool results were given but no turn is suspended."""


class UnknownToolCallError(ResumeError):
    """A tool result names a call id that is not in the suspended turn."""


class ToolCallNotPendingError(ResumeError):
    """A tool result names a call that is not waiting for a result."""


class ConflictingToolResultError(ToolCallNotPendingError):
    """A result differs from the one already accepted for the same call."""


class InputOnSuspendedSessionError(UserError):
    """New input was sent to a session whose turn is suspended."""


class ResumeRequiredError(UserError):
    """The session is suspended; resume it with tool results or cancel the suspended turn."""


class UnreconciledToolCallsError(UserError):
    """``require_reconcile`` refuses new input while calls of unknown outcome remain."""


class ReentrantSessionError(UserError):
    """A run on a session was started from inside a run on the same session."""


class HookPolicyError(UserError):
    """A hook changed a field its hook point does not allow, or returned an invalid value.

    It is handled like any other exception of that hook (see the hook table in
    ``dive.agent``): it ends the turn, denies the call, or is logged.
    """


class PromptError(UserError):
    """``dive.prompts`` refused a template, a binding or a build.

    The template does not parse, a name is unknown or already bound, a value cannot be
    encoded, a placeholder is still unbound, or the output would exceed the size limit. The
    message says which and what to change; an encoder's exception is the cause.
    """


# --- messages ------------------------------------------------------------------------------


class MessageValidationError(DiveError, ValueError):
    """A message, content block or history is malformed. The message names the field path.

    Args:
        message: what is wrong.
        path: the field path, e.g. ``messages[3].content[0].tool_call_id`` (prefixes the message).
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class MessageFieldError(MessageValidationError, TypeError):
    """A message record was constructed with a required field missing or an unknown field.

    ``path`` names the field, as decoding the same data would. It is also a ``TypeError``,
    what Python raises for such a call, so code catching that keeps working.
    """


class IncompleteToolTurnError(MessageValidationError):
    """A history contains a malformed or incomplete assistant tool-call exchange.

    Args:
        index: the position of the offending message in the history.
        reason: what is wrong with its tool exchange.
    """

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"message: incomplete tool turn: message {index}: {reason}")
        self.index = index
        self.reason = reason


class ProviderStateError(MessageValidationError):
    """Provider replay data does not have the shape the provider requires."""


# --- providers -----------------------------------------------------------------------------


class ProviderError(DiveError):
    """A model call failed. Carries what the provider said, when it said anything.

    Args:
        message: what happened and what to do (secrets redacted).
        provider: the provider label (``anthropic``, ``openai``, ...).
        status: the HTTP status, if there was a response.
        request_id: the provider's request id, for its support.
        retry_after: seconds the provider asked to wait before retrying, if it said.
        error_type: the provider's error type (``overloaded_error``, ``rate_limit_exceeded``, ...).
        body: the error body the provider sent, JSON (redacted).
    """

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
        error_type: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status
        self.request_id = request_id
        self.retry_after = retry_after
        self.error_type = error_type
        self.body = body


class RateLimitedError(ProviderError):
    """HTTP 429 or an in-stream ``rate_limit_error``."""

    retryable = True


class OverloadedError(ProviderError):
    """HTTP 529/503 or an in-stream ``overloaded_error``."""

    retryable = True


class ProviderTimeoutError(ProviderError):
    """The provider did not answer in time (HTTP 504 or a client timeout)."""

    retryable = True


class ProviderConnectionError(ProviderError):
    """The connection to the provider failed."""

    retryable = True


class AuthenticationError(ProviderError):
    """The provider rejected the credentials (HTTP 401)."""


class PermissionDeniedError(ProviderError):
    """The credentials lack permission for this request (HTTP 403)."""


class InvalidRequestError(ProviderError):
    """The provider rejected the request as malformed (HTTP 400 and other 4xx)."""


class NotFoundError(ProviderError):
    """The model or resource was not found (HTTP 404)."""


class StreamInterruptedError(ProviderError):
    """A stream failed or ended without its end marker."""


# --- stores ---------------------------------------------------------------------------------


class StoreError(DiveError):
    """A session store operation failed."""


class SaveRejectedError(StoreError):
    """The store refused a write before writing anything."""


class RevisionConflictError(SaveRejectedError):
    """The expected revision is stale: someone else wrote first. Reload and retry."""


class SuspendedSessionError(SaveRejectedError):
    """A new turn cannot be appended while the open turn is suspended."""


class NoTurnError(SaveRejectedError):
    """There is no turn to remove."""


class SessionClaimedError(StoreError):
    """Another owner holds a live claim on the session."""


class SessionCorruptedError(StoreError):
    """A stored record does not decode. Nothing was overwritten."""


class StoreFileReplacedError(SaveRejectedError):
    """The SQLite file was deleted or replaced while the store had it open.

    The store checks the file's identity before every operation and refuses rather than
    write into a file nobody can read any more. Close the store and open it again.
    """


class StoreUnavailableError(StoreError):
    """The store could not be read or written (locked, disk full, I/O, connection).

    Locked past the busy timeout, a full disk, an I/O error, a refused or dropped connection.
    The message names the file (or the DSN without its password) and the session; the
    driver's exception is the cause. Whether a failed write landed is unknown: reload the
    session once the store is back.
    """


class StoreCorruptedError(StoreError):
    """The store's file or database is not a readable dive session store.

    It is damaged or was overwritten. Nothing was written to it.
    """


class UnsupportedSchemaError(StoreError):
    """The database or a stored record has a schema version newer than this dive supports.

    Nothing was changed; upgrade dive-agents to read it.
    """


# --- tools -----------------------------------------------------------------------------------


class ToolError(DiveError):
    """Recorded on a tool call's record; dive never raises these out of ``run()``."""


class UnknownToolError(ToolError):
    """The model called a tool that does not exist.

    Args:
        name: the name the model used.
        suggestions: close names of tools that exist.
    """

    def __init__(self, name: str, suggestions: tuple[str, ...] = ()) -> None:
        hint = f" Did you mean: {', '.join(suggestions)}." if suggestions else ""
        super().__init__(f'Tool "{name}" does not exist.{hint}')
        self.name = name
        self.suggestions = suggestions


class BatchHaltedError(ToolError):
    """The call was not run because an earlier halting call in the response failed."""


class ToolPermissionError(ToolError):
    """The call needs permissions this run was not granted."""


class ToolTimeoutError(ToolError):
    """The call did not finish within its tool timeout."""


# --- outcomes ------------------------------------------------------------------------------


class OutputUnavailableError(UserError):
    """``result.output`` was read on a result without one (suspended or incomplete)."""


class OutputValidationError(DiveError):
    """Structured output did not validate within the allowed retries.

    Args:
        message: what went wrong.
        errors: the validation errors of the last attempt.
    """

    def __init__(self, message: str, *, errors: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.errors = errors


class StepCheckpointError(DiveError):
    """A step checkpoint failed; the step it guarded did not run (the turn ends ``error``)."""


class ToolResolutionError(DiveError):
    """Tools could not be resolved for a model call (the turn ends ``error``).

    A toolset raised, or two of the call's tools share a name.
    """


class TurnError(DiveError):
    """Raised by ``RunResult.raise_for_status()`` for an incomplete turn or a failed save.

    Args:
        message: what went wrong.
        result: the ``RunResult`` of the turn.
    """

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


class LimitError(DiveError):
    """A configured limit was reached."""


class RunCanceledError(DiveError):
    """The run was canceled (``CancelToken.cancel()``, a task cancel or a lost claim)."""


class SoftCanceled(RunCanceledError):
    """The run stopped at a step boundary after ``CancelToken.soft_cancel()``."""


class DeadlineExceededError(DiveError):
    """``limits.response_timeout`` expired."""


class EventHandlerError(DiveError):
    """The ``on_event`` handler raised; the original exception is the cause."""


# --- control-flow signals (not errors) -----------------------------------------------------


class HookAbort(Exception):
    """Raised by a hook to end the turn incomplete with reason ``hook_abort``.

    Args:
        reason: why the hook ends the turn (the outcome's error).
    """

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.hook: str | None = None


class ToolFatalError(Exception):
    """Raised by a tool to fail the call without retries."""
