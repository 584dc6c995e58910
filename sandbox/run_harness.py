"""Entry point of the in-sandbox harness: ``python3 -s -P -B run_harness.py --workdir DIR``.

``-P`` keeps the working directory and this file's folder out of ``sys.path``, so the package
is put on the path explicitly, from this file's own (read-only) location. The environment is
the grader's own (``grader.image.SANDBOX_ENV``); the harness refuses to start without it.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sandbox.harness.supervisor import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
