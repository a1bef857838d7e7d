"""The code's shape, checked: layers inside sharing/models/, no imports hidden
in functions, and apps that never reach up into the project package or the
benchmarks. Read from the source with ast; nothing is imported."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PROJECT_PACKAGES = {
    "sharing",
    "expiry",
    "links",
    "web",
    "webhooks",
    "notices",
    "ratelimit",
    "uploads",
    "collect",
    "microcloud",
    "bench",
    "sqlite_writers",
    "postgres_backend",
}
APPS = ["sharing", "expiry", "links", "web", "webhooks", "notices", "ratelimit", "uploads", "collect"]
# sharing/models/, lowest first: a module imports only from layers before its own.
MODEL_LAYERS = [
    {"state", "budget", "events", "policy", "outboxes"},
    {"quotas"},
    {"files"},
    {"items", "leftovers", "quick_downloads"},
    {"downloads"},
    {"querysets"},
    {"shares"},
    {"lookup", "expiring", "folding"},
    {"reactivation", "removal"},
]


def sources(*folders: str) -> list[Path]:
    return sorted(
        path for folder in folders for path in (REPO / folder).rglob("*.py") if "migrations" not in path.parts
    )


def imported(node: ast.AST) -> list[str]:
    """The dotted modules an import statement names (from X import Y names X.Y too)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        return [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return []


def test_no_module_of_sharing_or_expiry_imports_the_project_inside_a_function():
    hidden = []
    for path in sources("sharing", "expiry"):
        for function in ast.walk(ast.parse(path.read_text())):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    for name in imported(node):
                        if name.split(".")[0] in PROJECT_PACKAGES:
                            hidden.append(f"{path.relative_to(REPO)}:{node.lineno} {name}")
    assert hidden == []


def model_imports() -> dict[str, set[str]]:
    """Each module of sharing/models/ and the modules of it that it imports."""
    modules = {path.stem for path in (REPO / "sharing/models").glob("*.py")} - {"__init__"}
    graph = {}
    for module in modules:
        tree = ast.parse((REPO / f"sharing/models/{module}.py").read_text())
        names = {name for node in ast.walk(tree) for name in imported(node)}
        graph[module] = {name.split(".")[2] for name in names if name.startswith("sharing.models.")} & modules
        if "sharing.models" in names and not any(name.startswith("sharing.models.") for name in names):
            graph[module].add("__init__")  # the package itself, which imports every module
    return graph


def test_the_modules_of_sharing_models_import_only_from_lower_layers():
    layer_of = {module: depth for depth, layer in enumerate(MODEL_LAYERS) for module in layer}
    graph = model_imports()
    assert set(graph) == set(layer_of), "every module of sharing/models/ has a layer"
    upward = [
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if target not in layer_of or layer_of[target] >= layer_of[module]
    ]
    assert upward == []


def test_the_modules_of_sharing_models_form_no_cycle():
    graph = model_imports()
    done, on_path = set(), []

    def visit(module):
        if module in on_path:
            raise AssertionError("import cycle: " + " -> ".join([*on_path[on_path.index(module) :], module]))
        if module in done or module not in graph:
            return
        on_path.append(module)
        for target in sorted(graph[module]):
            visit(target)
        on_path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


def test_apps_never_import_the_project_package_or_the_benchmarks():
    reaching_up = [
        f"{path.relative_to(REPO)}:{node.lineno} {name}"
        for path in sources(*APPS)
        for node in ast.walk(ast.parse(path.read_text()))
        for name in imported(node)
        if name.split(".")[0] in {"microcloud", "bench"}
    ]
    assert reaching_up == []


@pytest.mark.parametrize("backend", ["sqlite_writers", "postgres_backend"])
def test_the_database_backends_sit_below_every_app(backend):
    reaching_up = [
        f"{path.relative_to(REPO)}:{node.lineno} {name}"
        for path in sources(backend)
        for node in ast.walk(ast.parse(path.read_text()))
        for name in imported(node)
        if name.split(".")[0] in PROJECT_PACKAGES - {backend}
    ]
    assert sources(backend), "the package is where the settings look for it"
    assert reaching_up == []


def test_nothing_outside_bench_imports_it():
    outside = [
        path
        for path in REPO.glob("**/*.py")
        if not {"bench", ".venv", "node_modules"} & set(path.relative_to(REPO).parts)
    ]
    importing = [
        f"{path.relative_to(REPO)}:{node.lineno} {name}"
        for path in outside
        for node in ast.walk(ast.parse(path.read_text()))
        for name in imported(node)
        if name.split(".")[0] == "bench"
    ]
    assert importing == []
