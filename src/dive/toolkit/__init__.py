"""The built-in toolkit: workspace tools confined to a root, a shell, the web, the user."""

__all__: list[str] = []
