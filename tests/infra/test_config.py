"""cdk.json's configuration: a mistake fails synthesis with a message naming field and fix."""

from __future__ import annotations

import copy

import pytest

from evalrunner.errors import ConfigError
from infra.app import build_app, cdk_json_context
from infra.config import load_config

from .conftest import SCHEDULES, TARGETS

GOOD_SCHEDULE = SCHEDULES[0]


def config(**overrides):
    base = copy.deepcopy(cdk_json_context()["evalrunner"])
    base.update(overrides)
    return base


def problems(**overrides) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(config(**overrides))
    return str(info.value)


def test_cdk_json_itself_is_valid():
    cfg = load_config(cdk_json_context()["evalrunner"])
    assert not cfg.allow_all_targets and cfg.targets.is_empty()
    assert cfg.batch_scoring.enabled and cfg.batch_scoring.min_items >= 1
    assert cfg.upload_defaults.iterations == 1


def test_context_given_as_json_text():
    import json

    cfg = load_config(json.dumps(config(targets=TARGETS)))
    assert cfg.targets.lambda_arns == TARGETS["lambda_arns"]


def test_a_bad_schedule_event_names_the_schedule_and_the_field():
    bad = {**GOOD_SCHEDULE, "iterations": 0, "event": {"metrics": ["Rouge Metrik"]}}
    message = problems(targets=TARGETS, schedules=[bad])
    assert message.startswith("cdk.json context 'evalrunner' is not valid:")
    assert "schedules[0] ('nightly-hr'): event iterations" in message
    assert "Rouge Metrik" in message and "Rouge Metric" in message  # the suggestion


def test_schedule_expression_key_and_duplicates():
    message = problems(
        targets=TARGETS,
        schedules=[
            {**GOOD_SCHEDULE, "expression": "every day"},
            {**GOOD_SCHEDULE, "key": "../etc/passwd.csv"},
        ],
    )
    assert "schedules[0].expression" in message and "rate(1 day)" in message
    message = problems(targets=TARGETS, schedules=[{**GOOD_SCHEDULE, "key": "suites/x.csv"}])
    assert "must be under 'test-suites/'" in message
    message = problems(targets=TARGETS, schedules=[GOOD_SCHEDULE, GOOD_SCHEDULE])
    assert "'nightly-hr' is used more than once" in message
    message = problems(targets=TARGETS, schedules=[{**GOOD_SCHEDULE, "event": {"run_id": "r1"}}])
    assert "event.run_id: a schedule runs many times" in message


def test_a_schedule_target_the_runner_may_not_call():
    message = problems(schedules=[GOOD_SCHEDULE])  # no targets configured
    assert "target.lambdaArn arn:aws:lambda:eu-west-1:111122223333:function:hr-assistant" in message
    assert "allow_all_targets" in message
    load_config(config(schedules=[GOOD_SCHEDULE], allow_all_targets=True))
    http = {**GOOD_SCHEDULE, "target": {"url": "https://example.com/ask"}}
    load_config(config(schedules=[http]))  # HTTP targets need no IAM


def test_targets_must_be_full_arns_not_wildcards():
    message = problems(targets={"lambda_arns": ["*"]})
    assert "targets.lambda_arns" in message and "allow_all_targets" in message
    message = problems(
        targets={"lambda_arns": ["arn:aws:lambda:eu-west-1:111122223333:function:*"]}
    )
    assert "not a full ARN" in message
    message = problems(targets={"agent_aliases": [{"agent_id": "x", "alias_id": "ALIAS12345"}]})
    assert "targets.agent_aliases[0].agent_id" in message


def test_upload_defaults_are_checked():
    message = problems(upload_defaults={"target": {"lambdaArn": "a", "url": "b"}})
    assert "upload_defaults: event target: give exactly one target kind" in message
    assert "upload_defaults.iterations" in problems(upload_defaults={"iterations": 0})


def test_other_fields():
    assert "log_retention_days" in problems(log_retention_days=10)
    assert "batch_scoring.instance_types" in problems(batch_scoring={"instance_types": ["big"]})
    assert "unknown_field" in problems(unknown_field=1)
    assert "alarm_email" in problems(alarm_email="nobody")


def test_synth_refuses_a_missing_or_stale_lambda_package(tmp_path):
    context = cdk_json_context()
    context["evalrunner"] = config(lambda_dependencies_dir=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="make lambda-package"):
        build_app(context, outdir=str(tmp_path / "out"))
    (tmp_path / "stale" / "python").mkdir(parents=True)
    (tmp_path / "stale" / "requirements.txt").write_text("pydantic==1.0\n")
    context["evalrunner"] = config(lambda_dependencies_dir=str(tmp_path / "stale"))
    with pytest.raises(ConfigError, match=r"do not match pyproject\.toml"):
        build_app(context, outdir=str(tmp_path / "out"))


def test_synth_refuses_a_bad_schedule_before_building_anything(tmp_path, fake_dependencies):
    context = cdk_json_context()
    context["evalrunner"] = config(
        lambda_dependencies_dir=str(fake_dependencies),
        schedules=[{**GOOD_SCHEDULE, "target": {"url": "https://x.example/ask"}, "iterations": -1}],
    )
    with pytest.raises(ConfigError, match=r"schedules\[0\] \('nightly-hr'\): event iterations"):
        build_app(context, outdir=str(tmp_path / "out"))


def test_the_readme_deploy_examples_are_valid_configuration():
    import json
    import re
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text("utf-8")
    deploy = readme[readme.index("## Deploy") : readme.index("## Layout")]
    blocks = re.findall(r"```json\n(.*?)```", deploy, re.S)
    assert len(blocks) == 2
    example = json.loads(blocks[0])
    example["schedules"] = json.loads("{" + blocks[1] + "}")["schedules"]
    cfg = load_config(example)
    assert cfg.schedules[0].name == "nightly-hr" and cfg.targets.lambda_arns


SECRET = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:qa/token-AbC123"


def test_secrets_must_be_full_secret_arns():
    assert "secrets: Value error, 'qa/token' is not a full" in problems(secrets=["qa/token"])
    assert "not a full secret ARN" in problems(secrets=[SECRET[:-6] + "*"])
    assert load_config(config(secrets=[SECRET])).secrets == [SECRET]


def test_network_prefixes_are_checked():
    message = problems(network={"allowed_url_prefixes": ["https://api.example.com"]})
    assert "network.allowed_url_prefixes" in message and "must be a URL prefix" in message
    assert "network.allow_internal" in problems(network={"allow_internal": True})


def test_schedules_and_defaults_may_name_only_listed_secrets_and_no_env_vars():
    env_target = {"url": "https://a.example/ask", "headers_from_env": {"A": "EVALRUNNER_SECRET_A"}}
    message = problems(upload_defaults={"target": env_target})
    assert "upload_defaults: event target.headers_from_env.A: environment variables are not " in (
        message
    )
    secret_target = {"url": "https://a.example/ask", "headers_from_secret": {"A": "qa/other"}}
    schedule = {**GOOD_SCHEDULE, "target": secret_target}
    message = problems(schedules=[schedule], secrets=[SECRET])
    assert "target.headers_from_secret.A: qa/other is not an allowed secret" in message
    ok = {**GOOD_SCHEDULE, "target": {**secret_target, "headers_from_secret": {"A": "qa/token"}}}
    load_config(config(schedules=[ok], secrets=[SECRET]))


def test_default_judge_and_metrics_are_checked():
    cfg = load_config(cdk_json_context()["evalrunner"])
    assert cfg.judge_model_id() == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert "BERT Score" in cfg.default_metrics
    assert "judge" in problems(judge={"bedrock": {}})
    env_key = problems(
        judge={"openai": {"base_url": "https://x/v1", "model": "m", "api_key_env": "K"}}
    )
    assert "api_key_secret" in env_key
    assert "Rouge Metrik" in problems(default_metrics=["Rouge Metrik"])
    # aliases are resolved to the evaluator names the functions are given
    assert load_config(config(default_metrics=["ROUGE", "ada_similarity"])).default_metrics == [
        "Rouge Metric",
        "Answer semantic similarity",
    ]
    none = load_config(config(judge=None))
    assert none.judge_model_id() is None and "EVALRUNNER_JUDGE" not in none.defaults_env()


def test_a_default_profile_is_checked_and_reaches_every_function():
    """Issue 32 item 6 (a): cdk.json "profile" selects the seed-003 profile for runs that
    name no metric; an unknown name fails synth naming the known ones."""
    assert "EVALRUNNER_PROFILE" not in load_config(config()).defaults_env()
    chosen = load_config(config(profile="seed-003"))
    assert chosen.defaults_env()["EVALRUNNER_PROFILE"] == "seed-003"
    assert "'seed-004' is not a profile; use one of seed-003" in problems(profile="seed-004")


RETIRED = "anthropic.claude-3-5-sonnet-20240620-v1:0"


@pytest.mark.parametrize(
    "model_id",
    [
        RETIRED,
        f"us.{RETIRED}",
        f"arn:aws:bedrock:us-east-1::foundation-model/{RETIRED}",
        "eu.anthropic.claude-3-7-sonnet-20250219-v1:0",
    ],
)
def test_a_legacy_or_end_of_life_judge_fails_synth(model_id):
    message = problems(judge={"bedrock": {"model_id": model_id}})
    assert f"judge: the Bedrock judge model {model_id} is end-of-life" in message
    assert "us.anthropic.claude-sonnet-4-5-20250929-v1:0" in message  # what to use instead
    assert "allow_legacy_judge: true" in message  # and the override
    # the override is explicit, and deploys
    cfg = load_config(config(judge={"bedrock": {"model_id": model_id}}, allow_legacy_judge=True))
    assert cfg.judge_model_id() == model_id


def test_a_schedule_judging_with_a_legacy_model_fails_synth():
    schedule = {**GOOD_SCHEDULE, "event": {"judge": {"bedrock": {"model_id": RETIRED}}}}
    message = problems(schedules=[schedule])
    assert "schedules[0] ('nightly-hr'): event.judge: the Bedrock judge model" in message


def test_the_default_judge_is_not_on_the_legacy_table_and_is_a_profile():
    from evalrunner.judge.lifecycle import INFERENCE_PROFILE, legacy_model, lifecycle_table
    from evalrunner.run_defaults import DEFAULT_BEDROCK_JUDGE

    model = DEFAULT_BEDROCK_JUDGE["bedrock"]["model_id"]
    assert legacy_model(model) is None and INFERENCE_PROFILE.match(model)
    assert load_config(config()).judge_model_id() == model
    table = lifecycle_table()
    assert legacy_model(RETIRED) is not None and table.as_of.year >= 2026
    assert all(legacy_model(entry.replacement) is None for entry in table.models)


def test_judge_resources_follow_the_profile_geography():
    from infra.parts.functions import judge_resources

    kwargs = {"region": "eu-west-1", "partition": "aws", "account": "111122223333"}
    model = "anthropic.claude-sonnet-4-5-20250929-v1:0"
    eu = judge_resources(f"eu.{model}", profile_regions=None, **kwargs)
    assert eu[0] == f"arn:aws:bedrock:eu-west-1:111122223333:inference-profile/eu.{model}"
    assert {r.split(":")[3] for r in eu[1:]} == {
        "eu-west-1", "eu-central-1", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-3"
    }  # fmt: skip
    assert all(r.endswith(f"::foundation-model/{model}") for r in eu[1:])
    glob = judge_resources(f"global.{model}", profile_regions=None, **kwargs)
    assert glob[1:] == [
        f"arn:aws:bedrock:eu-west-1::foundation-model/{model}",
        f"arn:aws:bedrock:::foundation-model/{model}",
    ]
    assert judge_resources(model, profile_regions=None, **kwargs) == [
        f"arn:aws:bedrock:eu-west-1::foundation-model/{model}"
    ]
    chosen = judge_resources(f"us.{model}", profile_regions=["us-east-1"], **kwargs)
    assert [r.split(":")[3] for r in chosen[1:]] == ["eu-west-1", "us-east-1"]
    assert "judge_profile_regions" in problems(judge_profile_regions=["mars-1"])


def test_reserved_concurrency_and_marketplace_ids_are_checked():
    assert load_config(config()).case_runner_reserved_concurrency == 50
    assert (
        load_config(config(case_runner_reserved_concurrency=None)).case_runner_reserved_concurrency
        is None
    )
    assert "case_runner_reserved_concurrency" in problems(case_runner_reserved_concurrency=0)
    assert "not an AWS Marketplace product id" in problems(marketplace_product_ids=["*"])
    queue = problems(batch_scoring={"queue_timeout_minutes": 5})
    assert "batch_scoring.queue_timeout_minutes" in queue


def test_a_red_team_schedule_needs_no_cdk_plugins():
    """A scheduled red team (the event's redteam field) loads the Red team grader, which
    ships with evalrunner: no cdk.json plugins entry, and naming it is allowed too."""
    from tests.support.catalog import restored_catalog

    judge = {"bedrock": {"model_id": "anthropic.claude-3-5-haiku-20241022-v1:0"}}
    redteam = {"purpose": "HR assistant", "plugins": ["prompt-injection"], "num_tests": 2}
    http = {"url": "https://example.com/ask"}
    schedule = {**GOOD_SCHEDULE, "target": http, "event": {"judge": judge, "redteam": redteam}}
    named = {**schedule, "event": {**schedule["event"], "plugins": ["evalrunner.redteam.grader"]}}
    with restored_catalog("evalrunner.redteam.grader"):
        cfg = load_config(config(schedules=[schedule, {**named, "name": "named"}], plugins=[]))
    assert [s.name for s in cfg.schedules] == ["nightly-hr", "named"]
    bad = {**schedule, "event": {**schedule["event"], "redteam": {**redteam, "num_tests": 0}}}
    message = problems(schedules=[bad])
    assert "schedules[0] ('nightly-hr'): event redteam.num_tests: 0 is less than" in message
