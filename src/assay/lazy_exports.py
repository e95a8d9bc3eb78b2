"""Exported names imported on first use, for packages whose import must stay cheap.

`import assay` runs at every start of the `assay` command, and `assay.benchmark` is imported by
every load process (its validator chain spec travels to them), so neither may import the whole
pipeline up front. Such a package lists its names under `if TYPE_CHECKING:` imports, which type
checkers read, and gives the same names with their modules to `lazy_exports` for run time.
"""

import sys

# `typing.TYPE_CHECKING` without importing typing (20 ms); type checkers take it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


# Annotations as strings and `importlib` imported on first use: this module is imported by
# `import assay`, whose cost it must not add to.
def lazy_exports(
    package: str, homes: "Mapping[str, str]"
) -> "tuple[Callable[[str], object], Callable[[], list[str]]]":
    """The module `__getattr__` and `__dir__` of `package`, which imports each name of `homes`
    from its module on first use and then keeps it in the package (PEP 562).

    A name must not also be a submodule's: once that submodule is imported, the package
    attribute is the module and `__getattr__` is never asked.

    >>> import types
    >>> sys.modules["demo_package"] = types.ModuleType("demo_package")
    >>> get, _ = lazy_exports("demo_package", {"sqrt": "math"})
    >>> get("sqrt")(9.0), "sqrt" in vars(sys.modules["demo_package"])
    (3.0, True)
    >>> del sys.modules["demo_package"]
    """
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> object:
        import importlib

        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
