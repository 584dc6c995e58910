# Walk the call stack from the import to the child's task and its record writer.
def _forge() -> None:
    import sys

    _replay_from(sys._getframe(1))


try:
    _forge()
except Exception:
    pass
