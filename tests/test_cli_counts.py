"""Counts on the command line (``--n``, ``--chunk-size``, ``--checkpoint-every``) are taken
as users write them, ``1e6`` for a million rows, and a count that is not a whole positive
number is refused by click, naming the option and the value."""

from __future__ import annotations

import click
import pytest
import zarr
from click.testing import CliRunner

from ooc_kernels.cli import main

COUNT_OPTIONS = {("data", "make", "--n"), ("data", "make", "--chunk-size"),
                 ("train", "--checkpoint-every")}


def _make(tmp_path, *args):
    out = tmp_path / "d.zarr"
    r = CliRunner().invoke(main, ["data", "make", "synthetic_krr_2d", "--out", str(out), "-q",
                                  *args])
    return r, out


@pytest.mark.parametrize("n, chunk, rows, chunk_rows", [
    ("1e3", "2.5e2", 1000, 250), ("2.5e2", "1E+2", 250, 100), ("1_000", "5e2", 1000, 500),
    ("300", "100", 300, 100),
])
def test_counts_in_exponent_notation_make_that_many_rows(tmp_path, n, chunk, rows,
                                                         chunk_rows):
    r, out = _make(tmp_path, "--n", n, "--chunk-size", chunk)
    assert r.exit_code == 0, r.output
    X = zarr.open_group(str(out), mode="r")["X"]
    assert X.shape[0] == rows and X.chunks[0] == chunk_rows


@pytest.mark.parametrize("option", ["--n", "--chunk-size"])
@pytest.mark.parametrize("value, why", [
    ("1.5", "is not a whole number"), ("1e-3", "is not a whole number"),
    ("-5", "is negative"), ("-1e3", "is negative"), ("0", "is too small: the count must be at least 1"),
    ("abc", "is not a number"), ("1e400", "is too large"),
])
def test_a_count_that_is_not_a_whole_positive_number_is_refused(tmp_path, option, value,
                                                                why):
    args = {"--n": "100", "--chunk-size": "50", option: value}
    r, out = _make(tmp_path, *[x for kv in args.items() for x in kv])
    assert r.exit_code == 2, r.output  # click's usage error, before any work
    assert f"Invalid value for '{option}': '{value}' {why}" in " ".join(r.output.split())
    assert not out.exists()


def _options():
    """(command path..., option) -> click parameter, for every option of every command."""
    found = {}

    def walk(cmd, path):
        for p in cmd.params:
            if isinstance(p, click.Option):
                for opt in p.opts:
                    found[(*path, opt)] = p
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, (*path, name))

    walk(main, ())
    return found


def test_every_count_option_takes_exponent_notation_and_no_other_takes_bare_int():
    options = _options()
    for key in COUNT_OPTIONS:
        p = options[key]
        assert p.type.convert("1e3", p, None) == 1000
        assert p.type.convert("2.5e2", p, None) == 250
        with pytest.raises(click.BadParameter, match=r"'1\.5' is not a whole number"):
            p.type.convert("1.5", p, None)
    plain = {k for k, p in options.items() if p.type is click.INT}
    assert plain == {("data", "make", "--seed")}  # a seed is not a count
