"""Parsing from several threads at once never fails (CPython 3.11's AST builder is not
thread-safe; the batch grader and the service parse in threads)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Run apart from pytest: a small heap makes collections frequent and cheap, the condition
# under which raw ast.parse fails within a second or two on CPython 3.11.
_HAMMER = """
import gc, sys, threading
from sandbox.harness import syntax
parse = syntax.parse if sys.argv[1] == "locked" else __import__("ast").parse
source = open("reference/autograd_lab.py", encoding="utf-8").read()
failures = []

class Cycle:
    def __del__(self):
        sum(range(50))

def churn():
    for _ in range(200_000):
        a, b = Cycle(), Cycle()
        a.other, b.other = b, a

def parse_many():
    for _ in range(200):
        try:
            parse(source)
        except SystemError as error:
            failures.append(str(error))
            return

gc.set_threshold(50)
threads = [threading.Thread(target=parse_many) for _ in range(3)] + [threading.Thread(target=churn)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(len(failures), failures[:1])
"""


def _hammer(mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _HAMMER, mode], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_parsing_in_threads_under_collection_pressure_never_fails() -> None:
    assert _hammer("locked") == "0 []"


def test_no_module_parses_without_the_lock() -> None:
    direct = re.compile(r"\bast\.parse\(")
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("grader", "sandbox", "service")
        for path in (ROOT / folder).rglob("*.py")
        if path.name != "syntax.py" and direct.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
