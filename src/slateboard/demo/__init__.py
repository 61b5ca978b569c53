"""Data and function workers of the quick start's main job (the ``retention`` template)."""
