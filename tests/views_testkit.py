"""Where ``tests/test_views_reference.py`` finds the views test kit, now in ``tests/views/``.

Delete this file together with ``tests/test_views_reference.py`` (its last user).
"""

from views.views_testkit import Boards, nodes

__all__ = ["Boards", "nodes"]
