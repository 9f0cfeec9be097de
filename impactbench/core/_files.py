"""Files the package writes and reads back: atomic writes, and .npz archives read as data only.

A reader never sees a half-written table, cache entry or report (:func:`write_atomic`). Cache
folders are shared between users and machines, so what is read back is data, never code: no
pickle is ever loaded, arrays come from uncompressed ``.npz`` archives checked member by member
before any byte is read into an array (:func:`read_npz`), and an entry that fails these checks
is ignored with a :class:`CacheWarning` and recomputed.
"""

from __future__ import annotations

import io
import math
import os
import secrets
import stat
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np


class CacheWarning(UserWarning):
    """A file read back was ignored because it failed validation (a cache entry: the result is
    recomputed; a table's provenance sidecar), or a cache could not be written (the result is
    used without being stored)."""


class FileWriteError(OSError):
    """A file could not be written (:func:`write_atomic`); ``filename`` names it."""


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and os.replace.

    The folder is created if needed. An interrupted or failed write (a full disk) leaves the
    previous file (or none), never a truncated one, and no temporary file. The file gets the mode
    any new file gets (0o666 less the umask: 0o644 under the usual umask 022), so that a cache
    folder can be shared.

    Raises
    ------
    FileWriteError
        If the file cannot be written; its ``filename`` is ``path`` (the message names it even
        when the failure came from the temporary file, e.g. ENOSPC).
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = _new_file(path)
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
        os.replace(temporary, path)
    except BaseException as error:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError) and error.errno is not None:
            raise FileWriteError(error.errno, error.strerror, str(path)) from error
        raise


def _new_file(path: Path) -> tuple[int, str]:
    """A new file next to ``path`` (descriptor and name), created as open() creates files: mode
    0o666 less the umask (``tempfile.mkstemp`` would make it 0o600)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        temporary = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(temporary, flags, 0o666), str(temporary)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name next to {str(path)!r}")


#: Largest file :func:`read_npz` reads (bytes): a reference's dense output is at most a few
#: tens of megabytes.
MAX_NPZ_BYTES = 1024**3


def read_regular(path: Path | str, limit: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes.

    The file is opened without blocking (a FIFO does not hang the reader) and checked on the
    opened descriptor: anything but a regular file (a FIFO, a device such as ``/dev/zero``
    reached through a link, a folder) is refused. The limit is enforced while reading, not only
    on the size the file declared when opened (a file growing meanwhile is refused too).

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    OSError
        If it cannot be opened or read.
    ValueError
        If it is not a regular file or is larger than ``limit`` (the message says which).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    handle = os.open(path, flags)
    try:
        mode = os.fstat(handle).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"not a regular file ({file_kind(mode)})")
        chunks, size = [], 0
        while chunk := os.read(handle, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise ValueError(f"larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(handle)


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, for a message: "a FIFO", "a folder"..."""
    kinds = {
        stat.S_ISDIR: "a folder",
        stat.S_ISFIFO: "a FIFO",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISSOCK: "a socket",
    }
    return next((kind for test, kind in kinds.items() if test(mode)), "a special file")


_NPY_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def read_npz(path: Path, names: Sequence[str], limit: int = MAX_NPZ_BYTES) -> dict[str, np.ndarray]:
    """The arrays ``names`` of an archive written by ``np.savez``, read as plain data.

    The file must be a regular file of at most ``limit`` bytes (:func:`read_regular`). The
    archive must hold exactly the members ``<name>.npy``, stored uncompressed, each in the
    .npy format 1.0 or 2.0 with a numeric, boolean or string dtype (no object arrays: nothing
    is unpickled). A member's declared shape and dtype must account for exactly its stored
    bytes, so a file cannot make the reader allocate more memory than its own size.

    Returns
    -------
    dict
        Name -> array (native byte order, writeable copies).

    Raises
    ------
    OSError
        If the file cannot be read.
    ValueError
        If it is not a regular file within the limit or not such an archive (the message says
        what is wrong).
    """
    data = read_regular(path, limit)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return _read_members(archive, len(data), names)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError, EOFError) as error:
        raise ValueError(f"not a readable .npz archive: {error}") from None


def _read_members(
    archive: zipfile.ZipFile, file_size: int, names: Sequence[str]
) -> dict[str, np.ndarray]:
    members = {info.filename: info for info in archive.infolist()}
    expected = {f"{name}.npy" for name in names}
    if set(members) != expected:
        raise ValueError(f"members must be {sorted(expected)}, got {sorted(members)}")
    arrays = {}
    for name in names:
        info = members[f"{name}.npy"]
        stored = info.compress_type == zipfile.ZIP_STORED and info.compress_size == info.file_size
        if not stored or info.header_offset + info.file_size > file_size:
            raise ValueError(f"{name} must be stored uncompressed within the file")
        with archive.open(info) as stream:
            reader = _NPY_HEADER_READERS.get(np.lib.format.read_magic(stream))
            if reader is None:
                raise ValueError(f"{name} must be in the .npy format 1.0 or 2.0")
            shape, fortran_order, dtype = reader(stream)
            if dtype.hasobject or dtype.kind not in "biufcUS":
                raise ValueError(f"{name} has dtype {dtype}: not plain data")
            size = math.prod(shape) * dtype.itemsize
            left = info.file_size - stream.tell()
            if size != left:
                raise ValueError(
                    f"{name} declares shape {shape} of {dtype} ({size} bytes), stores {left}"
                )
            data = stream.read(size)
        order = "F" if fortran_order else "C"
        array = np.frombuffer(data, dtype=dtype).reshape(shape, order=order)
        arrays[name] = array.astype(dtype.newbyteorder("="), copy=True)
    return arrays
