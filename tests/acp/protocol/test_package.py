from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_importing_the_package_loads_neither_pydantic_nor_harness() -> None:
    code = (
        "import sys, acp_agent.protocol as p, acp_agent.protocol.stdio;"
        "assert 'pydantic' not in sys.modules, 'pydantic';"
        "assert not any(m == 'harness' or m.startswith('harness.') for m in sys.modules), 'harness';"
        "p.PromptRequest; assert 'pydantic' in sys.modules"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr.decode()


def test_models_do_not_import_harness() -> None:
    code = (
        "import sys, acp_agent.protocol.models;"
        "assert not any(m == 'harness' or m.startswith('harness.') for m in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr.decode()
