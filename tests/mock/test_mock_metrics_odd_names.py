"""The mock's `/metrics` labels each served model with its name: a name with a quote, a
backslash or a line feed is escaped as the exposition format says, so the page stays readable
(unescaped, a scraper found "not Prometheus metrics" and the run lost its cross-check)."""

from __future__ import annotations

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from assay.mock import Fixed, LatencyModel, MockConfig, open_mock_server
from assay.mock.config import spread_models
from assay.server_metrics import parse_exposition

ODD = ('we"ird', "back\\slash", "two\nlines", "org/model{x}")


async def test_metrics_with_odd_model_names_parse_and_keep_each_name() -> None:
    latency = LatencyModel(time_to_first_token=Fixed(value=0.0), output_tokens=Fixed(value=2))
    config = MockConfig(latency=latency, models=spread_models(ODD, latency))
    async with open_mock_server(config) as server, aiohttp.ClientSession() as session:
        for name in ODD:
            body = {"model": name, "prompt": "hi", "max_tokens": 2}
            async with session.post(server.url + "/v1/completions", json=body) as answer:
                assert answer.status == 200
        async with session.get(server.url + "/metrics") as answer:
            text = await answer.text()
    assert parse_exposition(text)["vllm:request_success_total"] == len(ODD)
    finished = {
        sample.labels["model_name"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "vllm:request_success_total" and sample.value
    }
    assert finished == dict.fromkeys(ODD, 1.0)
