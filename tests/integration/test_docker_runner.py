"""The Docker runner against the real engine and the real sandbox image.

The first run builds the image through ``ensure_image()`` (about a minute on a machine
without a registry, where it debootstraps the base; instant once built). Most tests swap the
harness for a small ``python3 -c`` probe, to check what a submission sees from inside the
sandbox; one runs the real harness on the reference solution.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from grader.errors import GraderError, InfraError
from grader.image import SANDBOX_DIR, docker_client, ensure_image, image_recipe, recipe_digest
from grader.runners.base import ContainerLimits, RawRun
from grader.runners.docker import DockerRunner, reap_leftovers

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
LABEL = "autograd-grader"
LIMITS = ContainerLimits(wall_seconds=30.0, memory_mb=256, cpus=1.0, pids=32, stdout_bytes=256 * 1024, tmpfs_mb=16)
PLAN = b'{"probes": [], "secret": "only root reads this"}'
SOURCE = b"class Value:\n    pass\n"
CAP_KILL, CAP_SETGID, CAP_SETUID = 5, 6, 7
# Other test sessions may share this engine: every run here carries this label, and only
# containers and volumes carrying it are checked or reaped.
SESSION = {f"{LABEL}.test-session": uuid.uuid4().hex}


@pytest.fixture(scope="module")
def client() -> docker.DockerClient:
    try:
        return docker_client()
    except GraderError as error:
        pytest.skip(f"Docker unavailable: {error}")


@pytest.fixture(scope="module")
def image(client: docker.DockerClient) -> str:
    return ensure_image()


def leftovers(client: docker.DockerClient) -> tuple[list[str], list[str]]:
    wanted = [LABEL] + [f"{key}={value}" for key, value in SESSION.items()]
    containers = [c.name for c in client.containers.list(all=True, filters={"label": wanted})]
    volumes = [v.name for v in client.volumes.list(filters={"label": wanted})]
    return containers, volumes


@pytest.fixture
def clean(client: docker.DockerClient, image: str) -> Iterator[None]:
    yield
    found = leftovers(client)
    reap_leftovers(client, labels=SESSION)  # so one leak fails one test, not every later one
    assert found == ([], []), "a container or volume outlived its run"


def runner(client: docker.DockerClient, image: str, command: list[str] | None = None) -> DockerRunner:
    if command is None:
        return DockerRunner(image=image, client=client, labels=SESSION)
    return DockerRunner(image=image, client=client, labels=SESSION, command=command)


def probe(client: docker.DockerClient, image: str, script: str, limits: ContainerLimits = LIMITS) -> RawRun:
    return runner(client, image, ["python3", "-I", "-B", "-c", script]).run(
        source=SOURCE, filename="autograd_lab.py", plan=PLAN, limits=limits
    )


INSIDE = r"""
import json, os, resource, socket, subprocess, sys

facts = {}
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
facts["uid"] = os.getuid()
facts["cap_eff"] = int(status["CapEff"].strip(), 16)
facts["no_new_privs"] = status["NoNewPrivs"].strip()
facts["pid1"] = open("/proc/1/cmdline", "rb").read().split(b"\0")[0].decode()
facts["nets"] = sorted(os.listdir("/sys/class/net"))
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    facts["connect"] = "ok"
except OSError as error:
    facts["connect"] = type(error).__name__

def can_write(path):
    try:
        with open(path, "w") as handle:
            handle.write("x")
        return True
    except OSError:
        return False

facts["write_root"] = can_write("/planted")
facts["write_opt"] = can_write("/opt/ag/sandbox/run_harness.py")
facts["write_tmp"] = can_write("/tmp/scratch")
with open("/tmp/run.sh", "w") as handle:
    handle.write("#!/bin/sh\necho ran\n")
os.chmod("/tmp/run.sh", 0o755)
try:
    subprocess.run(["/tmp/run.sh"], check=True, capture_output=True)
    facts["exec_tmp"] = "ran"
except OSError as error:
    facts["exec_tmp"] = type(error).__name__
facts["limits"] = {name: list(resource.getrlimit(getattr(resource, "RLIMIT_" + name.upper())))
                   for name in ("core", "fsize", "nofile")}
facts["env"] = {k: os.environ.get(k) for k in ("HOME", "LANG", "PYTHONHASHSEED", "OPENBLAS_NUM_THREADS")}
facts["cwd"] = os.getcwd()
facts["plan"] = open("/sandbox/plan.json").read()
facts["modes"] = {p: [oct(os.stat(p).st_mode & 0o7777), os.stat(p).st_uid]
                  for p in ("/sandbox/plan.json", "/sandbox/submission", "/sandbox/submission/autograd_lab.py")}

read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(read)
    os.setgroups([]); os.setgid(10002); os.setuid(10002)
    seen = {}
    for name, path in (("plan", "/sandbox/plan.json"), ("submission", "/sandbox/submission/autograd_lab.py")):
        try:
            open(path).read()
            seen[name] = "read"
        except OSError as error:
            seen[name] = type(error).__name__
    seen["write_sandbox"] = can_write("/sandbox/planted")
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    seen["msgget"] = libc.msgget(0x1234, 0o1600) != -1
    seen["semget"] = libc.semget(0x1235, 1, 0o1600) != -1
    seen["shmget"] = libc.shmget(0, 4096, 0o1600) != -1
    seen["dev_shm"] = os.path.exists("/dev/shm")
    try:
        os.kill(1, 9)
        seen["kill_pid1"] = "sent"
    except OSError as error:
        seen["kill_pid1"] = type(error).__name__
    os.write(write, json.dumps(seen).encode())
    os._exit(0)
os.close(write)
facts["student"] = json.loads(os.read(read, 65536))
os.waitpid(pid, 0)
print(json.dumps(facts))
sys.stderr.write("done\n")
"""


def test_what_a_submission_sees_from_inside(client: docker.DockerClient, image: str, clean: None) -> None:
    result = probe(client, image, INSIDE)
    assert result.exit_code == 0, result.stderr_tail
    facts = json.loads(result.stdout)
    assert facts["uid"] == 0
    # Exactly the three capabilities the harness needs to drop to and control the student uid.
    assert facts["cap_eff"] == (1 << CAP_KILL) | (1 << CAP_SETGID) | (1 << CAP_SETUID)
    assert facts["no_new_privs"] == "1"
    assert "init" in facts["pid1"]  # docker-init, not the harness, is PID 1
    assert facts["nets"] == ["lo"] and facts["connect"] != "ok"
    assert facts["write_root"] is False and facts["write_opt"] is False
    assert facts["write_tmp"] is True and facts["exec_tmp"] == "PermissionError"
    assert facts["limits"] == {"core": [0, 0], "fsize": [8 << 20, 8 << 20], "nofile": [256, 256]}
    assert facts["env"] == {"HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}
    assert facts["cwd"] == "/sandbox"
    assert facts["plan"] == PLAN.decode()
    assert facts["modes"] == {
        "/sandbox/plan.json": ["0o400", 0],
        "/sandbox/submission": ["0o500", 0],
        "/sandbox/submission/autograd_lab.py": ["0o400", 0],
    }
    # As uid 10002: the plan and the submission (children get their own task) are out of reach,
    # /sandbox not writable.
    assert facts["student"] == {
        "plan": "PermissionError",
        "submission": "PermissionError",
        "write_sandbox": False,
        "msgget": False,  # no System V queue, semaphore or segment can carry anything between runs
        "semget": False,
        "shmget": False,
        "dev_shm": False,
        "kill_pid1": "PermissionError",
    }
    assert result.stderr_tail == b"done\n"
    assert not (result.timed_out or result.stdout_truncated or result.oom_killed)


def test_stdout_past_the_cap_stops_the_run(client: docker.DockerClient, image: str, clean: None) -> None:
    limits = ContainerLimits(**{**LIMITS.__dict__, "stdout_bytes": 10_000})
    result = probe(client, image, "while True: print('x' * 999, flush=True)", limits)
    assert result.stdout_truncated and len(result.stdout) == 10_000
    assert result.exit_code is None and not result.timed_out
    assert result.elapsed < 10


def test_the_wall_deadline_kills(client: docker.DockerClient, image: str, clean: None) -> None:
    limits = ContainerLimits(**{**LIMITS.__dict__, "wall_seconds": 2.0})
    result = probe(client, image, "import time\nprint('started', flush=True)\ntime.sleep(120)", limits)
    assert result.timed_out and result.exit_code is None
    assert result.stdout == b"started\n"
    assert 2.0 <= result.elapsed < 10


def test_memory_over_the_limit_is_an_oom_kill(client: docker.DockerClient, image: str, clean: None) -> None:
    limits = ContainerLimits(**{**LIMITS.__dict__, "memory_mb": 64})
    result = probe(client, image, "hog = []\nwhile True: hog.append(bytearray(8 << 20))", limits)
    assert result.oom_killed and result.exit_code == 137 and not result.timed_out


def test_pids_limit_stops_a_thread_bomb(client: docker.DockerClient, image: str, clean: None) -> None:
    script = (
        "import threading, time\nn = 0\n"
        "try:\n"
        "    while n < 500:\n"
        "        threading.Thread(target=time.sleep, args=(30,), daemon=True).start(); n += 1\n"
        "except RuntimeError:\n    pass\n"
        "print(n)"
    )
    result = probe(client, image, script)
    assert result.exit_code == 0, result.stderr_tail
    assert int(result.stdout) < LIMITS.pids


def test_an_engine_refusal_is_an_infra_error_and_leaves_nothing(
    client: docker.DockerClient, image: str, clean: None
) -> None:
    # The engine refuses memory limits under 6 MB at create time, after the volume exists.
    refused = ContainerLimits(**{**LIMITS.__dict__, "memory_mb": 1})
    with pytest.raises(InfraError, match="memory"):
        runner(client, image).run(source=SOURCE, filename="autograd_lab.py", plan=PLAN, limits=refused)


def test_a_harness_that_cannot_be_executed_is_reported_not_hidden(
    client: docker.DockerClient, image: str, clean: None
) -> None:
    # With init=True the container does start (PID 1 is docker-init), so this is a run whose
    # harness died at once: no output, exit 127, the reason in the stderr tail.
    result = runner(client, image, ["/no/such/program"]).run(
        source=SOURCE, filename="autograd_lab.py", plan=PLAN, limits=LIMITS
    )
    assert (result.stdout, result.exit_code, result.timed_out) == (b"", 127, False)
    assert b"/no/such/program" in result.stderr_tail


@pytest.mark.skipif(
    not (SANDBOX_DIR / "harness" / "supervisor.py").exists(),
    reason="the real harness (sandbox/harness/supervisor.py) is not written yet",
)
def test_the_real_harness_runs_a_tiny_plan(client: docker.DockerClient, image: str, clean: None) -> None:
    nonce = uuid.uuid4().hex
    plan = {
        "nonce": nonce,
        "filename": "autograd_lab.py",
        "class_name": "Value",
        "stand_ins": [],
        "limits": {
            "probe_seconds": 10,
            "script_seconds": 10,
            "budget_seconds": 20,
            "output_bytes": 65536,
            "child_memory_mb": 512,
        },
        "student": {"uid": 10002, "gid": 10002, "reap": True},
        "probes": [{"id": "api", "kind": "api"}],
    }
    result = runner(client, image).run(
        source=(REPO / "reference" / "autograd_lab.py").read_bytes(),
        filename="autograd_lab.py",
        plan=json.dumps(plan).encode(),
        limits=LIMITS,
    )
    assert result.exit_code == 0, result.stderr_tail
    prefix = f"@@AG:{nonce} "
    records = [
        json.loads(line[len(prefix) :]) for line in result.stdout.decode().splitlines() if line.startswith(prefix)
    ]
    assert records and records[-1] == {"t": "end"}
    assert any(r.get("t") == "load" and r.get("ok") for r in records), records


def test_no_container_or_volume_outlives_the_runs(client: docker.DockerClient, image: str) -> None:
    probe(client, image, "print('once')")
    with pytest.raises(InfraError):
        runner(client, image).run(
            source=SOURCE,
            filename="autograd_lab.py",
            plan=PLAN,
            limits=ContainerLimits(**{**LIMITS.__dict__, "memory_mb": 1}),
        )
    assert leftovers(client) == ([], [])
    if shutil.which("docker"):  # the operator's view of the same thing
        session = next(iter(SESSION.items()))
        listed = subprocess.run(
            ["docker", "ps", "-a", "-q", "--filter", f"label={LABEL}", "--filter", f"label={session[0]}={session[1]}"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert listed.stdout.strip() == ""


def test_the_image_is_not_rebuilt_when_nothing_changed(image: str) -> None:
    first = ensure_image()
    built = docker_client().images.get(first).id
    lines: list[str] = []
    assert ensure_image(log=lines.append) == first
    assert docker_client().images.get(first).id == built and not any("building" in line for line in lines)


def test_an_image_that_is_not_what_its_tag_names_is_rebuilt_before_use(image: str) -> None:
    """A tag moved onto another image (by hand, or an image from before images carried their
    recipe) is never used: ensure_image builds the recipe again (from the layer cache)."""
    client = docker_client()
    built = client.images.get(image)
    assert image_recipe(image) == recipe_digest()
    stranger = next(other for other in client.images.list() if other.id != built.id)
    repository, tag = image.rsplit(":", 1)
    stranger.tag(repository, tag)
    assert image_recipe(image) != recipe_digest()
    lines: list[str] = []
    assert ensure_image(log=lines.append) == image
    assert image_recipe(image) == recipe_digest()
    assert any("rebuilding it" in line for line in lines)
