"""Before a traffic mix's load, every model (or LoRA adapter) it names must be listed by
`/v1/models` (issue 39); checked here on fake listings, and end to end in the CLI tests."""

from __future__ import annotations

from assay.backend.served_models import ServedModel, served_models, unserved

URL = "http://127.0.0.1:8000"


def test_a_mix_all_listed_passes() -> None:
    listed = served_models([{"id": "base"}, {"id": "sql-lora"}, {"id": "chat-lora"}])
    assert unserved(("base", "sql-lora"), listed, URL) is None


def test_a_missing_adapter_is_named_with_what_is_served() -> None:
    listed = [ServedModel("base"), ServedModel("sql-lora")]
    assert unserved(("base", "chat-lora", "x"), listed, URL) == (
        f"models of --model not served at {URL}: 'chat-lora', 'x'; it serves: 'base', 'sql-lora'"
    )


def test_an_empty_listing_serves_none() -> None:
    assert (
        unserved(("a",), [], URL) == f"model of --model not served at {URL}: 'a'; it serves: none"
    )


def test_a_long_listing_is_cut_short() -> None:
    listed = [ServedModel(f"m{n}") for n in range(25)]
    problem = unserved(("a", "b"), listed, URL)
    assert problem is not None
    assert problem.endswith("'m19' and 5 more")
