"""An integer of more digits than Python converts (``sys.get_int_max_str_digits()``, 4300
by default) in a file that may come from someone else (a catalog, a pipeline file, a
``-p name=value`` of the command line) is the library's error naming the file, the line and
the column, with the number cut short, instead of Python's bare ``ValueError`` from deep
inside the YAML parser."""

from __future__ import annotations

import sys

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

HUGE = "9" * (sys.get_int_max_str_digits() + 1)


def test_yaml_integers_python_reads_are_read_as_before():
    # the reference: PyYAML's own SafeLoader
    text = "a: 0x1F\nb: 1_000\nc: -12\ne: 0b101\nf: " + "9" * 4000
    assert load_yaml(text, source="x", error=ValueError) == yaml.safe_load(text)


def test_a_catalog_with_a_huge_integer_is_a_catalog_error(tmp_path):
    store = ok.make_dataset("nonlinear_binary", tmp_path / "d.zarr", 20, progress=False)
    register_dataset(tmp_path / "cat.yaml", "d", store)
    text = (tmp_path / "cat.yaml").read_text()
    (tmp_path / "cat.yaml").write_text(text.replace("metadata: {}",
                                                    f"metadata: {{n: {HUGE}}}", 1))
    line = next(i for i, s in enumerate((tmp_path / "cat.yaml").read_text().splitlines(), 1)
                if HUGE in s)
    with pytest.raises(CatalogError, match=rf"catalog file '{tmp_path / 'cat.yaml'}' holds "
                                           rf"the integer '9{{38}}\.\.\. \({len(HUGE) + 2} "
                                           rf"characters in all\) at line {line}, column "
                                           rf"\d+: more than the 4300 digits") as info:
        open_dataset(tmp_path / "cat.yaml", "d")
    assert len(str(info.value)) < 600


def test_a_pipeline_with_a_huge_integer_is_a_pipeline_config_error(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(f"name: p\nmodel:\n  estimator: DSGClassifier\n  params:\n"
                    f"    n_features: {HUGE}\n")
    with pytest.raises(PipelineConfigError, match=r"holds the integer '9+\.\.\. .* at line "
                                                  r"5, column 17"):
        load_pipeline(path)


def test_a_huge_integer_on_the_command_line_is_a_validation_error(tmp_path):
    with pytest.raises(ValidationError, match="more than the 4300 digits") as info:
        parse_param_value(HUGE)
    assert len(str(info.value)) < 600
    r = CliRunner().invoke(main, ["train", "--catalog", str(tmp_path / "c.yaml"), "--entry",
                                  "x", "--out", str(tmp_path / "m.zarr"), "-p",
                                  f"n_features={HUGE}"])
    assert r.exit_code != 0
    assert "more than the 4300 digits" in r.output and "Traceback" not in r.output
