"""Print the project's module import graph problems: import circles and upward arrows between layers.

    .venv/bin/python scripts/import_graph.py            # a summary line, then each circle and upward arrow
    .venv/bin/python scripts/import_graph.py --edges    # also every module -> module edge
    .venv/bin/python scripts/import_graph.py --root ../other-checkout
    .venv/bin/python scripts/import_graph.py --annotations   # also count imports under `if TYPE_CHECKING:`

Layers, lowest first: schemas, webgym.config, the runtime (the rest of webgym), stages, flows, webgym.cli.
An arrow is upward when a module imports one of a higher layer; a circle is a set of modules that import
each other through top-level or function-level imports (strongly connected components of the graph);
imports under `if TYPE_CHECKING:` are for annotations only and not counted, unless --annotations asks for
them: a circle they close is no import error, but still two modules that each need the other's types.
Only the files are read (ast); nothing is imported, so the command works on any checkout.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("schemas", "webgym", "stages", "flows")
LAYERS = ("schemas", "webgym.config", "webgym", "stages", "flows", "webgym.cli")
"""Lowest first; a module belongs to the longest layer name that prefixes it."""


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the project's packages by dotted name."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _typing_only(tree: ast.AST) -> set[ast.AST]:
    """Nodes under `if TYPE_CHECKING:`: imports for annotations only, never executed."""
    return {inner for node in ast.walk(tree) if isinstance(node, ast.If) and ast.unparse(node.test).endswith(
        "TYPE_CHECKING") for child in node.body for inner in ast.walk(child)}


def _imported(tree: ast.AST, name: str, is_package: bool, annotations: bool) -> Iterator[str]:
    typing_only = set() if annotations else _typing_only(tree)
    for node in ast.walk(tree):
        if node in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def graph(root: Path = ROOT, annotations: bool = False) -> dict[str, set[str]]:
    """module -> the project modules it imports (a `from package import name` counts when name is a module);
    with `annotations`, also those imported under `if TYPE_CHECKING:`."""
    known = modules(root)
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        targets = {t for t in _imported(tree, name, path.name == "__init__.py", annotations) if t in known and t != name}
        edges[name] = {t for t in targets if not name.startswith(f"{t}.")}  # a package's own __init__ is no arrow
    return edges


def layer(module: str) -> int:
    """Index of the module's layer in LAYERS."""
    best = max((candidate for candidate in LAYERS if module == candidate or module.startswith(f"{candidate}.")),
               key=len)
    return LAYERS.index(best)


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Arrows from a module to a module of a higher layer."""
    return sorted((a, b) for a, targets in edges.items() for b in targets if layer(b) > layer(a))


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", action="store_true", help="also print every edge")
    parser.add_argument("--annotations", action="store_true", help="also count imports under `if TYPE_CHECKING:`")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to read (default: this one)")
    args = parser.parse_args()
    edges = graph(args.root, args.annotations)
    found_circles, found_upward = circles(edges), upward(edges)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} imports, {len(found_circles)} circle(s), "
          f"{len(found_upward)} upward arrow(s)")
    for component in found_circles:
        print("circle: " + " <-> ".join(component))
    for source, target in found_upward:
        print(f"upward: {source} ({LAYERS[layer(source)]}) -> {target} ({LAYERS[layer(target)]})")
    if args.edges:
        for source in sorted(edges):
            for target in sorted(edges[source]):
                print(f"edge: {source} -> {target}")
    return 1 if found_circles or found_upward else 0


if __name__ == "__main__":
    sys.exit(main())
