"""A module that fails while importing (for resolution-error tests)."""

raise RuntimeError("this module is broken on purpose")
