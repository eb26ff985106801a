"""What the steps of one run share inside one process: its configuration and storage, the
target client, the judge, the model hub, the clock and the limits.

Built once by whoever runs the steps — a Lambda container (one :class:`Runtime` per warm
container), the local engine (one per run, holding the real-AWS session that reaches targets
from inside the mock), the GPU task — and passed to each step. Nothing is a module global and
nothing is bound after construction: evaluators get their judge or hub when they are built
(:meth:`~evalrunner.evaluators.base.Evaluator.for_run`).

The target, the judge and the hub are made on first use and then shared by every case of the
run in this process: the judge holds the run's concurrency limit and its response cache, the
hub the loaded models and computed embeddings, the target its HTTP pool.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.errors import ConfigError
from evalrunner.evaluators import Evaluator, Requirement, resolve
from evalrunner.event import concurrency_cap
from evalrunner.input_limits import SuiteLimits
from evalrunner.judge.config import JudgeConfig
from evalrunner.models.locate import ModelSettings
from evalrunner.run import ManifestBatch, ManifestItem, RunConfig
from evalrunner.run_defaults import RunDefaults
from evalrunner.signals.settings import SignalSettings
from evalrunner.storage import RunStore

if TYPE_CHECKING:
    import boto3

    from evalrunner.judge.base import Judge
    from evalrunner.models import ModelHub
    from evalrunner.targets.base import Target
    from evalrunner.targets.spec import TargetSpec

#: Where the model work runs: auto (CUDA when present), cpu, cuda; and the batch size.
ENV_DEVICE = "EVALRUNNER_DEVICE"
ENV_BATCH_SIZE = "EVALRUNNER_BATCH_SIZE"


class TargetFactory(Protocol):
    """Builds a run's target client from its spec (default:
    :func:`evalrunner.targets.factory.build_target`)."""

    def __call__(self, spec: TargetSpec, *, session: boto3.Session | None) -> Target: ...


def default_target(spec: TargetSpec, *, session: boto3.Session | None) -> Target:
    from evalrunner.targets.factory import build_target

    return build_target(spec, session=session)


class JudgeFactory(Protocol):
    """Builds a run's judge client from its configuration (default:
    :func:`evalrunner.judge.factory.build_judge`)."""

    def __call__(
        self, spec: JudgeConfig, *, store: RunStore, session: boto3.Session | None
    ) -> Judge: ...


def default_judge(spec: JudgeConfig, *, store: RunStore, session: boto3.Session | None) -> Judge:
    from evalrunner.judge.factory import build_judge

    return build_judge(spec, store=store, session=session)


#: The bucket a deployed function reads and writes when its event names none.
ENV_BUCKET = "EVALRUNNER_BUCKET"
#: The topic the stack gives the Aggregate function (cdk.json notifications).
ENV_TOPIC_ARN = "EVALRUNNER_TOPIC_ARN"
#: How Aggregate finds weak spots (the name :mod:`evalrunner.reports.analysis.weakness`
#: quotes in its method notes as ``MODE_ENV``).
ENV_WEAK_SPOTS = "EVALRUNNER_WEAK_SPOTS"


class Settings(BaseModel):
    """The process's configuration from its environment, read once (:meth:`from_env`) when
    a :class:`Runtime` is made and carried by it and by each :class:`RunContext`, so no step
    reads ``os.environ`` during a run and whoever runs the steps can hand them their own:
    the local engine gives its embedded bucket and region here instead of setting them in
    the environment of the whole process (a notebook's, a test run's)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: The run bucket when an event names none (``EVALRUNNER_BUCKET``).
    bucket: str | None = None
    #: The region of the run's own AWS clients (``AWS_REGION``, else ``AWS_DEFAULT_REGION``);
    #: None: boto3's default.
    region: str | None = None
    #: Where the model work runs (``EVALRUNNER_DEVICE``): auto picks CUDA when present.
    device: Literal["auto", "cpu", "cuda"] = "auto"
    #: The model batch size (``EVALRUNNER_BATCH_SIZE``).
    batch_size: int = 64
    #: The deployment's cap on an event's ``max_concurrency`` (``EVALRUNNER_MAX_CONCURRENCY``,
    #: the case runner's reserved concurrency), applied by Prepare; None: no cap.
    max_concurrency_cap: int | None = None
    #: The SNS topic Aggregate publishes each run summary to (``EVALRUNNER_TOPIC_ARN``).
    topic_arn: str | None = None
    #: How Aggregate groups failing cases into weak spots (``EVALRUNNER_WEAK_SPOTS``): auto,
    #: embeddings, tfidf or off (:mod:`evalrunner.reports.analysis.weakness`).
    weak_spots: str = "auto"
    #: What a suite Prepare reads may unpack to (``EVALRUNNER_MAX_SUITE_*``).
    suite_limits: SuiteLimits = Field(default_factory=SuiteLimits)
    #: The operator's default judge, metrics and profile for an event that names none
    #: (``EVALRUNNER_JUDGE``, ``EVALRUNNER_DEFAULT_METRICS``, ``EVALRUNNER_PROFILE``, the
    #: config file: :mod:`evalrunner.run_defaults`); Prepare validates its event with them.
    run_defaults: RunDefaults = Field(default_factory=RunDefaults)
    #: Where models are found and each role's default model (``EVALRUNNER_MODELS_DIR``,
    #: ``EVALRUNNER_MODEL_<ROLE>``, ``EVALRUNNER_MODELS_FILE``): the run's hub is made with
    #: them.
    model_settings: ModelSettings = Field(default_factory=ModelSettings)
    #: Where Aggregate publishes a monitor run's signals (``EVALRUNNER_SIGNALS_*``:
    #: :mod:`evalrunner.signals.settings`); unset: no CloudWatch metric is put.
    signals: SignalSettings = Field(default_factory=SignalSettings)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings ``environ`` (default: this process's environment) gives."""
        env = os.environ if environ is None else environ
        return cls(
            bucket=env.get(ENV_BUCKET) or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            device=cast(Literal["auto", "cpu", "cuda"], env.get(ENV_DEVICE) or "auto"),
            batch_size=int(env.get(ENV_BATCH_SIZE) or 64),
            max_concurrency_cap=concurrency_cap(env),
            topic_arn=env.get(ENV_TOPIC_ARN) or None,
            weak_spots=(env.get(ENV_WEAK_SPOTS) or "").strip().lower() or "auto",
            suite_limits=SuiteLimits.from_env(env),
            run_defaults=RunDefaults.read(env),
            model_settings=ModelSettings.from_env(env),
            signals=SignalSettings.from_env(env),
        )

    def require_bucket(self) -> str:
        """The configured bucket; a deployed function without one is misconfigured."""
        if not self.bucket:
            raise ConfigError(
                f"no run bucket: the event names none and {ENV_BUCKET} is not set "
                "(the stack sets it on every function; redeploy it)"
            )
        return self.bucket


def hub_for(settings: Settings) -> ModelHub:
    """A model hub as ``settings`` configure it (the GPU job definition sets them; locally
    the defaults pick CUDA when there is one)."""
    from evalrunner.models import ModelHub

    return ModelHub(
        device=settings.device,
        batch_size=settings.batch_size,
        model_settings=settings.model_settings,
    )


def hub_from_env() -> ModelHub:
    """A model hub configured from the environment (:meth:`Settings.from_env`)."""
    return hub_for(Settings.from_env())


class RunContext:
    """One run's shared services in this process (see the module docstring)."""

    def __init__(
        self,
        store: RunStore,
        config: RunConfig,
        *,
        session: boto3.Session | None = None,
        hub_factory: Callable[[], ModelHub] | None = None,
        target_factory: TargetFactory = default_target,
        judge_factory: JudgeFactory = default_judge,
        clock: Callable[[], float] = time.perf_counter,
        settings: Settings | None = None,
    ) -> None:
        self.store = store
        self.config = config
        if config.plugins:  # the user's metrics join the catalog before any is looked up
            from evalrunner.evaluators import plugins

            plugins.load(config.plugins)
        if config.judge_metrics:  # so are the run's named judge metrics
            from evalrunner.evaluators import judge_metrics

            judge_metrics.define_all(config.judge_metrics)
        #: The process's settings (its :class:`Runtime`'s), read once, not per step.
        self.settings = Settings.from_env() if settings is None else settings
        #: Credentials for targets and the judge; None: the environment's (boto3's default).
        self.session = session
        #: Monotonic seconds, for latencies (a test may hand a fake one).
        self.clock = clock
        self._hub_factory = hub_factory or (lambda: hub_for(self.settings))
        self._target_factory = target_factory
        self._judge_factory = judge_factory
        self._lock = threading.Lock()
        self._target: Target | None = None
        self._judge: Judge | None = None
        self._judge_built = False
        self._hub: ModelHub | None = None
        self._recorded: set[str] | None = None
        self._manifest: list[dict[str, Any]] | None = None
        self._evaluators: dict[frozenset[Requirement], list[Evaluator]] = {}

    @classmethod
    def load(
        cls,
        store: RunStore,
        run_id: str,
        *,
        session: boto3.Session | None = None,
        hub_factory: Callable[[], ModelHub] | None = None,
        target_factory: TargetFactory = default_target,
        judge_factory: JudgeFactory = default_judge,
        clock: Callable[[], float] = time.perf_counter,
        settings: Settings | None = None,
    ) -> RunContext:
        """The context of a run whose configuration Prepare wrote to ``store``."""
        config = RunConfig.model_validate(store.get_json(store.run_key(run_id)))
        return cls(
            store,
            config,
            session=session,
            hub_factory=hub_factory,
            target_factory=target_factory,
            judge_factory=judge_factory,
            clock=clock,
            settings=settings,
        )

    @property
    def run_id(self) -> str:
        return self.config.run_id

    @property
    def max_text_chars(self) -> int:
        """The most characters of any one text that evaluators and reports see."""
        return self.config.max_text_chars

    @property
    def target(self) -> Target:
        with self._lock:
            if self._target is None:
                self._target = self._target_factory(self.config.target, session=self.session)
            return self._target

    @property
    def judge(self) -> Judge | None:
        """The run's judge client, or None when the run has none (its metrics are skipped
        with the reason)."""
        with self._lock:
            if not self._judge_built and self.config.judge is not None:
                self._judge = self._judge_factory(
                    self.config.judge, store=self.store, session=self.session
                )
            self._judge_built = True
            return self._judge

    @property
    def models(self) -> ModelHub:
        """The run's one model hub: models load once and embeddings are shared."""
        with self._lock:
            if self._hub is None:
                self._hub = self._hub_factory()
            return self._hub

    def may_have_record(self, item_id: str) -> bool:
        """Whether a record of ``item_id`` may exist already (a resumed run, a retried task),
        so run_case must read it before calling the target again.

        The run's records are listed once, when this context first asks, and the records this
        context writes are added (:meth:`wrote_record`). Reading every case's record to learn
        that it does not exist cost a third of run_case's time in the local engine (a missed
        GET goes through botocore's whole error path). A record another process wrote after
        the listing is not seen: its case is scored again and its record rewritten, which
        costs a target call and loses nothing."""
        with self._lock:
            if self._recorded is None:
                keys = self.store.list_keys(self.store.records_prefix(self.run_id))
                self._recorded = {self.store.item_of_record(key) for key in keys}
            return item_id in self._recorded

    def manifest_items(self, batch: ManifestBatch) -> list[ManifestItem]:
        """The manifest items of ``batch`` (only the batch's are validated).

        The manifest is read once per context: a Lambda container reads it once per run
        however many tasks of the run it serves, and the embedded engine once per run. A
        batch the manifest does not hold is an error in the event, not an empty task."""
        with self._lock:
            if self._manifest is None:
                self._manifest = list(self.store.get_json(self.store.manifest_key(self.run_id)))
            manifest = self._manifest
        end = batch.first + batch.count
        if end > len(manifest):
            raise ValueError(
                f"items {batch.first}..{end - 1} are not in run {self.run_id}'s manifest "
                f"({len(manifest)} items)"
            )
        return [ManifestItem.model_validate(raw) for raw in manifest[batch.first : end]]

    def wrote_record(self, item_id: str) -> None:
        with self._lock:
            if self._recorded is not None:
                self._recorded.add(item_id)

    def evaluators(self, requirements: Iterable[Requirement]) -> list[Evaluator]:
        """The run's evaluators that run where ``requirements`` are met, each built with what
        it needs from this context.

        Built once per context and requirement set, then shared by every case of the run in
        this process, on any thread: an evaluator holds its run-wide settings (thresholds,
        options, the judge or hub it was given) and nothing of a case. Resolving the names,
        validating the options and building the list again for each case was ~3% of a
        case's CPU (issue 18)."""
        wanted = frozenset(requirements)
        with self._lock:
            built = self._evaluators.get(wanted)
        if built is None:
            # Built outside the lock: for_run reads self.judge / self.models, which take it.
            config = self.config
            made = [
                cls.for_run(config.thresholds, config.evaluator_options.get(cls.name), self)
                for cls in (resolve(name) for name in config.metrics)
                if cls.requires in wanted
            ]
            with self._lock:  # a racing first case may have built them too: keep one list
                built = self._evaluators.setdefault(wanted, made)
        return list(built)


class Runtime:
    """The run contexts of one process, by bucket and run id.

    A warm Lambda container serves many cases of the same run: the configuration is read and
    the target, judge and hub are built once per run, not once per case. Only the most recent
    ``keep`` runs are held, so a container that lives through many runs does not grow.

    It also holds the process's :class:`RunStore` per bucket (:meth:`store`), over
    ``s3_client`` when one is given: the local engine hands it a client that reaches its
    embedded S3 without botocore; None (Lambda, the GPU task) is boto3's own client.
    """

    def __init__(
        self,
        *,
        session: boto3.Session | None = None,
        hub_factory: Callable[[], ModelHub] | None = None,
        target_factory: TargetFactory = default_target,
        judge_factory: JudgeFactory = default_judge,
        clock: Callable[[], float] = time.perf_counter,
        keep: int = 8,
        s3_client: Any | None = None,
        settings: Settings | None = None,
    ) -> None:
        #: This process's settings: given, else read from the environment now, once.
        self.settings = Settings.from_env() if settings is None else settings
        self.session = session
        self._s3_client = s3_client
        self._stores: dict[str, RunStore] = {}
        self._hub_factory = hub_factory or (lambda: hub_for(self.settings))
        self._target_factory = target_factory
        self._judge_factory = judge_factory
        self._clock = clock
        self._keep = keep
        self._lock = threading.Lock()
        self._contexts: OrderedDict[tuple[str, str], RunContext] = OrderedDict()

    def store(self, bucket: str) -> RunStore:
        """The one store of ``bucket`` in this process (its client and connection pool are
        made once, not per event)."""
        with self._lock:
            found = self._stores.get(bucket)
            if found is None:
                found = self._stores[bucket] = RunStore(
                    bucket, client=self._s3_client, region=self.settings.region
                )
            return found

    def judge_for(self, spec: JudgeConfig, store: RunStore) -> Judge:
        """A judge for Prepare, which has no run context yet (it writes the configuration)
        but applies the perturbations that need the judge (misinformation)."""
        return self._judge_factory(spec, store=store, session=self.session)

    def context(self, store: RunStore, run_id: str) -> RunContext:
        key = (store.bucket, run_id)
        with self._lock:
            found = self._contexts.get(key)
            if found is not None:
                self._contexts.move_to_end(key)
                return found
        made = RunContext.load(
            store,
            run_id,
            session=self.session,
            hub_factory=self._hub_factory,
            target_factory=self._target_factory,
            judge_factory=self._judge_factory,
            clock=self._clock,
            settings=self.settings,
        )
        with self._lock:
            context = self._contexts.setdefault(key, made)  # a racing first case may have won
            self._contexts.move_to_end(key)
            while len(self._contexts) > self._keep:
                self._contexts.popitem(last=False)
            return context


__all__ = [
    "ENV_BATCH_SIZE",
    "ENV_BUCKET",
    "ENV_DEVICE",
    "ENV_TOPIC_ARN",
    "ENV_WEAK_SPOTS",
    "JudgeFactory",
    "RunContext",
    "Runtime",
    "Settings",
    "TargetFactory",
    "default_judge",
    "default_target",
    "hub_for",
    "hub_from_env",
]
