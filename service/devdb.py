"""A private PostgreSQL cluster for development and tests, under a folder of the checkout.

No system service is assumed. ``pg_ctl`` refuses to run as root, so when we are root the
cluster belongs to the ``postgres`` user and its commands run through ``runuser``. It
listens on 127.0.0.1 only, on a port chosen free, with a Unix socket in its own folder, and
asks for a password drawn when the cluster is made (kept in ``FOLDER/password``, mode 0600):
another local user of the machine cannot become its superuser.

    python -m service.devdb start [FOLDER]   # prints the DATABASE_URL
    python -m service.devdb stop [FOLDER]
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_FOLDER = Path(__file__).resolve().parent.parent / "var" / "pg"
DATABASE = "grader"


class ClusterError(RuntimeError):
    pass


def _bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not candidates:
        raise ClusterError(
            f"PostgreSQL's {name} was not found: install the server (apt-get install postgresql) and try again"
        )
    return candidates[-1]


def _as_owner(command: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _password(folder: Path) -> str:
    """The superuser's password ("" for a cluster made before clusters had one: trust)."""
    path = folder / "password"
    return path.read_text().strip() if path.is_file() else ""


def _env(folder: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if folder is not None and _password(folder):
        env["PGPASSWORD"] = _password(folder)
    return env


def _run(command: list[str], what: str, folder: Path | None = None) -> None:
    done = subprocess.run(_as_owner(command), capture_output=True, text=True, check=False, env=_env(folder))
    if done.returncode != 0:
        raise ClusterError(f"{what} failed: {(done.stderr or done.stdout).strip()[-800:]}")


def url(folder: Path = DEFAULT_FOLDER) -> str:
    port = (folder / "port").read_text().strip()
    password = _password(folder)  # token_urlsafe: nothing in it needs quoting in a URL
    login = f"postgres:{password}" if password else "postgres"
    return f"postgresql://{login}@127.0.0.1:{port}/{DATABASE}"


def _initdb(folder: Path, data: Path) -> None:
    password = secrets.token_urlsafe(24)
    keep = folder / "password"
    keep.write_text(password + "\n")
    keep.chmod(0o600)
    given = folder / "initdb-password"  # read by initdb as the cluster's owner, then removed
    given.write_text(password + "\n")
    given.chmod(0o600)
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(given, owner.pw_uid, owner.pw_gid)
    try:
        _run(
            [
                _bin("initdb"),
                "-D",
                str(data),
                "--auth=scram-sha-256",
                "--pwfile",
                str(given),
                "-U",
                "postgres",
                "-E",
                "UTF8",
            ],
            "initdb",
        )
    finally:
        given.unlink(missing_ok=True)


def running(folder: Path) -> bool:
    pid = folder / "data" / "postmaster.pid"
    if not pid.is_file():
        return False
    try:
        os.kill(int(pid.read_text().splitlines()[0]), 0)
    except (ProcessLookupError, ValueError, IndexError):
        return False
    except PermissionError:
        return True
    return True


def start(folder: Path = DEFAULT_FOLDER) -> str:
    """Create the cluster on first use, start it if it is not running; returns its URL."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data"
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    if not (data / "PG_VERSION").is_file():
        _initdb(folder, data)
    if not running(folder):
        (folder / "port").write_text(str(free_port()))
        port = (folder / "port").read_text().strip()
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=200"
        _run(
            [_bin("pg_ctl"), "-D", str(data), "-w", "-l", str(folder / "log"), "-o", options, "start"],
            "pg_ctl start",
            folder,
        )
    port = (folder / "port").read_text().strip()
    for _ in range(50):
        done = subprocess.run(
            [
                _bin("psql"),
                "-h",
                "127.0.0.1",
                "-p",
                port,
                "-U",
                "postgres",
                "-tAc",
                f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'",
            ],  # fmt: skip
            capture_output=True,
            text=True,
            check=False,
            env=_env(folder),
        )
        if done.returncode == 0:
            if done.stdout.strip() != "1":
                _run([_bin("createdb"), "-h", "127.0.0.1", "-p", port, "-U", "postgres", DATABASE], "createdb", folder)
            return url(folder)
        time.sleep(0.1)
    raise ClusterError(f"PostgreSQL did not answer on port {port}: see {folder / 'log'}")


def stop(folder: Path = DEFAULT_FOLDER, mode: str = "fast") -> None:
    if running(folder):
        _run([_bin("pg_ctl"), "-D", str(folder / "data"), "-m", mode, "-w", "stop"], "pg_ctl stop")


def restart(folder: Path = DEFAULT_FOLDER) -> None:
    """Stop (fast: open transactions are aborted) and start again on the same port."""
    _run(
        [_bin("pg_ctl"), "-D", str(folder / "data"), "-m", "fast", "-w", "-l", str(folder / "log"), "restart"],
        "restart",
    )


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("start", "stop", "url"):
        print(__doc__, file=sys.stderr)
        return 2
    folder = Path(argv[1]).resolve() if len(argv) > 1 else DEFAULT_FOLDER
    try:
        if argv[0] == "start":
            print(start(folder))
        elif argv[0] == "stop":
            stop(folder)
        else:
            print(url(folder))
    except ClusterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
