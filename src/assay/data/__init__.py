"""Request data: tokenizers, token-count specs, and the sources that build requests by index.

`HfTokenizer` lives in `assay.data.hf_tokenizer` and is not imported here: `tokenizers` is an
optional dependency, loaded only when a tokenizer file is asked for (see `load_tokenizer`).
"""

from assay.data.file_formats import FileFormat
from assay.data.file_source import FileSource, FileSourceConfig
from assay.data.prompt_rows import PromptRow
from assay.data.source import RequestSource, index_rng, request_id, shared_rng
from assay.data.source_config import SourceConfig, build_source
from assay.data.synthetic import SyntheticSource
from assay.data.token_count import (
    FixedCount,
    NormalCount,
    TokenCount,
    UniformCount,
    parse_token_count,
    sample_token_count,
    smallest_count,
)
from assay.data.tokenizer import BuiltinTokenizer, Tokenizer
from assay.data.tokenizer_spec import BUILTIN, load_tokenizer
from assay.spec.source import PromptColumns

__all__ = [
    "BUILTIN",
    "BuiltinTokenizer",
    "FileFormat",
    "FileSource",
    "FileSourceConfig",
    "FixedCount",
    "NormalCount",
    "PromptColumns",
    "PromptRow",
    "RequestSource",
    "SourceConfig",
    "SyntheticSource",
    "TokenCount",
    "Tokenizer",
    "UniformCount",
    "build_source",
    "index_rng",
    "load_tokenizer",
    "parse_token_count",
    "request_id",
    "sample_token_count",
    "shared_rng",
    "smallest_count",
]
