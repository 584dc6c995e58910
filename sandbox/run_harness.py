"""Entry point of the in-sandbox harness: ``python3 -I -B run_harness.py --workdir DIR``.

``-I`` keeps the working directory and PYTHON* variables out of ``sys.path``, so the
package is put on the path explicitly, from this file's own (read-only) location.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sandbox.harness.supervisor import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
