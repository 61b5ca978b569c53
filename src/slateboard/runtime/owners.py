"""Lease owners that say where they run: ``runner-<id>@<host>:<pid>``.

A runner's lease on an invocation names its owner. With the host and process id in that name, a
runner that finds an invocation leased by another owner can tell, on the same host, whether that
process still exists (issue 29, R16): a lease of a process that is gone (killed, crashed) is
given back at once instead of being waited out. Anything else (another host, a live process, an
owner name without a host and pid) is waited for until its lease ends, and the wait is said.
A recycled pid only makes the runner wait as before; it never takes over a live lease.
"""

from __future__ import annotations

import os
import re
import socket
import uuid

__all__ = ["dead_on_this_host", "host_name", "runner_owner"]

_OWNER = re.compile(r"^.+@(?P<host>[^@:]+):(?P<pid>[0-9]{1,10})$")


def host_name() -> str:
    """This machine's host name (as lease owners spell it: no ``@`` or ``:``)."""
    return socket.gethostname().replace("@", "_").replace(":", "_") or "localhost"


def runner_owner(prefix: str = "runner") -> str:
    """A fresh owner name for this process: ``<prefix>-<8 hex>@<host>:<pid>``."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}@{host_name()}:{os.getpid()}"


def dead_on_this_host(owner: str) -> bool:
    """True only when ``owner`` names a process on this host (``...@host:pid``) that no longer
    exists; False for another host, a live (or inaccessible) process, this process, or a name
    without host and pid."""
    match = _OWNER.match(owner)
    if match is None or match.group("host") != host_name():
        return False
    pid = int(match.group("pid"))
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, OSError):
        return False  # it exists (another user's), or the pid cannot be asked about
    return False
