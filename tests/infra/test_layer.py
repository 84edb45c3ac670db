"""The layer: the core plus pinned wheels for the functions' platform, built without Docker, reproducibly."""

from __future__ import annotations

import re
import shutil
import sys
from importlib import metadata
from pathlib import Path

import pytest

from infra import layer as layer_module
from infra.layer import LayerBundler
from infra.paths import CORE_SOURCE_ROOT, LAYER_REQUIREMENTS, REPO_ROOT
from tests.infra.synth import Synthesized

RUNTIME_PROVIDED = {"boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3"}


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line and not line.startswith("-"):
            name, version = line.split("==")
            pins[_normalized(re.sub(r"\[.*\]", "", name))] = version.strip()
    return pins


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower().strip()


def test_layer_pins_agree_with_the_project_requirements() -> None:
    layer_pins = _pins(LAYER_REQUIREMENTS)
    project_pins = _pins(REPO_ROOT / "requirements.txt")
    shared = layer_pins.keys() & project_pins.keys()

    assert {"aws-lambda-powertools", "pydantic"} <= shared
    assert {name: layer_pins[name] for name in shared} == {name: project_pins[name] for name in shared}


def test_layer_ships_the_versions_the_tests_run_with() -> None:
    for name, version in _pins(LAYER_REQUIREMENTS).items():
        assert metadata.version(name) == version, name


def test_layer_leaves_boto3_and_its_dependencies_to_the_runtime() -> None:
    assert not RUNTIME_PROVIDED & _pins(LAYER_REQUIREMENTS).keys()


@pytest.fixture
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the layer's source folder to build from, so the test may litter it."""
    root = tmp_path / "source"
    shutil.copytree(CORE_SOURCE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(layer_module, "CORE_SOURCE_ROOT", root)
    monkeypatch.setattr(layer_module, "LAYER_BUILD_DIR", tmp_path / "build")
    return root


def _bundler(install_dependencies: bool = False) -> LayerBundler:
    return LayerBundler(
        python_version="3.14",
        platform="manylinux2014_aarch64",
        install_dependencies=install_dependencies,
        compile_bytecode=False,
    )


def test_bundle_ships_byte_code_the_runtime_loads_without_checking_sources(source: Path, tmp_path: Path) -> None:
    """Built by a Python of the runtime's version (here the one running the tests), every module of the layer has
    its byte-code: a cold start loads it instead of compiling the module."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    bundler = LayerBundler(python_version=version, platform="manylinux2014_x86_64", install_dependencies=False)
    output = tmp_path / "out"

    assert bundler.interpreter == sys.executable
    assert bundler.try_bundle(str(output)) is True
    modules = [path for path in (output / "python").rglob("*.py")]
    tag = sys.implementation.cache_tag
    caches = [module.parent / "__pycache__" / f"{module.stem}.{tag}.pyc" for module in modules]
    assert len(modules) > 20
    assert all(cache.exists() for cache in caches)
    # PEP 552: flags 0b01 is a hash-based .pyc whose source is never checked.
    assert {int.from_bytes(cache.read_bytes()[4:8], "little") for cache in caches} == {0b01}
    assert (
        bundler.fingerprint()
        != LayerBundler(
            python_version=version, platform="manylinux2014_x86_64", install_dependencies=False, compile_bytecode=False
        ).fingerprint()
    )


def test_bundle_lays_out_the_layer_packages_under_python_without_caches(source: Path, tmp_path: Path) -> None:
    (source / "queue_core" / "__pycache__").mkdir(exist_ok=True)
    (source / "queue_core" / "__pycache__" / "table.cpython-311.pyc").write_bytes(b"\0")
    (source / "queue_core" / ".editor-swap").write_text("x")
    output = tmp_path / "out"

    assert _bundler().try_bundle(str(output)) is True
    bundled = {path.relative_to(output / "python").as_posix() for path in output.rglob("*") if path.is_file()}
    expected = {
        path.relative_to(source).as_posix()
        for path in source.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and not path.name.startswith(".")
    }
    assert {"queue_core/table.py", "queue_core/__init__.py"} <= bundled
    assert {path.name for path in CORE_SOURCE_ROOT.iterdir() if not path.name.startswith((".", "__"))} <= {
        name.split("/")[0] for name in bundled
    }
    assert bundled == expected


def test_asset_hash_follows_the_content_not_the_caches(source: Path) -> None:
    before = _bundler().fingerprint()
    (source / "queue_core" / "__pycache__").mkdir(exist_ok=True)
    (source / "queue_core" / "__pycache__" / "keys.cpython-311.pyc").write_bytes(b"\0")
    assert _bundler().fingerprint() == before

    table = source / "queue_core" / "table.py"
    table.write_text(table.read_text() + "\n# changed\n")
    assert _bundler().fingerprint() != before
    assert _bundler(install_dependencies=True).fingerprint() != _bundler().fingerprint()


def test_wheels_are_installed_once_per_pinned_set(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installs: list[Path] = []

    def fake_install(self: LayerBundler, target: Path) -> None:
        installs.append(target)
        (target / "pydantic").mkdir(parents=True)
        (target / "pydantic" / "__init__.py").write_text("")

    monkeypatch.setattr(LayerBundler, "_pip_install", fake_install)
    for attempt in ("first", "second"):
        output = tmp_path / attempt
        _bundler(install_dependencies=True).try_bundle(str(output))
        assert (output / "python" / "pydantic" / "__init__.py").is_file()
        assert (output / "python" / "queue_core" / "table.py").is_file()
    assert len(installs) == 1


def test_layer_targets_the_functions_runtime_and_architecture(synthesized: Synthesized) -> None:
    layer = synthesized.resource(synthesized.stack.queue.layer)["Properties"]
    assert layer["CompatibleRuntimes"] == ["python3.14"]
    assert layer["CompatibleArchitectures"] == ["arm64"]
