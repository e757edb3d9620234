"""The functions' layers, and how `sam build` builds each (layers/common/Makefile calls `build`).

Each function gets only what it imports: the REST API and the audit function the core layer; the
chat function the core layer, the chat layer on top, and an add-on per optional provider that the
deploy's parameters choose (template.yaml). What a layer holds is its requirements file's part of
the one lock (`requirements.txt`, which the development venv installs whole): every package the
lock says its requirements pull in, less what the layers below it ship, less the packages declared
but never imported (`NEVER_IMPORTED`, and each layer's `unused`). The lock's `# via` lines are the
graph, so a build needs no resolver and installs exactly the locked versions (`--no-deps`).

Usage: python layer_build.py build <layer> <arm64|x86_64> <site directory> [--no-dependencies]
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

HERE: Final = Path(__file__).resolve().parent
LOCK: Final = HERE / "requirements.txt"
PACKAGE: Final = "sstools_agent"


@dataclass(frozen=True)
class Layer:
    name: str
    requirements: str
    """The requirements file whose packages (and what they pull in) this layer adds."""
    on_top_of: tuple[str, ...] = ()
    """The layers a function with this one always has too (their packages are not repeated)."""
    unused: Mapping[str, str] | None = None
    """Packages the lock pulls in that nothing this layer serves imports: name -> why."""
    ships_package: bool = False
    """Whether the layer holds our package (`sstools_agent`)."""
    size_limit_mb: float = 0.0
    """Unzipped bytes of a function with this layer and those below it (deploy.md's table)."""


NEVER_IMPORTED: Final[Mapping[str, str]] = {
    "zstandard": "langsmith compresses trace uploads with it when it is installed, and sends them "
    "uncompressed when it is not (24 MB); httpx decodes zstd responses only when present",
}
"""Declared dependencies no layer ships."""

LAYERS: Final[Mapping[str, Layer]] = {
    layer.name: layer
    for layer in (
        Layer("core", "requirements-core.in", ships_package=True, size_limit_mb=65),
        Layer(
            "chat",
            "requirements-chat.in",
            on_top_of=("core",),
            unused={
                "numpy": "langchain-aws declares it for its embeddings and vector stores; Bedrock "
                "chat goes through boto3, Titan embeddings through our adapter, and the router's "
                "cosine is plain Python (50 MB, the sentence-encoder add-on ships it)",
            },
            size_limit_mb=120,
        ),
        Layer("openai", "requirements-openai.in", on_top_of=("core", "chat")),
        Layer("encoder", "requirements-encoder.in", on_top_of=("core", "chat"), size_limit_mb=190),
    )
}

BOTOCORE_MODELS_KEPT: Final = frozenset(
    {
        # ours
        "dynamodb",
        "s3",
        "stepfunctions",
        "events",
        "kms",
        "secretsmanager",
        "ssm",
        # boto3's credential chain
        "sts",
        "sso",
        "sso-oidc",
        # langchain-aws's Bedrock clients
        "bedrock",
        "bedrock-runtime",
        "bedrock-agent-runtime",
        # Powertools Tracer's X-Ray SDK creates its client at import: no function starts without it
        "xray",
    }
)
"""AWS services whose botocore models the functions need; the other ~400 (25 MB) are left out.
tests/infrastructure/test_layer_build.py checks that every client the code creates is listed."""

# Lambda's python3.12 runs on Amazon Linux 2023 (glibc 2.34): manylinux_2_28 wheels (numpy 2.5 ships
# only those) as well as manylinux2014 ones. Without the platform pip would take the build
# machine's wheels, which is the wrong layer with no error.
PLATFORMS: Final[Mapping[str, tuple[str, ...]]] = {
    "arm64": ("manylinux_2_28_aarch64", "manylinux2014_aarch64"),
    "x86_64": ("manylinux_2_28_x86_64", "manylinux2014_x86_64"),
}

_PIN: Final = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")
_VIA: Final = re.compile(r"^\s+#\s+(?:via\s+)?(\S.*?)\s*$")


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Lock:
    """The lock file: each package's pinned version and what pulls it in."""

    versions: Mapping[str, str]
    pulled_by: Mapping[str, frozenset[str]]
    """package -> the packages (or `-r <file>` lines) that require it."""

    @classmethod
    def read(cls, path: Path = LOCK) -> Lock:
        versions: dict[str, str] = {}
        pulled_by: dict[str, set[str]] = {}
        current = ""
        for line in path.read_text(encoding="utf-8").splitlines():
            if pin := _PIN.match(line):
                current = canonical(pin.group(1))
                versions[current] = pin.group(2)
                pulled_by[current] = set()
            elif current and (via := _VIA.match(line)) and via.group(1) != "via":
                source = via.group(1)
                pulled_by[current].add(source if source.startswith("-r ") else canonical(source))
        return cls(versions, {name: frozenset(by) for name, by in pulled_by.items()})

    def direct(self, requirements: str) -> set[str]:
        """The packages a requirements file names."""
        return {
            name
            for name, sources in self.pulled_by.items()
            if any(source.startswith("-r ") and source.endswith(requirements) for source in sources)
        }

    def closure(self, roots: Iterable[str]) -> set[str]:
        """`roots` and everything they pull in."""
        requires: dict[str, set[str]] = {}
        for name, sources in self.pulled_by.items():
            for source in sources:
                requires.setdefault(source, set()).add(name)
        found: set[str] = set()
        pending = list(roots)
        while pending:
            name = pending.pop()
            if name not in found:
                found.add(name)
                pending.extend(requires.get(name, ()))
        return found


def contents(layer: Layer, lock: Lock | None = None) -> dict[str, str]:
    """The packages a layer ships: name -> pinned version."""
    lock = lock or Lock.read()
    shipped_below = set().union(*(contents(LAYERS[name], lock) for name in layer.on_top_of))
    wanted = lock.closure(lock.direct(layer.requirements))
    left_out = shipped_below | set(NEVER_IMPORTED) | set(layer.unused or {})
    return {name: lock.versions[name] for name in sorted(wanted - left_out)}


def build(layer: Layer, architecture: str, site: Path, *, dependencies: bool = True) -> None:
    """The layer's `python/` directory: Lambda-platform wheels, our package, compiled bytecode."""
    site.mkdir(parents=True, exist_ok=True)
    pins = [f"{name}=={version}" for name, version in contents(layer).items()]
    platforms = [flag for p in PLATFORMS[architecture] for flag in ("--platform", p)]
    if dependencies and pins:
        subprocess.run(
            [
                *(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--upgrade"),
                *("--target", str(site), "--implementation", "cp", "--python-version", "3.12"),
                *("--only-binary=:all:", *platforms, *pins),
            ],
            check=True,
        )
    _slim(site)
    if layer.ships_package:
        shutil.copytree(
            HERE / PACKAGE,
            site / PACKAGE,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    # Lambda's file system is read-only, so Python cannot cache bytecode there itself: without it
    # the agent's cold import takes about 7 s instead of about 2.8 s (make bench). Unchecked-hash
    # pycs stay valid though Lambda's unpacked files carry other timestamps.
    subprocess.run(
        [
            *(sys.executable, "-m", "compileall", "-q", "-j", "0"),
            *("--invalidation-mode", "unchecked-hash", str(site)),
        ],
        check=True,
    )


def _slim(site: Path) -> None:
    """Lambda allows 250 MB unzipped for a function and its layers, and every megabyte is paid at
    each cold start's download: packages' test suites, type stubs and C headers, the botocore
    models of services nobody calls, and the debugging symbols of native libraries (uvloop's alone
    are 14 MB) do not go in (deploy.md, "Layers")."""
    for tests in [p for p in site.rglob("tests") if p.is_dir()]:
        shutil.rmtree(tests, ignore_errors=True)
    for pattern in ("*.pyi", "*.pxd", "*.h"):
        for path in site.rglob(pattern):
            path.unlink()
    models = site / "botocore" / "data"
    if models.is_dir():
        for model in models.iterdir():
            if model.is_dir() and model.name not in BOTOCORE_MODELS_KEPT:
                shutil.rmtree(model)
    native = [str(path) for path in sorted(site.rglob("*")) if _is_elf(path)]
    if native:
        # --strip-unneeded keeps the dynamic symbols a loader links against
        subprocess.run([_strip_tool(), "--strip-unneeded", *native], check=True)


def _is_elf(path: Path) -> bool:
    if not path.is_file() or path.is_symlink():
        return False
    with path.open("rb") as file:
        return file.read(4) == b"\x7fELF"


def _strip_tool() -> str:
    """LLVM's strip, which reads both architectures' machine code (GNU strip only the host's)."""
    for name in ("llvm-strip", *(f"llvm-strip-{v}" for v in range(21, 13, -1))):
        if found := shutil.which(name):
            return found
    raise SystemExit("layer_build: llvm-strip not found (Debian and Ubuntu: apt-get install llvm)")


def main(argv: list[str]) -> int:
    dependencies = "--no-dependencies" not in argv
    args = [arg for arg in argv if arg != "--no-dependencies"]
    if len(args) != 4 or args[0] != "build" or args[1] not in LAYERS or args[2] not in PLATFORMS:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    build(LAYERS[args[1]], args[2], Path(args[3]), dependencies=dependencies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
