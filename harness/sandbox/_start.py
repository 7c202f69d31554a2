"""The sandbox launcher's entry script: ``python -I -S _start.py SPEC [--tied] -- CMD [ARG...]`` (see
``_launch``). Two costs of a start-up avoided (CPU per sandboxed command, measured on a loaded machine):
a script's own code is compiled on every start, a module's comes from ``__pycache__``, so the launcher's
code is a module (3-8 ms); and it ends with ``os._exit``, without the interpreter's teardown, which for
``ctypes``'s classes alone costs about 4 ms (its output is written unbuffered, or flushed here)."""

import os
import sys

sys.path.insert(0, __file__.rpartition("/")[0] or ".")
import _launch

code = _launch.main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
