"""The grading queue's worker, run inside a test as `procrastinate worker` runs it."""

from __future__ import annotations

from procrastinate.contrib.django import app
from procrastinate.contrib.django.django_connector import DjangoConnector


def work() -> None:
    """A worker as `procrastinate worker` runs it (its own connection), until the queue is empty."""
    assert isinstance(app.connector, DjangoConnector)  # the web process's connector, settings.py
    with app.replace_connector(app.connector.get_worker_connector()):
        app.run_worker(wait=False, install_signal_handlers=False, listen_notify=False)
