"""A guide of docs/guide/ run as it stands: the names its first ```python block defines."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

GUIDES = Path(__file__).resolve().parents[2] / "docs" / "guide"


def run_guide(name: str) -> dict:
    """Execute the first Python block of docs/guide/``name`` (its prints swallowed) and
    return its namespace."""
    path = GUIDES / name
    code = re.search(r"```python\n(.*?)```", path.read_text(), re.S).group(1)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, str(path), "exec"), namespace)
    return namespace
