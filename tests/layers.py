"""The project's own import-linter contract type (`make lint` runs `lint-imports`; the contracts are in
pyproject.toml). Import-linter checks which modules import which; this one checks *what* is imported:
a feature uses another feature's public names only, never one that starts with an underscore."""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import grimp
from importlinter import Contract, ContractCheck, fields, output


@dataclass(frozen=True)
class PrivateUse:
    importer: str
    line: int
    imported: str
    name: str


def unit(module: str, depth: int) -> str:
    """The feature a module belongs to: its first `depth` name parts (deeprepo_web.compare.views → deeprepo_web.compare)."""
    return ".".join(module.split(".")[:depth])


def _source(module: str) -> tuple[str, bool] | None:
    """The module's text, found from its root package's folder (importing it could need Django's settings)."""
    root, *rest = module.split(".")
    spec = importlib.util.find_spec(root)
    if spec is None or not spec.submodule_search_locations:
        return None
    base = Path(next(iter(spec.submodule_search_locations)), *rest)
    for path, is_package in ((base / "__init__.py", True), (base.with_suffix(".py"), False)):
        if path.is_file():
            return path.read_text(encoding="utf-8"), is_package
    return None


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def private_uses(graph: grimp.ImportGraph, module: str, depth: int) -> list[PrivateUse]:
    """`from other_feature.x import _name` and `other_module._name` (a module of another feature,
    imported by name) in `module`."""
    found = _source(module)
    if found is None:
        return []
    source, is_package = found
    tree = ast.parse(source)
    here = unit(module, depth)
    aliases: dict[str, str] = {}  # local name -> a module of another feature
    uses: list[PrivateUse] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(module, is_package, node)
            for alias in node.names:
                full = f"{target}.{alias.name}"
                if full in graph.modules and unit(full, depth) != here:
                    aliases[alias.asname or alias.name] = full
                elif target in graph.modules and unit(target, depth) != here and _private(alias.name):
                    uses.append(PrivateUse(module, node.lineno, target, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in graph.modules and unit(alias.name, depth) != here:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and _private(node.attr)):
            uses.append(PrivateUse(module, node.lineno, aliases[node.value.id], node.attr))
    return uses


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


class PrivateNamesContract(Contract):
    """Modules of `containers`' features (children at `depth` name parts) import no name starting with
    an underscore from another feature, and read none off another feature's module."""

    type_name = "private_names"
    containers = fields.ListField(subfield=fields.StringField())
    depth = fields.IntegerField(minimum=1, default=2)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        depth = int(self.depth)  # type: ignore[call-overload]
        containers = list(self.containers)  # type: ignore[call-overload]
        uses = [use for module in sorted(graph.modules)
                if any(module == c or module.startswith(c + ".") for c in containers)
                for use in private_uses(graph, module, depth)]
        return ContractCheck(kept=not uses, metadata={"uses": uses})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for use in check.metadata["uses"]:
            output.print_error(f"{use.importer}:{use.line} uses {use.imported}.{use.name}", bold=False)
            output.new_line()
