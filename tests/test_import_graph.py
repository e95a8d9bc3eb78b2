"""The import graph of assay and of its performance suite: no circles, and perf's one door.

A circle between two modules means neither can be read, tested or moved without the other; the
tree should read in one direction (the layers contract in pyproject.toml orders the packages,
this test covers every module, package `__init__` files included).
"""

from __future__ import annotations

import grimp

from assay.testing import bench

ROOTS = ("assay", "perf")


def import_circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative,
    so a long import chain cannot exhaust the stack)."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = lowest[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, imported = work[-1]
            following = next(imported, None)
            if following is not None:
                if following not in index:
                    index[following] = lowest[following] = len(index)
                    stack.append(following)
                    on_stack.add(following)
                    found = sorted(graph.find_modules_directly_imported_by(following))
                    work.append((following, iter(found)))
                elif following in on_stack:
                    lowest[module] = min(lowest[module], index[following])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                lowest[parent] = min(lowest[parent], lowest[module])
            if lowest[module] == index[module]:
                component: list[str] = []
                while not component or component[-1] != module:
                    component.append(stack.pop())
                    on_stack.discard(component[-1])
                if len(component) > 1:
                    circles.append(sorted(component))
    return sorted(circles)


def test_import_circles_finds_a_circle_and_nothing_else() -> None:
    graph = grimp.ImportGraph()
    for module in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(module)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.z", imported="a.x")
    assert import_circles(graph) == [["a.x", "a.y"]]


def test_assay_and_perf_have_no_import_circles() -> None:
    graph = grimp.build_graph(*ROOTS, cache_dir=None)
    assert import_circles(graph) == []


def test_every_name_perf_imports_through_its_seam_resolves() -> None:
    # perf/ reaches assay's internals only through assay.testing.bench (an import-linter
    # contract): a refactoring that moves one of them must fail here, not in the next perf run.
    for name in bench.__all__:
        assert getattr(bench, name) is not None, name
