"""The project's import graph, one node per feature: edges, mutual imports and import cycles.

`uv run --no-sync python scripts/import_graph.py` prints each feature's imports, then every pair of
features that import each other (with one module-level line for each direction) and the strongly
connected groups; its last line is one JSON object with the counts. `make lint` runs the contracts
(`lint-imports`); this script is for reading the graph, before and after a change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import grimp

# Run as a script, Python puts scripts/ first on the path; the packages live at the repository's root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PACKAGES = ("deeprepo_web", "workers", "deeprepo_client")


def node(module: str) -> str:
    """deeprepo_web.runs.ingest.replace → deeprepo_web.runs; top-level modules stay themselves."""
    parts = module.split(".")
    return ".".join(parts[:2])


def feature_edges(graph: grimp.ImportGraph) -> dict[tuple[str, str], list[dict]]:
    edges: dict[tuple[str, str], list[dict]] = {}
    for importer in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = node(importer), node(imported)
            if a != b:
                details = graph.get_import_details(importer=importer, imported=imported)
                edges.setdefault((a, b), []).extend(details or [{"importer": importer, "imported": imported}])
    return edges


def strongly_connected(nodes: set[str], edges: set[tuple[str, str]]) -> list[list[str]]:
    """Tarjan's algorithm; only groups of two or more features (a cycle) are returned."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        succ[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for n in sorted(nodes):
        if n not in index:
            visit(n)
    return groups


def main() -> None:
    graph = grimp.build_graph(*PACKAGES)
    edges = feature_edges(graph)
    nodes = {node(m) for m in graph.modules}
    pairs = sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges})
    groups = strongly_connected(nodes, set(edges))
    for a, b in sorted(edges):
        print(f"{a} -> {b} ({len(edges[(a, b)])})")
    print("\nMutual imports:")
    for a, b in pairs:
        for x, y in ((a, b), (b, a)):
            d = edges[(x, y)][0]
            print(f"  {x} -> {y}: {d['importer']}:{d.get('line_number', '?')} {d.get('line_contents', '')}")
    print("\nCycles (strongly connected groups):")
    for group in groups:
        print("  " + " <-> ".join(group))
    print(json.dumps({
        "modules": len(graph.modules), "features": len(nodes), "feature_edges": len(edges),
        "module_imports": sum(len(graph.find_modules_directly_imported_by(m)) for m in graph.modules),
        "mutual_pairs": len(pairs), "cycle_groups": len(groups),
        "largest_cycle_group": max((len(g) for g in groups), default=0),
    }))


if __name__ == "__main__":
    main()
