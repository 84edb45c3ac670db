"""The queue_core layer: the packages of `layers/queue_core/python/` (the core, and the API logic the handlers
share) plus their third-party wheels, built on this machine without Docker."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_
from constructs import Construct
from queue_core.version import __version__

from infra.paths import CORE_SOURCE_ROOT, LAYER_BUILD_DIR, LAYER_REQUIREMENTS

PLATFORMS: Final = {
    "arm64": "manylinux2014_aarch64",
    "x86_64": "manylinux2014_x86_64",
}
_IGNORED: Final = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", ".*")
_COMPLETE: Final = ".complete"
# Never pulled: the local bundling below always succeeds or raises, and CDK only needs an image name.
_UNUSED_IMAGE: Final = "public.ecr.aws/sam/build-python3.14"


@jsii.implements(cdk.ILocalBundling)
class LayerBundler:
    """Lays out `python/` with every package of the layer's source folder and the pinned wheels for the
    functions' runtime and architecture.

    The wheels are installed once per pinned set into `.layer-build/` and copied from there, so synthesizing
    into a fresh cloud assembly does not reach the package index again. Byte-code caches and hidden files of
    the source tree are never copied, and the asset hash covers exactly the files that are, so they cannot
    change the deployed layer either.
    """

    def __init__(
        self, *, python_version: str, platform: str, install_dependencies: bool, compile_bytecode: bool = True
    ) -> None:
        self.python_version = python_version
        self.platform = platform
        self.install_dependencies = install_dependencies
        self.interpreter = runtime_interpreter(python_version) if compile_bytecode else None

    def try_bundle(self, output_dir: str, *_options: Any, **_keywords: Any) -> bool:
        """Called by CDK in place of Docker; the bundling options (image, command) do not apply here."""
        target = Path(output_dir) / "python"
        target.mkdir(parents=True, exist_ok=True)
        if self.install_dependencies:
            shutil.copytree(self.dependencies(), target, dirs_exist_ok=True)
        shutil.copytree(CORE_SOURCE_ROOT, target, ignore=_IGNORED, dirs_exist_ok=True)
        if self.interpreter is not None:
            compile_bytecode(self.interpreter, target)
        return True

    def fingerprint(self) -> str:
        """Changes exactly when the layer's content would: the source files, the pins, the target platform."""
        digest = hashlib.sha256()
        compiled = self.interpreter is not None
        digest.update(f"{self.python_version}|{self.platform}|{self.install_dependencies}|{compiled}".encode())
        digest.update(LAYER_REQUIREMENTS.read_bytes())
        for path in sorted(_core_files()):
            content = path.read_bytes()
            name = path.relative_to(CORE_SOURCE_ROOT).as_posix()
            digest.update(f"\0{name}\0{len(content)}\0".encode())
            digest.update(content)
        return digest.hexdigest()

    def dependencies(self) -> Path:
        """The installed wheels for this pinned set, installing them the first time."""
        key = hashlib.sha256(
            f"{self.python_version}|{self.platform}|".encode() + LAYER_REQUIREMENTS.read_bytes()
        ).hexdigest()[:16]
        ready = LAYER_BUILD_DIR / f"deps-{key}"
        if (ready / _COMPLETE).exists():
            return ready / "python"
        LAYER_BUILD_DIR.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="staging-", dir=LAYER_BUILD_DIR))
        try:
            self._pip_install(staging / "python")
            (staging / _COMPLETE).touch()
            try:
                os.rename(staging, ready)
            except OSError:
                if not (ready / _COMPLETE).exists():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return ready / "python"

    def _pip_install(self, target: Path) -> None:
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-compile",
            "--only-binary=:all:",
            "--implementation",
            "cp",
            "--python-version",
            self.python_version,
            "--platform",
            self.platform,
            "--target",
            str(target),
            "--requirement",
            str(LAYER_REQUIREMENTS),
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"installing the layer's packages failed:\n{result.stderr.strip()}")
        shutil.rmtree(target / "bin", ignore_errors=True)


def runtime_interpreter(python_version: str) -> str | None:
    """A Python of the functions' version on this machine, or None. Only it can write byte-code the runtime
    loads (another version's would be ignored); without it, every cold start compiles each module it imports
    from the layer, which costs the first answer more than a third of a second (docs/benchmarks.md)."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == python_version:
        return sys.executable
    return shutil.which(f"python{python_version}")


def compile_bytecode(interpreter: str, target: Path) -> None:
    """Byte-code beside every module of the layer, checked against nothing: a layer's files never change, and
    the asset's zip does not keep the sources' times, which a timestamp check would compare."""
    command = [interpreter, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", str(target)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"compiling the layer's byte-code failed:\n{(result.stdout + result.stderr).strip()}")


def _core_files() -> list[Path]:
    """The files `try_bundle` copies: the same filter as `_IGNORED`, so the hash covers exactly them."""
    return [
        path
        for path in CORE_SOURCE_ROOT.rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and not any(part.startswith(".") for part in path.relative_to(CORE_SOURCE_ROOT).parts)
        and path.suffix not in {".pyc", ".pyo"}
    ]


def build_layer(
    scope: Construct, *, runtime: lambda_.Runtime, architecture: lambda_.Architecture, install_dependencies: bool
) -> lambda_.LayerVersion:
    """The layer every function attaches, and that other functions may attach to use the core directly."""
    bundler = LayerBundler(
        python_version=runtime.name.removeprefix("python"),
        platform=PLATFORMS[architecture.name],
        install_dependencies=install_dependencies,
    )
    code = lambda_.Code.from_asset(
        str(CORE_SOURCE_ROOT),
        asset_hash=bundler.fingerprint(),
        asset_hash_type=cdk.AssetHashType.CUSTOM,
        bundling=cdk.BundlingOptions(image=cdk.DockerImage.from_registry(_UNUSED_IMAGE), local=bundler),
    )
    return lambda_.LayerVersion(
        scope,
        "CoreLayer",
        code=code,
        compatible_runtimes=[runtime],
        compatible_architectures=[architecture],
        description=f"dynamo-queue {__version__}: queue_core, queue_api and sqs_api with aws-lambda-powertools[tracer] "
        "and pydantic (boto3 from the runtime)",
    )
