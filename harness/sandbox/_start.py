"""The sandbox launcher's entry script: ``python -I -S _start.py SPEC [--tied] -- CMD [ARG...]`` (see
``_launch``). A script's own code is compiled on every start, a module's comes from ``__pycache__``: this
stub keeps the launcher's code a module (about 8 ms of CPU less per sandboxed command)."""

import sys

sys.path.insert(0, __file__.rpartition("/")[0] or ".")
import _launch

sys.exit(_launch.main(sys.argv[1:]))
