"""Reading YAML that someone else may have written, and quoting it in error messages.

Catalogs and pipeline files may come from anyone.  Two things in them cost far more than
their size:

* **aliases**: ``*a`` repeats the node anchored ``&a``; ten nested levels of ten aliases
  each are a few hundred bytes that expand to 10^10 nodes for any code that walks the
  result (trust checks, validation, error messages);
* **deep nesting**: a few thousand nested ``[`` or mappings exceed Python's recursion limit
  in any recursive walk.

A key set twice in one mapping is refused too: PyYAML keeps the last value, other readers
the first or neither, so a reviewer of the file may read another value than the one used.
So are the plain scalars that YAML 1.1 (PyYAML) reads otherwise than YAML 1.2 and than
a reader of the file would: ``1:20`` (80, base 60), ``017`` (15, octal), ``yes``, ``no``,
``on``, ``off`` (booleans) and ``2026-11-28`` (a date); quoted, each is the text written.
``1_000`` stays 1000, ``0x1F`` 31, ``.inf`` and ``.nan`` floats (a count refuses them).

:func:`load_yaml` parses with ``yaml.SafeLoader`` (no Python objects), refuses aliases unless
the caller allows them, refuses nesting deeper than :data:`MAX_DEPTH`, duplicate keys and
those YAML 1.1 scalars, naming the line, before anything walks the document.  :func:`short_repr` quotes a value from such a file in
an error message without letting the message grow with the value.

Examples
--------
>>> from ooc_kernels._untrusted import load_yaml, short_repr
>>> from ooc_kernels.exceptions import PipelineConfigError
>>> load_yaml("a: [1, 2]", source="'p.yaml'", error=PipelineConfigError)
{'a': [1, 2]}
>>> load_yaml("a: &x [1, 2]\\nb: *x", source="'p.yaml'", error=PipelineConfigError)
Traceback (most recent call last):
...
ooc_kernels.exceptions.PipelineConfigError: 'p.yaml' uses the YAML alias '*x' at line 2, column 4; ...
>>> short_repr("x" * 1000, limit=20)
"'xxxxxxxxxxxxxxxxxx... (1002 characters in all)"
"""

from __future__ import annotations

import os
import stat
import sys
from typing import IO, Any

import yaml
from yaml.events import AliasEvent, CollectionStartEvent

__all__ = ["MAX_DEPTH", "MAX_FILES", "MAX_METADATA_BYTES", "MAX_REPR", "METADATA_NAMES",
           "clip", "load_yaml", "open_regular", "refuse_large_metadata",
           "refuse_special_files", "scan_once", "short_repr", "special_file"]

#: Deepest nesting of mappings and sequences accepted in a YAML file (a catalog needs
#: about ten levels; Python's recursion limit is about a thousand frames).
MAX_DEPTH = 100
#: Longest quotation of a value in an error message, in characters.
MAX_REPR = 200
#: The names of Zarr's metadata files (format 3, and format 2 with its consolidated file).
METADATA_NAMES = frozenset({"zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"})
#: Largest Zarr metadata file read, in bytes.  A store's metadata holds its attributes (a
#: model's: its configuration, classes, feature names and the per-epoch history of its fit,
#: about 110 bytes an epoch), tens of kilobytes for the library's own stores; 64 MiB
#: leaves room for half a million epochs or classes.
MAX_METADATA_BYTES = 64 * 2**20


def short_repr(value: Any, limit: int = MAX_REPR) -> str:
    """``repr(value)``, cut to ``limit`` characters with a note of its full length.

    Parameters
    ----------
    value : object
        A value read from a file (a string, a number, a list or mapping of them).
    limit : int, default MAX_REPR
        Characters kept.

    Returns
    -------
    str

    Examples
    --------
    >>> short_repr([1, 2])
    '[1, 2]'
    """
    try:
        text = repr(value)
    except RecursionError:  # a self-referencing structure built in Python
        return f"<{type(value).__name__} nested too deeply to show>"
    if len(text) <= limit:
        return text
    return f"{text[:limit - 1]}... ({len(text)} characters in all)"


def clip(text: Any, limit: int = MAX_REPR) -> str:
    """``str(text)`` cut to ``limit`` characters with a note of its full length (for text
    that is shown unquoted: a key, a dotted location, another error's message).

    Examples
    --------
    >>> clip("model.params.n_features")
    'model.params.n_features'
    >>> clip("abcdef" * 10, limit=10)
    'abcdefabc... (60 characters in all)'
    """
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit - 1]}... ({len(text)} characters in all)"


#: What a path that is not a regular file or a folder is, by ``stat`` test.
_SPECIAL = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def special_file(mode: int) -> str | None:
    """What a file of ``st_mode`` ``mode`` is when reading it may never end or never stop
    (a named pipe waits for a writer; ``/dev/zero`` and ``/dev/urandom`` never end), else
    ``None`` (a regular file, a folder, a symbolic link)."""
    for test, what in _SPECIAL:
        if test(mode):
            return what
    return None


def open_regular(path: Any, *, what: str, error: type[Exception],
                 encoding: str | None = None) -> IO:
    """Open ``path`` for reading, refusing anything but a regular file, without waiting.

    ``open()`` of a named pipe waits until some process opens it for writing, and a device
    such as ``/dev/zero`` can be read without end: a file that someone else placed where a
    catalog or a reference file is expected must not hang the reader.  The file is opened
    with ``O_NONBLOCK`` (which returns at once, also for a pipe) and checked with
    ``fstat`` on the open descriptor, so a regular file swapped for a pipe after a check
    cannot slip through.

    Parameters
    ----------
    path : str or path-like
    what : str
        How error messages name the file (e.g. ``"catalog file '/x/c.yaml'"``).
    error : type of exception
        Raised when the file is not a regular file.
    encoding : str, optional
        Open in text mode with this encoding; binary without.

    Returns
    -------
    file object
        Open for blocking reads.

    Raises
    ------
    error
        ``path`` is a named pipe, a device or a socket (a folder is ``IsADirectoryError``,
        as for ``open()``).
    OSError
        ``path`` cannot be opened.

    Examples
    --------
    >>> import os, tempfile
    >>> fifo = os.path.join(tempfile.mkdtemp(), "c.yaml")
    >>> os.mkfifo(fifo)
    >>> open_regular(fifo, what="catalog file 'c.yaml'", error=ValueError)
    Traceback (most recent call last):
    ...
    ValueError: catalog file 'c.yaml' is a named pipe (FIFO), not a regular file: ...
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", os.fspath(path))
        kind = special_file(mode)
        if kind is not None:
            raise error(
                f"{what} is {kind}, not a regular file: reading it could wait for a writer "
                f"or never end; give the path of a file"
            )
        os.set_blocking(fd, True)
        stream = os.fdopen(fd, "r" if encoding else "rb", encoding=encoding)
    except BaseException:
        os.close(fd)
        raise
    return stream


#: Most files and folders :func:`refuse_special_files` looks at in one folder tree (a saved
#: model or a checkpoint holds a few dozen).
MAX_FILES = 100_000


def scan_once(folder: Any, seen: set) -> list[os.DirEntry]:
    """The entries of ``folder`` (``os.scandir``, following a link to it), or none when a
    folder of the same device and inode is in ``seen`` already or the folder cannot be
    read; ``folder`` is added to ``seen``.  A walk that calls it for every folder it
    descends into reads each folder once, whatever links lead to it.

    Examples
    --------
    >>> import tempfile
    >>> d, seen = tempfile.mkdtemp(), set()
    >>> open(os.path.join(d, "a"), "w").close()
    >>> [e.name for e in scan_once(d, seen)], scan_once(d, seen)
    (['a'], [])
    """
    try:
        info = os.stat(folder)
        if (info.st_dev, info.st_ino) in seen:
            return []
        seen.add((info.st_dev, info.st_ino))
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []


def refuse_special_files(folder: Any, *, what: str, error: type[Exception],
                         fix: str) -> None:
    """Refuse a named pipe, a device or a socket anywhere in the folder tree ``folder``, or
    at the end of a symbolic link there, before anything in it is read.

    A saved model or checkpoint is a folder of files that someone else may have written
    (an archive from elsewhere can hold a named pipe, ``tar`` restores them): reading a
    ``zarr.json`` or a chunk file that is a pipe waits for a writer without end.  One walk
    with ``os.scandir`` (no file is opened); links to folders are walked too, each folder
    once, and at most :data:`MAX_FILES` entries in all.

    Raises
    ------
    error
        Naming the file and what it is, or saying that the tree holds more than
        :data:`MAX_FILES` entries; ``fix`` ends the message.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> os.mkfifo(os.path.join(d, "zarr.json"))
    >>> refuse_special_files(d, what="model 'm.zarr'", error=ValueError, fix="re-save it")
    Traceback (most recent call last):
    ...
    ValueError: model 'm.zarr' holds '.../zarr.json', a named pipe (FIFO): ...; re-save it.
    """
    stack, seen, count = [os.fspath(folder)], set(), 0
    while stack:
        for item in scan_once(stack.pop(), seen):  # unreadable: the reader reports it
            count += 1
            if count > MAX_FILES:
                raise error(f"{what} holds more than {MAX_FILES} files and folders, far more "
                            f"than the library writes; {fix}.")
            try:
                info = os.stat(item.path)  # where a link leads
            except OSError:
                continue  # a dangling link: the reader reports what it misses
            if stat.S_ISDIR(info.st_mode):
                stack.append(item.path)
            elif special_file(info.st_mode) is not None:
                raise error(f"{what} holds {short_repr(item.path)}, "
                            f"{special_file(info.st_mode)}: reading it could wait for a "
                            f"writer or never end; {fix}.")
            else:
                _refuse_large_metadata(item.name, item.path, info.st_size, what, error, fix)


def _refuse_large_metadata(name: str, path: str, size: int, what: str,
                           error: type[Exception], fix: str) -> None:
    if name in METADATA_NAMES and size > MAX_METADATA_BYTES:
        raise error(f"{what} holds {short_repr(path)}, a metadata file of {size} bytes, "
                    f"more than the {MAX_METADATA_BYTES} read of one (Zarr reads it whole "
                    f"into memory); {fix}.")


def refuse_large_metadata(folder: Any, *, what: str, error: type[Exception],
                          fix: str) -> None:
    """Refuse a Zarr metadata file (:data:`METADATA_NAMES`) larger than
    :data:`MAX_METADATA_BYTES` in the store folder ``folder`` or in a folder right below it
    (its arrays), before Zarr reads it whole: a sparse file of terabytes takes no disk.
    Looks at the sizes only (``os.stat``); chunk files are not listed past the first level.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> os.mkdir(os.path.join(d, "X"))
    >>> with open(os.path.join(d, "X", "zarr.json"), "wb") as f:
    ...     _ = f.truncate(2**40)
    >>> refuse_large_metadata(d, what="dataset 'd.zarr'", error=ValueError, fix="rewrite it")
    Traceback (most recent call last):
    ...
    ValueError: dataset 'd.zarr' holds '.../X/zarr.json', a metadata file of 1099511627776 bytes, ...
    """
    top = os.fspath(folder)
    for entry in scan_once(top, set()):
        places = [entry.path]
        if entry.name not in METADATA_NAMES:
            places = [os.path.join(entry.path, name) for name in sorted(METADATA_NAMES)]
        for place in places:
            try:
                info = os.stat(place)
            except OSError:   # missing, not in a folder: the reader reports it
                continue
            if stat.S_ISREG(info.st_mode):
                _refuse_large_metadata(os.path.basename(place), place, info.st_size, what,
                                       error, fix)


#: The words YAML 1.1 (PyYAML) reads as booleans and YAML 1.2 as text (any case).
_YAML11_BOOLS = frozenset({"yes", "no", "on", "off"})


def _yaml11_surprise(node) -> str | None:
    """Why the plain scalar ``node`` is refused, or ``None`` for one read as written."""
    text = str(node.value)
    plain = text.lstrip("+-").replace("_", "")
    if node.tag.endswith(":bool") and text.lower() in _YAML11_BOOLS:
        value = text.lower() in ("yes", "on")
        return (f"YAML 1.1 reads {text!r} as the boolean {str(value).lower()}, YAML 1.2 as "
                f"the text {text!r}; write {str(value).lower()} for a yes/no value, or "
                f"quote it ('{text}') for the text")
    if node.tag.endswith((":int", ":float")) and ":" in text:
        return (f"YAML 1.1 reads {text!r} as a number in base 60 ({_base60(text)}), "
                f"YAML 1.2 as the text {text!r}; write the number in decimal, or quote it "
                f"('{text}') for the text")
    if node.tag.endswith(":int") and plain[:1] == "0" and plain.isdigit() \
            and int(plain, 8) != int(plain):  # '017'; '00' and '07' are the same either way
        written = text.replace("_", "")
        return (f"YAML 1.1 reads {text!r} as an octal number ({int(written, 8)}), YAML 1.2 "
                f"as the decimal {int(written)}; write it without the leading zeros")
    if node.tag.endswith(":timestamp"):
        return (f"YAML 1.1 reads {text!r} as a date or time, not as text or a number; "
                f"quote it ('{text}') for the text")
    return None


def _base60(text: str) -> str:
    """The value YAML 1.1 gives the base-60 number ``text`` (``'1:20'`` is 80)."""
    value = 0.0
    for part in text.lstrip("+-").replace("_", "").split(":"):
        value = value * 60 + float(part)
    return f"{-value if text.startswith('-') else value:g}"


def _refuse_yaml11(node, source: str, error: type[Exception]) -> None:
    why = _yaml11_surprise(node)
    if why is not None:
        mark = node.start_mark
        raise error(f"{source} holds {short_repr(node.value, 40)} at line {mark.line + 1}, "
                    f"column {mark.column + 1}, which is ambiguous: {why}")


def _loader(source: str, error: type[Exception], allow_aliases: bool, hint: str):
    class Loader(yaml.SafeLoader):
        """``SafeLoader`` that refuses aliases (unless allowed) and deep nesting."""

        depth = 0

        def compose_node(self, parent, index):
            if not allow_aliases and self.check_event(AliasEvent):
                event = self.peek_event()
                mark = event.start_mark
                raise error(
                    f"{source} uses the YAML alias '*{event.anchor}' at line "
                    f"{mark.line + 1}, column {mark.column + 1}; anchors and aliases are not "
                    f"accepted in files that may come from someone else, because a few "
                    f"hundred bytes of nested aliases expand to gigabytes; write the values "
                    f"out in full{hint}"
                )
            collection = self.check_event(CollectionStartEvent)
            if collection:
                self.depth += 1
                if self.depth > MAX_DEPTH:
                    mark = self.peek_event().start_mark
                    raise error(
                        f"{source} nests mappings and lists more than {MAX_DEPTH} levels deep "
                        f"(line {mark.line + 1}, column {mark.column + 1}); no valid file "
                        f"needs that many: flatten the structure{hint}"
                    )
            try:
                return super().compose_node(parent, index)
            finally:
                if collection:
                    self.depth -= 1

        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen = {}
                for key_node, _ in node.value:
                    if not isinstance(key_node, yaml.ScalarNode) \
                            or key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    try:
                        key = self.construct_object(key_node)
                        first = seen.setdefault(key, key_node.start_mark)
                    except TypeError:  # unhashable: the base class names it
                        continue
                    if first is not key_node.start_mark:
                        mark = key_node.start_mark
                        raise error(
                            f"{source} sets the key {short_repr(key)} twice in one mapping "
                            f"(line {first.line + 1} and line {mark.line + 1}, column "
                            f"{mark.column + 1}); YAML readers disagree on which value "
                            "counts, so the file is refused: keep one of the two"
                        )
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node):
            _refuse_yaml11(node, source, error)
            try:
                return super().construct_yaml_int(node)
            except ValueError:  # more digits than Python converts (int_max_str_digits)
                mark = node.start_mark
                raise error(
                    f"{source} holds the integer {short_repr(node.value, 40)} at line "
                    f"{mark.line + 1}, column {mark.column + 1}: more than the "
                    f"{sys.get_int_max_str_digits()} digits Python reads in a number, which "
                    "no value needs; write a smaller one"
                ) from None

        def construct_yaml_float(self, node):
            _refuse_yaml11(node, source, error)
            return super().construct_yaml_float(node)

        def construct_yaml_bool(self, node):
            _refuse_yaml11(node, source, error)
            return super().construct_yaml_bool(node)

        def construct_yaml_timestamp(self, node, values=None):
            _refuse_yaml11(node, source, error)
            return super().construct_yaml_timestamp(node, values)  # pragma: no cover

    # the table of constructors holds functions, not method names: register the overrides
    for tag, method in (("int", Loader.construct_yaml_int),
                        ("float", Loader.construct_yaml_float),
                        ("bool", Loader.construct_yaml_bool),
                        ("timestamp", Loader.construct_yaml_timestamp)):
        Loader.add_constructor(f"tag:yaml.org,2002:{tag}", method)
    return Loader


def load_yaml(text: Any, *, source: str, error: type[Exception],
              allow_aliases: bool = False, hint: str = "") -> Any:
    """Parse YAML from a file that may come from someone else.

    Parameters
    ----------
    text : str, bytes or text stream
        The document.
    source : str
        How error messages name the file (e.g. ``"catalog file '/x/c.yaml'"``).
    error : type of exception
        Raised for an alias, too deep a nesting, a key set twice in a mapping or a YAML 1.1
        scalar read otherwise by YAML 1.2 (a class of :mod:`ooc_kernels.exceptions`);
        invalid YAML raises ``yaml.YAMLError`` as usual.
    allow_aliases : bool, default False
        Accept anchors and aliases (for files the caller trusts).
    hint : str, default ""
        Appended to the messages (e.g. ``", or pass trusted=True ..."``).

    Returns
    -------
    object
        Plain Python data: mappings, lists, strings, numbers, booleans (``true`` and
        ``false``), None.

    Raises
    ------
    error
        An alias (unless ``allow_aliases``), nesting deeper than :data:`MAX_DEPTH`, a key
        set twice in one mapping, or a base-60 number (``1:20``), an octal number with a
        leading zero (``017``), ``yes``/``no``/``on``/``off`` or a date, with the line and
        column.
    yaml.YAMLError
        The text is not valid YAML.
    """
    loader = _loader(source, error, allow_aliases, hint)(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
