"""Tests of deploy/ (without a server, without Docker) and of ``prdist release`` (without a server).

Oracles are the tools' own validators: Prefect's flow loader, parameter schema and validation,
deploy-time templating (``apply_values``), the server's trigger matching and Jinja rendering of
trigger parameters (the steps of ``RunDeployment.render_parameters``), the server's work-pool
template validator; the Prefect CLI's own argument parser (cyclopts), Dask's click commands and
the ``weed`` binary's flag list for every command in compose.yaml and the Kubernetes manifests.
No Docker engine runs here: compose.yaml and the manifests are validated structurally.
tests/integration/test_deploy_server.py runs the deployments on a real Prefect server.
"""

from __future__ import annotations

import copy
import datetime
import json
import re
import shlex
import socket
import subprocess
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.support.prefect_events import recorded_events

from prdist import population
from prdist.cli import main
from prdist.dataflow import synth
from prdist.errors import InputError, ParameterError
from flows.release import EVENT, RESOURCE_PREFIX, ReleaseEvent, emit_release, release_event

from tests.support.paths import ROOT  # noqa: E402
DEPLOY = ROOT / "deploy"
WEED = ROOT / ".venv" / "bin" / "weed"

# What the project promises (deploy/README.md): flow-name/deployment-name.
EXPECTED_DEPLOYMENTS = {
    "evaluate-release/nightly",
    "evaluate-release/on-release",
    "evaluate-release/on-labels",
    "compare-systems/compare",
    "synthesize-resource/synthesize",
}
# Parameters each run of an on-demand deployment names itself (no default on purpose).
RUN_PARAMETERS = {
    "compare-systems/compare": {"systems": {"v1": "s3://prdist/releases/v1", "v2": "s3://prdist/releases/v2"}, "budget": 2000},
    "synthesize-resource/synthesize": {"out": "s3://prdist/synthetic/binormal-2m-seed1"},
}
ENV_PLACEHOLDER = re.compile(r"{{\s*\$(\w+)\s*}}")


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of an env file (comments and blank lines skipped)."""
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


@pytest.fixture(scope="module")
def prefect_yaml() -> dict:
    return yaml.safe_load((DEPLOY / "prefect.yaml").read_text())


@pytest.fixture(scope="module")
def flows(prefect_yaml) -> dict:
    """{deployment name: the Flow its entrypoint loads}, through Prefect's own loader."""
    from prefect.flows import load_flow_from_entrypoint

    return {d["name"]: load_flow_from_entrypoint(d["entrypoint"]) for d in prefect_yaml["deployments"]}


def rendered_deployments(prefect_yaml, monkeypatch, env: dict[str, str]) -> dict[str, dict]:
    """The deployments as `prefect deploy` sees them with ``env`` set: Prefect's own templating."""
    from prefect.utilities.templating import apply_values

    for name in set(ENV_PLACEHOLDER.findall(json.dumps(prefect_yaml))):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    rendered = apply_values(copy.deepcopy(prefect_yaml), {}, remove_notset=False)
    return {d["name"]: d for d in rendered["deployments"]}


def server_event(event: ReleaseEvent):
    """The event as the server receives it."""
    return server_event_from_dict(event.to_dict())


def server_event_from_dict(body: dict):
    from prefect.server.events.schemas.events import Event

    return Event.model_validate(body).receive()


def render_trigger_parameters(parameters: dict, event) -> dict:
    """The steps of RunDeployment.render_parameters (prefect/server/events/actions.py)."""
    from prefect.server.events.actions import RunDeployment
    from prefect.utilities.schema_tools.hydration import HydrationContext, hydrate

    parameters = copy.deepcopy(parameters)
    RunDeployment._upgrade_v1_templates(parameters)
    return hydrate(parameters, HydrationContext(raise_on_error=True, render_jinja=True, jinja_context={"event": event}))


# ---------------------------------------------------------------------------------------------
# prefect.yaml


def test_every_entrypoint_loads_the_flow_it_names(prefect_yaml, flows):
    from prefect import Flow

    names = [d["name"] for d in prefect_yaml["deployments"]]
    # Module-path entrypoints make `prefect deploy --name` select by the deployment name alone.
    assert len(names) == len(set(names)), "deployment names must be unique in prefect.yaml"
    full_names = set()
    for deployment in prefect_yaml["deployments"]:
        flow = flows[deployment["name"]]
        assert isinstance(flow, Flow)
        module, _, function = deployment["entrypoint"].rpartition(".")
        assert ":" not in deployment["entrypoint"] and module.startswith("flows.")
        assert flow.fn.__name__ == function
        full_names.add(f"{flow.name}/{deployment['name']}")
    assert full_names == EXPECTED_DEPLOYMENTS
    # No pull step: the flows are the installed `flows` package, whatever the working directory.
    assert prefect_yaml["pull"] == []


def test_every_placeholder_is_documented_and_set_by_compose(prefect_yaml):
    placeholders = set(ENV_PLACEHOLDER.findall(json.dumps(prefect_yaml)))
    assert placeholders == {"PRDIST_RESOURCE", "PRDIST_RUNS", "PRDIST_LABELS", "PRDIST_SCHEDULER"}
    example = read_env_file(DEPLOY / "prdist.env.example")
    readme = (DEPLOY / "README.md").read_text()
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    register = compose["services"]["register-deployments"]["environment"]
    for name in placeholders:
        assert name in example, f"{name} missing from deploy/prdist.env.example"
        assert name in readme, f"{name} not documented in deploy/README.md"
        assert name in register, f"{name} not set for `prefect deploy` in compose.yaml"


@pytest.mark.parametrize(
    "env",
    [
        {"PRDIST_RESOURCE": "s3://prdist/releases/current", "PRDIST_RUNS": "s3://prdist/runs",
         "PRDIST_LABELS": "s3://prdist/labels", "PRDIST_SCHEDULER": "tcp://dask-scheduler:8786"},
        {"PRDIST_RESOURCE": "/data/kb", "PRDIST_RUNS": "/data/runs", "PRDIST_LABELS": "/data/labels",
         "PRDIST_SCHEDULER": ""},  # empty scheduler: a local cluster per run
    ],
    ids=["cluster", "local"],
)  # fmt: skip
def test_deployment_parameters_validate_against_the_flow_signature(prefect_yaml, flows, monkeypatch, env):
    from prefect.utilities.callables import parameter_schema
    from prefect.utilities.schema_tools.validation import validate

    deployments = rendered_deployments(prefect_yaml, monkeypatch, env)
    for name, deployment in deployments.items():
        flow = flows[name]
        full = f"{flow.name}/{name}"
        parameters = deployment.get("parameters") or {}
        assert not ENV_PLACEHOLDER.search(json.dumps(parameters)), f"{full}: unresolved placeholder"
        # As the server checks a deployment's own parameters: the schema, required ones aside.
        schema = parameter_schema(flow).model_dump_for_openapi()
        errors = validate(parameters, schema, ignore_required=True)
        assert not errors, f"{full}: {errors}"
        # A run: the deployment's parameters plus those each run names, through the flow itself.
        run = {**parameters, **RUN_PARAMETERS.get(full, {})}
        validated = flow.validate_parameters(run)
        assert {k: validated[k] for k in run} == run, f"{full}: the flow changed a parameter"
        if "scheduler" in parameters:
            assert parameters["scheduler"] == env["PRDIST_SCHEDULER"]


def test_nightly_deployment_runs_on_a_cron_schedule(prefect_yaml):
    import asyncio

    from prefect.server.schemas.schedules import CronSchedule  # what the server's scheduler runs

    nightly = next(d for d in prefect_yaml["deployments"] if d["name"] == "nightly")
    (schedule,) = nightly["schedules"]
    cron = CronSchedule(cron=schedule["cron"], timezone=schedule["timezone"])
    start = datetime.datetime(2026, 8, 1, 12, 0, tzinfo=datetime.timezone.utc)
    runs = asyncio.run(cron.get_dates(n=3, start=start))
    # One run a day, at the same time of day.
    assert [b - a for a, b in zip(runs, runs[1:])] == [datetime.timedelta(days=1)] * 2
    assert schedule["active"] is True and schedule["slug"]
    others = [d for d in prefect_yaml["deployments"] if d["name"] != "nightly"]
    assert all(not d.get("schedules") for d in others), "only the nightly deployment is scheduled"


def test_release_trigger_targets_the_release_event(prefect_yaml, monkeypatch):
    from prefect.events.schemas.deployment_triggers import DeploymentEventTrigger
    from prefect.server.events.schemas.automations import EventTrigger

    env = {"PRDIST_RESOURCE": "s3://prdist/releases/current", "PRDIST_RUNS": "s3://prdist/runs",
           "PRDIST_LABELS": "s3://prdist/labels", "PRDIST_SCHEDULER": ""}  # fmt: skip
    deployments = rendered_deployments(prefect_yaml, monkeypatch, env)
    on_release = deployments["on-release"]
    (spec,) = on_release["triggers"]
    trigger = DeploymentEventTrigger.model_validate(spec)
    trigger.set_deployment_id(uuid.uuid4())
    automation = trigger.as_automation()
    (action,) = automation.actions
    assert action.type == "run-deployment" and action.deployment_id == trigger._deployment_id
    server_trigger = EventTrigger.model_validate(automation.trigger.model_dump())

    event = server_event(release_event("s3://prdist/releases/2026-08"))
    assert server_trigger.expects(EVENT)
    assert server_trigger.covers(event)
    # Reactive, on the first event; announcements of one release within 60 s start one run, of
    # another release their own (one bucket per resource id).
    assert server_trigger.posture == "Reactive" and server_trigger.threshold == 1
    assert server_trigger.within.total_seconds() == 60 and server_trigger.for_each == {"prefect.resource.id"}
    again, another = server_event(release_event("s3://prdist/releases/2026-08")), server_event(release_event("s3://prdist/releases/2026-09"))
    assert server_trigger.bucketing_key(again) == server_trigger.bucketing_key(event) != server_trigger.bucketing_key(another)
    other = event.model_copy(update={"event": "prdist.release.retracted"})
    assert not server_trigger.covers(other)
    foreign = release_event("s3://prdist/releases/2026-08").to_dict()
    foreign["resource"] = {"prefect.resource.id": "acme.dataset.s3://prdist/releases/2026-08"}
    assert not server_trigger.covers(server_event_from_dict(foreign))
    # Every templated parameter is a parameter of the flow, and other ones are not touched.
    assert set(spec["parameters"]) == {"resource", "labels", "out"}
    # Only payload fields the event always carries are read (a missing one fails rendering).
    referenced = set(re.findall(r"event\.payload\.(\w+)", json.dumps(spec["parameters"])))
    assert referenced <= set(release_event("/x").to_dict()["payload"])


def _server_trigger(spec: dict):
    """A deployment trigger of prefect.yaml as the server's automation evaluates it."""
    from prefect.events.schemas.deployment_triggers import DeploymentEventTrigger
    from prefect.server.events.schemas.automations import EventTrigger

    trigger = DeploymentEventTrigger.model_validate(spec)
    trigger.set_deployment_id(uuid.uuid4())
    automation = trigger.as_automation()
    (action,) = automation.actions
    assert action.type == "run-deployment" and action.deployment_id == trigger._deployment_id
    return EventTrigger.model_validate(automation.trigger.model_dump())


def test_labels_trigger_reruns_on_imports_into_the_tracked_store(prefect_yaml, monkeypatch, tmp_path):
    from flows.events import LABELS_IMPORTED

    tracked = str(tmp_path / "labels")
    env = {"PRDIST_RESOURCE": "/data/kb", "PRDIST_RUNS": "/data/runs", "PRDIST_LABELS": tracked, "PRDIST_SCHEDULER": ""}
    on_labels = rendered_deployments(prefect_yaml, monkeypatch, env)["on-labels"]
    (spec,) = on_labels["triggers"]
    server_trigger = _server_trigger(spec)
    assert server_trigger.expects(LABELS_IMPORTED) and server_trigger.immediate and server_trigger.threshold == 1
    # The run re-evaluates the tracked resource with the deployment's own parameters.
    assert "parameters" not in spec and on_labels["parameters"]["labels"] == tracked

    (tmp_path / "done.csv").write_text("key,label\na,1\n")
    with recorded_events(monkeypatch) as sent:
        monkeypatch.chdir(tmp_path)
        assert main(["labels", "import", "--store", tracked, "done.csv"]) == 0
        assert main(["labels", "import", "--store", "labels", "done.csv"]) == 0  # the same store, relative
        assert main(["labels", "import", "--store", str(tmp_path / "other"), "done.csv"]) == 0
        events = [server_event_from_dict(json.loads(e.model_dump_json())) for e in sent()]
    assert [server_trigger.covers(e) for e in events] == [True, True, False]


def _shipped_automation(name: str, block_id: str | None = str(uuid.UUID(int=7))):
    """An automation of deploy/automations/, as deploy/automations.py makes it (Prefect's own model)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("deploy_automations", DEPLOY / "automations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.automation(yaml.safe_load((DEPLOY / "automations" / name).read_text()), block_id)


def test_shipped_alert_automation_notifies_on_a_certain_drop():
    """deploy/automations/precision-dropped.yaml: Prefect's own model accepts it; it matches drops only."""
    from prefect.server.events.schemas.automations import EventTrigger

    automation = _shipped_automation("precision-dropped.yaml")
    (action,) = automation.actions
    assert action.type == "send-notification" and "event.payload.ranks" in action.body
    assert str(action.block_document_id) == str(uuid.UUID(int=7))
    assert _shipped_automation("precision-dropped.yaml", None) is None  # no block named: not created
    trigger = EventTrigger.model_validate(automation.trigger.model_dump())

    def changed(direction):
        return server_event_from_dict({
            "id": str(uuid.uuid4()), "occurred": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "event": "prdist.precision.changed",
            "resource": {"prefect.resource.id": "prdist.series.s3://kb/releases", "prdist.direction": direction},
            "payload": {"series": "s3://kb/releases", "ranks": [1000]},
        })  # fmt: skip

    assert trigger.covers(changed("down")) and not trigger.covers(changed("up"))


def test_shipped_automation_notifies_once_per_run_awaiting_labels(monkeypatch, tmp_path):
    """deploy/automations/awaiting-labels.yaml matches the event a run awaiting labels sends (once)."""
    from prefect.server.events.schemas.automations import EventTrigger

    from flows.events import AWAITING_LABELS, announce_run
    from prdist.dataflow.io.artifacts import RunOutcome

    automation = _shipped_automation("awaiting-labels.yaml")
    (action,) = automation.actions
    assert action.type == "send-notification" and "event.payload.task" in action.body
    trigger = EventTrigger.model_validate(automation.trigger.model_dump())
    manifest = {"run_id": "abc", "series": "s3://kb/releases", "n": 10, "counts": {"awaiting": 3},
                "input": {"url": "s3://kb/releases/r1"}}  # fmt: skip
    outcome = RunOutcome(str(tmp_path / "runs" / "abc"), manifest, 3, str(tmp_path / "runs" / "abc" / "annotation_task.csv"))
    with recorded_events(monkeypatch) as sent:
        announce_run(outcome, runs=str(tmp_path / "runs"))
        announce_run(outcome, runs=str(tmp_path / "runs"))  # a rerun that finds the run: nothing more
        events = [server_event_from_dict(json.loads(e.model_dump_json())) for e in sent()]
    assert [trigger.covers(e) for e in events] == [False, True] and events[1].event == AWAITING_LABELS


@pytest.mark.parametrize(
    "labels, out",
    [(None, None), ("s3://prdist/labels-b", "s3://prdist/runs-b")],
    ids=["deployment-defaults", "from-event"],
)
def test_trigger_renders_the_event_into_valid_flow_parameters(prefect_yaml, flows, monkeypatch, labels, out):
    env = {"PRDIST_RESOURCE": "s3://prdist/releases/current", "PRDIST_RUNS": "s3://prdist/runs",
           "PRDIST_LABELS": "s3://prdist/labels", "PRDIST_SCHEDULER": "tcp://dask-scheduler:8786"}  # fmt: skip
    deployments = rendered_deployments(prefect_yaml, monkeypatch, env)
    on_release = deployments["on-release"]
    event = release_event("s3://prdist/releases/2026-08", labels=labels, out=out)
    rendered = render_trigger_parameters(on_release["triggers"][0]["parameters"], server_event(event))
    assert rendered == {
        "resource": "s3://prdist/releases/2026-08",
        "labels": labels or env["PRDIST_LABELS"],
        "out": out or env["PRDIST_RUNS"],
    }
    # The server merges the action's parameters over the deployment's.
    run = {**on_release["parameters"], **rendered}
    assert flows["on-release"].validate_parameters(run)["resource"] == "s3://prdist/releases/2026-08"
    assert run["scheduler"] == env["PRDIST_SCHEDULER"]


def test_synthesize_deployment_describes_its_model_as_json(prefect_yaml):
    synthesize = next(d for d in prefect_yaml["deployments"] if d["name"] == "synthesize")
    description = synthesize["parameters"]["model"]
    json.dumps(description)  # a deployment parameter must be JSON
    # The description format that synthetic resources record in their metadata.
    model = synth.model_from_description(description)
    assert isinstance(model, population.ScoreModel)
    assert synth.describe_model(model) == {
        "family": description["family"],
        "parameters": {k: list(v) if isinstance(v, list) else v for k, v in description["parameters"].items()},
    }


# ---------------------------------------------------------------------------------------------
# compose.yaml and the Dockerfile


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def prefect_cli():
    from prefect.cli._app import _app

    def parse(tokens):
        _app.parse_args(tokens, exit_on_error=False, print_error=False)

    return parse


def _command(service: dict) -> list[str]:
    command = service["command"]
    if isinstance(command, str):
        command = shlex.split(command)
    if command[:2] == ["sh", "-c"]:
        return command
    return list(command)


def _check_dask(tokens: list[str]) -> dict:
    from distributed.cli import dask_scheduler, dask_worker

    assert tokens[0] == "dask"
    command = {"scheduler": dask_scheduler.main, "worker": dask_worker.main}[tokens[1]]
    with command.make_context(f"dask {tokens[1]}", list(tokens[2:])) as context:
        return dict(context.params)


def _weed_flags() -> set[str]:
    text = subprocess.run([str(WEED), "server", "-h"], capture_output=True, text=True, timeout=60)
    return set(re.findall(r"^\s+-([\w.]+)", text.stdout + text.stderr, flags=re.M))


def test_compose_has_the_stack(compose):
    services = compose["services"]
    assert set(services) == {
        "prefect-server", "prefect-worker", "register-deployments", "dask-scheduler", "dask-worker",
        "seaweedfs", "create-bucket",
    }  # fmt: skip
    prdist_services = {name for name, s in services.items() if s.get("image", "").startswith("prdist:")}
    assert prdist_services == set(services) - {"seaweedfs"}
    # One image, built once from deploy/Dockerfile with the project root as context, never pulled.
    builders = [name for name in prdist_services if "build" in services[name]]
    assert builders == ["prefect-server"]
    build = services["prefect-server"]["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
    assert len({services[name]["image"] for name in prdist_services}) == 1
    assert all(services[name]["pull_policy"] == "never" for name in prdist_services - {"prefect-server"})
    assert services["dask-worker"]["deploy"]["replicas"] == 2
    assert services["seaweedfs"]["image"].startswith("chrislusf/seaweedfs:")
    for name, service in services.items():
        for dependency, condition in _depends_on(service).items():
            assert dependency in services, f"{name} depends on unknown {dependency}"
            if condition == "service_healthy":
                assert "healthcheck" in services[dependency]
            if condition == "service_completed_successfully":
                assert services[dependency]["restart"] == "no"
    published = [p.split(":")[-2] for s in services.values() for p in s.get("ports", [])]  # [ADDRESS:]HOST:CONTAINER
    assert len(published) == len(set(published)), "a host port is published twice"


def _depends_on(service: dict) -> dict:
    depends = service.get("depends_on", {})
    if isinstance(depends, list):
        return {name: "service_started" for name in depends}
    return {name: spec.get("condition", "service_started") for name, spec in depends.items()}


def test_compose_commands_are_real_entrypoints(compose, prefect_cli):
    services = compose["services"]
    bins = ROOT / ".venv" / "bin"
    for name, service in services.items():
        if name == "seaweedfs":
            continue
        tokens = _command(service)
        if tokens[0] in ("python", "sh"):
            script = tokens[1]
            assert script.startswith("/app/deploy/"), "scripts are copied to /app/deploy by the Dockerfile"
            assert (DEPLOY / script.removeprefix("/app/deploy/")).is_file()
            steps = _register_commands() if script.endswith("register.sh") else []
        else:
            steps = [tokens]
        for step in steps:
            assert (bins / step[0]).exists(), f"{name}: no executable {step[0]}"
            if step[0] == "prefect":
                prefect_cli(step[1:])  # raises on an unknown command or option
            elif step[0] == "dask":
                _check_dask(step)
    # SeaweedFS: every flag exists in the weed binary the lock pins (the image has the same version).
    weed = _command(services["seaweedfs"])
    assert weed[0] == "server"
    assert services["seaweedfs"]["image"].endswith(":" + _weed_version())
    unknown = {arg.lstrip("-").split("=")[0] for arg in weed[1:]} - _weed_flags()
    assert not unknown, f"weed server has no flags {unknown}"


def _register_commands() -> list[list[str]]:
    """The prefect commands of deploy/register.sh, for each deployment it registers by default."""
    text = (DEPLOY / "register.sh").read_text()
    names = shlex.split(re.search(r"set -- (.*)$", text, flags=re.M).group(1))
    commands = []
    for line in text.splitlines():
        match = re.search(r"\b(prefect .*?)(?:\s+2>&1\)|$)", line.strip())
        if match and not line.strip().startswith("#"):
            for name in names if '"$name"' in match.group(1) else [None]:
                commands.append(shlex.split(match.group(1).replace('"$name"', name or "")))
    return commands


def test_register_script_deploys_every_deployment(prefect_yaml):
    commands = _register_commands()
    assert commands[0][:3] == ["prefect", "work-pool", "create"]
    deployed = [c[c.index("--name") + 1] for c in commands if c[1] == "deploy"]
    # The name `automations` is deploy/automations.py's step, not a deployment.
    assert sorted(set(deployed) - {"automations"}) == sorted(d["name"] for d in prefect_yaml["deployments"])
    assert 'if [ "$name" = automations ]; then python deploy/automations.py; continue; fi' in (DEPLOY / "register.sh").read_text()
    assert all(c[c.index("--prefect-file") + 1] == "deploy/prefect.yaml" for c in commands if c[1] == "deploy")


def _weed_version() -> str:
    out = subprocess.run([str(WEED), "version"], capture_output=True, text=True, timeout=60).stdout
    return re.search(r"version\s+\S*?\s*(\d+\.\d+)", out).group(1)


def test_compose_wiring_is_consistent(compose):
    services = compose["services"]

    def env(name):
        return services[name].get("environment", {})

    # S3: the endpoint every prdist service uses is the SeaweedFS service and its S3 port.
    s3_port = next(a.split("=")[1] for a in _command(services["seaweedfs"]) if a.startswith("-s3.port="))
    for name in ("create-bucket", "dask-worker", "prefect-worker"):
        assert env(name)["AWS_ENDPOINT_URL"] == f"http://seaweedfs:{s3_port}"
        assert env(name)["AWS_ACCESS_KEY_ID"] == env("seaweedfs")["AWS_ACCESS_KEY_ID"]
        assert env(name)["AWS_SECRET_ACCESS_KEY"] == env("seaweedfs")["AWS_SECRET_ACCESS_KEY"]
    assert any(p.endswith(f":{s3_port}:{s3_port}") for p in services["seaweedfs"]["ports"])
    # Prefect: the API every client uses is the server's host and port.
    server = _command(services["prefect-server"])
    port = server[server.index("--port") + 1]
    for name in ("register-deployments", "prefect-worker"):
        assert env(name)["PREFECT_API_URL"] == f"http://prefect-server:{port}/api"
    assert f"127.0.0.1:{port}" in " ".join(services["prefect-server"]["healthcheck"]["test"])
    # Dask: the scheduler the workers join is the one the flows get as their `scheduler` parameter.
    scheduler = _check_dask(_command(services["dask-scheduler"]))
    address = f"tcp://dask-scheduler:{scheduler['port']}"
    assert _check_dask(_command(services["dask-worker"]))["scheduler"] == address
    assert env("register-deployments")["PRDIST_SCHEDULER"] == address
    # The bucket the init job creates holds the runs, the labels and the tracked resource.
    bucket = _command(services["create-bucket"])[2]
    for name in ("PRDIST_RUNS", "PRDIST_LABELS", "PRDIST_RESOURCE"):
        value = env("register-deployments")[name]
        value = re.sub(r"\$\{\w+:-(.*)\}", r"\1", value)  # ${VAR:-default}
        assert urlsplit(value).netloc == bucket and value.startswith("s3://"), name
    # The worker that runs the flows polls the pool the deployments and the pool command name.
    worker = _command(services["prefect-worker"])
    pool = worker[worker.index("--pool") + 1]
    create = next(c for c in _register_commands() if c[1:3] == ["work-pool", "create"])
    assert create[3] == pool and create[create.index("--type") + 1] == "process"
    assert yaml.safe_load((DEPLOY / "prefect.yaml").read_text())["definitions"]["work_pool"]["name"] == pool


def test_compose_variables_come_from_the_env_example(compose):
    text = (DEPLOY / "compose.yaml").read_text()
    used = set(re.findall(r"\$\{(\w+)", text))
    example = read_env_file(DEPLOY / ".env.example")
    assert used <= set(example), f"compose.yaml uses {used - set(example)} that deploy/.env.example lacks"
    # The local copies with credentials stay out of git.
    ignored = (DEPLOY / ".gitignore").read_text().splitlines()
    assert {".env", "prdist.env", "kubernetes/s3.env"} <= set(ignored)


def test_dockerfile_builds_a_locked_non_root_image():
    text = (DEPLOY / "Dockerfile").read_text()
    instructions = [line.split(None, 1) for line in text.splitlines() if line and not line.startswith("#") and not line.startswith(" ")]
    users = [args.strip() for op, *rest in instructions if op == "USER" for args in rest]
    assert users and users[-1] not in ("root", "0"), "the image must end as a non-root user"
    assert "uv pip sync" in text and "deploy/requirements-runtime.lock" in text  # tests/integration/test_deploy_manifests.py
    assert re.search(r'UV_VERSION=([\d.]+)', text).group(1) == re.search(
        r"UV_VERSION\s*:=\s*([\d.]+)", (ROOT / "Makefile").read_text()
    ).group(1), "the image uses the uv version of the Makefile"
    for op, *rest in instructions:
        if op == "COPY" and not rest[0].startswith("--from"):
            *sources, _ = rest[0].split()
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the project"
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text()
    for needed in ("pyproject.toml", "prdist/", "flows/", "deploy/"):
        assert f"!{needed}" in ignore
    # What .gitignore keeps out of git stays out of the image too.
    for line in (DEPLOY / ".gitignore").read_text().splitlines():
        if line and not line.startswith("#"):
            assert f"deploy/{line}" in ignore.splitlines(), line


# ---------------------------------------------------------------------------------------------
# Kubernetes


@pytest.fixture(scope="module")
def daskcluster() -> dict:
    return yaml.safe_load((DEPLOY / "kubernetes" / "daskcluster.yaml").read_text())


@pytest.fixture(scope="module")
def job_template() -> dict:
    return json.loads((DEPLOY / "kubernetes" / "base-job-template.json").read_text())


def test_daskcluster_manifest(daskcluster, compose):
    assert daskcluster["apiVersion"] == "kubernetes.dask.org/v1"
    assert daskcluster["kind"] == "DaskCluster"
    spec = daskcluster["spec"]
    (worker,) = spec["worker"]["spec"]["containers"]
    (scheduler,) = spec["scheduler"]["spec"]["containers"]
    image = compose["services"]["dask-worker"]["image"].replace("${PRDIST_IMAGE_TAG:-0.1.0}", "0.1.0")
    assert worker["image"] == scheduler["image"] == image
    assert spec["worker"]["replicas"] >= 1
    scheduler_params = _check_dask(scheduler["args"])
    _check_dask(worker["args"])  # the operator passes the scheduler address as DASK_SCHEDULER_ADDRESS
    ports = {p["name"]: p["containerPort"] for p in scheduler["ports"]}
    assert ports["tcp-comm"] == int(scheduler_params["port"])
    assert scheduler_params["dashboard_address"].endswith(f":{ports['http-dashboard']}")
    service = spec["scheduler"]["service"]
    assert service["selector"] == {"dask.org/cluster-name": daskcluster["metadata"]["name"], "dask.org/component": "scheduler"}
    assert {p["targetPort"] for p in service["ports"]} <= set(ports)
    for probe in ("readinessProbe", "livenessProbe"):
        assert scheduler[probe]["httpGet"]["port"] in ports


def test_work_pool_template_points_runs_at_the_dask_cluster(job_template, daskcluster):
    from prefect.server.schemas.actions import validate_base_job_template
    from prefect.utilities.schema_tools.validation import validate
    from prefect.utilities.templating import apply_values

    validate_base_job_template(job_template)  # the server's own check of a pool's template
    variables = job_template["variables"]
    defaults = {name: spec["default"] for name, spec in variables["properties"].items() if "default" in spec}
    assert not validate(defaults, variables, ignore_required=True)
    metadata = daskcluster["metadata"]
    port = next(p["port"] for p in daskcluster["spec"]["scheduler"]["service"]["ports"] if p["name"] == "tcp-comm")
    assert defaults["dask_scheduler_address"] == f"tcp://{metadata['name']}-scheduler.{metadata['namespace']}.svc.cluster.local:{port}"
    assert defaults["namespace"] == metadata["namespace"]
    assert defaults["image"] == daskcluster["spec"]["worker"]["spec"]["containers"][0]["image"]
    assert urlsplit(defaults["env"]["PREFECT_API_URL"]).path == "/api"
    secret = daskcluster["spec"]["worker"]["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"]
    assert defaults["s3_secret_name"] == secret
    # A deployment's job variables override the defaults and still validate.
    override = {**defaults, "dask_scheduler_address": "tcp://dask.elsewhere:8786"}
    assert not validate(override, variables, ignore_required=True)
    # Render the job as the worker does (Prefect's templating) and look at the pod.
    configuration = apply_values(job_template["job_configuration"], override)
    (container,) = configuration["job_manifest"]["spec"]["template"]["spec"]["containers"]
    assert {"name": "DASK_SCHEDULER_ADDRESS", "value": "tcp://dask.elsewhere:8786"} in container["env"]
    assert container["envFrom"] == [{"secretRef": {"name": secret}}]
    assert container["image"] == defaults["image"]
    assert configuration["env"]["PREFECT_API_URL"] == defaults["env"]["PREFECT_API_URL"]


# ---------------------------------------------------------------------------------------------
# prdist release (no server)


def test_release_event_matches_prefects_event_schema():
    from prefect.events import Event

    occurred = datetime.datetime(2026, 8, 1, 3, 0, tzinfo=datetime.timezone.utc)
    event = release_event("s3://releases/kb", labels="s3://prdist/labels", occurred=occurred, event_id=uuid.UUID(int=7))
    parsed = Event.model_validate(event.to_dict())
    assert parsed.event == EVENT == "prdist.release.published"
    assert parsed.resource.id == RESOURCE_PREFIX + "s3://releases/kb"
    assert parsed.payload == {"resource": "s3://releases/kb", "labels": "s3://prdist/labels", "out": None}
    assert parsed.occurred == occurred and parsed.id == uuid.UUID(int=7)
    assert release_event("/data/kb").id != release_event("/data/kb").id  # fresh ids by default


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"resource": ""}, ParameterError, "must be a path or URL"),
        ({"resource": 7}, ParameterError, "must be a path or URL"),
        ({"resource": " /data/kb"}, ParameterError, "blanks"),
        ({"resource": "relative/kb"}, InputError, "relative path"),
        ({"resource": "/data/kb", "labels": "labels"}, InputError, "relative path"),
        ({"resource": "https://alice:pw@example.org/kb"}, InputError, "embeds credentials"),
        ({"resource": "/data/kb", "out": "https://h/runs?X-Amz-Signature=abc"}, InputError, "embeds credentials"),
        ({"resource": "/data/kb", "occurred": datetime.datetime(2026, 8, 1)}, ParameterError, "timezone-aware"),
        ({"resource": "/data/kb", "event_id": "123"}, ParameterError, "uuid.UUID"),
    ],
)  # fmt: skip
def test_release_event_refuses_bad_input(kwargs, error, fragment):
    resource = kwargs.pop("resource")
    with pytest.raises(error, match=fragment) as info:
        release_event(resource, **kwargs)
    # A refused secret is not echoed back.
    assert "pw@" not in str(info.value) and "abc" not in str(info.value)


def test_release_event_keeps_urls_without_secrets_verbatim():
    for url in ("s3://bucket/kb 2026", "https://host/kb?part=1&name=a%20b", "gs://b/kb", "/data/kb"):
        assert release_event(url).resource == url


def test_release_dry_run_prints_the_event_without_a_server(capsys):
    assert main(["release", "--resource", "s3://releases/kb", "--out", "s3://prdist/runs", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    body = json.loads(out)
    assert err == ""
    assert body["event"] == EVENT
    assert body["resource"]["prefect.resource.id"] == RESOURCE_PREFIX + "s3://releases/kb"
    assert body["payload"] == {"resource": "s3://releases/kb", "labels": None, "out": "s3://prdist/runs"}
    uuid.UUID(body["id"])
    datetime.datetime.fromisoformat(body["occurred"])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["release"], "--resource"),
        (["release", "--resource", "kb/relative"], "relative path"),
        (["release", "--resource", "s3://kb", "--storage-options", "{}"], "unrecognized arguments"),
        (["release", "--resource", "https://u:hunter2@h/kb"], "embeds credentials"),
        (["release", "--resource", "s3://kb", "--api-url", "ftp://h/api"], "http(s) URL"),
        (["release", "--resource", "s3://kb", "--api-url", "http://127.0.0.1:{port}/api"], "does not answer"),
    ],
    ids=["no-resource", "relative", "storage-options", "credentials", "not-http", "unreachable"],
)
def test_release_refuses_bad_input_with_exit_2(capsys, argv, fragment):
    argv = [arg.replace("{port}", str(_closed_port())) for arg in argv]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("prdist: error: ") and err.count("\n") == 1
    assert fragment in err
    assert "hunter2" not in err


def test_release_without_a_configured_api_exits_2(capsys):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        assert main(["release", "--resource", "s3://releases/kb"]) == 2
    _, err = capsys.readouterr()
    assert "No Prefect API" in err and "PREFECT_API_URL" in err


def test_emit_release_refuses_anything_but_an_event():
    with pytest.raises(ParameterError, match="ReleaseEvent"):
        emit_release({"event": EVENT}, api_url="http://127.0.0.1:1/api")


# ---------------------------------------------------------------------------------------------
# deploy/README.md


def test_tls_scheduler_through_dask_configuration(tmp_path, monkeypatch):
    """The README's recipe for TLS schedulers (Coiled, dask-gateway): certificates via DASK_* variables."""
    import dask
    from distributed import Client, LocalCluster
    from distributed.security import Security

    from prdist.dataflow.engine.cluster import dask_client

    security = Security.temporary()
    pems = {"CA_FILE": security.tls_ca_file, "CLIENT__CERT": security.tls_client_cert, "CLIENT__KEY": security.tls_client_key}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, security=security,
                      protocol="tls://", dashboard_address="127.0.0.1:0", scheduler_kwargs={"dashboard": False},
                      worker_dashboard_address=None) as cluster:  # fmt: skip
        address = cluster.scheduler_address
        assert address.startswith("tls://")
        with pytest.raises(Exception):  # the address alone is not enough
            Client(address, timeout="5s")
        try:
            for name, pem in pems.items():
                path = tmp_path / f"{name.lower()}.pem"
                path.write_text(pem)
                monkeypatch.setenv(f"DASK_DISTRIBUTED__COMM__TLS__{name}", str(path))
            dask.config.refresh()
            with dask_client(address) as client:
                assert client.submit(sum, [1, 2, 3]).result(timeout=60) == 6
        finally:
            monkeypatch.undo()
            dask.config.refresh()


def _readme_commands(program: str) -> list[list[str]]:
    """Shell commands of deploy/README.md's code blocks that start with ``program``."""
    text = (DEPLOY / "README.md").read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            tokens = shlex.split(line) if line else []
            while tokens and re.fullmatch(r"\w+=\S*", tokens[0]):  # leading VAR=value
                tokens.pop(0)
            if tokens and tokens[0] == program:
                commands.append(tokens[1:])
    return commands


def test_readme_prefect_commands_parse(prefect_cli):
    commands = _readme_commands("prefect")
    assert {c[0] for c in commands} >= {"server", "worker", "deployment", "work-pool", "deploy"}
    for tokens in commands:
        # <placeholders> of the README: a UUID where the CLI wants one, a word elsewhere.
        tokens = [str(uuid.uuid4()) if t == "<schedule-id>" else t for t in tokens]
        prefect_cli(tokens)


def test_readme_prdist_commands_parse():
    from prdist.cli import build_parser

    commands = _readme_commands("prdist")
    assert {c[0] for c in commands} >= {"release", "synth"}
    for tokens in commands:
        build_parser().parse_args(tokens)  # raises InputError on an unknown option


def test_image_dask_config_matches_the_local_clusters():
    # deploy/dask.yaml (baked into the image) gives deployed workers the malloc thresholds
    # prdist's own local clusters get; the two must not drift apart.
    from prdist.dataflow.engine.cluster import WORKER_MALLOC_CONFIG

    config = yaml.safe_load((DEPLOY / "dask.yaml").read_text())
    environ = config["distributed"]["nanny"]["pre-spawn-environ"]
    expected = {key.rsplit(".", 1)[1]: value for key, value in WORKER_MALLOC_CONFIG.items()}
    assert environ == expected
    assert "COPY deploy/dask.yaml /etc/dask/dask.yaml" in (DEPLOY / "Dockerfile").read_text()
