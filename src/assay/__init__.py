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
    **dict.fromkeys(("run_from_config", "RunOutcome"), "assay.benchmark.run"),
    "RunConfig": "assay.config",
    **dict.fromkeys(
        (
            "CustomCode",
            "DiagnosticCode",
            "Endpoint",
            "Evidence",
            "GenerationRequest",
            "GenerationResponse",
            "outcome",
            "ResponseTiming",
            "Stage",
            "ToolCall",
            "UnusableResponse",
            "Usage",
        ),
        "assay.core",
    ),
    **dict.fromkeys(("Completed", "Errored"), "assay.records"),
    **dict.fromkeys(("load_report", "Report"), "assay.reports"),
    **dict.fromkeys(("chain", "default_chain", "reject", "Validator"), "assay.validators"),
    **dict.fromkeys(("judge", "judge_bytes"), "assay.worker"),
}

__all__ = sorted([*_HOMES, "__version__"])

if not TYPE_CHECKING:
    # Hidden from type checkers: with a visible module `__getattr__`, a misspelt
    # `from assay import ...` would type as `object` instead of being an error.
    __getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
