"""slateboard: LLM multi-agent collaboration on a blackboard.

Specialists share one structured state and change it only through schema-validated,
contract-checked JSON Patch proposals that a deterministic kernel commits or rejects.
"""

__version__ = "0.1.0"
