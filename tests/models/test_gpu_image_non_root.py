"""Issue 29, item 5: the GPU image runs its entrypoint as a non-root user (uid 1000, the
Dockerfile's ``USER evalrunner``) over a model cache baked in by root and read-only to it.

The entrypoint runs here as the image runs it: ``python -m gpu_tasks.score_entrypoint`` in
this checkout's virtualenv, in a process whose uid and gid are 1000, with the image's
environment (``HOME`` the user's own directory, ``HF_HOME``/``TORCH_HOME``/
``EVALRUNNER_MODELS_DIR`` under a root-owned tree with no write permission for anyone,
``HF_HUB_OFFLINE``). The run's objects live in moto's S3 inside that process (the process
cannot share the test's). It must score the model metric with the baked model and leave the
model tree exactly as it was. Its ``HOME`` is read-only here too: the models load without
writing anything (the image still gives the user a writable home, for what CUDA and torch
cache on a GPU).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalrunner.models.locate import dir_name

REPO = Path(__file__).resolve().parents[2]
#: The image's user (gpu_tasks/Dockerfile: useradd --uid 1000 evalrunner). A test run as
#: root starts the entrypoint as that uid; run as anyone else, it is already not root and
#: starts it as itself (the model tree and home are read-only to it either way).
UID = GID = 1000 if os.geteuid() == 0 else os.geteuid()
AS_USER: dict[str, object] = (
    {"user": UID, "group": GID, "extra_groups": []} if os.geteuid() == 0 else {}
)
BAKED = "evalrunner-test/tiny-encoder"  # a hub-style name, found in EVALRUNNER_MODELS_DIR

DRIVER = textwrap.dedent(
    """
    import json, os, sys
    import boto3
    from moto import mock_aws
    from evalrunner.event import read_event
    from evalrunner.pipeline import prepare, run_case
    from evalrunner.pipeline.context import RunContext
    from evalrunner.run import ManifestItem
    from evalrunner.storage import RunStore
    from gpu_tasks import score_entrypoint

    SUITE = (
        "id,question,expected_answer,actual_answer\\n"
        "a,Where did the cat sit?,The cat sat on the mat.,The cat sat on the mat.\\n"
        "b,What is the capital?,Paris is the capital of France.,I love the sun.\\n"
    )
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="runner-bucket")
        s3.put_object(Bucket="runner-bucket", Key="test-suites/s.csv", Body=SUITE.encode())
        store = RunStore("runner-bucket", client=s3)
        event = {
            "key": "test-suites/s.csv", "iterations": 1,
            "target": {"url": "http://unused.invalid/ask"},
            "metrics": ["Answer semantic similarity"],
            "evaluator_options": {"Answer semantic similarity": {"model": sys.argv[1]}},
            "run_id": "non-root",
        }
        out = prepare.prepare_run(read_event(event), store)
        for item in store.get_json(out.manifest_key):
            run_case.run_case(RunContext.load(store, out.run_id), ManifestItem.model_validate(item))
        code = score_entrypoint.main(["--run-id", out.run_id, "--bucket", "runner-bucket"])
        scores = store.get_json_or_none(store.scores_key(out.run_id))
    print("RESULT " + json.dumps({"code": code, "uid": os.getuid(), "scores": scores}))
    """
)


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and modification time."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def image_layout(tiny_models) -> Iterator[dict[str, Path]]:
    """The image's directories: a root-owned, read-only model tree with the baked model and
    the user's home directory, read-only as well (world-searchable parents, unlike pytest's
    own temporary directories, so that uid 1000 can reach them)."""
    base = Path(tempfile.mkdtemp(prefix="evalrunner-image-"))
    try:
        base.chmod(0o755)
        models = base / "opt" / "models"
        shutil.copytree(tiny_models["encoder"], models / dir_name(BAKED))
        (models / "huggingface").mkdir()
        (models / "torch").mkdir()
        home = base / "home" / "evalrunner"
        home.mkdir(parents=True)
        for path in [base / "opt", *(base / "opt").rglob("*"), base / "home", home]:
            mode = 0o555 if path.is_dir() else 0o444
            path.chmod(mode)  # root's files: nobody may write, everybody may read
        (base / "driver.py").write_text(DRIVER)
        (base / "driver.py").chmod(0o444)
        yield {"base": base, "models": models, "home": home, "python": _venv(base / "venv")}
    finally:
        for path in [base, *base.rglob("*")]:
            if path.is_dir():
                path.chmod(stat.S_IRWXU)
        shutil.rmtree(base, ignore_errors=True)


def _venv(folder: Path) -> Path:
    """A virtualenv uid 1000 can run: an interpreter of this Python version that it may
    execute (this checkout's may live under root's home), with this checkout's installed
    packages (the models extra: torch, sentence-transformers) and code on its path."""
    import site
    import sysconfig

    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [
        Path(sys.executable).resolve(),
        *(Path(d) / version for d in ("/usr/local/bin", "/usr/bin")),
    ]
    for candidate in candidates:
        try:
            probe = subprocess.run(
                [str(candidate), "-c", "import sys; print(sys.version_info[:2])"],
                **AS_USER, capture_output=True, text=True, timeout=60, cwd="/",
            )  # fmt: skip
        except OSError:  # not executable by uid 1000
            continue
        if probe.returncode == 0 and probe.stdout.strip() == str(tuple(sys.version_info[:2])):
            break
    else:
        raise AssertionError(f"no {version} that uid {UID} may run among {candidates}")
    subprocess.run(
        [str(candidate), "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120
    )
    purelib = Path(sysconfig.get_paths(vars={"base": str(folder)})["purelib"])
    paths = [*site.getsitepackages(), str(REPO)]
    (purelib / "evalrunner-checkout.pth").write_text("\n".join(paths) + "\n")
    return folder / "bin" / "python"


def _run(layout: dict[str, Path], home: Path) -> subprocess.CompletedProcess[str]:
    models = layout["models"]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "PYTHONDONTWRITEBYTECODE": "1",
        # the image's model environment (gpu_tasks/Dockerfile)
        "EVALRUNNER_MODELS_DIR": str(models),
        "HF_HOME": str(models / "huggingface"),
        "TORCH_HOME": str(models / "torch"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "EVALRUNNER_DEVICE": "cpu",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    return subprocess.run(
        [str(layout["python"]), str(layout["base"] / "driver.py"), BAKED],
        cwd=REPO,
        env=env,
        **AS_USER,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_entrypoint_scores_as_uid_1000_over_a_read_only_model_cache(image_layout):
    assert UID != 0
    before = _tree(image_layout["models"])
    home_before = _tree(image_layout["home"])
    done = _run(image_layout, image_layout["home"])
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [s for s in done.stdout.splitlines() if s.startswith("RESULT ")]
    result = json.loads(line.removeprefix("RESULT "))
    assert result["uid"] == UID and result["code"] == 0
    scores = result["scores"]
    statuses = {r["status"] for rs in scores["items"].values() for r in rs}
    assert statuses == {"scored"} and scores["notices"] == []
    assert scores["models"]["by_evaluator"] == {"Answer semantic similarity": BAKED}
    # nothing was written into (or next to) the baked models, nor into the home
    assert _tree(image_layout["models"]) == before
    assert _tree(image_layout["home"]) == home_before == {}
