# Shared by the tricks that reach the child's task and writer: write what the private engine
# computes for that task, then leave before the harness's own steps run.
def _replay(task, write) -> None:
    import os
    import sys

    programs = sys.modules["sandbox.harness.probes.programs"]
    if task.get("kind") == "api":
        write({"t": "obs", "program": 0, "phase": "final", "obs": programs.run_api(_Real, _Real)})
    elif task.get("kind") == "programs":
        for index, program in enumerate(task["programs"]):

            def emit(phase, obs, _i=index):
                write({"t": "obs", "program": _i, "phase": phase, "obs": obs})

            emit("final", programs.run_program(_Real, program, emit))
    else:
        return
    write({"t": "done"})
    os._exit(0)
