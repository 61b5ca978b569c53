"""Helpers shared by every test folder (pytest puts ``tests/`` on ``sys.path``: pyproject's
``pythonpath``). ``boards``: the small demo blueprints; ``checks``: assertions and probes.

Only in-process test code imports these: a module that a slateboard subprocess loads (a
``python:`` model string, function workers) keeps to its own folder, which is all such a
process has on its path."""
