"""Nothing imports an underscore module of another package (import graph walked with grimp).

A module whose dotted name has a component starting with ``_`` (dunder names aside) is
private to the package holding that component: ``libra_opt.io._yaml`` belongs to
``libra_opt.io`` and only modules under ``libra_opt.io`` may import it; the rest of the
code goes through the package's face (``libra_opt.io.read_yaml``).
"""

from __future__ import annotations

import grimp


def _owner(module: str) -> str | None:
    """The package a private module belongs to, or ``None`` when the module is public."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[:i])
    return None


def private_imports(graph) -> list[tuple[str, str]]:
    """``(importer, imported)`` pairs where ``imported`` is private to a package that does
    not hold ``importer``."""
    bad = []
    for module in sorted(graph.modules):
        owner = _owner(module)
        if owner is None:
            continue
        for importer in sorted(graph.find_modules_that_directly_import(module)):
            if not (importer == owner or importer.startswith(owner + ".")):
                bad.append((importer, module))
    return bad


def test_the_check_sees_a_private_import_from_another_package():
    g = grimp.ImportGraph()
    for m in ("p", "p.a", "p.a._x", "p.a._x.y", "p.a.b", "p.c", "p.c.__main__"):
        g.add_module(m)
    g.add_import(importer="p.a.b", imported="p.a._x.y")     # inside its package: fine
    g.add_import(importer="p.c", imported="p.a._x")          # across packages: refused
    g.add_import(importer="p.c", imported="p.c.__main__")    # a dunder is not private
    assert private_imports(g) == [("p.c", "p.a._x")]
    assert _owner("p.a._x.y") == "p.a" and _owner("p.c.__main__") is None


def test_no_package_imports_another_packages_private_module():
    graph = grimp.build_graph("libra_opt", cache_dir=None)
    assert any(_owner(m) for m in graph.modules)   # there are private modules to guard
    assert private_imports(graph) == []
