"""`make serve`: the private database, migrations, the demo course, the web process and one
worker on http://127.0.0.1:PORT; Ctrl-C stops them all."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path

from . import devdb

REPO = Path(__file__).resolve().parent.parent
VAR = REPO / "var"


def _secret() -> str:
    path = VAR / "secret_key"
    if not path.is_file():
        VAR.mkdir(exist_ok=True)
        path.write_text(secrets.token_urlsafe(48))
        path.chmod(0o600)
    return path.read_text().strip()


def adopt_local_service() -> bool:
    """Give this process `make serve`'s database and secret key when the environment names none
    and `make serve` made them in this checkout (so `grader service ...` and `grader worker` work
    beside it); False when there is nothing to adopt."""
    if "DATABASE_URL" in os.environ or not (devdb.DEFAULT_FOLDER / "data" / "PG_VERSION").is_file():
        return False
    os.environ["DATABASE_URL"] = devdb.start(devdb.DEFAULT_FOLDER)  # started again if it was stopped
    key = VAR / "secret_key"
    if "SECRET_KEY" not in os.environ and "SECRET_KEY_FILE" not in os.environ and key.is_file():
        os.environ["SECRET_KEY"] = key.read_text().strip()
    return True


def environment(port: int) -> dict[str, str]:
    env = dict(os.environ)
    # Only what the environment does not name: a given database or key starts no private cluster
    # and writes nothing under var/.
    if "DATABASE_URL" not in env:
        env["DATABASE_URL"] = devdb.start()
    if "SECRET_KEY" not in env and "SECRET_KEY_FILE" not in env:
        env["SECRET_KEY"] = _secret()
    env.setdefault("SITE_ROOT", f"http://127.0.0.1:{port}")
    env["DJANGO_SETTINGS_MODULE"] = "service.settings"
    return env


def main() -> int:
    port = int(os.environ.get("PORT", "8000"))
    env = environment(port)
    python = sys.executable
    manage = [python, "-m", "service.manage"]
    for step in (["migrate", "--noinput"], ["createcachetable"]):
        subprocess.run([*manage, *step], env=env, check=True, cwd=REPO)
    demo = subprocess.run(
        [python, "-m", "grader", "service", "demo"], env=env, check=True, cwd=REPO, capture_output=True, text=True
    )
    print(demo.stdout, end="")
    children = [
        subprocess.Popen(
            [
                python,
                "-m",
                "gunicorn",
                "service.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "2",
                "--threads",
                "8",
                "--timeout",
                "30",
                "--access-logfile",
                "-",
            ],  # fmt: skip
            env=env,
            cwd=REPO,
        ),
        subprocess.Popen(
            [python, "-m", "grader", "worker"],
            env={**env, "DB_APPLICATION_NAME": "grader-worker"},
            cwd=REPO,
        ),
    ]
    print(f"Serving on http://127.0.0.1:{port} (Ctrl-C stops the web process and the worker)", flush=True)
    try:
        while all(child.poll() is None for child in children):
            try:
                children[0].wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
    except KeyboardInterrupt:
        pass
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
