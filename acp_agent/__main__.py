"""``python -m acp_agent`` / the ``acp-harness-agent`` script."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    from .cli import main as cli_main

    sys.exit(cli_main(fast_exit=True))


if __name__ == "__main__":
    main()
