"""Reliability and security: concurrent writers, path escapes from catalogs, TLS schedulers."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels._atomic import KIND_ATTR, atomic_dir, path_lock, replace_dir
from ooc_kernels.cli import main
from ooc_kernels.data import (
    describe_catalog,
    entry_path,
    list_datasets,
    load_catalog,
    make_dataset,
    open_dataset,
    open_zarr_dataset,
    register_dataset,
)
from ooc_kernels.data.catalog import PathEscapeError
from ooc_kernels.exceptions import CatalogError, DatasetExistsError

REPO = Path(__file__).resolve().parents[1]

# --- 1. concurrent writers -------------------------------------------------------------

N_WRITERS = 3
N_ROUNDS = 6     # model saves and dataset writes per writer
N_SWAPS = 150    # tiny folder swaps per writer: without the lock their renames collide

WORKER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    import ooc_kernels as ok

    i, out, go = int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    rng = np.random.default_rng(100)              # the same data for every writer
    X = rng.normal(size=(64, 3)).astype(np.float32)
    y = np.sin(X[:, 0]).astype(np.float32)
    est = ok.DSGRegressor(n_features=64, block_size=16, batch_size=8, max_iter=1, tol=None,
                          random_state=i, scheduler="sync", progress=False).fit(X, y)
    np.save(out / f"coef_{i}.npy", est.coef_)
    (out / f"ready_{i}").touch()
    while not go.exists():                        # start all writers at the same moment
        time.sleep(0.005)
    from ooc_kernels._atomic import atomic_dir
    marker = '{"zarr_format": 3, "node_type": "group", "attributes": {"ooc_kernels_store": "predictions"}}'
    for _ in range(int(sys.argv[5])):             # many tiny swaps: the renames collide
        with atomic_dir(out / "small", kind="predictions") as tmp:
            (tmp / "zarr.json").write_text(marker)
            for k in range(3):
                (tmp / f"part{k}").write_text(str(i))
    for _ in range(int(sys.argv[4])):
        est.save(out / "model.zarr")
        ok.make_dataset("synthetic_krr_2d", out / "data.zarr", 240, chunk_size=40,
                        random_state=i, overwrite=True, progress=False)
""")


def test_concurrent_writers_never_mix(tmp_path):
    """Several processes save different models and datasets to the same paths at once."""
    out = tmp_path / "shared"
    out.mkdir()
    go = tmp_path / "go"
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, str(script), str(i), str(out), str(go),
                               str(N_ROUNDS), str(N_SWAPS)], env=env, stderr=subprocess.PIPE, text=True)
             for i in range(N_WRITERS)]
    try:
        import time

        deadline = time.monotonic() + 60
        while not all((out / f"ready_{i}").exists() for i in range(N_WRITERS)):
            assert all(p.poll() is None for p in procs), [p.communicate()[1] for p in procs]
            assert time.monotonic() < deadline, "writers did not start"
            time.sleep(0.01)
        go.touch()
        errors = [p.communicate(timeout=120)[1] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0] * N_WRITERS, errors

    coefs = [np.load(out / f"coef_{i}.npy") for i in range(N_WRITERS)]
    assert not np.array_equal(coefs[0], coefs[1])           # the writers really differ
    loaded = ok.load(out / "model.zarr").coef_
    matches = [i for i, c in enumerate(coefs) if np.array_equal(loaded, c)]
    assert len(matches) == 1, "the saved model is not exactly one writer's model"

    X = open_zarr_dataset(out / "data.zarr").X.values
    expected = [open_zarr_dataset(make_dataset("synthetic_krr_2d", tmp_path / f"ref{i}.zarr",
                                               240, chunk_size=40, random_state=i,
                                               progress=False)).X.values
                for i in range(N_WRITERS)]
    matches = [i for i, e in enumerate(expected) if np.array_equal(X, e)]
    assert len(matches) == 1, "the dataset mixes the chunks of several writers"

    parts = {(out / "small" / f"part{k}").read_text() for k in range(3)}
    assert len(parts) == 1, "the small folder mixes the files of several writers"

    names = sorted(p.name for p in out.iterdir() if not p.name.startswith(("coef_", "ready_")))
    assert names == ["data.zarr", "model.zarr", "small"]  # no .tmp-, .old-, .lock leftovers


def _mark(folder: Path, kind: str = "predictions") -> Path:
    """Make ``folder`` a Zarr group marked as a store of ``kind`` written by the library."""
    folder.mkdir(exist_ok=True)
    (folder / "zarr.json").write_text(json.dumps(
        {"zarr_format": 3, "node_type": "group", "attributes": {KIND_ATTR: kind}}))
    return folder


def test_swaps_of_one_path_are_serialised(tmp_path):
    """Threads swapping the same folder: every swap sees a consistent folder."""
    target = tmp_path / "store"
    errors = []

    def writer(i):
        try:
            for _ in range(30):
                with atomic_dir(target, kind="predictions") as tmp:
                    _mark(tmp)
                    for k in range(5):
                        (tmp / f"part{k}").write_text(str(i))
        except Exception as err:  # noqa: BLE001  # pragma: no cover - asserted below
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len({(target / f"part{k}").read_text() for k in range(5)}) == 1
    assert sorted(os.listdir(tmp_path)) == ["store"]


def test_replace_without_overwrite_is_checked_under_the_lock(tmp_path):
    target = tmp_path / "d.zarr"
    first, second = _mark(tmp_path / ".a"), _mark(tmp_path / ".b")
    (first / "who").write_text("first")
    replace_dir(first, target, kind="predictions", overwrite=False)
    with pytest.raises(DatasetExistsError, match=r"d.zarr' appeared while this write.*"
                                                 r"pass overwrite=True"):
        replace_dir(second, target, kind="predictions", overwrite=False)
    assert (target / "who").read_text() == "first"    # nothing already written is lost
    assert second.exists()                            # left to the caller to clean up


def test_path_lock_excludes_and_cleans_up(tmp_path):
    target = tmp_path / "m.zarr"
    order = []
    with path_lock(target) as lock:
        assert lock.name == ".m.zarr.lock" and lock.exists()
        t = threading.Thread(target=lambda: (path_lock(target).__enter__(), order.append("b")))
        t.start()
        t.join(0.3)
        assert order == []  # the second locker waits
        order.append("a")
    t.join(5)
    assert order == ["a", "b"]


# --- 2. paths that escape the catalog's folder ----------------------------------------

def _catalog_with_url(folder: Path, url: str) -> Path:
    """A catalog in ``folder`` whose entry 'x' reads ``url`` as written."""
    inside = folder / "data" / "x.zarr"
    make_dataset("synthetic_krr_2d", inside, 20, chunk_size=10, progress=False)
    cat = folder / "c.yaml"
    register_dataset(cat, "x", inside)
    spec = yaml.safe_load(cat.read_text())
    (data,) = spec["data"].values()
    data["kwargs"]["url"] = url
    cat.write_text(yaml.safe_dump(spec))
    return cat


@pytest.fixture
def escaping(tmp_path):
    """A catalog in tmp/cat/ whose entry reads tmp/secret/x.zarr through '..'."""
    make_dataset("synthetic_krr_2d", tmp_path / "secret" / "x.zarr", 30, chunk_size=10,
                 progress=False)
    return _catalog_with_url(tmp_path / "cat", "{CATALOG_DIR}/../secret/x.zarr"), tmp_path


def test_dotdot_escape_is_refused_everywhere(escaping):
    cat, root = escaping
    for call in (lambda **kw: open_dataset(cat, "x", **kw),
                 lambda **kw: list_datasets(cat, **kw),
                 lambda **kw: describe_catalog(cat, **kw),
                 lambda **kw: entry_path(cat, "x", **kw),
                 lambda **kw: load_catalog(cat, **kw)):
        with pytest.raises(PathEscapeError) as info:
            call()
        msg = str(info.value)
        assert "entry 'x' reads '{CATALOG_DIR}/../secret/x.zarr'" in msg or \
            "entry 'x' reads 'file://" in msg
        assert str(root / "secret" / "x.zarr") in msg           # where it resolves
        assert f"catalog's folder {str(root / 'cat')!r}" in msg  # the base folder
        assert "allow_outside=True" in msg and "--allow-outside" in msg  # the fix
    assert isinstance(info.value, CatalogError) and isinstance(info.value, ValueError)
    # trusted=True trusts the whole file, paths included
    assert open_dataset(cat, "x", trusted=True).sizes["sample"] == 30


def test_allow_outside_true_or_a_list_of_folders(escaping):
    cat, root = escaping
    assert open_dataset(cat, "x", allow_outside=True).sizes["sample"] == 30
    assert open_dataset(cat, "x", allow_outside=[root / "secret"]).sizes["sample"] == 30
    assert open_dataset(cat, "x", allow_outside=str(root / "secret")).sizes["sample"] == 30
    assert entry_path(cat, "x", allow_outside=True) == root / "secret" / "x.zarr"
    with pytest.raises(PathEscapeError, match=r"or the allowed folders \['.*other'\]"):
        open_dataset(cat, "x", allow_outside=[root / "other"])
    with pytest.raises(CatalogError, match=r"allow_outside must be True, False or a list"):
        open_dataset(cat, "x", allow_outside=[3])


@pytest.mark.parametrize("url", [
    "/etc/passwd.zarr",
    "file:///etc/passwd.zarr",
    "{CATALOG_DIR}/data/../../secret.zarr",
    "simplecache::file:///etc/x.zarr",
])
def test_absolute_and_disguised_escapes(tmp_path, url):
    cat = _catalog_with_url(tmp_path / "cat", url)
    with pytest.raises(PathEscapeError, match=r"entry 'x' reads .* outside the catalog's "
                                              r"folder"):
        list_datasets(cat)


def test_escape_through_user_parameter_or_env(tmp_path, monkeypatch):
    cat = _catalog_with_url(tmp_path / "cat", "{base}/x.zarr")
    spec = yaml.safe_load(cat.read_text())
    spec["user_parameters"]["base"] = {
        "cls": "intake.readers.user_parameters:SimpleUserParameter", "default": "/etc",
        "dtype": "str"}
    cat.write_text(yaml.safe_dump(spec))
    with pytest.raises(PathEscapeError, match=r"resolves to '/etc/x.zarr'"):
        open_dataset(cat, "x")
    monkeypatch.setenv("OOC_TEST_ROOT", str(tmp_path))
    cat = _catalog_with_url(tmp_path / "cat2", "{env(OOC_TEST_ROOT)}/x.zarr")
    with pytest.raises(PathEscapeError, match=r"resolves to '.*/x.zarr'"):
        # reading the variable needs the caller's allow_env
        open_dataset(cat, "x", allow_env=["OOC_TEST_ROOT"])


def test_symlink_out_of_the_catalog_folder_is_an_escape(tmp_path):
    make_dataset("synthetic_krr_2d", tmp_path / "elsewhere" / "x.zarr", 20, chunk_size=10,
                 progress=False)
    (tmp_path / "cat").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "cat" / "link")
    cat = _catalog_with_url(tmp_path / "cat", "{CATALOG_DIR}/link/x.zarr")
    with pytest.raises(PathEscapeError, match="elsewhere"):
        open_dataset(cat, "x")
    assert open_dataset(cat, "x", allow_outside=[tmp_path / "elsewhere"]).sizes["sample"] == 20


def test_paths_inside_and_remote_urls_are_accepted(tmp_path):
    cat = _catalog_with_url(tmp_path / "cat", "{CATALOG_DIR}/data/../data/x.zarr")
    assert open_dataset(cat, "x").sizes["sample"] == 20
    cat = _catalog_with_url(tmp_path / "cat2", "s3://bucket/x.zarr")
    assert list_datasets(cat) == ["x"]  # remote: not a local path, not checked


def test_shipped_examples_catalog_stays_inside_its_folder():
    for row in describe_catalog(REPO / "catalogs" / "examples.yaml"):
        assert Path(row["path"]).is_relative_to(REPO / "catalogs"), row


def test_register_refuses_a_store_outside_the_catalog_folder(tmp_path):
    cat = tmp_path / "cat" / "c.yaml"
    register_dataset(cat, "ok", tmp_path / "cat" / "data" / "ok.zarr")
    before = cat.read_text()
    with pytest.raises(PathEscapeError, match=r"cannot register entry 'bad'.*outside the "
                                              r"catalog's folder.*allow_outside=True"):
        register_dataset(cat, "bad", tmp_path / "cat" / ".." / "bad.zarr")
    assert cat.read_text() == before                 # nothing written
    register_dataset(cat, "bad", tmp_path / "bad.zarr", allow_outside=[tmp_path])
    assert list_datasets(cat, allow_outside=[tmp_path]) == ["bad", "ok"]


def test_cli_refuses_escapes_unless_allowed(tmp_path, escaping):
    cat, root = escaping
    runner = CliRunner()
    r = runner.invoke(main, ["catalog", "list", str(cat)])
    assert r.exit_code == 1 and "PathEscapeError" in r.output and "--allow-outside" in r.output
    r = runner.invoke(main, ["catalog", "list", str(cat), "--allow-outside"])
    assert r.exit_code == 0 and "exists=yes" in r.output
    # data make: refused before anything is written
    r = runner.invoke(main, ["data", "make", "synthetic_krr_2d", "--n", "20", "--chunk-size",
                             "10", "--out", str(root / "out"), "--catalog",
                             str(root / "c2" / "c.yaml"), "-q"])
    assert r.exit_code == 1 and "outside the catalog's folder" in r.output, r.output
    assert not (root / "out").exists() and not (root / "c2" / "c.yaml").exists()
    r = runner.invoke(main, ["data", "make", "synthetic_krr_2d", "--n", "20", "--chunk-size",
                             "10", "--out", str(root / "out"), "--catalog",
                             str(root / "c2" / "c.yaml"), "--allow-outside", "-q"])
    assert r.exit_code == 0, r.output
    args = ["train", "--catalog", str(root / "c2" / "c.yaml"), "--entry", "synthetic_krr_2d",
            "--estimator", "DSGRegressor", "-p", "n_features=32", "-p", "block_size=16",
            "--out", str(root / "m.zarr"), "--scheduler", "sync", "-q"]
    r = runner.invoke(main, args)
    assert r.exit_code == 1 and "PathEscapeError" in r.output
    r = runner.invoke(main, args + ["--allow-outside"])
    assert r.exit_code == 0, r.output


# --- 3. TLS to remote schedulers -------------------------------------------------------

@pytest.fixture
def client_kwargs(monkeypatch):
    """What ``distributed.Client`` is given: a Client that records its keyword arguments
    and then fails to connect."""
    import distributed

    seen = {}

    class FakeClient:
        def __init__(self, *args, **kwargs):
            seen.update(kwargs)
            raise OSError("stop here")

    monkeypatch.setattr(distributed, "Client", FakeClient)
    return seen


def test_security_reaches_the_client(tmp_path, client_kwargs):
    """The CLI's TLS options build a Security(require_encryption=True) given to Client."""
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("x")
    seen = client_kwargs
    r = CliRunner().invoke(main, [
        # --estimator: the catalog (absent here) is then opened only once connected
        "train", "--catalog", str(tmp_path / "c.yaml"), "--entry", "x", "--estimator",
        "DSGClassifier", "--out", str(tmp_path / "m.zarr"), "--scheduler", "tls://10.0.0.1:8786",
        "--tls-ca-file", str(tmp_path / "ca.pem"), "--tls-cert", str(tmp_path / "cert.pem"),
        "--tls-key", str(tmp_path / "key.pem")])
    assert r.exit_code == 1 and "cannot connect to the Dask scheduler at 'tls://10.0.0.1" \
        in r.output and "TLS files" in r.output, r.output
    sec = seen["security"]
    assert seen["address"] == "tls://10.0.0.1:8786"
    assert sec.require_encryption is True
    assert (sec.tls_ca_file, sec.tls_client_cert, sec.tls_client_key) == tuple(
        str(tmp_path / n) for n in ("ca.pem", "cert.pem", "key.pem"))
    # a scheduler file is passed the same way
    (tmp_path / "sched.json").write_text("{}")
    seen.clear()
    r = CliRunner().invoke(main, ["run", str(tmp_path / "p.yaml"), "--scheduler-file",
                                  str(tmp_path / "sched.json"), "--tls-ca-file",
                                  str(tmp_path / "ca.pem"), "--tls-cert",
                                  str(tmp_path / "cert.pem")])
    assert r.exit_code == 1 and "scheduler file" in r.output, r.output
    assert seen["scheduler_file"] == str(tmp_path / "sched.json")
    assert seen["security"].tls_client_key is None


@pytest.mark.parametrize("args, match", [
    (["--scheduler", "tcp://127.0.0.1:1", "--tls-ca-file", "{ca}", "--tls-cert", "{ca}"],
     r"address 'tcp://127.0.0.1:1' is not encrypted; use its tls:// address"),
    (["--scheduler", "sync", "--tls-ca-file", "{ca}", "--tls-cert", "{ca}"],
     r"TLS settings only apply to a remote Dask scheduler, but the scheduler is 'sync'"),
    (["--tls-cert", "{ca}"], r"without the certificate authority; pass the CA file"),
    (["--scheduler", "tls://h:1", "--tls-ca-file", "{ca}"], r"without a client certificate"),
    (["--scheduler", "tls://h:1", "--tls-ca-file", "{tmp}/nope.pem", "--tls-cert", "{ca}"],
     r"CA file '.*nope.pem' does not exist"),
    (["--scheduler-file", "{tmp}/nope.json"], r"scheduler file '.*nope.json' does not exist"),
    (["--scheduler", "sync", "--scheduler-file", "{ca}"], r"pass only one of them"),
])
def test_scheduler_option_errors(tmp_path, args, match):
    (tmp_path / "ca.pem").write_text("x")
    args = [a.format(ca=tmp_path / "ca.pem", tmp=tmp_path) for a in args]
    make_dataset("synthetic_krr_2d", tmp_path / "data" / "d.zarr", 20, chunk_size=10,
                 progress=False)
    register_dataset(tmp_path / "c.yaml", "d", tmp_path / "data" / "d.zarr")
    r = CliRunner().invoke(main, ["train", "--catalog", str(tmp_path / "c.yaml"), "--entry",
                                  "d", "--estimator", "DSGRegressor", "--out",
                                  str(tmp_path / "m.zarr"), "-q"] + args)
    assert r.exit_code == 1, r.output
    assert "ValidationError" in r.output
    import re
    assert re.search(match, " ".join(r.output.split())), r.output
    assert not (tmp_path / "m.zarr").exists()


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    """A throw-away certificate authority and one certificate it signed (openssl CLI)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    d = tmp_path_factory.mktemp("tls")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
             "-subj", "/CN=ooc-kernels test CA", cwd=d)
    _openssl("req", *ec, "-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=localhost",
             cwd=d)
    (d / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "node.pem", "-days", "1", "-extfile", "ext.cnf", cwd=d)
    return d


def test_train_through_a_tls_scheduler(tmp_path, tls_files):
    """A real LocalCluster over tls://: the CLI connects with --tls-* and trains on it."""
    distributed = pytest.importorskip("distributed")
    from distributed.security import Security

    ca, cert, key = (str(tls_files / n) for n in ("ca.pem", "node.pem", "node.key"))
    security = Security(tls_ca_file=ca, tls_scheduler_cert=cert, tls_scheduler_key=key,
                        tls_worker_cert=cert, tls_worker_key=key, tls_client_cert=cert,
                        tls_client_key=key, require_encryption=True)
    store = make_dataset("nonlinear_binary", tmp_path / "data" / "nb.zarr", 200,
                         chunk_size=100, n_features=3, progress=False)
    register_dataset(tmp_path / "c.yaml", "nb", store)
    args = ["train", "--catalog", str(tmp_path / "c.yaml"), "--entry", "nb",
            "-p", "n_features=64", "-p", "block_size=32", "-p", "batch_size=16",
            "-p", "random_state=0", "-q"]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  protocol="tls://", host="127.0.0.1", security=security,
                                  dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tls://")
        tls = ["--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", key]
        r = CliRunner().invoke(main, args + ["--out", str(tmp_path / "tls.zarr"),
                                             "--scheduler", address] + tls)
        assert r.exit_code == 0, r.output
        assert sum(w.state.executed_count for w in cluster.workers.values()) > 0
        # the same through a scheduler file
        sched_file = tmp_path / "scheduler.json"
        sched_file.write_text(json.dumps({"address": address}))
        r = CliRunner().invoke(main, args + ["--out", str(tmp_path / "file.zarr"),
                                             "--scheduler-file", str(sched_file)] + tls)
        assert r.exit_code == 0, r.output
        # without the client certificate the scheduler cannot be reached
        r = CliRunner().invoke(main, args + ["--out", str(tmp_path / "no.zarr"),
                                             "--scheduler", address.replace("tls", "tcp")])
        assert r.exit_code == 1 and not (tmp_path / "no.zarr").exists()
    r = CliRunner().invoke(main, args + ["--out", str(tmp_path / "sync.zarr"),
                                         "--scheduler", "sync"])
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(ok.load(tmp_path / "tls.zarr").coef_,
                                  ok.load(tmp_path / "sync.zarr").coef_)
    np.testing.assert_array_equal(ok.load(tmp_path / "file.zarr").coef_,
                                  ok.load(tmp_path / "sync.zarr").coef_)


# --- 4. nothing a user owns is replaced; leftovers of dead writers go -------------------

SMALL_FIT = dict(n_features=64, block_size=16, batch_size=8, max_iter=2, tol=None,
                 random_state=0, scheduler="sync", progress=False)


def _small_xy():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 3)).astype(np.float32)
    return X, np.sin(X[:, 0]).astype(np.float32)


def _user_things(tmp_path):
    """What a user may have at a path: their folder, a file, a model, a link to a store."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.txt").write_text("keep me")
    plain = tmp_path / "plain.txt"
    plain.write_text("keep me too")
    model = tmp_path / "model.zarr"
    ok.DSGRegressor(**SMALL_FIT).fit(*_small_xy()).save(model)
    foreign = tmp_path / "theirs.zarr"
    import zarr

    zarr.open_group(str(foreign), mode="w").attrs["owner"] = "someone else"
    link = tmp_path / "link.zarr"
    link.symlink_to(model, target_is_directory=True)
    return {"folder": notes, "file": plain, "model": model, "zarr": foreign, "link": link}


def _snapshot(root: Path) -> dict:
    """Every file under ``root`` (not following links) with its bytes, and every link."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_file():
                out[rel] = p.read_bytes()
    return out


@pytest.mark.parametrize("what, found", [
    ("folder", "a folder that is not a Zarr store written by ooc_kernels"),
    ("file", "a file"),
    ("model", "an ooc_kernels model"),
    ("zarr", "a Zarr store that ooc_kernels did not write"),
    ("link", r"a symbolic link \(a link is never followed, replaced or removed\)"),
])
def test_fit_checkpoint_never_replaces_what_is_not_a_checkpoint(tmp_path, what, found):
    from ooc_kernels.exceptions import ForeignPathError

    target = _user_things(tmp_path)[what]
    before = _snapshot(tmp_path)
    with pytest.raises(ForeignPathError, match=rf"refusing to replace '{target}': it is "
                                               rf"{found}, not an ooc_kernels checkpoint.*"
                                               r"Choose another path"):
        ok.DSGRegressor(**SMALL_FIT).fit(*_small_xy(), checkpoint=target)  # resume=False
    assert _snapshot(tmp_path) == before                # nothing touched, nothing added


def test_fit_checkpoint_replaces_its_own_checkpoint(tmp_path):
    from ooc_kernels.parallel.checkpoint import read_checkpoint

    ck = tmp_path / "ck.zarr"
    ok.DSGRegressor(**SMALL_FIT).fit(*_small_xy(), checkpoint=ck)
    assert read_checkpoint(ck).meta["position"]["epoch"] == 2
    ok.DSGRegressor(**dict(SMALL_FIT, max_iter=1)).fit(*_small_xy(), checkpoint=ck)
    assert read_checkpoint(ck).meta["position"]["epoch"] == 1   # started over: replaced
    assert sorted(os.listdir(tmp_path)) == ["ck.zarr"]


@pytest.mark.parametrize("what", ["folder", "file", "model", "zarr", "link"])
def test_predictions_and_datasets_never_replace_a_foreign_path(tmp_path, what):
    from ooc_kernels.evaluation import write_predictions
    from ooc_kernels.exceptions import ForeignPathError

    target = _user_things(tmp_path)[what]
    est = ok.load(tmp_path / "model.zarr")
    before = _snapshot(tmp_path)
    with pytest.raises(DatasetExistsError, match=r"already exists; pass overwrite=True"):
        write_predictions(est, _small_xy()[0], target)
    with pytest.raises(ForeignPathError, match=rf"'{target}': it is .*, not an ooc_kernels "
                                               r"prediction store"):
        write_predictions(est, _small_xy()[0], target, overwrite=True)
    with pytest.raises(ForeignPathError, match=rf"'{target}': it is .*, not an ooc_kernels "
                                               r"dataset"):
        make_dataset("synthetic_krr_2d", target, 20, chunk_size=10, overwrite=True,
                     progress=False)
    assert _snapshot(tmp_path) == before


def test_predictions_replace_their_own_store_when_asked(tmp_path):
    import xarray as xr

    from ooc_kernels.evaluation import write_predictions

    X, y = _small_xy()
    est = ok.DSGRegressor(**SMALL_FIT).fit(X, y)
    out = write_predictions(est, X[:20], tmp_path / "p.zarr")
    write_predictions(est, X[:30], out, overwrite=True)
    with xr.open_zarr(out) as ds:
        np.testing.assert_array_equal(ds.prediction.values, est.predict(X[:30]))
    assert sorted(os.listdir(tmp_path)) == ["p.zarr"]


def test_failed_write_waits_for_pending_zarr_writes_before_cleaning_up(tmp_path, monkeypatch):
    """Disk full on one chunk while the array's other chunk writes are still running: the
    temporary folder must not come back after the write has raised."""
    import time

    import zarr
    from zarr.storage import LocalStore

    real_set = LocalStore.set

    async def set_(self, key, value):
        import asyncio

        if key.endswith("c/0"):
            raise OSError(28, "No space left on device")
        if "/c/" in key:
            await asyncio.sleep(0.3)        # the other chunks land after the error
        return await real_set(self, key, value)

    monkeypatch.setattr(LocalStore, "set", set_)
    target = tmp_path / "m.zarr"
    with pytest.raises(OSError, match="No space left on device"):
        with atomic_dir(target, kind="model") as tmp:
            group = zarr.open_group(str(tmp), mode="w")
            arr = group.create_array("coef", shape=(80,), chunks=(10,), dtype="f8")
            arr[...] = np.arange(80.0)
    time.sleep(0.6)
    assert os.listdir(tmp_path) == []                      # no .m.zarr.tmp-* came back


KILLED_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from ooc_kernels._atomic import atomic_dir

    target, ready = Path(sys.argv[1]), Path(sys.argv[2])
    with atomic_dir(target, kind="model") as tmp:
        (tmp / "coef").write_bytes(b"0" * 100_000)     # a model half written
        ready.touch()
        time.sleep(120)                                 # killed or stopped while here
""")


def _start_writer(tmp_path, target, name):
    script = tmp_path / "writer.py"
    script.write_text(KILLED_WRITER)
    ready = tmp_path / f"ready-{name}"
    proc = subprocess.Popen([sys.executable, str(script), str(target), str(ready)],
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    import time

    deadline = time.monotonic() + 60
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "writer did not start"
        time.sleep(0.01)
    ready.unlink()
    return proc


def _leftovers(folder: Path, name: str) -> list[str]:
    return sorted(p for p in os.listdir(folder) if p.startswith(f".{name}."))


def test_leftovers_of_killed_saves_are_removed_on_the_next_load_and_save(tmp_path):
    import signal

    out = tmp_path / "out"
    out.mkdir()
    target = out / "m.zarr"
    X, y = _small_xy()
    first = ok.DSGRegressor(**SMALL_FIT).fit(X, y)
    first.save(target)
    proc = _start_writer(tmp_path, target, "dead")    # a save killed part way
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    shutil.copytree(target, out / f".m.zarr.tmp-{'12' * 6}")  # an older writer's, no lock
    shutil.copytree(target, out / f".m.zarr.old-{'ab' * 16}")  # renamed aside, never removed
    assert len(_leftovers(out, "m.zarr")) == 4        # 2 temporaries, 1 lock, 1 old copy
    np.testing.assert_array_equal(ok.load(target).predict(X), first.predict(X))
    assert sorted(os.listdir(out)) == ["m.zarr"]       # the load removed them
    live = _start_writer(tmp_path, target, "live")    # a save running right now
    try:
        running = _leftovers(out, "m.zarr")
        assert len(running) == 2                       # its temporary and its lock
        shutil.copytree(target, out / f".m.zarr.tmp-{'34' * 16}")  # dead: no lock file
        ok.load(target)
        assert _leftovers(out, "m.zarr") == running    # the dead one went, the live one not
        ok.DSGRegressor(**SMALL_FIT).fit(X, y).save(target)
        assert _leftovers(out, "m.zarr") == running    # still running: never touched
    finally:
        live.kill()
        live.wait()
    ok.DSGRegressor(**SMALL_FIT).fit(X, y).save(target)
    assert sorted(os.listdir(out)) == ["m.zarr"]


def test_a_swap_killed_between_its_renames_is_undone_on_load(tmp_path):
    X, y = _small_xy()
    first = ok.DSGRegressor(**SMALL_FIT).fit(X, y)
    target = tmp_path / "m.zarr"
    first.save(target)
    os.replace(target, tmp_path / f".m.zarr.old-{'cd' * 16}")  # killed right here
    np.testing.assert_array_equal(ok.load(target).predict(X), first.predict(X))
    assert sorted(os.listdir(tmp_path)) == ["m.zarr"]


def test_leftovers_of_a_killed_checkpoint_write_are_removed_on_resume(tmp_path):
    from ooc_kernels.parallel.checkpoint import read_checkpoint

    ck = tmp_path / "ck.zarr"
    X, y = _small_xy()
    ok.DSGRegressor(**SMALL_FIT).fit(X, y, checkpoint=ck)
    dead = tmp_path / f".ck.zarr.tmp-{'ef' * 16}"      # its writer is gone: no lock held
    shutil.copytree(ck, dead)
    (tmp_path / f".ck.zarr.tmp-{'ef' * 16}.lock").touch()
    assert read_checkpoint(ck).meta["position"]["epoch"] == 2
    assert sorted(os.listdir(tmp_path)) == ["ck.zarr"]


@pytest.mark.parametrize("kind", ["bytes", "pathlike"])
def test_scheduler_and_tls_files_take_every_path_type(tmp_path, client_kwargs, kind):
    """A scheduler file and the TLS files may be bytes or any os.PathLike, as every path is."""
    from ooc_kernels.exceptions import ValidationError
    from ooc_kernels.parallel.scheduler import make_security, scheduler_context

    class Fs:
        def __init__(self, p):
            self.p = p

        def __fspath__(self):
            return self.p

    def as_kind(p):
        return os.fsencode(str(p)) if kind == "bytes" else Fs(str(p))

    for name in ("ca.pem", "cert.pem", "sched.json"):
        (tmp_path / name).write_text("x")
    sec = make_security(as_kind(tmp_path / "ca.pem"), as_kind(tmp_path / "cert.pem"))
    assert (sec.tls_ca_file, sec.tls_client_cert) == (str(tmp_path / "ca.pem"),
                                                       str(tmp_path / "cert.pem"))
    with pytest.raises(ValidationError, match=re.escape(repr(str(tmp_path / "no.pem")))):
        make_security(as_kind(tmp_path / "ca.pem"), as_kind(tmp_path / "no.pem"))
    seen = client_kwargs
    with pytest.raises(ValidationError, match="cannot connect to the scheduler file"):
        with scheduler_context(scheduler_file=as_kind(tmp_path / "sched.json")):
            pass
    assert seen["scheduler_file"] == str(tmp_path / "sched.json")
    with pytest.raises(ValidationError, match=re.escape(repr(str(tmp_path / "none.json")))):
        with scheduler_context(scheduler_file=as_kind(tmp_path / "none.json")):
            pass
