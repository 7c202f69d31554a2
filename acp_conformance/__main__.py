"""``python -m acp_conformance``: the same as the ``acp-conformance`` command."""

import sys

from .cli import main

sys.exit(main())
