# ATTACK: with gc.DEBUG_SAVEALL the collector keeps what it frees in gc.garbage, a list anyone
# may read; a finished frame among it leads up its f_back chain to the live frames of the child,
# its task and its record writer.
def _forge() -> None:
    import gc
    import types

    def finished_frame() -> None:
        try:
            raise ValueError
        except ValueError as error:
            trace = error.__traceback__
        loop = [trace]  # the frame holds the traceback that holds the frame: only the collector frees it
        loop.append(loop)

    gc.set_debug(gc.DEBUG_SAVEALL)
    finished_frame()
    gc.collect()
    gc.set_debug(0)
    for found in list(gc.garbage):
        if isinstance(found, types.FrameType) and _replay_from(found):
            return


try:
    _forge()
except Exception:
    pass
