"""Apps call each other through public names only: a `_name` is free to change inside its module, so
no app imports one from another app (report panels once took compare's private helpers)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "deeprepo_web"


def _private_imports(app: str, name: str, source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("deeprepo_web."):
            continue
        other = node.module.split(".")[1]  # type: ignore[union-attr]
        for alias in node.names:
            if other != app and alias.name.startswith("_") and not alias.name.startswith("__"):
                found.append(f"{name}:{node.lineno} {node.module}.{alias.name}")
    return found


def test_no_app_imports_another_apps_private_names() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 100  # the walk saw the package
    hits = [hit for f in files for hit in _private_imports(f.relative_to(PACKAGE).parts[0], str(f.relative_to(PACKAGE)),
                                                           f.read_text(encoding="utf-8"))]
    assert hits == []


def test_the_check_sees_a_private_import() -> None:
    source = "def f():\n    from deeprepo_web.compare.comparison import Row, _finite\n"
    assert _private_imports("reports", "x.py", source) == ["x.py:2 deeprepo_web.compare.comparison._finite"]
    assert _private_imports("compare", "x.py", source) == []  # inside its own app it is fine
