"""Data and function workers of the quick start's main job (the ``retention`` template).

Blueprints name its functions by path (``slateboard.demo.retention:...``), so the package itself
exports nothing.
"""

__all__: list[str] = []
