"""The code's shape, checked: layers inside sharing/models/, no imports hidden
in functions, and apps that never reach up into the project package or the
benchmarks. Read from the source with ast; nothing is imported."""

import ast
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ORDER_DOC = REPO / "docs/architecture.md"
OUTSIDE_THE_ORDER = {"tests", "bench", "mutation"}


def packages() -> set[str]:
    """The project's top-level packages, as the tree has them."""
    return {path.parent.name for path in REPO.glob("*/__init__.py")} - OUTSIDE_THE_ORDER


def written_order() -> dict[str, int]:
    """Each app's line in docs/architecture.md's order, lowest first."""
    text = ORDER_DOC.read_text()
    block = text[text.index("## The order") :].split("\n## ", 1)[0]
    ranks = {}
    for line in block.splitlines():
        found = re.fullmatch(r"\s+(\d+)\. (.+)", line)
        if found:
            for name in found.group(2).split(","):
                ranks[name.strip()] = int(found.group(1))
    return ranks


PROJECT_PACKAGES = packages() | OUTSIDE_THE_ORDER
APPS = sorted(packages() - {"microcloud"})
# sharing/models/, lowest first: a module imports only from layers before its own.
MODEL_LAYERS = [
    {"state", "scans", "budget", "events", "policy", "outboxes"},
    {"quotas"},
    {"files"},
    {"items", "leftovers", "quick_downloads"},
    {"receipts"},
    {"downloads"},
    {"querysets"},
    {"shares"},
    {"lookup", "expiring", "folding", "sealed"},
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


def is_ready_of_an_app_config(function: ast.AST, tree: ast.Module) -> bool:
    """AppConfig.ready(): where Django has an app connect its signal
    receivers, once the models are loaded (importing them at the top of
    apps.py would load models before the registry is ready)."""
    return function.name == "ready" and any(
        isinstance(node, ast.ClassDef)
        and function in node.body
        and any(ast.unparse(base) == "AppConfig" for base in node.bases)
        for node in ast.walk(tree)
    )


# Imports put off on purpose until a function runs, each with its reason.
DEFERRED = {
    # The expiry daemon delivers webhooks: the API's serializers (DRF, its
    # schema tools, requests, yaml, pygments) cost it 18 MB of memory until
    # its first delivery, if one ever comes.
    ("webhooks/payloads.py", "api.representations"),
    ("webhooks/payloads.py", "api.representations.ShareEventSerializer"),
}


def test_no_module_of_an_app_imports_the_project_inside_a_function():
    hidden = []
    for path in sources(*APPS, "microcloud"):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if is_ready_of_an_app_config(function, tree):
                    continue
                for node in ast.walk(function):
                    for name in imported(node):
                        if (
                            name.split(".")[0] in PROJECT_PACKAGES
                            and (str(path.relative_to(REPO)), name) not in DEFERRED
                        ):
                            hidden.append(f"{path.relative_to(REPO)}:{node.lineno} {name}")
    assert hidden == []


def test_every_package_has_its_place_in_the_written_order():
    ranks = written_order()
    assert sorted(ranks) == sorted(packages()), "docs/architecture.md's order names exactly the tree's packages"


def imports_against_the_order(ranks: dict[str, int], folders) -> list[str]:
    against = []
    for path in sources(*folders):
        app = path.relative_to(REPO).parts[0]
        for node in ast.walk(ast.parse(path.read_text())):
            for name in imported(node):
                target = name.split(".")[0]
                if target in ranks and target != app and ranks[target] >= ranks[app]:
                    against.append(
                        f"{path.relative_to(REPO)}:{node.lineno} imports {name} "
                        f"({app} is on line {ranks[app]}, {target} on line {ranks[target]})"
                    )
    return against


def test_apps_import_only_from_apps_below_them_in_the_written_order():
    assert imports_against_the_order(written_order(), packages()) == []


def test_an_import_against_the_order_is_found_with_its_file_and_line(tmp_path, monkeypatch):
    # The check above must be able to fail: collect importing web (a higher
    # app) again, as it once did for the upload form, is reported.
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    (tmp_path / "collect").mkdir()
    (tmp_path / "collect/pages.py").write_text("import os\nfrom web.forms import UploadForm\n")
    assert imports_against_the_order({"collect": 6, "web": 8}, ["collect"]) == [
        "collect/pages.py:2 imports web.forms (collect is on line 6, web on line 8)",
        "collect/pages.py:2 imports web.forms.UploadForm (collect is on line 6, web on line 8)",
    ]


def test_no_app_imports_another_apps_views():
    reaching = [
        f"{path.relative_to(REPO)}:{node.lineno} {name}"
        for path in sources(*APPS)
        for node in ast.walk(ast.parse(path.read_text()))
        for name in imported(node)
        if name.split(".")[0] in PROJECT_PACKAGES
        and name.split(".")[0] != path.relative_to(REPO).parts[0]
        and len(name.split(".")) > 1
        and name.split(".")[1] == "views"
    ]
    assert reaching == []


# The domain asks a seam when the databases differ: each app's `backends`
# package holds its vendor-specific statements, and the daemon's watchers,
# leases and store are seams of their own.
DOMAIN = ["sharing", "links", "uploads", "collect", "web", "webhooks", "notices", "pages", "api"]


def test_no_module_of_the_domain_branches_on_the_database_vendor():
    branching = [
        f"{path.relative_to(REPO)}:{node.lineno} {ast.unparse(node)}"
        for path in sources(*DOMAIN)
        if "backends" not in path.relative_to(REPO).parts
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "vendor"
    ]
    assert branching == []


def test_no_module_outside_storage_names_a_storage_class():
    naming = [
        f"{path.relative_to(REPO)}:{node.lineno} {name}"
        for path in sources(*(set(APPS) - {"storage"}))
        for node in ast.walk(ast.parse(path.read_text()))
        for name in imported(node)
        if name.split(".")[0] == "storage" and name.split(".")[-1].endswith("Storage")
    ]
    assert naming == []


def test_the_domain_never_imports_the_rest_framework():
    reaching = [
        f"{path.relative_to(REPO)}:{node.lineno} {name}"
        for path in sources("sharing", "storage")
        for node in ast.walk(ast.parse(path.read_text()))
        for name in imported(node)
        if name.split(".")[0] in {"rest_framework", "drf_spectacular", "api"}
    ]
    assert reaching == []


# Underscore names that Django and DRF document for use from outside:
# a model's options and state, the HttpRequest a DRF Request wraps.
DOCUMENTED_PRIVATE = {"_meta", "_state", "_request"}


def test_no_class_reads_another_objects_underscore_attributes():
    reading = []
    for path in sources(*APPS, "microcloud"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            if node.attr in DOCUMENTED_PRIVATE:
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in {"self", "cls"}:
                continue
            if isinstance(owner, ast.Call) and ast.unparse(owner.func) == "super":
                continue
            reading.append(f"{path.relative_to(REPO)}:{node.lineno} {ast.unparse(node)}")
    assert reading == []


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
