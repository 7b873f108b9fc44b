"""A pipeline's first run writes its output folder's id file before any output; the file
system refusing that write (a full disk, a read-only folder) is the library's
``WriteFailedError`` naming the file and the cause, as for every other write of a run, and
leaves no temporary file."""

from __future__ import annotations

import errno
import os
import pathlib
import sys
from pathlib import Path

import pytest

from ooc_kernels._output_owner import FOLDER_ID_FILE
from ooc_kernels.exceptions import WriteFailedError
from ooc_kernels.pipeline import run_pipeline

sys.path.insert(0, str(Path(__file__).parent))
from test_attacks_pipeline_outputs import _pipeline  # noqa: E402


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_the_output_folder_id_refused_by_the_file_system_is_write_failed_error(
        tmp_path, monkeypatch, err):
    path = _pipeline(tmp_path)
    write_text = pathlib.Path.write_text

    def refused(self, *args, **kwargs):
        if self.name.startswith(f".{FOLDER_ID_FILE}.tmp-"):
            raise OSError(err, os.strerror(err))
        return write_text(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "write_text", refused)
    with pytest.raises(WriteFailedError) as info:
        run_pipeline(path, scheduler="sync", progress=False)
    assert info.value.errno == err
    message = str(info.value)
    assert f"could not write the output folder's id file " \
           f"'{tmp_path / 'out' / FOLDER_ID_FILE}': {os.strerror(err)} " \
           f"({errno.errorcode[err]})" in message
    assert os.listdir(tmp_path / "out") == []      # no temporary file, no output
