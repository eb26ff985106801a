"""The price table: one shipped file, dated, with its region and sources, strictly read."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from pydantic import ValidationError

from evalrunner.estimate.prices import PriceTable, load_prices


def test_the_shipped_table_names_its_date_region_and_sources() -> None:
    table = load_prices()
    assert table.as_of and table.region == "us-east-1" and table.currency == "USD"
    assert all(url.startswith("https://") for url in table.sources) and table.sources
    assert table.step_functions.per_1000_transitions > 0
    assert table.lambda_.per_gb_second > 0 and table.s3.per_1000_put > 0
    assert table.batch.per_instance_hour > 0


def test_judge_prices_match_the_model_id_or_an_inference_profile_of_it() -> None:
    table = load_prices()
    haiku = table.judge_prices("anthropic.claude-3-haiku-20240307-v1:0")
    assert haiku is not None
    assert table.judge_prices("us.anthropic.claude-3-haiku-20240307-v1:0") == haiku
    assert table.judge_prices("my-local-llama") is None
    assert table.judge_prices(None) is None


def test_a_misspelt_key_in_the_table_is_refused() -> None:
    raw = json.loads(
        resources.files("evalrunner.estimate").joinpath("prices.json").read_text("utf-8")
    )
    raw["s3"]["per_1000_puts"] = raw["s3"].pop("per_1000_put")
    with pytest.raises(ValidationError, match="per_1000_put"):
        PriceTable.model_validate(raw)
