"""Review rv86: a validator's sentence is shown without pydantic's prefix, and without the value
when that value is a whole section (a model validator's input). A field validator on a list field
(`allow`, `blocked` of the build network) is not a section: its value says which entry was
refused and must stay ("allow: invalid literal for int() ... (got ['10.0.0.5:http'])")."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from envpool.netguard import BuildNetworkConfig
from pipeline.configerrors import explain
from pipeline.pipeline_config import PipelineConfig


def test_a_list_fields_validator_keeps_the_value_it_refused():
    with pytest.raises(ValidationError) as err:
        BuildNetworkConfig(allow=["10.0.0.0/24", "10.0.0.5:http"])
    [line] = explain(err.value, BuildNetworkConfig)
    assert line.startswith("allow: invalid literal for int()") and "10.0.0.5:http" in line, line


def test_a_model_validators_sentence_is_still_one_clean_line():
    with pytest.raises(ValidationError) as err:
        PipelineConfig(workdir="/tmp/w", mint={"policy": "hybrid"})
    [line] = explain(err.value, PipelineConfig)
    assert line.startswith("mint.policy hybrid needs a usable `llm` block") and "got" not in line, line
