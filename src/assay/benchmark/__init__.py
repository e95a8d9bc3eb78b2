"""Running a benchmark from a `RunConfig`: target, plan, sinks, report (`assay.benchmark.revalidate`
judges a stored run again).

Every load process imports this package (the validator chain's spec travels to them), so its
names are imported on first use: a load process never pays for the report and HTML code.
"""

from assay.lazy_exports import lazy_exports as _lazy_exports

# `typing.TYPE_CHECKING` without importing typing (20 ms); type checkers take it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from assay.benchmark.chain_spec import ChainSpec as ChainSpec
    from assay.benchmark.run import RunOutcome as RunOutcome
    from assay.benchmark.run import run_from_config as run_from_config

_HOMES = {
    "ChainSpec": "assay.benchmark.chain_spec",
    "RunOutcome": "assay.benchmark.run",
    "run_from_config": "assay.benchmark.run",
}

__all__ = ["ChainSpec", "RunOutcome", "run_from_config"]

if not TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
