"""The quickstart notebook runs top to bottom (small sizes) on a LocalCluster."""

import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("matplotlib")   # the notebook's figures (the test extra has it)

NOTEBOOK = os.path.join(os.path.dirname(__file__), "..", "docs", "notebooks",
                        "quickstart.ipynb")


@pytest.mark.slow
def test_quickstart_notebook_executes(tmp_path, monkeypatch):
    monkeypatch.setenv("OOC_QUICKSTART_N_TRAIN", "6000")
    monkeypatch.setenv("OOC_QUICKSTART_N_TEST", "1000")
    monkeypatch.setenv("OOC_QUICKSTART_EPOCHS", "2")
    monkeypatch.setenv("OOC_QUICKSTART_DIR", str(tmp_path))
    monkeypatch.setenv("OOC_KERNELS_PROGRESS", "0")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                      for o in c.get("outputs", []))
    accuracy = float(outputs.split("test accuracy:")[1].split()[0])
    assert accuracy > 0.8          # 6,000 samples, 2 epochs: far above chance (0.1)
    # against the analytic labels of the 2-D problem (1 outside the circle |x|^2 = 2 ln 2)
    accuracy_2d = float(outputs.split("2-D accuracy:")[1].split()[0])
    assert accuracy_2d > 0.85      # a linear model gets about 0.5
    # the learning curve and the decision surface are drawn
    figures = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
               if "image/png" in o.get("data", {})]
    assert len(figures) == 2
    assert (tmp_path / "digits.zarr").exists()
