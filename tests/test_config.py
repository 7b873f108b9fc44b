"""The library's ``ooc-kernels.*`` keys are registered with Dask's configuration system.

Their defaults are in the packaged ``ooc_kernels/ooc-kernels.yaml``; every key the docs
mention must be there, a value set with ``dask.config.set`` (or Dask's environment
variables) must change what the library does, and ``dask.config.get("ooc-kernels")`` must
answer as soon as the library is imported next to Dask.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import dask
import pytest

import ooc_kernels.parallel  # noqa: F401  (registers the defaults)
from ooc_kernels._config import defaults
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.parallel.cluster import cluster_rounds

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _flatten(tree, prefix="ooc-kernels"):
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}.{key}")
        else:
            yield f"{prefix}.{key}", value


def _documented_keys():
    keys = set()
    for path in DOC_FILES:
        keys |= set(re.findall(r"ooc-kernels\.[a-z_]+(?:\.[a-z_-]+)+", path.read_text()))
    return keys


def test_every_documented_key_is_registered_with_its_documented_default():
    documented = _documented_keys()
    # the keys docs/scale_out.md describes, with the values it gives
    assert {"ooc-kernels.cluster.pipeline", "ooc-kernels.cluster.lookahead",
            "ooc-kernels.cluster.chain", "ooc-kernels.local.read_ahead"} <= documented
    registered = dict(_flatten(dask.config.get("ooc-kernels")))
    assert documented <= set(registered), sorted(documented - set(registered))
    assert registered == {"ooc-kernels.cluster.pipeline": True,
                          "ooc-kernels.cluster.lookahead": 1,
                          "ooc-kernels.cluster.chain": 8,
                          "ooc-kernels.local.read_ahead": True}
    # the packaged file holds exactly what is registered
    assert dict(_flatten(defaults()["ooc-kernels"])) == registered


def test_refresh_keeps_the_defaults():
    with dask.config.set({"ooc-kernels.cluster.chain": 3}):
        assert dask.config.get("ooc-kernels.cluster.chain") == 3
    config = {}
    dask.config.refresh(config=config)  # Dask's defaults, files and environment
    assert config["ooc-kernels"]["cluster"] == {"pipeline": True, "lookahead": 1, "chain": 8}


def test_a_value_set_in_dask_config_changes_the_rounds():
    assert (cluster_rounds().pipeline, cluster_rounds().lookahead,
            cluster_rounds().chain) == (True, 1, 8)
    with dask.config.set({"ooc-kernels.cluster.chain": 3,
                          "ooc-kernels.cluster.pipeline": False}):
        rounds = cluster_rounds()
        assert (rounds.pipeline, rounds.lookahead, rounds.chain) == (False, 1, 3)
        assert cluster_rounds(chain=5).chain == 5          # an explicit argument wins
    with dask.config.set({"ooc-kernels.cluster.chain": 0}), \
            pytest.raises(ValidationError, match=r"ooc-kernels.cluster.chain must be an "
                          r"integer >= 1, got 0; set it with dask.config.set\(\{'ooc-kernels"
                          r".cluster.chain': 8\}\) \(the default\)"):
        cluster_rounds()


def _run(code, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_library_next_to_dask_registers_the_keys():
    # Dask first, then the library: registered at ``import ooc_kernels``, without touching
    # anything else of the library
    got = _run("import json, sys, dask, ooc_kernels\n"
               "print(json.dumps([dask.config.get('ooc-kernels', None),\n"
               "                  'ooc_kernels.parallel' in sys.modules]))")
    assert got == [{"cluster": {"pipeline": True, "lookahead": 1, "chain": 8},
                    "local": {"read_ahead": True}}, False]
    # a Dask environment variable overrides the default, as for any Dask library
    got = _run("import json, ooc_kernels as ok\n"
               "from ooc_kernels.parallel.cluster import cluster_rounds\n"
               "print(json.dumps(cluster_rounds().chain))",
               {"DASK_OOC_KERNELS__CLUSTER__CHAIN": "5"})
    assert got == 5
