"""The permission engine: modes, allow/deny/ask rules, session grants, an audit log."""

__all__: list[str] = []
