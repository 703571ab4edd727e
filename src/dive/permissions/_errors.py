"""The permission engine's one error: a rule, mode or settings file it cannot use."""

from __future__ import annotations

from dive.errors import UserError

__all__ = ["PermissionConfigError"]


class PermissionConfigError(UserError):
    """An invalid rule, mode or settings file, raised when it is loaded (never mid-turn).

    Attributes:
        source: the settings file (or ``code``) that held it.
        rule: the offending rule or value, when there is one.

    Args:
        message: what is wrong and how to fix it.
        source: the settings file (or ``code``) that held it.
        rule: the offending rule or value, if there is one.
    """

    def __init__(self, message: str, *, source: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.rule = rule
