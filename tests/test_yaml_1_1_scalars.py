"""Plain scalars that YAML 1.1 (PyYAML) reads otherwise than YAML 1.2 and than a reader of
the file would (``1:20`` is 80 in base 60, ``017`` is the octal 15, ``no``/``off`` are
``False``, ``2026-11-28`` a date) are refused in files that may come from someone else (a
catalog, a pipeline file, a ``-p name=value``), with the library's error naming the file,
the line and the column; quoted, each is the text written.  ``1_000`` stays 1000
(docs/bad_input.md), and ``.inf``/``.nan``/``0o17`` given as counts are refused by the
count's own check."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels._params import parse_param_value
from ooc_kernels._untrusted import load_yaml
from ooc_kernels.cli import main
from ooc_kernels.data.catalog import open_dataset, register_dataset
from ooc_kernels.exceptions import CatalogError, PipelineConfigError, ValidationError
from ooc_kernels.pipeline import load_pipeline

# (written, what PyYAML's SafeLoader makes of it, a pattern of the refusal)
SURPRISES = [
    ("1:20", 80, r"base 60 \(80\), YAML 1\.2 as the text '1:20'"),
    ("-1:20.5", -80.5, r"base 60 \(-80\.5\)"),
    ("017", 15, r"octal number \(15\), YAML 1\.2 as the decimal 17"),
    ("no", False, r"reads 'no' as the boolean false, YAML 1\.2 as the text 'no'"),
    ("Off", False, r"reads 'Off' as the boolean false"),
    ("yes", True, r"reads 'yes' as the boolean true"),
    ("ON", True, r"reads 'ON' as the boolean true"),
    ("2026-11-28", None, r"reads '2026-11-28' as a date or time"),
]


@pytest.mark.parametrize("text, yaml11, why", SURPRISES)
def test_pyyaml_reads_them_otherwise_than_written(text, yaml11, why):
    # the reference: what PyYAML's own SafeLoader does with them silently
    value = yaml.safe_load(f"a: {text}")["a"]
    assert value == yaml11 if yaml11 is not None else str(value) == text
    assert value != text


@pytest.mark.parametrize("text, yaml11, why", SURPRISES)
def test_a_pipeline_file_refuses_them_with_the_line_and_column(tmp_path, text, yaml11, why):
    path = tmp_path / "p.yaml"
    path.write_text("name: p\nmodel:\n  estimator: DSGClassifier\n  params:\n"
                    f"    random_state: {text}\n")
    with pytest.raises(PipelineConfigError, match=rf"pipeline '{path}' holds '{text}' at "
                                                  rf"line 5, column 19, which is ambiguous: "
                                                  rf"YAML 1\.1 .*{why}"):
        load_pipeline(path)


@pytest.mark.parametrize("text, yaml11, why", SURPRISES)
def test_a_catalog_refuses_them_with_the_line_and_column(tmp_path, text, yaml11, why):
    store = ok.make_dataset("nonlinear_binary", tmp_path / "d.zarr", 20, progress=False)
    cat = tmp_path / "cat.yaml"
    register_dataset(cat, "d", store)
    cat.write_text(cat.read_text().replace("metadata: {}", f"metadata: {{n: {text}}}", 1))
    line, column = next((i, s.index(f"n: {text}") + 4)
                        for i, s in enumerate(cat.read_text().splitlines(), 1)
                        if f"n: {text}" in s)
    with pytest.raises(CatalogError, match=rf"catalog file '{cat}' holds '{text}' at line "
                                           rf"{line}, column {column}, .*{why}"):
        open_dataset(cat, "d")


@pytest.mark.parametrize("text, yaml11, why", SURPRISES)
def test_a_command_line_value_refuses_them(tmp_path, text, yaml11, why):
    with pytest.raises(ValidationError, match=rf"the value '{text}' holds '{text}' at line 1, "
                                              rf"column 1, .*{why}"):
        parse_param_value(text)
    r = CliRunner().invoke(main, ["train", "--catalog", str(tmp_path / "c.yaml"), "--entry",
                                  "x", "--out", str(tmp_path / "m.zarr"), "-p",
                                  f"random_state={text}"])
    assert r.exit_code != 0
    assert "which is ambiguous" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("text", [s[0] for s in SURPRISES])
def test_quoted_they_are_the_text_written(text):
    assert load_yaml(f"a: '{text}'", source="x", error=ValueError) == {"a": text}
    # -p makes text written as a decimal number a number (docs/bad_input.md): '017' is 17
    assert parse_param_value(f"'{text}'") == (17 if text == "017" else text)


def test_the_scalars_both_versions_agree_on_are_read_as_pyyaml_reads_them():
    # 00 and 07 are the same number in octal and decimal; 1_000 is 1000 as documented
    text = ("a: [1_000, 0, 00, 07, 0x1F, 0b101, -12, 0.5, 1e3, true, False, null, .inf, "
            "2026-11-28x, 0o17, 1.5:x]")
    assert load_yaml(text, source="x", error=ValueError) == yaml.safe_load(text)
    assert parse_param_value("1_000") == 1000


@pytest.mark.parametrize("text, message", [
    (".inf", "inf is not a number"), (".nan", "nan is not a number"),
    ("0o17", "'0o17' is not a number"), ("1.5", "'1.5' is not a whole number")])
def test_counts_refuse_infinities_and_octal_text(tmp_path, text, message):
    path = tmp_path / "p.yaml"
    path.write_text("name: p\ndata:\n  catalog: c.yaml\n  train: a\n  generate:\n"
                    f"    a: {{generator: digits_deformed, n_samples: {text}}}\n"
                    "model:\n  estimator: DSGClassifier\nsave:\n  output_dir: out\n")
    with pytest.raises(PipelineConfigError, match=rf"key 'data\.generate\.a\.n_samples'.*"
                                                  rf"{message}"):
        load_pipeline(path)
