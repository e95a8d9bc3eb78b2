"""assay: benchmark OpenAI-compatible LLM servers and count only what was really served.

The names here are the library's front door: the core types, composing validators, the judge
that `assay run` and `assay revalidate` share, judging captured bytes, running a benchmark from
a `RunConfig`, and reading a stored report back. See docs/library.md.

Each name is imported on first use, so `import assay` (and every start of the `assay` command)
stays a few milliseconds instead of the half second the whole pipeline takes to import.

>>> import assay
>>> body = b'{"choices": [{"message": {"content": "Hi"}, "finish_reason": "stop"}]}'
>>> assay.judge_bytes(assay.Endpoint.chat, body, "application/json").unwrap().text
'Hi'
"""

from assay.lazy_exports import lazy_exports as _lazy_exports
from assay.version import __version__ as __version__

# `typing.TYPE_CHECKING` without importing typing (20 ms); type checkers take it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    # What type checkers see; `_HOMES` below says the same for the lazy import at run time
    # (tests/test_exported_names.py holds the two equal).
    from assay.benchmark.run import RunOutcome as RunOutcome
    from assay.benchmark.run import run_from_config as run_from_config
    from assay.config import RunConfig as RunConfig
    from assay.core import CustomCode as CustomCode
    from assay.core import DiagnosticCode as DiagnosticCode
    from assay.core import Endpoint as Endpoint
    from assay.core import Evidence as Evidence
    from assay.core import GenerationRequest as GenerationRequest
    from assay.core import GenerationResponse as GenerationResponse
    from assay.core import ResponseTiming as ResponseTiming
    from assay.core import Stage as Stage
    from assay.core import ToolCall as ToolCall
    from assay.core import UnusableResponse as UnusableResponse
    from assay.core import Usage as Usage
    from assay.core import outcome as outcome
    from assay.records import Completed as Completed
    from assay.records import Errored as Errored
    from assay.reports import Report as Report
    from assay.reports import load_report as load_report
    from assay.validators import Validator as Validator
    from assay.validators import chain as chain
    from assay.validators import default_chain as default_chain
    from assay.validators import reject as reject
    from assay.worker import judge as judge
    from assay.worker import judge_bytes as judge_bytes

# The module each exported name is imported from on first use.
_HOMES = {
    "Completed": "assay.records",
    "CustomCode": "assay.core",
    "DiagnosticCode": "assay.core",
    "Endpoint": "assay.core",
    "Errored": "assay.records",
    "Evidence": "assay.core",
    "GenerationRequest": "assay.core",
    "GenerationResponse": "assay.core",
    "Report": "assay.reports",
    "ResponseTiming": "assay.core",
    "RunConfig": "assay.config",
    "RunOutcome": "assay.benchmark.run",
    "Stage": "assay.core",
    "ToolCall": "assay.core",
    "UnusableResponse": "assay.core",
    "Usage": "assay.core",
    "Validator": "assay.validators",
    "chain": "assay.validators",
    "default_chain": "assay.validators",
    "judge": "assay.worker",
    "judge_bytes": "assay.worker",
    "load_report": "assay.reports",
    "outcome": "assay.core",
    "reject": "assay.validators",
    "run_from_config": "assay.benchmark.run",
}

__all__ = [
    "Completed",
    "CustomCode",
    "DiagnosticCode",
    "Endpoint",
    "Errored",
    "Evidence",
    "GenerationRequest",
    "GenerationResponse",
    "Report",
    "ResponseTiming",
    "RunConfig",
    "RunOutcome",
    "Stage",
    "ToolCall",
    "UnusableResponse",
    "Usage",
    "Validator",
    "__version__",
    "chain",
    "default_chain",
    "judge",
    "judge_bytes",
    "load_report",
    "outcome",
    "reject",
    "run_from_config",
]

if not TYPE_CHECKING:
    # Hidden from type checkers: with a visible module `__getattr__`, a misspelt
    # `from assay import ...` would type as `object` instead of being an error.
    __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
