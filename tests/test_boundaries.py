"""The boundaries docs/design.md draws, checked on every run rather than trusted to prose.

import-linter's contracts (pyproject.toml, `[tool.importlinter]`) keep the layers apart; the checks
below cover what an import graph cannot see: where environment variables are read and where
third-party private names are touched.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.processes import REPO_ROOT, child_env

PACKAGE = REPO_ROOT / "src" / "mcp_tasks_temporal"
SETTINGS = PACKAGE / "ops" / "settings.py"
SDK_COMPAT = PACKAGE / "sdk_compat.py"

ENVIRONMENT_DEBT = frozenset(
    {
        # Still to read through ops.settings (temporal/ takes the environment as a parameter instead,
        # as tracing.py does). This set only shrinks: a file not named here may not read os.environ.
        "src/mcp_tasks_temporal/front/extension.py",
    }
)


def _sources() -> list[Path]:
    # workflows/ and activities/ are linked into temporal/: resolve() keeps each file once.
    return sorted({path.resolve() for path in PACKAGE.rglob("*.py")})


def test_the_import_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def _environment_reads(tree: ast.AST) -> list[int]:
    lines: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "environb"}:
            if isinstance(node.value, ast.Name) and node.value.id == "os":
                lines.append(node.lineno)
    return lines


def test_environment_variables_are_read_in_ops_settings_only() -> None:
    readers = {
        str(path.relative_to(REPO_ROOT.resolve()))
        for path in _sources()
        if path != SETTINGS.resolve() and _environment_reads(ast.parse(path.read_text(), str(path)))
    }
    assert not readers - ENVIRONMENT_DEBT, (
        f"read the variable through mcp_tasks_temporal.ops.settings instead: {sorted(readers - ENVIRONMENT_DEBT)}"
    )
    assert not ENVIRONMENT_DEBT - readers, (
        f"no longer reads os.environ: strike it from the debt {sorted(ENVIRONMENT_DEBT - readers)}"
    )


def _private_reads(tree: ast.AST) -> list[str]:
    """Underscore names imported from another package, and `# pyright: ignore[reportPrivateUsage]` escapes."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.module.startswith("mcp_tasks_temporal"):
            found.extend(
                f"{node.lineno}: from {node.module} import {alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            )
    return found


def test_third_party_private_names_are_touched_in_sdk_compat_only() -> None:
    found: list[str] = []
    for path in _sources():
        if path == SDK_COMPAT.resolve():
            continue
        text = path.read_text()
        where = path.relative_to(REPO_ROOT.resolve())
        found.extend(f"{where}:{hit}" for hit in _private_reads(ast.parse(text, str(where))))
        found.extend(
            f"{where}:{number}: {line.strip()}"
            for number, line in enumerate(text.splitlines(), start=1)
            if "reportPrivateUsage" in line
        )
    assert not found, f"move these behind a function in sdk_compat.py, with a canary: {found}"
