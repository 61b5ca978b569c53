"""slateboard: LLM multi-agent collaboration on a blackboard.

Specialists share one structured state and change it only through schema-validated,
contract-checked JSON Patch proposals that a deterministic kernel commits or rejects.
``Agent`` and ``Team`` are the seeds' entry points (``Team.blackboard(...)``).
"""

from .team import Agent, Team

__version__ = "0.1.0"

__all__ = ["Agent", "Team", "__version__"]
