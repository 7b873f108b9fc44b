"""Editing saved models and checkpoints as a careful editor would: the metadata changed and
its checksum recomputed, independently of the library (CRC32C of the canonical JSON)."""

import json
import shutil

import google_crc32c
import zarr


def reseal(meta):
    """``meta`` with its metadata checksum recomputed (CRC32C of the canonical JSON without
    it); unchanged when it has no checksums."""
    meta = json.loads(json.dumps(meta))
    if isinstance(meta.get("checksums"), dict):
        meta["checksums"].pop("metadata", None)
        text = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
        meta["checksums"]["metadata"] = int(google_crc32c.value(text))
    return meta


def edit_attrs(path, key, change, seal=True):
    """Apply ``change(meta)`` to the metadata stored under ``key`` of the group at ``path``."""
    group = zarr.open_group(str(path), mode="r+")
    meta = json.loads(json.dumps(dict(group.attrs[key])))
    change(meta)
    group.attrs[key] = reseal(meta) if seal else meta


def set_at(*keys, value=None, drop=False):
    """A change of the metadata at ``keys``: set to ``value``, or removed."""
    def change(meta):
        node = meta
        for key in keys[:-1]:
            node = node[key]
        if drop:
            del node[keys[-1]]
        else:
            node[keys[-1]] = value
    return change


def copy_without_checksums(model, path):
    """A copy at ``path`` of the saved model ``model`` as format 2 wrote it: no checksums."""
    shutil.copytree(model, path)

    def old_format(meta):
        meta["format_version"] = 2
        del meta["checksums"]

    edit_attrs(path, "ooc_kernels", old_format, seal=False)
    return path
