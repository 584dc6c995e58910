# ATTACK: a signal handler is handed the frame that was running when the signal came; from it,
# f_back leads down the stack to the child's task and its record writer.
def _forge() -> None:
    import signal

    def handler(signum, frame) -> None:
        while frame is not None:
            task, write = frame.f_locals.get("task"), frame.f_locals.get("write")
            if isinstance(task, dict) and callable(write):
                _replay(task, write)
                return
            frame = frame.f_back

    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.001)  # fires while the grader's code is on the stack
    for _ in range(10**7):
        if signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0):
            break
    signal.signal(signal.SIGALRM, signal.SIG_DFL)


try:
    _forge()
except Exception:
    pass
