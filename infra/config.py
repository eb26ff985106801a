"""The deployment's configuration: the ``evalrunner`` object of ``cdk.json``'s context.

Everything a deployment decides lives here and is validated before a single construct is
created, so a mistake fails ``cdk synth`` with a message naming the field and the fix rather
than a half-deployed stack or a run that fails at 3 a.m.:

- which targets the runner may call (``targets``); ``allow_all_targets`` is the explicit,
  documented opt-in for wildcards;
- GPU scoring on AWS Batch (``batch_scoring``);
- scheduled runs (``schedules``): each one's event is checked with the very ``parse_event``
  the state machine uses;
- what an uploaded suite runs with when it carries no sidecar or tags (``upload_defaults``);
- the Secrets Manager secrets an event may name (``secrets``: full ARNs; the run-case role
  may read exactly those) and where the runner may send requests (``network``);
- alarms (``alarm_email``), logs and retention;
- the user's own metrics (``plugins``): local Python packages or modules bundled into the
  functions' code at synth, the only plugin modules a deployed run may import;
- the monitor of production traffic (``monitor``, :mod:`infra.monitor_config`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalrunner import run_defaults
from evalrunner.errors import ConfigError, EventError
from evalrunner.evaluators.plugins import ENV_DEPLOYED_PLUGINS, SHIPPED_PLUGINS
from evalrunner.event import parse_event
from evalrunner.judge.lifecycle import legacy_judge_warning
from evalrunner.network import NetworkPolicy
from evalrunner.secrets import SECRET_ARN, SecretPolicy, event_problems
from evalrunner.targets.registry import target_class
from infra.monitor_config import MonitorConfig

_ARN_PARTITION = r"arn:aws[a-zA-Z-]*"
_REGION = r"[a-z]{2}(-[a-z]+)+-\d"
_ACCOUNT = r"\d{12}"
LAMBDA_ARN = re.compile(
    rf"^{_ARN_PARTITION}:lambda:{_REGION}:{_ACCOUNT}:function:[A-Za-z0-9_-]{{1,64}}(:[A-Za-z0-9$_-]+)?$"
)
STATE_MACHINE_ARN = re.compile(
    rf"^{_ARN_PARTITION}:states:{_REGION}:{_ACCOUNT}:stateMachine:[A-Za-z0-9_-]{{1,80}}$"
)
MODEL_ARN = re.compile(
    rf"^{_ARN_PARTITION}:bedrock:{_REGION}:({_ACCOUNT})?:"
    r"(foundation-model|inference-profile|application-inference-profile|provisioned-model)/\S+$"
)
GUARDRAIL_ARN = re.compile(rf"^{_ARN_PARTITION}:bedrock:{_REGION}:{_ACCOUNT}:guardrail/[a-z0-9]+$")
BEDROCK_ID = re.compile(r"^[0-9A-Za-z]{10}$")
SCHEDULE_EXPRESSION = re.compile(r"^(rate|cron|at)\(.+\)$")

#: CloudWatch Logs accepts only these retention periods.
LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731,
    1096, 1827, 2192, 2557, 2922, 3288, 3653,
)  # fmt: skip

#: Where a relative plugin path is read from: the folder of cdk.json (the repository root).
CONFIG_ROOT = Path(__file__).resolve().parent.parent
#: Top-level names the functions' code already uses: a plugin may not shadow them.
RESERVED_MODULES = frozenset({"evalrunner", "lambdas", "state_machines", "gpu_tasks", "infra"})

#: The placeholder key used to validate targets outside of a full event.
_PROBE_KEY = "test-suites/probe.csv"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentAlias(_Model):
    """A Bedrock agent alias the runner may invoke (``bedrock:InvokeAgent``)."""

    agent_id: str = Field(pattern=BEDROCK_ID.pattern)
    alias_id: str = Field(pattern=BEDROCK_ID.pattern)
    region: str | None = Field(default=None, description="default: the stack's region")
    account: str | None = Field(default=None, pattern=f"^{_ACCOUNT}$")


class KnowledgeBase(_Model):
    """A knowledge base the runner may query (``bedrock:Retrieve``, RetrieveAndGenerate)."""

    knowledge_base_id: str = Field(pattern=BEDROCK_ID.pattern)
    region: str | None = None
    account: str | None = Field(default=None, pattern=f"^{_ACCOUNT}$")


class Targets(_Model):
    """The resources the run-case function may call; everything else is denied."""

    lambda_arns: list[str] = Field(default_factory=list)
    state_machine_arns: list[str] = Field(default_factory=list)
    agent_aliases: list[AgentAlias] = Field(default_factory=list)
    knowledge_bases: list[KnowledgeBase] = Field(default_factory=list)
    #: Foundation models / inference profiles: RetrieveAndGenerate and the LLM judge.
    model_arns: list[str] = Field(default_factory=list)
    #: Guardrails a knowledge base target's generationConfiguration may name
    #: (``bedrock:ApplyGuardrail`` on exactly these).
    guardrail_arns: list[str] = Field(default_factory=list)

    @field_validator("lambda_arns")
    @classmethod
    def _lambda(cls, values: list[str]) -> list[str]:
        return _match_all(values, LAMBDA_ARN, "arn:aws:lambda:REGION:ACCOUNT:function:NAME")

    @field_validator("state_machine_arns")
    @classmethod
    def _states(cls, values: list[str]) -> list[str]:
        return _match_all(
            values, STATE_MACHINE_ARN, "arn:aws:states:REGION:ACCOUNT:stateMachine:NAME"
        )

    @field_validator("model_arns")
    @classmethod
    def _models(cls, values: list[str]) -> list[str]:
        return _match_all(values, MODEL_ARN, "arn:aws:bedrock:REGION::foundation-model/MODEL_ID")

    @field_validator("guardrail_arns")
    @classmethod
    def _guardrails(cls, values: list[str]) -> list[str]:
        return _match_all(
            values, GUARDRAIL_ARN, "arn:aws:bedrock:REGION:ACCOUNT:guardrail/GUARDRAIL_ID"
        )

    def is_empty(self) -> bool:
        return not any(
            (
                self.lambda_arns,
                self.state_machine_arns,
                self.agent_aliases,
                self.knowledge_bases,
                self.model_arns,
                self.guardrail_arns,
            )
        )


class BatchScoring(_Model):
    """GPU scoring on AWS Batch for runs of at least ``min_items`` case x iteration items.

    ``enabled: false`` deploys no Batch resources (and needs no Docker at deploy time); every
    run is then scored in-process by the Score Lambda. The Lambda carries no model code, so
    runs below ``min_items`` (default 1: every run with a model metric goes to the GPU) get
    their model metrics skipped with a message saying so.
    """

    enabled: bool = True
    min_items: int = Field(default=1, ge=1)
    instance_types: list[str] = Field(default_factory=lambda: ["g5.xlarge", "g4dn.xlarge"])
    max_vcpus: int = Field(default=16, ge=1)
    spot: bool = False
    vcpus: int = Field(default=4, ge=1)
    memory_mib: int = Field(default=15_000, ge=512)
    gpus: int = Field(default=1, ge=1)
    timeout_minutes: int = Field(default=120, ge=1)
    #: How long a job may wait RUNNABLE at the head of the queue before Batch cancels it
    #: (JobStateTimeLimitActions; Batch accepts 10 minutes to 24 hours). A new account's
    #: G-instance quota is usually 0: without this limit the job waits, and the run with it.
    queue_timeout_minutes: int = Field(default=30, ge=10, le=1440)
    #: Attempts of one scoring job (the job definition retries a reclaimed Spot instance once).
    attempts: int = Field(default=2, ge=1, le=10)

    def step_timeout_seconds(self) -> int:
        """ScoreOnBatch's TimeoutSeconds: every attempt may wait its queue limit and run its
        job timeout, plus ten minutes for Batch to report the outcome. The run never waits
        longer than this on the GPU job (the ASL's TimeoutSecondsPath)."""
        return self.attempts * (self.queue_timeout_minutes + self.timeout_minutes) * 60 + 600

    @field_validator("instance_types")
    @classmethod
    def _instance_types(cls, values: list[str]) -> list[str]:
        if not values:
            raise ValueError("give at least one GPU instance type, e.g. g5.xlarge")
        for value in values:
            if not re.fullmatch(r"[a-z][a-z0-9-]*\d[a-z0-9-]*\.[a-z0-9]+", value):
                raise ValueError(f"{value!r} is not an EC2 instance type like g5.xlarge")
        return values


class Schedule(_Model):
    """A scheduled regression run: EventBridge Scheduler starts the state machine with
    ``{**event, "key": key, "target": target, "iterations": iterations}``."""

    name: str = Field(pattern=r"^[0-9A-Za-z_.-]{1,64}$")
    expression: str = Field(description="rate(1 day), cron(0 6 ? * MON-FRI *), at(...)")
    timezone: str = "UTC"
    key: str
    target: dict[str, Any]
    iterations: int
    event: dict[str, Any] = Field(
        default_factory=dict, description="further event fields: metrics, fail_under, ..."
    )
    enabled: bool = True

    @field_validator("expression")
    @classmethod
    def _expression(cls, value: str) -> str:
        if not SCHEDULE_EXPRESSION.match(value.strip()):
            raise ValueError(
                f"{value!r} is not a schedule expression: use rate(1 day), "
                "cron(0 6 ? * MON-FRI *) or at(2026-12-01T06:00:00)"
            )
        return value.strip()

    def run_event(self) -> dict[str, Any]:
        return {**self.event, "key": self.key, "target": self.target, "iterations": self.iterations}


class UploadDefaults(_Model):
    """What an uploaded suite runs with when neither a sidecar nor its tags say."""

    target: dict[str, Any] | None = None
    iterations: int | None = Field(default=None, ge=1)


class Network(_Model):
    """Where the deployed runner may send HTTP requests (targets and the judge)."""

    #: Allow URLs resolving to loopback, private, link-local (metadata) and other internal
    #: addresses: set it when the targets live inside your VPC.
    allow_internal_addresses: bool = False
    #: When not empty, only URLs starting with one of these prefixes are called.
    allowed_url_prefixes: list[str] = Field(default_factory=list)

    @field_validator("allowed_url_prefixes")
    @classmethod
    def _prefixes(cls, values: list[str]) -> list[str]:
        NetworkPolicy(allowed_url_prefixes=values)  # one rule for what a prefix is
        return values

    def policy_json(self) -> str:
        """The value of EVALRUNNER_NETWORK_POLICY on every function."""
        return self.model_dump_json()


class RunnerConfig(_Model):
    """``cdk.json`` → ``context`` → ``evalrunner``."""

    targets: Targets = Field(default_factory=Targets)
    #: The explicit opt-in to let the runner invoke ANY Lambda function, state machine, agent,
    #: knowledge base and model in reach of its role (resources ``*``).
    allow_all_targets: bool = False
    batch_scoring: BatchScoring = Field(default_factory=BatchScoring)
    schedules: list[Schedule] = Field(default_factory=list)
    upload_defaults: UploadDefaults = Field(default_factory=UploadDefaults)
    #: Secrets Manager secrets (full ARNs) events may name in headers_from_secret and
    #: api_key_secret; the run-case role may read exactly these.
    secrets: list[str] = Field(default_factory=list)
    network: Network = Field(default_factory=Network)
    alarm_email: str | None = Field(default=None, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_retention_days: int = 90
    #: Days the intermediates under runs/ are kept (reports under test-reports/ are kept).
    runs_expiration_days: int = Field(default=30, ge=1)
    #: Days an overwritten or deleted object version is kept (the bucket is versioned).
    noncurrent_version_days: int = Field(default=90, ge=1)
    #: Where ``make lambda-package`` puts the Lambda dependencies (relative to the repo root).
    lambda_dependencies_dir: str = "build/lambda-deps"
    #: "retain" keeps the bucket and logs when the stack is deleted.
    removal_policy: Literal["retain", "destroy"] = "retain"
    #: The judge of every run whose event names none (the seed runner judged with Claude on
    #: Bedrock, so its events carry no judge); null: no default judge. The run-case role may
    #: invoke exactly this model (a Bedrock judge).
    judge: dict[str, Any] | None = Field(
        default_factory=lambda: dict(run_defaults.DEFAULT_BEDROCK_JUDGE)
    )
    #: Synth fails for a Bedrock judge (the default judge, a schedule's) on the shipped
    #: Legacy/End-of-Life table (evalrunner/judge/bedrock_lifecycle.json); true overrides it.
    allow_legacy_judge: bool = False
    #: The regions a cross-region inference profile judge may route to (its foundation model
    #: is granted in each). Default: the profile's geography as AWS documents it
    #: (infra.parts.functions.PROFILE_REGIONS); the stack's own region is always included.
    judge_profile_regions: list[str] | None = None
    #: AWS Marketplace product ids of third-party judge models: the roles that judge may
    #: subscribe to exactly these on first use (aws-marketplace:Subscribe, as Bedrock's
    #: model-access page documents). Empty: subscribe once in the Bedrock console instead.
    marketplace_product_ids: list[str] = Field(default_factory=list)
    #: Reserved concurrency of the case runner (RunCase): other functions of the account keep
    #: the rest, and an event's max_concurrency is capped to it. null: no reservation (and no
    #: cap). The account's concurrency quota must exceed it by at least 10 (Lambda keeps 10
    #: unreserved).
    case_runner_reserved_concurrency: int | None = Field(default=50, ge=1, le=1000)
    #: What a run that names no metric evaluates besides the cheap CPU checks.
    default_metrics: list[str] = Field(
        default_factory=lambda: list(run_defaults.SEED_DEFAULT_METRICS)
    )

    #: The user's own metrics (README, "Your own metrics"): local paths, relative to cdk.json's
    #: folder, of a Python package (a folder with __init__.py) or module (a .py file). Each
    #: is copied into the functions' code at synth, and a deployed run may import exactly
    #: these modules (EVALRUNNER_PLUGINS): an event names them in ``plugins``.
    plugins: list[str] = Field(default_factory=list)

    #: The scheduled monitor of production traffic (README, "Monitoring production");
    #: null: none is deployed.
    monitor: MonitorConfig | None = None

    #: The profile (evalrunner.profiles) of a run that names no metric and no profile, e.g.
    #: "seed-003"; null: none (default_metrics applies).
    profile: str | None = None

    @field_validator("profile")
    @classmethod
    def _profile(cls, value: str | None) -> str | None:
        from evalrunner.profiles import PROFILES, known

        if value is not None and value not in PROFILES:
            raise ValueError(f"{value!r} is not a profile; use one of {known()}")
        return value

    @field_validator("plugins")
    @classmethod
    def _plugins(cls, values: list[str]) -> list[str]:
        names: list[str] = []
        for value in values:
            name = _plugin_module(plugin_path(value))
            if name in names:
                raise ValueError(f"{value!r}: the module {name!r} is listed more than once")
            names.append(name)
        return values

    def plugin_paths(self) -> list[Path]:
        """The ``plugins`` as absolute paths (a package folder or a .py file)."""
        return [plugin_path(value) for value in self.plugins]

    def plugin_modules(self) -> list[str]:
        """The module names an event's ``plugins`` may name in the deployed functions."""
        return [_plugin_module(path) for path in self.plugin_paths()]

    @contextmanager
    def _plugins_importable(self) -> Iterator[None]:
        """The plugins importable by module name here, as they are in the deployed code."""
        folders = [str(p.parent) for p in self.plugin_paths()]
        added = [f for f in dict.fromkeys(folders) if f not in sys.path]
        sys.path[:0] = added
        try:
            yield
        finally:
            for folder in added:
                sys.path.remove(folder)

    def plugins_env(self) -> dict[str, str]:
        """EVALRUNNER_PLUGINS of every function: the allow-list the deployed Prepare (and
        every step) enforces; set, if empty, so the deployed refusal names no module."""
        return {ENV_DEPLOYED_PLUGINS: ",".join(self.plugin_modules())}

    @field_validator("judge")
    @classmethod
    def _judge(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        from evalrunner.judge.config import JudgeConfig

        judge = JudgeConfig.model_validate(value)  # a ValidationError names the field
        if judge.openai is not None and judge.openai.api_key_env:
            raise ValueError(
                "a deployed judge cannot read environment variables: give "
                "openai.api_key_secret (a secret listed in 'secrets') instead of api_key_env"
            )
        return value

    @field_validator("default_metrics")
    @classmethod
    def _default_metrics(cls, values: list[str]) -> list[str]:
        from evalrunner.evaluators import resolve_all

        try:
            return [c.name for c in resolve_all(values)]
        except ConfigError as exc:
            raise ValueError(exc.message.replace("\n", "; ")) from None

    def defaults_env(self) -> dict[str, str]:
        """The default judge and metrics as every function's environment
        (:mod:`evalrunner.run_defaults`); no judge: the variable is left out."""
        env = {run_defaults.ENV_DEFAULT_METRICS: json.dumps(self.default_metrics)}
        if self.profile is not None:
            env[run_defaults.ENV_PROFILE] = self.profile
        if self.judge is not None:
            env[run_defaults.ENV_JUDGE] = json.dumps(self.judge, separators=(",", ":"))
        return env

    def judge_model_id(self) -> str | None:
        """The Bedrock model (id or ARN) of the default judge, or None."""
        bedrock = (self.judge or {}).get("bedrock")
        return str(bedrock["model_id"]) if isinstance(bedrock, dict) else None

    @field_validator("judge_profile_regions")
    @classmethod
    def _profile_regions(cls, values: list[str] | None) -> list[str] | None:
        for value in values or []:
            if not re.fullmatch(_REGION, value):
                raise ValueError(f"{value!r} is not an AWS region like us-east-1")
        return values

    @field_validator("marketplace_product_ids")
    @classmethod
    def _product_ids(cls, values: list[str]) -> list[str]:
        for value in values:
            if not re.fullmatch(r"[A-Za-z0-9-]{1,64}", value) or value == "*":
                raise ValueError(
                    f"{value!r} is not an AWS Marketplace product id (the model's product id "
                    "from Bedrock's model-access page; wildcards are not accepted)"
                )
        return values

    @field_validator("secrets")
    @classmethod
    def _secrets(cls, values: list[str]) -> list[str]:
        for value in values:
            if not SECRET_ARN.match(value) or "*" in value:
                raise ValueError(
                    f"{value!r} is not a full secret ARN like arn:aws:secretsmanager:REGION:"
                    "ACCOUNT:secret:NAME-AbCdEf (copy it from the console or 'aws "
                    "secretsmanager describe-secret'; wildcards are not accepted)"
                )
        return values

    def secret_policy(self) -> SecretPolicy:
        """What the deployed functions accept (EVALRUNNER_SECRETS_POLICY)."""
        return SecretPolicy(deployed=True, allowed_secrets=self.secrets)

    def secrets_policy_json(self) -> str:
        """The value of EVALRUNNER_SECRETS_POLICY on every function."""
        return json.dumps({"allowed_secrets": self.secrets}, separators=(",", ":"))

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            raise ValueError(f"must be one of {', '.join(map(str, LOG_RETENTION_DAYS))}")
        return value

    # -- checks across fields -----------------------------------------------------------
    def problems(self) -> list[str]:
        problems: list[str] = []
        names = [s.name for s in self.schedules]
        for name in sorted({n for n in names if names.count(n) > 1}):
            problems.append(f"schedules: the name {name!r} is used more than once")
        for i, schedule in enumerate(self.schedules):
            where = f"schedules[{i}] ({schedule.name!r})"
            if "run_id" in schedule.event:
                problems.append(
                    f"{where}: event.run_id: a schedule runs many times and each run needs its "
                    "own run id; leave run_id out (one is generated per run)"
                )
            # An event may name only the deployment's plugins (as the deployed Prepare
            # enforces), checked before the event's plugins are imported below.
            modules = self.plugin_modules()
            unknown = [
                p
                for p in schedule.event.get("plugins") or []
                if p not in modules and p not in SHIPPED_PLUGINS
            ]
            if unknown:
                problems.append(
                    f"{where}: event.plugins: {', '.join(map(repr, unknown))} is not among the "
                    f"deployment's plugins ({', '.join(modules) or 'none'}); add its package "
                    "or module to cdk.json plugins"
                )
                continue
            try:
                with self._plugins_importable():  # a schedule may name their metrics
                    parse_event(schedule.run_event())
            except EventError as exc:
                problems.extend(f"{where}: event {p}" for p in exc.problems)
                continue
            problems.extend(f"{where}: {p}" for p in self.target_problems(schedule.target))
            deployed = event_problems(schedule.run_event(), self.secret_policy())
            problems.extend(f"{where}: event {p}" for p in deployed)
        if self.judge is not None:
            judge = event_problems({"judge": self.judge}, self.secret_policy())
            problems.extend(f"judge: {p}" for p in judge)
        if not self.allow_legacy_judge:
            judges = [("judge", self.judge)] + [
                (f"schedules[{i}] ({s.name!r}): event.judge", s.event.get("judge"))
                for i, s in enumerate(self.schedules)
            ]
            for where, judge_config in judges:
                message = legacy_judge_warning(judge_config)
                if message:
                    problems.append(
                        f"{where}: {message} (or set allow_legacy_judge: true to deploy anyway)"
                    )
        defaults = self.upload_defaults
        if defaults.target is not None:
            try:
                parse_event({"key": _PROBE_KEY, "iterations": 1, "target": defaults.target})
            except EventError as exc:
                problems.extend(f"upload_defaults: event {p}" for p in exc.problems)
            else:
                problems.extend(
                    f"upload_defaults: {p}" for p in self.target_problems(defaults.target)
                )
                deployed = event_problems({"target": defaults.target}, self.secret_policy())
                problems.extend(f"upload_defaults: event {p}" for p in deployed)
        return problems

    def target_problems(self, target: dict[str, Any]) -> list[str]:
        """Why the deployed runner would be denied calling ``target`` (empty: it may)."""
        if self.allow_all_targets:
            return []
        return target_class(target).deploy_problems(target, self.targets)


def _match_all(values: list[str], pattern: re.Pattern[str], example: str) -> list[str]:
    for value in values:
        if value == "*" or not pattern.match(value):
            raise ValueError(
                f"{value!r} is not a full ARN like {example} (wildcards are not accepted here; "
                "allow_all_targets is the explicit opt-in)"
            )
    return values


def plugin_path(value: str) -> Path:
    """``value`` (a cdk.json ``plugins`` entry) as an absolute path, or why it cannot be one."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("give a local path to a Python package folder or a .py file")
    path = Path(value.strip()).expanduser()
    path = (path if path.is_absolute() else CONFIG_ROOT / path).resolve()
    if path.is_file() and path.suffix == ".py":
        return path
    if path.is_dir() and (path / "__init__.py").is_file():
        return path
    if path.is_dir():
        raise ValueError(
            f"{value!r}: {path} is a folder without __init__.py; give a Python package "
            "folder (the one holding __init__.py) or a .py file"
        )
    raise ValueError(
        f"{value!r}: no such .py file or package folder ({path}); a relative path is read "
        "from cdk.json's folder"
    )


def _plugin_module(path: Path) -> str:
    name = path.stem if path.is_file() else path.name
    if not name.isidentifier():
        raise ValueError(f"{str(path)!r}: {name!r} is not an importable module name")
    if name in RESERVED_MODULES or name in sys.stdlib_module_names:
        owner = "the runner's own" if name in RESERVED_MODULES else "a standard library module"
        raise ValueError(f"{str(path)!r}: the module name {name!r} is {owner}; rename it")
    return name


def _location(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "evalrunner"


def load_config(raw: Any) -> RunnerConfig:
    """Validate the context value (a dict, or JSON text when given with ``-c``); every
    problem is reported at once in a :class:`ConfigError`."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"cdk.json context 'evalrunner' is not valid JSON ({exc})") from exc
    try:
        config = RunnerConfig.model_validate(raw or {})
    except ValidationError as exc:
        lines = [f"{_location(tuple(e['loc']))}: {e['msg']}" for e in exc.errors()]
        raise ConfigError(_message(lines)) from exc
    problems = config.problems()
    if problems:
        raise ConfigError(_message(problems))
    return config


def _message(lines: list[str]) -> str:
    body = "\n".join(f"  - {line}" for line in lines)
    return f"cdk.json context 'evalrunner' is not valid:\n{body}"


__all__ = ["BatchScoring", "RunnerConfig", "Schedule", "Targets", "load_config"]
