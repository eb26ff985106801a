"""Model scoring throughput (issue #4): texts per second of evalrunner's embedding scorer
against a naive per-case loop and against Ragas's semantic similarity (goal: at least 3x the
naive loop), on the same suite, with the same model files, on this machine.

The suite is deterministic (1,000 cases by default, each run for 2 iterations): a question,
its expected answer, the agent's answer and 3-5 retrieved chunks, in the English of a company
help desk (HR policies, plan limits, expenses, how-tos, deadlines, data retention). It has
the repetition real runs have: the expected answer is the same in every iteration, a
deterministic agent often gives the same answer twice, refusals and boilerplate sentences
recur, and chunks come from a shared pool in which some chunks are retrieved far more often
than others.

Texts = the embedding inputs the metric needs: for Answer semantic similarity the answer and
the expected answer of every case x iteration. Measured, each after one warm-up on the first
cases and then ``--repeats`` times (median reported, of the repetitions that other processes
on this shared machine left alone where there are any: see ``Others``); model load time is
reported apart:
  (a) evalrunner: ``resolve("Answer semantic similarity")`` with a fresh ModelHub per
      repetition (the model loaded before the clock starts), ``evaluate_batch(samples)``;
  (b) naive: for each case x iteration ``model.encode([answer])``, ``model.encode([expected])``
      and a cosine, on the same SentenceTransformer: no dedup, no batching;
  (c) Ragas (bench/scorer_peers/ragas_similarity.py, in a venv of its own, in a fresh network
      namespace where the machine allows): ``ragas.metrics.collections.SemanticSimilarity``
      with ``ragas.embeddings.HuggingFaceEmbeddings`` on the same model folder, through
      ``abatch_score`` and through ``ragas.evaluate()``.
All three must give the same scores (max abs difference printed). Then the six embedding
evaluators of evalrunner/evaluators/semantic.py over the whole suite, sharing one hub as a run
does, against each with a hub of its own.

Usage:
  python3 -m venv /tmp/scorer-peers-venv
  /tmp/scorer-peers-venv/bin/pip install -r bench/scorer_peers/requirements.txt
  HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_scorer.py [--cases 1000] [--iterations 2]
      [--repeats 3] [--peers-python /tmp/scorer-peers-venv/bin/python] [--skip-ragas]
      [--skip-six] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
from _timing import clocks, machine_busy  # bench/ is on sys.path when run as a script

from evalrunner.evaluators import Sample
from evalrunner.evaluators.registry import resolve
from evalrunner.models import ModelHub
from evalrunner.models.locate import ModelRole, locate

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "bench" / "scorer_peers"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
EVALUATOR = "Answer semantic similarity"
SIX = (
    "Answer semantic similarity",
    "Answer semantic sentence similarity",
    "Answer relevancy (sentence similarity)",
    "Groundedness",
    "Context relevancy (soft recall and precision)",
    "Context mean reciprocal rank",
)

# --------------------------------------------------------------------------- the suite

OFFICES = ["London", "Berlin", "Dublin", "Austin", "Toronto", "Singapore", "Sydney", "Madrid"]
REGIONS = ["the EU", "the UK", "North America", "Asia-Pacific", "Latin America"]


@dataclass(frozen=True)
class Fact:
    """One answerable question of the help desk's knowledge base."""

    question: str
    answers: tuple[str, ...]  # phrasings of the correct answer; [0] is the expected one
    wrong: str  # the same answer with a wrong number
    statement: str  # how the documentation says it
    domain: str


def _hr(rng: random.Random) -> Fact:
    groups = [
        "full-time employees",
        "part-time employees",
        "contractors on fixed-term contracts",
        "interns",
        "people managers",
        "new hires in their first year",
        "employees with more than five years of service",
        "shift workers",
    ]
    leaves = ["annual leave", "sick leave", "parental leave", "bereavement leave", "study leave"]
    group, leave, office = rng.choice(groups), rng.choice(leaves), rng.choice(OFFICES)
    n = rng.randint(2, 40)
    m = n + rng.choice([-3, -2, 2, 5])
    g = group[0].upper() + group[1:]
    return Fact(
        question=rng.choice(
            [
                f"How many days of {leave} do {group} in the {office} office get?",
                f"What is the {leave} allowance for {group} based in {office}?",
                f"I am one of the {group} in {office}; how much {leave} can I take?",
            ]
        ),
        answers=(
            f"{g} in the {office} office get {n} days of {leave} per year.",
            f"The {leave} allowance for {group} in {office} is {n} days each calendar year.",
            f"In {office}, {group} are entitled to {n} days of paid {leave} a year, and "
            f"unused days do not carry over to the next year.",
        ),
        wrong=f"{g} in the {office} office get {m} days of {leave} per year.",
        statement=f"{g} working from the {office} office are entitled to {n} days of "
        f"{leave} in each calendar year.",
        domain="hr",
    )


def _plan(rng: random.Random) -> Fact:
    plans = ["Free", "Starter", "Team", "Business", "Enterprise"]
    resources = [
        "projects",
        "team members",
        "gigabytes of file storage",
        "API requests per minute",
        "custom dashboards",
        "third-party integrations",
        "guest users",
    ]
    plan, res, region = rng.choice(plans), rng.choice(resources), rng.choice(REGIONS)
    n = rng.choice([3, 5, 10, 20, 25, 50, 100, 250, 500, 1000])
    return Fact(
        question=rng.choice(
            [
                f"How many {res} does the {plan} plan include for customers in {region}?",
                f"What is the limit on {res} on the {plan} plan in {region}?",
            ]
        ),
        answers=(
            f"The {plan} plan includes up to {n} {res} for customers in {region}.",
            f"On the {plan} plan in {region} you can have at most {n} {res}; upgrading to a "
            f"higher plan raises the limit.",
            f"You get {n} {res} with the {plan} plan in {region}.",
        ),
        wrong=f"The {plan} plan includes up to {n * 2} {res} for customers in {region}.",
        statement=f"Customers in {region} on the {plan} plan may use up to {n} {res}; "
        f"usage beyond the limit is blocked until the next billing period.",
        domain="plans",
    )


def _expenses(rng: random.Random) -> Fact:
    items = [
        ("hotel stays", "night"),
        ("client dinners", "person"),
        ("train tickets", "journey"),
        ("taxi rides", "ride"),
        ("conference fees", "event"),
        ("home office equipment", "year"),
        ("mobile phone bills", "month"),
    ]
    (item, unit), office = rng.choice(items), rng.choice(OFFICES)
    amount = rng.choice([25, 40, 60, 80, 120, 150, 200, 250, 400, 600])
    return Fact(
        question=rng.choice(
            [
                f"What is the spending limit for {item} for staff in {office}?",
                f"How much can I claim for {item} if I work in {office}?",
            ]
        ),
        answers=(
            f"Staff in {office} can claim up to {amount} euros per {unit} for {item}.",
            f"For {item}, employees of the {office} office are reimbursed up to {amount} "
            f"euros per {unit}, with receipts attached to the claim.",
            f"The limit for {item} in {office} is {amount} euros per {unit}.",
        ),
        wrong=f"Staff in {office} can claim up to {amount + 50} euros per {unit} for {item}.",
        statement=f"Expenses for {item} incurred by {office} staff are reimbursed up to "
        f"{amount} euros per {unit}; anything above that needs a director's approval.",
        domain="expenses",
    )


def _howto(rng: random.Random) -> Fact:
    tasks = [
        ("export a report", "Reports", "Export"),
        ("reset my password", "Security", "Reset password"),
        ("add a team member", "Members", "Invite"),
        ("cancel my subscription", "Billing", "Cancel plan"),
        ("change the billing address", "Billing", "Edit address"),
        ("enable two-factor authentication", "Security", "Enable 2FA"),
        ("connect the Slack integration", "Integrations", "Connect Slack"),
        ("restore a deleted project", "Trash", "Restore"),
        ("change the workspace language", "Preferences", "Language"),
        ("download my invoices", "Billing", "Invoices"),
    ]
    (task, page, button) = rng.choice(tasks)
    app = rng.choice(["web app", "desktop app", "iOS app", "Android app", "admin console"])
    hours = rng.randint(1, 48)
    return Fact(
        question=rng.choice(
            [f"How do I {task} in the {app}?", f"Where can I {task} in the {app}?"]
        ),
        answers=(
            f"In the {app}, open Settings, go to {page} and click {button}; the change is "
            f"applied within {hours} hours.",
            f"Go to Settings > {page} in the {app} and select {button}.",
            f"Open the {page} page under Settings in the {app}, then press {button}. It can "
            f"take up to {hours} hours before everyone sees the change.",
        ),
        wrong=f"In the {app}, open Settings, go to {page} and click {button}; the change is "
        f"applied within {hours + 24} hours.",
        statement=f"To {task.replace('my ', 'your ')} in the {app}, open Settings, then {page}, "
        f"and choose {button}. Changes propagate within {hours} hours.",
        domain="howto",
    )


def _deadline(rng: random.Random) -> Fact:
    processes = [
        ("submit expense claims", "after the purchase"),
        ("request annual leave", "before the first day off"),
        ("report a security incident", "after noticing it"),
        ("book business travel", "before the trip"),
        ("submit timesheets", "after the end of the month"),
        ("renew a software licence", "before it expires"),
    ]
    (process, event), office = rng.choice(processes), rng.choice(OFFICES)
    n, unit = rng.randint(1, 30), rng.choice(["days", "working days", "weeks", "hours"])
    return Fact(
        question=rng.choice(
            [
                f"How soon must people in {office} {process}?",
                f"What is the deadline to {process} at the {office} office?",
            ]
        ),
        answers=(
            f"At the {office} office you must {process} within {n} {unit} {event}.",
            f"The deadline in {office} is {n} {unit} {event}; late requests are rejected "
            f"automatically.",
            f"You have {n} {unit} {event} to {process} if you work in {office}.",
        ),
        wrong=f"At the {office} office you must {process} within {n + 7} {unit} {event}.",
        statement=f"Employees of the {office} office are required to {process} no later than "
        f"{n} {unit} {event}.",
        domain="deadlines",
    )


def _retention(rng: random.Random) -> Fact:
    data = [
        "audit logs",
        "deleted files",
        "chat transcripts",
        "backup snapshots",
        "invoices",
        "access tokens",
        "support tickets",
    ]
    kind, plan = rng.choice(data), rng.choice(["Free", "Team", "Business", "Enterprise"])
    n, unit = rng.randint(1, 36), rng.choice(["days", "months", "years"])
    k = kind[0].upper() + kind[1:]
    return Fact(
        question=rng.choice(
            [
                f"How long are {kind} kept on the {plan} plan?",
                f"What is the retention period for {kind} for {plan} workspaces?",
            ]
        ),
        answers=(
            f"{k} are kept for {n} {unit} on the {plan} plan.",
            f"On the {plan} plan, {kind} are retained for {n} {unit} and then permanently "
            f"deleted; they cannot be recovered after that.",
            f"The retention period for {kind} in {plan} workspaces is {n} {unit}.",
        ),
        wrong=f"{k} are kept for {n + 3} {unit} on the {plan} plan.",
        statement=f"For workspaces on the {plan} plan, {kind} are retained for {n} {unit} "
        f"before they are permanently deleted.",
        domain="retention",
    )


MAKERS: tuple[Callable[[random.Random], Fact], ...] = (
    _hr,
    _plan,
    _expenses,
    _howto,
    _deadline,
    _retention,
)
# Sentences that recur in answers and documents, as boilerplate does.
FOLLOW_UPS = {
    "hr": [
        "You can find the full policy on the intranet under Human Resources.",
        "Talk to your manager if you need an exception.",
        "Requests are approved in the HR portal.",
    ],
    "plans": [
        "You can compare all plans on the pricing page.",
        "Contact sales if you need a custom limit.",
    ],
    "expenses": [
        "Claims are submitted through the expenses tool with a photo of each receipt.",
        "Alcohol is never reimbursed.",
        "Reimbursements are paid with the next monthly salary.",
    ],
    "howto": [
        "Only workspace admins can see this setting.",
        "If the button is greyed out, ask your administrator for permission.",
        "The same option is available in the mobile apps.",
    ],
    "deadlines": [
        "Exceptions must be approved by your line manager in writing.",
        "The finance team sends a reminder one week before the deadline.",
    ],
    "retention": [
        "Administrators can export the data before it is deleted.",
        "Retention periods follow the data processing agreement.",
        "Legal holds suspend deletion until they are lifted.",
    ],
}
REFUSALS = [
    "I'm sorry, I could not find that information in the available documents.",
    "I don't know. The documents I have access to do not cover this question.",
    "I can only answer questions about our products and company policies.",
]
GENERIC_CHUNKS = [
    "This document is maintained by the People team and reviewed every year. Questions about "
    "its contents can be sent to the HR mailbox.",
    "Last updated in March. Earlier versions of this page are kept in the document archive.",
    "All figures are gross amounts unless stated otherwise. Local law takes precedence where "
    "it is more generous.",
    "The help center covers the web app, the desktop app and the mobile apps. Screenshots may "
    "differ slightly between versions.",
    "For urgent problems, contact support through the chat widget. Our team replies within one "
    "business day.",
    "Table of contents: overview, eligibility, how to apply, exceptions, related policies.",
]


@dataclass(frozen=True)
class Suite:
    samples: list[Sample]  # case-major: case 0 iteration 1, case 0 iteration 2, ...
    cases: int
    iterations: int


def build_suite(cases: int = 1000, iterations: int = 2, seed: int = 4) -> Suite:
    """A deterministic RAG suite with the repetition real runs have (see the module doc)."""
    rng = random.Random(seed)
    facts: list[Fact] = []
    seen: set[str] = set()
    while len(facts) < cases:
        fact = rng.choice(MAKERS)(rng)
        if fact.question not in seen:
            seen.add(fact.question)
            facts.append(fact)

    # The document chunks: each fact's source paragraph (its statement with one or two
    # sentences of its domain around it), plus generic pages that match many searches.
    def source_chunk(f: Fact) -> str:
        extra = rng.sample(FOLLOW_UPS[f.domain], k=rng.randint(1, 2))
        return " ".join([f.statement, *extra] if rng.random() < 0.6 else [*extra, f.statement])

    gold = [source_chunk(f) for f in facts]
    pool = gold + GENERIC_CHUNKS
    # Retrieval popularity: a few chunks come back for many questions (Zipf-like weights).
    order = list(range(len(pool)))
    rng.shuffle(order)
    weights = [0.0] * len(pool)
    for rank, i in enumerate(order):
        weights[i] = 1.0 / (rank + 1) ** 0.8

    samples: list[Sample] = []
    for i, fact in enumerate(facts):
        expected = fact.answers[0]
        if rng.random() < 0.4:  # some expected answers carry a second sentence
            expected += " " + rng.choice(FOLLOW_UPS[fact.domain])
        k = rng.randint(3, 5)
        chunks: list[str] = []
        while len(chunks) < k - 1:
            c = pool[rng.choices(range(len(pool)), weights=weights)[0]]
            if c != gold[i] and c not in chunks:
                chunks.append(c)
        if rng.random() < 0.85:  # the retriever usually finds the source, not always first
            chunks.insert(min(rng.choice([0, 0, 0, 1, 1, 2]), len(chunks)), gold[i])
        else:
            chunks.append(pool[rng.choices(range(len(pool)), weights=weights)[0]])

        def agent_answer(fact: Fact = fact, expected: str = expected) -> str:
            r = rng.random()
            if r < 0.15:
                return expected  # word for word
            if r < 0.50:
                return rng.choice(fact.answers[1:])
            if r < 0.75:
                extra = rng.sample(FOLLOW_UPS[fact.domain], k=rng.randint(1, 2))
                return " ".join([rng.choice(fact.answers), *extra])
            if r < 0.85:
                return fact.wrong
            if r < 0.93:
                return rng.choice(REFUSALS)
            other = facts[rng.randrange(len(facts))]  # answers a neighbouring question
            return rng.choice(other.answers)

        answer = agent_answer()
        for it in range(iterations):
            if it and rng.random() >= 0.5:  # half the time the agent answers differently
                answer = agent_answer()
            samples.append(
                Sample(
                    question=fact.question,
                    case_id=f"c{i:04d}",
                    expected_answer=expected,
                    answer=answer,
                    contexts=list(chunks),
                    metadata={"iteration": it + 1},
                )
            )
    return Suite(samples, cases, iterations)


def similarity_texts(samples: list[Sample]) -> list[str]:
    """The embedding inputs of Answer semantic similarity: answer and expected answer."""
    return [t for s in samples for t in (s.answer or "", s.expected_answer or "")]


def six_texts(samples: list[Sample]) -> dict[str, list[str]]:
    """What each of the six embedding evaluators asks its encoder for, over the suite (its
    own ``texts(sample)``, the list it prefetches)."""
    out = {}
    for name in SIX:
        evaluator: Any = resolve(name)(options={"model": MODEL})
        out[name] = [t for s in samples for t in evaluator.texts(s) if t]
    return out


def describe(suite: Suite) -> dict[str, Any]:
    samples = suite.samples
    texts = similarity_texts(samples)
    six = six_texts(samples)
    words = [len(t.split()) for t in texts]
    return {
        "cases": suite.cases,
        "iterations": suite.iterations,
        "samples": len(samples),
        "similarity_texts": len(texts),
        "similarity_unique_texts": len(set(texts)),
        "unique_answers": len({s.answer for s in samples}),
        "unique_expected": len({s.expected_answer for s in samples}),
        "words_per_text_min_median_max": [min(words), statistics.median(words), max(words)],
        "chunks_per_sample": statistics.mean(len(s.contexts) for s in samples),
        "unique_chunks": len({c for s in samples for c in s.contexts}),
        "six_texts": {name: len(t) for name, t in six.items()},
        "six_unique_texts_each": {name: len(set(t)) for name, t in six.items()},
        "six_texts_total": sum(len(t) for t in six.values()),
        "six_unique_texts_together": len({x for t in six.values() for x in t}),
    }


# --------------------------------------------------------------------------- timing


def timed(run: Callable[[], Any]) -> tuple[Any, float, float]:
    w, c = clocks()
    out = run()
    w2, c2 = clocks()
    return out, w2 - w, c2 - c


class Others:
    """CPU seconds that other processes (and the hypervisor's steal) took from the 2 cores
    while we measured: a repetition where this is more than a few percent of 2 x wall time
    was slowed by neighbours, not by its own work."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def measure(self, run: Callable[[], Any]) -> tuple[Any, float, float]:
        busy = machine_busy()
        out, wall, cpu = timed(run)
        self.seconds.append(max(0.0, machine_busy() - busy - cpu))
        return out, wall, cpu


#: A repetition is clean when other processes took at most this share of the machine's CPU
#: (2 cores x its wall time) while it ran.
CLEAN_SHARE = 0.05


def summary(
    n_texts: int, walls: list[float], cpus: list[float], others: list[float]
) -> dict[str, Any]:
    """Texts/s over the median repetition: of the clean repetitions if there is one (this
    machine is shared, and a neighbour's test run can double a repetition's time), else of
    all of them; both are kept."""
    cores = os.cpu_count() or 1
    pairs = enumerate(zip(walls, others, strict=True))
    clean = [i for i, (w, o) in pairs if o <= CLEAN_SHARE * cores * w]
    chosen = clean or list(range(len(walls)))
    wall = statistics.median(walls[i] for i in chosen)
    wall_all = statistics.median(walls)
    return {
        "texts": n_texts,
        "seconds": [round(x, 3) for x in walls],
        "cpu_seconds": [round(x, 3) for x in cpus],
        "others_cpu_seconds": [round(x, 2) for x in others],
        "clean_repetitions": len(clean),
        "median_over": f"{len(clean)} clean of {len(walls)}" if clean else "all (none clean)",
        "median_seconds": round(wall, 3),
        "texts_per_s": round(n_texts / wall, 1),
        "texts_per_s_all_repetitions": round(n_texts / wall_all, 1),
        "cpu_ms_per_text": round(statistics.median(cpus[i] for i in chosen) / n_texts * 1000, 3),
    }


def bench_evalrunner(samples: list[Sample], warmup: int, repeats: int) -> dict[str, Any]:
    """(a) the real evaluator; a fresh hub per repetition so nothing is cached between them."""

    def once(batch: list[Sample]) -> tuple[list[float], float, float, float, dict]:
        hub = ModelHub(device="cpu")
        _, load, _ = timed(lambda: hub.encoder(MODEL))
        evaluator = resolve(EVALUATOR)(options={"model": MODEL}, models=hub)  # type: ignore[call-arg]
        results, wall, cpu = others.measure(lambda: evaluator.evaluate_batch(batch))
        statuses = {r[0].status for r in results}
        assert statuses == {"scored"}, statuses
        scores = [float(r[0].score) for r in results]  # type: ignore[arg-type]
        return scores, wall, cpu, load, hub.encoder(MODEL).counters.as_dict()

    others = Others()
    first_load = once(samples[:warmup])[3]
    others.seconds.clear()
    walls, cpus, loads = [], [], []
    for _ in range(repeats):
        scores, wall, cpu, load, counters = once(samples)
        walls.append(wall)
        cpus.append(cpu)
        loads.append(load)
    out = summary(2 * len(samples), walls, cpus, others.seconds)
    out["first_load_seconds"] = round(first_load, 2)
    out["load_seconds"] = round(statistics.median(loads), 2)
    out["counters"] = counters
    out["scores"] = scores
    return out


def bench_naive(samples: list[Sample], warmup: int, repeats: int) -> dict[str, Any]:
    """(b) encode per case x iteration, answer and expected answer separately, then cosine."""
    hub = ModelHub(device="cpu")
    model, load, _ = timed(lambda: hub.encoder(MODEL).model)  # the raw SentenceTransformer

    def once(batch: list[Sample]) -> list[float]:
        scores = []
        for s in batch:
            a = model.encode([s.answer], show_progress_bar=False)[0]
            e = model.encode([s.expected_answer], show_progress_bar=False)[0]
            scores.append(float(a @ e / (np.linalg.norm(a) * np.linalg.norm(e))))
        return scores

    once(samples[:warmup])
    others = Others()
    walls, cpus = [], []
    for _ in range(repeats):
        scores, wall, cpu = others.measure(lambda: once(samples))
        walls.append(wall)
        cpus.append(cpu)
    out = summary(2 * len(samples), walls, cpus, others.seconds)
    out["load_seconds"] = round(load, 2)
    out["scores"] = scores
    return out


def can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    except OSError:
        return False


def bench_ragas(
    samples: list[Sample], warmup: int, repeats: int, python: str, timeout: int
) -> dict[str, Any]:
    """(c) Ragas in its own interpreter and venv; its RESULT line, or why there is none."""
    if not Path(python).exists():
        return {"not_run": f"interpreter {python} not found (see bench/scorer_peers/)"}
    model_path = str(locate(MODEL, ModelRole.EMBEDDING))
    unshare = can_unshare()
    with tempfile.TemporaryDirectory(prefix="bench-scorer-ragas-") as tmp:
        spec = Path(tmp) / "suite.json"
        spec.write_text(
            json.dumps(
                {
                    "model_path": model_path,
                    "warmup": warmup,
                    "repeats": repeats,
                    "pairs": [
                        {"response": s.answer, "reference": s.expected_answer} for s in samples
                    ],
                }
            ),
            encoding="utf-8",
        )
        cmd = [python, str(PEERS / "ragas_similarity.py"), str(spec)]
        if unshare:
            cmd = ["unshare", "-n", *cmd]
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "RAGAS_DO_NOT_TRACK": "true",
            "OPENAI_API_KEY": "sk-dummy-benchmark-never-used",
            "HOME": tmp,
        }
        try:
            proc = subprocess.run(
                cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return {"not_run": f"timed out after {timeout} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
            result["isolated_network_namespace"] = unshare
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-12:]
    return {"not_run": f"exit {proc.returncode}: " + " | ".join(tail)[-1500:]}


def bench_six(samples: list[Sample]) -> dict[str, Any]:
    """The six embedding evaluators over the whole suite: one shared hub (as a run binds
    one) against a hub of their own each. Load time included, as a run pays it."""

    def run(names: tuple[str, ...], hub: ModelHub) -> dict[str, Any]:
        per: dict[str, Any] = {}
        for name in names:
            evaluator = resolve(name)(options={"model": MODEL}, models=hub)  # type: ignore[call-arg]
            results, wall, cpu = timed(lambda ev=evaluator: ev.evaluate_batch(samples))
            statuses: dict[str, int] = {}
            for r in results:
                statuses[r[0].status] = statuses.get(r[0].status, 0) + 1
            per[name] = {"seconds": round(wall, 2), "cpu_seconds": round(cpu, 2), **statuses}
        return per

    others = Others()
    shared_hub = ModelHub(device="cpu")
    shared, wall, cpu = others.measure(lambda: run(SIX, shared_hub))
    out: dict[str, Any] = {
        "shared_hub": {
            "seconds": round(wall, 2),
            "cpu_seconds": round(cpu, 2),
            "others_cpu_seconds": round(others.seconds[0], 2),
            "load_seconds": shared_hub.used[MODEL]["load_seconds"],
            "counters": shared_hub.encoder(MODEL).counters.as_dict(),
            "per_evaluator": shared,
        }
    }
    others = Others()
    own: dict[str, Any] = {}
    loads, requested, computed, total_wall, total_cpu = [], 0, 0, 0.0, 0.0
    for name in SIX:
        hub = ModelHub(device="cpu")
        per, wall, cpu = others.measure(lambda hub=hub, name=name: run((name,), hub))
        own[name] = per[name]
        loads.append(hub.used[MODEL]["load_seconds"])
        c = hub.encoder(MODEL).counters
        requested, computed = requested + c.requested, computed + c.computed
        total_wall, total_cpu = total_wall + wall, total_cpu + cpu
    out["own_hubs"] = {
        "seconds": round(total_wall, 2),
        "cpu_seconds": round(total_cpu, 2),
        "others_cpu_seconds": round(sum(others.seconds), 2),
        "load_seconds": round(sum(loads), 2),
        "counters": {"requested": requested, "computed": computed},
        "per_evaluator": own,
    }
    return out


# --------------------------------------------------------------------------- main


def max_diff(a: list[float], b: list[float]) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=100, help="samples in the warm-up run")
    parser.add_argument(
        "--peers-python",
        default=os.environ.get("PEERS_PYTHON", "/tmp/scorer-peers-venv/bin/python"),
    )
    parser.add_argument("--skip-ragas", action="store_true")
    parser.add_argument("--skip-six", action="store_true")
    parser.add_argument("--timeout", type=int, default=1800, help="for the Ragas side")
    parser.add_argument("--json", type=Path, help="write every number (and the scores) here")
    args = parser.parse_args()

    import torch

    suite = build_suite(args.cases, args.iterations)
    samples = suite.samples
    info = describe(suite)
    machine = {
        "python": platform.python_version(),
        "cpu_cores": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "gpu": "cuda" if torch.cuda.is_available() else "none",
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps({"suite": info, "machine": machine}), flush=True)
    print(
        f"suite: {info['cases']} cases x {info['iterations']} iterations = {info['samples']} "
        f"samples; {info['similarity_texts']} texts for {EVALUATOR} "
        f"({info['similarity_unique_texts']} unique); the six embedding evaluators ask for "
        f"{info['six_texts_total']} texts (sentences, questions, answers; "
        f"{info['six_unique_texts_together']} unique across the six)",
        flush=True,
    )

    results: dict[str, Any] = {"suite": info, "machine": machine}
    print("(a) evalrunner ...", file=sys.stderr, flush=True)
    results["evalrunner"] = bench_evalrunner(samples, args.warmup, args.repeats)
    print("(b) naive loop ...", file=sys.stderr, flush=True)
    results["naive"] = bench_naive(samples, args.warmup, args.repeats)
    if not args.skip_ragas:
        print("(c) ragas ...", file=sys.stderr, flush=True)
        results["ragas"] = bench_ragas(
            samples, args.warmup, args.repeats, args.peers_python, args.timeout
        )

    ours, naive = results["evalrunner"], results["naive"]
    clipped = [min(1.0, max(0.0, x)) for x in naive["scores"]]
    agreement: dict[str, Any] = {
        "evalrunner vs naive (naive clipped to [0, 1] like the evaluator)": max_diff(
            ours["scores"], clipped
        ),
        "naive scores below 0 (clipped by the evaluator)": sum(x < 0 for x in naive["scores"]),
    }
    rows = [("(a) evalrunner", ours), ("(b) naive loop", naive)]
    ragas = results.get("ragas", {})
    for run_name, raw in ragas.get("runs", {}).items():
        if "scores" in raw:
            run = summary(raw["texts"], raw["seconds"], raw["cpu_seconds"], raw["others"])
            run["scores"] = raw["scores"]
            ragas["runs"][run_name] = run
            agreement[f"naive vs ragas {run_name}"] = max_diff(naive["scores"], run["scores"])
            agreement[f"evalrunner vs ragas {run_name} (clipped)"] = max_diff(
                ours["scores"], [min(1.0, max(0.0, x)) for x in run["scores"]]
            )
            rows.append((f"(c) ragas {run_name}", {**run, "load_seconds": ragas["load_seconds"]}))
        else:
            print(f"(c) ragas {run_name} not measured: {raw.get('not_run')}")
    results["agreement"] = agreement

    print(
        f"\n{'method':30s} {'texts/s':>8s} {'median s':>9s} {'CPU ms/text':>12s} "
        f"{'load s':>7s} {'vs naive':>8s}  median over; wall s and others' CPU s per repetition"
    )
    for label, r in rows:
        print(
            f"{label:30s} {r['texts_per_s']:8.1f} {r['median_seconds']:9.2f} "
            f"{r['cpu_ms_per_text']:12.3f} {r.get('load_seconds', float('nan')):7.2f} "
            f"{r['texts_per_s'] / naive['texts_per_s']:7.2f}x  {r['median_over']}; "
            f"{r['seconds']}, {r['others_cpu_seconds']}"
        )
    if "not_run" in ragas:
        print(f"(c) ragas not measured: {ragas['not_run']}")
    elif ragas:
        print(f"ragas: {json.dumps({k: v for k, v in ragas.items() if k != 'runs'})}")
    print(
        f"model load (outside texts/s): evalrunner's hub {ours['first_load_seconds']:.2f} s the "
        f"first time (sentence-transformers imported), {ours['load_seconds']:.2f} s after; naive "
        f"{naive['load_seconds']:.2f} s (already imported); ragas "
        + (
            f"{ragas['load_seconds']:.2f} s after {ragas['import_seconds']:.2f} s of imports"
            if "load_seconds" in ragas
            else "-"
        )
    )
    print(f"dedup (a): {ours['counters']} (texts requested vs computed, one repetition)")
    print("max abs score difference:")
    for k, v in agreement.items():
        print(f"  {k}: {v:.2e}" if isinstance(v, float) else f"  {k}: {v}")

    if not args.skip_six:
        print("six embedding evaluators ...", file=sys.stderr, flush=True)
        six = bench_six(samples)
        results["six"] = six
        for mode in ("shared_hub", "own_hubs"):
            m = six[mode]
            print(
                f"six evaluators, {mode.replace('_', ' ')}: {m['seconds']:.2f} s wall "
                f"({m['cpu_seconds']:.2f} s CPU, others {m['others_cpu_seconds']:.2f} s), "
                f"model load {m['load_seconds']:.2f} s, "
                f"texts requested {m['counters']['requested']}, computed "
                f"{m['counters']['computed']}"
            )
            for name, p in m["per_evaluator"].items():
                print(f"    {name:46s} {json.dumps(p)}")

    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(f"load average at end: {results['machine']['load_average_at_end']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
