"""One redaction function for every boundary where text leaves the process or is stored.

Secrets (API keys, store passwords) reach slateboard in two ways: inside a URL's userinfo
(``openai:M@http://user:KEY@host/v1``, ``postgresql://user:PASSWORD@host/db``) and as values the
process reads (an API key from the environment, a key or password taken from such a URL). ``redact``
removes both: the password of every ``scheme://user:password@`` (the whole userinfo of an
``http(s)://TOKEN@`` URL, where a lone user name is a bearer credential), and every value
``register_secret`` was told about, wherever it appears (a provider error body that echoes the key,
say). Model strings kept in records and spans, error messages, telemetry attributes, CLI output and
dashboard responses all pass through it, so a secret never reaches a record, span, page or error.

Registered values live for the process (a small set of strings); values shorter than
``MIN_SECRET_CHARS`` are not registered, so that redaction never mangles ordinary words.
"""

from __future__ import annotations

import re
import string
import threading
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = [
    "MASK",
    "MIN_SECRET_CHARS",
    "redact",
    "redact_json",
    "register_secret",
    "register_url_secrets",
    "url_password",
]

MASK = "***"
"""What a secret is replaced with."""
MIN_SECRET_CHARS = 6
"""Shorter values are not treated as secrets (they would match ordinary text)."""

# scheme://userinfo@ where userinfo has no "/", "@" or whitespace; group 3 is ":password" or "".
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^/@\s:\"']*)(?P<pw>:[^/@\s\"']*)?@")
_lock = threading.Lock()
_secrets: frozenset[str] = frozenset()
_pattern: re.Pattern[str] | None = None


def register_secret(value: str | None) -> None:
    """Redact ``value`` (and its percent-decoded form) from every later ``redact`` call.
    None, empty and short values (under ``MIN_SECRET_CHARS``) are ignored."""
    global _secrets, _pattern
    if not value:
        return
    new = {v for v in (value, unquote(value)) if len(v) >= MIN_SECRET_CHARS} - _secrets
    if not new:
        return
    with _lock:
        _secrets = _secrets | new
        # longest first, so that a secret containing another is masked whole
        alternatives = sorted(_secrets, key=len, reverse=True)
        _pattern = re.compile("|".join(re.escape(s) for s in alternatives))


def url_password(url: str) -> str | None:
    """The credential in ``url``'s userinfo: its password, or for http(s) a lone user name; None
    when there is none (or ``url`` is not a URL)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if "@" not in parts.netloc:
        return None
    userinfo = parts.netloc.rsplit("@", 1)[0]
    user, sep, password = userinfo.partition(":")
    if sep:
        return unquote(password) or None
    return unquote(user) or None if parts.scheme.lower() in ("http", "https") else None


def register_url_secrets(urls: Iterable[str | None]) -> None:
    """``register_secret`` the credential of each URL that has one (see ``url_password``)."""
    for url in urls:
        if url:
            # a model string carries its URL after "@http..." : look at every URL in it
            for found in _urls_in(url):
                register_secret(url_password(found))


_SCHEME_CHARS = frozenset(string.ascii_letters + string.digits + "+.-")
_LETTERS = frozenset(string.ascii_letters)
_NON_SPACE = re.compile(r"\S+")


def _urls_in(text: str) -> Iterator[str]:
    """Every ``scheme://rest`` in ``text`` (scheme: a letter, then letters, digits, ``+.-``;
    rest: up to the next whitespace), left to right, as the regular expression
    ``[A-Za-z][A-Za-z0-9+.-]*://\\S+`` finds them, but in linear time.

    That expression backtracks over every start in a long run of letters (a model string
    ``scripted:["xxxx..."]`` of 200 KB took over a minute); here the text is walked from each
    ``://`` back to where its scheme starts, never past the end of the URL found before it.
    """
    floor = 0
    while (sep := text.find("://", floor)) >= 0:
        begin = sep
        while begin > floor and text[begin - 1] in _SCHEME_CHARS:
            begin -= 1
        while begin < sep and text[begin] not in _LETTERS:  # a scheme starts with a letter
            begin += 1
        rest = _NON_SPACE.match(text, sep + 3)
        if begin < sep and rest is not None:
            yield text[begin : rest.end()]
            floor = rest.end()
        else:
            floor = sep + 1


def _mask_userinfo(match: re.Match[str]) -> str:
    scheme, user, pw = match.group("scheme"), match.group("user"), match.group("pw")
    if pw is not None:
        return f"{scheme}{user}:{MASK}@"
    if scheme.lower() in ("http://", "https://") and user:
        return f"{scheme}{MASK}@"
    return match.group(0)


def redact(text: str) -> str:
    """``text`` with every URL password (and http(s) userinfo) and every registered secret
    replaced by ``MASK``. Idempotent; text without secrets comes back unchanged."""
    if not text:
        return text
    out = _USERINFO.sub(_mask_userinfo, text) if "://" in text else text
    pattern = _pattern
    if pattern is not None:
        out = pattern.sub(MASK, out)
    return out


def redact_json(value: Any) -> Any:
    """A copy of a JSON value with ``redact`` applied to every string in it (keys included);
    used where stored data (a record written before its secret was known, say) is shown."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: redact_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    return value
