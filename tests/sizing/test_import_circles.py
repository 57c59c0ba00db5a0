"""The product's modules (sizing, catalog, nodelodge) import one another without circles: every import a module runs, at its top or
inside a function, leads away from it (imports only read by the type checker, under TYPE_CHECKING,
are not run and do not count)."""
import ast
from pathlib import Path

import sizing

ROOT = Path(sizing.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _run_imports(tree: ast.AST):
    """The import statements a module runs: all of them but those under `if TYPE_CHECKING:`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            yield from (stmt for branch in node.orelse for stmt in _run_imports_of(branch))
            continue
        yield from _run_imports_of(node)


def _run_imports_of(node: ast.AST):
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    else:
        yield from _run_imports(node)


PACKAGES = ("sizing", "catalog", "nodelodge")


def _import_graph(packages: tuple[str, ...] = ("sizing",)) -> dict[str, set[str]]:
    paths = {_module_name(path): path for package in packages for path in (ROOT.parent / package).rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in _run_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
                source = ".".join(part for part in (base, node.module or "") if part)
                targets = [f"{source}.{alias.name}" for alias in node.names] + [source]
            else:
                targets = [alias.name for alias in node.names]
            for target in targets:
                while target and target not in graph:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
                    break
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in graph:
        if module not in index:
            visit(module)
    return found


def test_sizing_modules_import_one_another_without_circles():
    assert _circles(_import_graph()) == []


def test_the_product_packages_import_one_another_without_circles():
    graph = _import_graph(PACKAGES)
    assert "nodelodge.launches.booking" in graph["nodelodge.watches.auto"]  # the graph spans the packages
    assert _circles(graph) == []


def test_the_circle_finder_sees_a_deferred_import_back():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_capacity_reads_the_calculators_and_they_read_it_one_way():
    graph = _import_graph()
    assert "sizing.capacity" in graph["sizing.calculators.inference"]
    assert "sizing.capacity" in graph["sizing.calculators.vllm_inference"]
    assert "sizing.calculators.inference" not in graph["sizing.capacity"]
    assert "sizing.calculators.vllm_inference" not in graph["sizing.capacity"]
    assert "sizing.units" not in graph["sizing.i18n"]
