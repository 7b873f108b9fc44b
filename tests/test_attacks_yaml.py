"""Attacks through YAML that someone else wrote: pipeline files and catalogs with a key set
twice, Python tags, tags of no one, bytes that are not UTF-8, anchors, and numbers too large
for what they set; and a pipeline output that is a symbolic link.  Each is
the library's own error (``PipelineConfigError`` / ``CatalogError``) naming the line, before
any work."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels._untrusted import load_yaml
from ooc_kernels.cli import main
from ooc_kernels.data.catalog import register_dataset
from ooc_kernels.exceptions import CatalogError, PipelineConfigError
from ooc_kernels.pipeline import load_pipeline, run_pipeline

BASE = """name: t
data: {catalog: c.yaml, train: a}
model: {estimator: DSGRegressor, params: PARAMS}
save: {output_dir: out}
"""


def _write(tmp_path, text, params="{}") -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(text.replace("PARAMS", params))
    return path


@pytest.mark.parametrize("text, params, line", [
    (BASE + "save: {output_dir: elsewhere}\n", "{}", r"'save' twice .*line 4 and line 5"),
    (BASE, "{max_iter: 2, max_iter: 3}", r"'max_iter' twice .*line 3 and line 3"),
    (BASE.replace("name: t\n", "name: t\nname: u\n"), "{}", r"'name' twice .*line 1 and "
                                                            r"line 2"),
    (BASE, "{max_iter: 2, 'max_iter': 3}", r"'max_iter' twice"),
], ids=["top level", "in params", "name", "quoted"])
def test_a_key_set_twice_is_refused_with_both_lines(tmp_path, text, params, line):
    with pytest.raises(PipelineConfigError, match=line):
        load_pipeline(_write(tmp_path, text, params))


def test_a_key_set_twice_is_refused_by_the_command_line_in_one_line(tmp_path):
    path = _write(tmp_path, BASE + "save: {output_dir: elsewhere}\n")
    result = CliRunner().invoke(main, ["run", str(path), "--quiet"])
    assert result.exit_code == 1
    assert "PipelineConfigError" in result.output and "'save' twice" in result.output
    assert not (tmp_path / "out").exists() and not (tmp_path / "elsewhere").exists()


def test_the_same_key_in_different_mappings_and_merge_keys_are_not_duplicates():
    doc = load_yaml("a: {k: 1}\nb: {k: 2}\nc: [{k: 1}, {k: 2}]\nd: {<<: {k: 1}, k: 2}\n",
                    source="'x'", error=PipelineConfigError)
    assert doc == {"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 1}, {"k": 2}], "d": {"k": 2}}


@pytest.mark.parametrize("value, match", [
    ("!!python/object/apply:os.system ['touch pwned']", r"not valid YAML: could not "
                                                        r"determine a constructor .*python"),
    ("!!python/name:os.system", r"not valid YAML"),
    ("!mine 3", r"not valid YAML: could not determine a constructor for the tag '!mine'"),
], ids=["python object", "python name", "unknown tag"])
def test_tags_are_refused_and_never_run(tmp_path, monkeypatch, value, match):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PipelineConfigError, match=match):
        load_pipeline(_write(tmp_path, BASE, f"{{max_iter: {value}}}"))
    assert not (tmp_path / "pwned").exists()


def test_a_file_that_is_not_utf8_is_a_pipeline_error(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_bytes(BASE.replace("PARAMS", "{}").encode() + b"# \xff\xfe\n")
    with pytest.raises(PipelineConfigError, match=r"is not UTF-8 text .*save it as UTF-8"):
        load_pipeline(path)
    path.write_bytes(b"\xef\xbb\xbf" + BASE.replace("PARAMS", "{}").encode())   # a BOM
    assert load_pipeline(path)[0].name == "t"


@pytest.mark.parametrize("params, match", [
    ("{n_features: 1e30}", r"'n_features' parameter .* Got 1e\+30"),
    ("{alpha: 1e400}", r"'alpha' parameter .* Got inf"),
    ("{alpha: .nan}", r"'alpha' parameter .* Got nan"),
    ("{bandwidth: 1e200}", r"'bandwidth' parameter .* \[1e-30, 1e\+30\]"),
    ("{random_state: 99999999999999999999999999}", r"'random_state' parameter"),
])
def test_huge_numbers_in_params_are_refused_before_any_work(tmp_path, params, match):
    with pytest.raises(PipelineConfigError, match=match):
        load_pipeline(_write(tmp_path, BASE, params))


@pytest.mark.parametrize("extra, match", [
    ("fit: {checkpoint_every: 1e400}\n", r"fit.checkpoint_every"),
    ("data:\n  catalog: c.yaml\n  train: a\n  generate: {a: {generator: g, n_samples: 1e400}}"
     "\n", r"data.generate.a.n_samples': Value error, '1e400' is too large: the count must "
            r"be at most"),
])
def test_huge_numbers_in_stage_settings_are_refused(tmp_path, extra, match):
    text = BASE if "data:" not in extra else BASE.replace("data: {catalog: c.yaml, train: a}\n",
                                                          "")
    with pytest.raises(PipelineConfigError, match=match):
        load_pipeline(_write(tmp_path, text + extra))


def test_an_alias_is_still_refused_before_any_walk(tmp_path):
    text = BASE.replace("name: t", "name: &n t") + "extra: *n\n"
    with pytest.raises(PipelineConfigError, match=r"alias '\*n' at line 5"):
        load_pipeline(_write(tmp_path, text))


def _catalog(tmp_path) -> Path:
    register_dataset(tmp_path / "cat.yaml", "nb", tmp_path / "data" / "nb.zarr")
    return tmp_path / "cat.yaml"


@pytest.mark.parametrize("trusted", [False, True])
def test_a_catalog_with_a_key_set_twice_is_refused_even_when_trusted(tmp_path, trusted):
    cat = _catalog(tmp_path)
    text = cat.read_text()
    # a second 'url' pointing elsewhere, below the first: PyYAML alone would take it
    text = text.replace("      url: '{CATALOG_DIR}/data/nb.zarr'\n",
                        "      url: '{CATALOG_DIR}/data/nb.zarr'\n      url: /etc\n")
    cat.write_text(text)
    with pytest.raises(CatalogError, match=r"sets the key 'url' twice"):
        ok.open_dataset(cat, "nb", trusted=trusted)
    with pytest.raises(CatalogError, match=r"sets the key 'url' twice"):
        register_dataset(cat, "other", tmp_path / "data" / "other.zarr")
    assert cat.read_text() == text                     # the user's file is left as it was


@pytest.mark.parametrize("where", ["outside", "inside"])
def test_a_pipeline_model_that_is_a_link_is_refused_and_the_target_kept(tmp_path, where):
    """A link at ``save.model`` is never followed, wherever it leads: out of the pipeline's
    folder, or to a model of the user's inside it."""
    target = tmp_path / "precious" if where == "outside" else tmp_path / "out" / "prod.zarr"
    target.mkdir(parents=True)
    (target / "keep.txt").write_text("mine")
    (tmp_path / "out").mkdir(exist_ok=True)
    (tmp_path / "out" / "model.zarr").symlink_to(target, target_is_directory=True)
    path = _write(tmp_path, BASE)
    with pytest.raises(PipelineConfigError, match=r"'save.model' = 'model.zarr' is a symbolic "
                                                  r"link"):
        run_pipeline(path, scheduler="sync", progress=False)
    assert os.listdir(target) == ["keep.txt"] and (target / "keep.txt").read_text() == "mine"
    assert (tmp_path / "out" / "model.zarr").is_symlink()


def test_a_pipeline_metrics_file_that_is_a_link_is_refused_and_the_target_kept(tmp_path):
    (tmp_path / "out").mkdir()
    old = tmp_path / "out" / "old_metrics.json"
    old.write_text('{"mine": 1}')
    (tmp_path / "out" / "metrics.json").symlink_to(old)
    path = _write(tmp_path, BASE)
    with pytest.raises(PipelineConfigError, match=r"'save.metrics' = 'metrics.json' is a "
                                                  r"symbolic link \(to .*old_metrics.json'\)"):
        run_pipeline(path, scheduler="sync", progress=False)
    assert old.read_text() == '{"mine": 1}' and (tmp_path / "out" / "metrics.json").is_symlink()


def test_yaml_written_by_the_library_round_trips(tmp_path):
    cat = _catalog(tmp_path)
    assert load_yaml(cat.read_text(), source="'c'", error=CatalogError) == \
        yaml.safe_load(cat.read_text())


def test_a_command_line_value_that_sets_a_key_twice_is_refused():
    from ooc_kernels._params import parse_param_value
    from ooc_kernels.exceptions import ValidationError

    with pytest.raises(ValidationError, match=r"sets the key 'nu' twice"):
        parse_param_value("{nu: 0.5, nu: 1.5}")
    with pytest.raises(ValidationError, match=r"alias '\*a'"):
        parse_param_value("{x: &a 1, y: *a}")
    assert parse_param_value("{nu: 0.5}") == {"nu": 0.5}
    assert parse_param_value("a: b: c") == "a: b: c"                 # not YAML: the text
    assert parse_param_value("!!python/name:os.system") == "!!python/name:os.system"


_QUOTE = r"string: .* quote the name in the file"
_AMBIGUOUS = r"at line \d+, column 3, which is ambiguous: YAML 1\.1 reads .* quote it"


@pytest.mark.parametrize("written, refusal", [
    ("NO", rf"holds 'NO' {_AMBIGUOUS}"), ("off", rf"holds 'off' {_AMBIGUOUS}"),
    ("1", rf"the entry name 1 is of type \w+, not a {_QUOTE}"),
    ("null", rf"the entry name None is of type \w+, not a {_QUOTE}"),
    ("2024-01-02", rf"holds '2024-01-02' {_AMBIGUOUS}")])
@pytest.mark.parametrize("trusted", [False, True])
def test_an_unquoted_name_yaml_reads_as_another_type_is_refused(tmp_path, trusted, written,
                                                                refusal):
    """YAML 1.1 reads the entry name NO (Norway) as False; next to a string name, listing the
    catalog would compare the two and fail with a raw TypeError, and the entry could not be
    opened as 'NO'.  The name is refused, saying to quote it; quoted, it opens."""
    cat = _catalog(tmp_path)
    register_dataset(cat, "other", tmp_path / "data" / "other.zarr")
    text = cat.read_text()
    cat.write_text(text.replace("\n  nb:\n", f"\n  {written}:\n"))
    with pytest.raises(CatalogError, match=refusal):
        ok.list_datasets(cat, trusted=trusted)
    cat.write_text(text.replace("\n  nb:\n", f"\n  '{written}':\n"))
    assert ok.list_datasets(cat, trusted=trusted) == sorted([written, "other"])


def test_an_alias_to_a_name_yaml_reads_as_another_type_is_refused(tmp_path):
    cat = _catalog(tmp_path)
    cat.write_text(cat.read_text().replace("aliases: {}", "aliases: {norway: 1}"))
    with pytest.raises(CatalogError, match=r"alias 'norway' points at the entry name 1 is "
                                           r"of type int"):
        ok.list_datasets(cat)


@pytest.mark.parametrize("output_dir, store", [("data/x.zarr", "data/x.zarr"),
                                               ("data/x.zarr/X/runs", "data/x.zarr/X"),
                                               ("data/x.zarr/runs", "data/x.zarr")])
def test_a_pipeline_output_folder_in_a_zarr_store_is_refused_before_any_work(
        tmp_path, output_dir, store):
    """Outputs written into a dataset store (the store itself, an array folder, a new
    folder inside it) would become part of that store; refused, and nothing is written."""
    data = ok.make_dataset("synthetic_krr_2d", tmp_path / "data" / "x.zarr", 20,
                           chunk_size=10, progress=False)
    register_dataset(tmp_path / "c.yaml", "a", data)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    path = _write(tmp_path, BASE.replace("{output_dir: out}", f"{{output_dir: {output_dir}}}"))
    with pytest.raises(PipelineConfigError,
                       match=rf"'save.output_dir' = '{output_dir}' resolves to .*, (which is|"
                             rf"inside) the Zarr store '.*{store}'"):
        run_pipeline(path)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")
                  if p.name != "p.yaml") == before


@pytest.mark.parametrize("where, value, expected", [
    ("fit.checkpoint_every", "1e3", 1000),          # YAML 1.1 reads 1e3 as a string
    ("fit.checkpoint_every", "2.0e+3", 2000),       # and 2.0e+3 as a float
    ("fit.checkpoint_every", "1_000", 1000),
    ("data.generate.a.n_samples", "6e2", 600),
    ("data.generate.a.chunk_size", "2.5e2", 250),
])
def test_counts_of_the_stages_are_read_as_written(tmp_path, where, value, expected):
    """The counts of a pipeline file take the forms the command line's counts take
    (``--checkpoint-every 1e3``, ``--n 6e2``), ``checkpoint_every: 1e3`` as ``n_samples``."""
    spec = _stage_counts(tmp_path, where, value)
    stage, key = where.rsplit(".", 1)
    holder = spec.fit if stage == "fit" else spec.data.generate["a"]
    got = getattr(holder, key)
    assert got == expected and type(got) is int


@pytest.mark.parametrize("where", ["fit.checkpoint_every", "data.generate.a.n_samples",
                                   "data.generate.a.chunk_size",
                                   "data.generate.a.random_state"])
@pytest.mark.parametrize("value", ["true", "false"])
def test_a_bool_is_not_a_count(tmp_path, where, value):
    """``checkpoint_every: true`` (or ``n_samples: true``) is refused, not read as 1 (and
    ``false`` as 0) as Python reads a bool; the estimators' own number-valued parameters
    refuse a bool the same way."""
    with pytest.raises(PipelineConfigError,
                       match=rf"key '{where}': .*(True|False) is not a number"):
        _stage_counts(tmp_path, where, value)


def _stage_counts(tmp_path, where, value):
    text = BASE.replace("data: {catalog: c.yaml, train: a}\n", "")
    gen = {"generator": "g", "n_samples": 10}
    fit = ""
    if where == "fit.checkpoint_every":
        fit = f"fit: {{checkpoint_every: {value}}}\n"
    else:
        gen[where.rsplit(".", 1)[1]] = "@V@"
    data = ("data:\n  catalog: c.yaml\n  train: a\n  generate: {a: "
            + yaml.safe_dump(gen, default_flow_style=True).strip().replace("'@V@'", value)
            + "}\n")
    return load_pipeline(_write(tmp_path, text + data + fit))[0]
