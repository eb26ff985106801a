"""The layout check: ``python -m evalrunner.dev.layout``.

Reads the source (never imports it) and reports what makes the tree harder to live in:

- **import cycles** among evalrunner's modules: a cycle makes the import order matter, so a
  harmless-looking import elsewhere can fail with a half-initialised module;
- **core → lambdas imports**: the core library knows nothing of Lambda; the handlers in
  ``lambdas/`` depend on it, never the other way round;
- ``dict[str, Any]`` in ``evalrunner/pipeline/`` function signatures: steps pass typed
  messages;
- modules over :data:`MAX_LINES` lines.

An import cycle counts the imports that run when a module is imported (module level, not
under ``if TYPE_CHECKING:``, not inside a function): those make the import order matter. The
cycles that close only through a deferred or type-only import cannot fail an import, but
still tie two modules together; they are listed apart. Import cycles and core → lambdas
imports fail the check (exit status 1); the other findings are listed for whoever next
changes that code.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: The root package and the handlers' package.
CORE = "evalrunner"
HANDLERS = "lambdas"
#: A module longer than this does more than one job.
MAX_LINES = 600


@dataclass(frozen=True)
class Module:
    """One module of the source tree: its dotted name, file and whether it is a package."""

    name: str
    path: Path
    is_package: bool


@dataclass
class Report:
    """What the check found (see the module docstring)."""

    cycles: list[list[str]] = field(default_factory=list)
    deferred_cycles: list[list[str]] = field(default_factory=list)
    handler_imports: list[str] = field(default_factory=list)
    untyped_signatures: list[str] = field(default_factory=list)
    long_modules: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """An import cycle or a core → lambdas import fails the check."""
        return bool(self.cycles or self.handler_imports)

    def lines(self) -> Iterator[str]:
        """The report as a person reads it."""
        sections = (
            ("import cycles", [" -> ".join([*c, c[0]]) for c in self.cycles]),
            (
                "cycles through deferred or TYPE_CHECKING imports",
                [" -> ".join([*c, c[0]]) for c in self.deferred_cycles],
            ),
            (f"core imports from {HANDLERS}/", self.handler_imports),
            ("dict[str, Any] in pipeline/ signatures", self.untyped_signatures),
            (f"modules over {MAX_LINES} lines", self.long_modules),
        )
        for title, found in sections:
            yield f"{title}: {len(found) or 'none'}"
            yield from (f"  {line}" for line in found)


def modules(root: Path, package: str) -> dict[str, Module]:
    """Every module of ``package`` under ``root``, by dotted name."""
    found: dict[str, Module] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = Module(".".join(parts), path, is_package)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _every_import(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, deferred (in a function) and type-only ones included."""
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _module_level(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported (``try``/``if`` bodies
    included, ``if TYPE_CHECKING:`` and function/class bodies not)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _module_level(block)
            for handler in node.handlers:
                yield from _module_level(handler.body)


def imported_names(
    module: Module, tree: ast.Module, found: dict[str, Module], *, deferred: bool = False
) -> Iterator[str]:
    """The dotted names ``module`` imports at module level (``deferred``: anywhere, in
    functions and under ``if TYPE_CHECKING:`` too): ``from a import b`` imports the submodule
    ``a.b`` where there is one, else a name of ``a``."""
    for node in (_every_import if deferred else _module_level)(tree.body):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = module.name.split(".")
            if not module.is_package:
                anchor.pop()
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in found else base


def import_graph(found: dict[str, Module], *, deferred: bool = False) -> dict[str, set[str]]:
    """Which of ``found`` each module of ``found`` imports at module level (``deferred``:
    anywhere)."""
    graph: dict[str, set[str]] = {}
    for name, module in found.items():
        tree = ast.parse(module.path.read_text(encoding="utf-8"), str(module.path))
        named = imported_names(module, tree, found, deferred=deferred)
        graph[name] = {t for t in named if t in found and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: each strongly connected group of more than one module (Tarjan),
    as one shortest cycle through its first module, so the report names a path to break."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return sorted((_shortest_cycle(graph, group) for group in groups), key=lambda c: c[0])


def _shortest_cycle(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    start = min(group)
    paths: dict[str, list[str]] = {start: [start]}
    queue = [start]
    for node in queue:
        for target in sorted(graph[node] & group):
            if target == start:
                return paths[node]
            if target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    return sorted(group)  # unreachable: a strongly connected group returns to its start


def handler_imports(found: dict[str, Module], root: Path) -> list[str]:
    """Every import of ``lambdas`` by a core module, deferred ones included (a function-level
    import still makes the core depend on the handlers)."""
    hits: list[str] = []
    for module in found.values():
        tree = ast.parse(module.path.read_text(encoding="utf-8"), str(module.path))
        for node in _every_import(tree.body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                targets = [node.module] if node.module and not node.level else []
            for target in targets:
                if target == HANDLERS or target.startswith(f"{HANDLERS}."):
                    where = module.path.relative_to(root)
                    hits.append(f"{where}:{node.lineno} imports {target}")
    return hits


def _any_dict(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    text = ast.unparse(annotation).replace(" ", "")
    return "dict[str,Any]" in text or "Dict[str,Any]" in text


def untyped_signatures(found: dict[str, Module], root: Path) -> list[str]:
    """Functions of ``evalrunner.pipeline`` with ``dict[str, Any]`` in a parameter or their
    return type."""
    hits: list[tuple[str, int, str]] = []
    for name, module in found.items():
        if not (name == f"{CORE}.pipeline" or name.startswith(f"{CORE}.pipeline.")):
            continue
        tree = ast.parse(module.path.read_text(encoding="utf-8"), str(module.path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            args = node.args
            params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            if any(_any_dict(p.annotation) for p in params if p) or _any_dict(node.returns):
                hits.append((str(module.path.relative_to(root)), node.lineno, node.name))
    return [f"{path}:{line} {name}" for path, line, name in sorted(hits)]


def long_modules(found: dict[str, Module], root: Path) -> list[str]:
    """Modules over :data:`MAX_LINES` lines, longest first."""
    counted = [
        (len(m.path.read_text(encoding="utf-8").splitlines()), m.path.relative_to(root))
        for m in found.values()
    ]
    return [f"{path} ({n} lines)" for n, path in sorted(counted, reverse=True) if n > MAX_LINES]


def check(root: Path) -> Report:
    """The layout report of the source tree at ``root`` (the folder holding ``evalrunner``)."""
    core = modules(root, CORE)
    at_import = cycles(import_graph(core))
    return Report(
        cycles=at_import,
        deferred_cycles=[
            c for c in cycles(import_graph(core, deferred=True)) if c not in at_import
        ],
        handler_imports=handler_imports(core, root),
        untyped_signatures=untyped_signatures(core, root),
        long_modules=long_modules(core, root),
    )


def main(argv: list[str] | None = None) -> int:
    """Print the report of the tree this module is in (or of the folder given); 1 when it
    found an import cycle or a core → lambdas import, else 0."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(__file__).resolve().parents[2]
    report = check(root)
    for line in report.lines():
        print(line)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
