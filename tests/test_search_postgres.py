"""Two search workers share one study through PostgreSQL, as several GPUs or hosts would.

The server is ``GEMMGEN_TEST_POSTGRES_URL`` when set (CI starts one), else a throwaway server this
module starts with initdb/pg_ctl on 127.0.0.1 in a temporary directory.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections import Counter

import optuna
import pytest
from optuna.trial import TrialState

from gemmgen.tune.storage import open_storage
from gemmgen.tune.trial_stats import counts
from gemmgen.tune.plan import make_plan
from gemmgen.tune.driver import run_search
from test_search import SHAPE, TINY, FakeGPU, logged, small_space, speed, valid_configs

pytestmark = pytest.mark.postgres
optuna.logging.set_verbosity(optuna.logging.WARNING)


def _binary(name: str) -> str | None:
    found = shutil.which(name) or sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found if isinstance(found, str) else (found[-1] if found else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_user() -> str | None:
    """initdb refuses to run as root; run the server as postgres (or nobody) then."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name).pw_name
        except KeyError:
            continue
    pytest.skip("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as")


@pytest.fixture(scope="module")
def postgres_url():
    url = os.environ.get("GEMMGEN_TEST_POSTGRES_URL")
    pytest.importorskip("psycopg2", reason="PostgreSQL storage needs psycopg2: pip install 'gemmgen[postgres]'")
    if url:
        yield url
        return
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not (initdb and pg_ctl):
        pytest.skip("PostgreSQL binaries initdb/pg_ctl not found; install postgresql or set GEMMGEN_TEST_POSTGRES_URL")
    user = _server_user()
    root = tempfile.mkdtemp(prefix="gemmgen-pg-")   # under /tmp: pytest's tmp dirs are private to root
    if user:
        shutil.chown(root, user)
    port, data = _free_port(), os.path.join(root, "data")

    def run(*cmd):
        out = subprocess.run(cmd, user=user, capture_output=True, text=True, timeout=120)
        if out.returncode:
            pytest.fail(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")

    run(initdb, "-D", data, "-U", "gemmgen", "--auth=trust", "-E", "UTF8", "--no-sync")
    # fsync off: a throwaway server; the test checks sharing, not durability
    run(pg_ctl, "-D", data, "-l", os.path.join(root, "log"), "-w", "-o", f"-h 127.0.0.1 -p {port} -k {root} -F",
        "start")
    try:
        yield f"postgresql://gemmgen@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([pg_ctl, "-D", data, "-m", "immediate", "stop"], user=user, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_two_workers_share_one_study(postgres_url, tmp_path):
    space = small_space(tmp_path, TINY)
    valid = valid_configs(space)
    log = str(tmp_path / "calls.log")
    study = f"pg-{uuid.uuid4().hex[:8]}"   # a CI server outlives test runs: never resume an old study
    plan = make_plan(SHAPE, "h100", trials=len(valid), storage=postgres_url, study=study, space=space,
                     sampler="random", presets=False, lookahead=2)
    result = run_search(plan, FakeGPU(log=log, delay=0.02), devices=[0, 1])

    calls = logged(log)
    assert {d for d, _ in calls} == {0, 1}, "both workers measured"
    assert max(Counter(n for _, n in calls).values()) == 1, "no config measured twice"
    trials = optuna.load_study(study_name=study, storage=open_storage(postgres_url)).get_trials(deepcopy=False)
    recorded = Counter(t.user_attrs["name"] for t in trials if t.state == TrialState.COMPLETE)
    assert recorded == Counter(n for _, n in calls), "every measurement recorded exactly once"
    tally = counts(trials)
    assert tally.measured == len(valid) and set(recorded) == set(valid) and tally.running == 0
    assert result.config == max(valid.values(), key=speed), "the winner is the true best"


def test_storage_url_without_driver_name_uses_psycopg2(postgres_url):
    storage = open_storage(postgres_url)
    assert storage.engine.dialect.driver in ("psycopg2", "psycopg")
