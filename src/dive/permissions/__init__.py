"""The permission engine: modes, allow/deny/ask rules, session grants, an audit log.

``Agent(approval_policy=permission_policy(PermissionConfig.load(), dialog))`` checks every
tool call at the loop's approval gate: deny rules (absolute, even in ``bypass``) → session
grants → allow rules → ask rules → the mode's default → the dialog (or, without one, the
turn suspends with reason ``approval_required`` until a ``ToolApproval`` resumes it). Rules
use Claude Code's syntax (``Bash(git status:*)``, ``Read(./src/**)``,
``WebFetch(domain:example.com)``, ``mcp__github__*``) and read a tool's specifier through its
definition's ``dive.permission.argument`` / ``dive.permission.kind`` metadata. Commands are
split the way a shell runs them: an allow rule must match every part, a deny rule any part.
Every decision is recorded in the call's record; ``audit_log`` reads it back. See
``docs/permissions.md``.
"""

from dive.permissions._audit import AuditEntry, audit_log
from dive.permissions._engine import PermissionEngine
from dive.permissions._errors import PermissionConfigError
from dive.permissions._modes import MODES, PermissionMode
from dive.permissions._policy import (
    ApprovalRequest,
    Dialog,
    DialogAnswer,
    DialogDecision,
    PermissionPolicy,
    permission_policy,
)
from dive.permissions._rules import ARGUMENT_KEY, KIND_KEY, Rule, SpecifierKind, parse_rule
from dive.permissions._settings import PermissionConfig, settings_files
from dive.permissions._shell import Segment, ShellSplit, split_command

__all__ = [
    "ARGUMENT_KEY",
    "KIND_KEY",
    "MODES",
    "ApprovalRequest",
    "AuditEntry",
    "Dialog",
    "DialogAnswer",
    "DialogDecision",
    "PermissionConfig",
    "PermissionConfigError",
    "PermissionEngine",
    "PermissionMode",
    "PermissionPolicy",
    "Rule",
    "Segment",
    "ShellSplit",
    "SpecifierKind",
    "audit_log",
    "parse_rule",
    "permission_policy",
    "settings_files",
    "split_command",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
