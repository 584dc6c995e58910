# ATTACK: a signal handler is handed the frame that was running when the signal came; from it,
# f_back leads down the stack to the child's task and its record writer.
def _forge() -> None:
    import signal

    def handler(signum, frame) -> None:
        _replay_from(frame)

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
