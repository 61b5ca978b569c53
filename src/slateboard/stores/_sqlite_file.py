"""Where a SQLite store lives: the file a ``sqlite:`` URL names, and cheap checks of that file
before SQLite opens it (an SQLite header, no truncation), so a damaged file is named clearly."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from .base import StoreCorrupt, StoreError, StoreUnavailable

_HEADER = b"SQLite format 3\x00"


def default_path() -> Path:
    """``<user data dir>/slateboard/slateboard.db`` (platformdirs)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("slateboard")) / "slateboard.db"


def path_from_url(url: str) -> Path:
    """The database file a ``sqlite:`` URL names: ``sqlite:///abs/path.db`` (or ``sqlite:////abs``)
    is absolute, ``sqlite://rel/path.db`` and ``sqlite:rel.db`` are relative to the working
    directory, ``sqlite://`` is the default file. The query string is ignored here."""
    scheme, _, rest = url.partition(":")
    if scheme.lower() != "sqlite":
        raise StoreError(f"not a sqlite URL: {url!r}")
    rest = rest.split("?", 1)[0].split("#", 1)[0]
    if rest.startswith("///"):
        raw = "/" + rest[3:].lstrip("/")
    elif rest.startswith("//"):
        raw = rest[2:]
    else:
        raw = rest
    raw = unquote(raw)
    if raw in ("", "/"):
        return default_path()
    return Path(raw).expanduser()


def check_file(path: Path) -> None:
    """Cheap checks before SQLite touches the file: it is an SQLite database and not truncated."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreUnavailable(f"{path}: cannot read the database file ({exc.strerror})") from None
    if size == 0:
        return
    try:
        with path.open("rb") as fh:
            header = fh.read(100)
    except OSError as exc:
        raise StoreUnavailable(f"{path}: cannot read the database file ({exc.strerror})") from None
    if len(header) < 100:
        if _HEADER.startswith(header[:16]) or header.startswith(_HEADER):
            raise StoreCorrupt(str(path), f"truncated: the file has {size} bytes, less than an SQLite header")
        raise StoreCorrupt(str(path), "not an SQLite database (the file does not start with an SQLite header)")
    if not header.startswith(_HEADER):
        raise StoreCorrupt(str(path), "not an SQLite database (the file does not start with an SQLite header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise StoreCorrupt(str(path), f"damaged header: page size {page_size} is impossible")
    if size % page_size:
        raise StoreCorrupt(str(path), f"truncated: {size} bytes is not a whole number of {page_size}-byte pages")
    pages = int.from_bytes(header[28:32], "big")
    valid = header[92:96] == header[24:28]
    if valid and pages * page_size > size:
        raise StoreCorrupt(
            str(path),
            f"truncated: the header says {pages} pages ({pages * page_size} bytes), the file has {size} bytes",
        )
