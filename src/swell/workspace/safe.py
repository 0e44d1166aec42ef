"""File operations that never follow a symbolic link out of their base directory.

A step (or an agent) can replace any file in its workspace, or in the run directory
it can reach, by a link to somewhere else: `~/.ssh/id_rsa`, `/etc/shadow`, the user's
`.bashrc`. Everything swell does to such a tree goes through here:

- reads open the final component with O_NOFOLLOW and accept only regular files;
- writes go to a new file in the same directory that is then renamed over the
  target, which replaces a link instead of writing through it;
- directories are created and entered only where they resolve inside the base;
- mode changes and removals skip links (and change a file through its descriptor);
- fingerprints record a link's target instead of reading through it.

They assume nothing changes the tree while they run: the engine ends every process
a visit started before it looks at the visit's workspace (docs/security.md).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path

from swell.errors import SwellError, disk_broken

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_O_PATH = getattr(os, "O_PATH", 0)
CHUNK = 1 << 20
_ZEROS = bytes(CHUNK)  # a chunk of these is skipped, not written: copies stay sparse


class UnsafePath(SwellError):
    """A path swell will not use: a link, not a regular file, or outside its base."""


class ContentChanged(UnsafePath):
    """A file's content no longer hashes to the sha256 recorded for it."""

    def __init__(self, actual: str, expected: str) -> None:
        self.actual, self.expected = actual, expected
        super().__init__(f"sha256 {actual[:12]}…, recorded {expected[:12]}…")


@functools.cache
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def is_link(path: Path) -> bool:
    return os.path.islink(path)


class Unreadable(UnsafePath):
    """A file swell will not read; `reason` says why without naming it ("is a FIFO")."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"{path} {reason}")


class NotRegular(Unreadable):
    """A FIFO, a socket or a device where a file should be."""


_KINDS = (
    (stat.S_ISFIFO, "is not a regular file (a FIFO)"),
    (stat.S_ISSOCK, "is not a regular file (a socket)"),
    (stat.S_ISCHR, "is not a regular file (a character device)"),
    (stat.S_ISBLK, "is not a regular file (a block device)"),
)


def _refused(path: Path, mode: int) -> Unreadable:
    if stat.S_ISDIR(mode):
        return Unreadable(path, "is a directory")
    why = next((why for test, why in _KINDS if test(mode)), "is not a regular file")
    return NotRegular(path, why)


def open_regular(path: Path) -> int:
    """A read descriptor of `path`, which must be a regular file and not a link.

    Whatever else is there is refused before it is opened (Unreadable): opening a
    FIFO waits for a writer, a device can act on being opened. The open itself
    neither follows a link nor waits, and what it opened is checked again, so a
    file swapped in between is refused too."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        raise Unreadable(path, "does not exist") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise Unreadable(path, f"cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISLNK(mode):
        raise Unreadable(path, "is a symbolic link")
    if not stat.S_ISREG(mode):
        raise _refused(path, mode)
    try:
        fd = os.open(path, _READ)
    except OSError as exc:
        if is_link(path):
            raise Unreadable(path, "is a symbolic link") from None
        raise Unreadable(path, f"cannot be read: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _refused(path, mode)
    return fd


def size_text(size: int) -> str:
    """`size` bytes as people read it: "50 MiB", "128 KiB", "900 bytes"."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value.is_integer() else f"{value:.1f} {unit}"
    return f"{size} bytes"


def read_fd(fd: int, limit: int) -> bytes:
    """At most `limit` bytes from `fd`, from where it stands."""
    parts, left = [], limit
    while left > 0 and (data := os.read(fd, min(CHUNK, left))):
        parts.append(data)
        left -= len(data)
    return b"".join(parts)


def read_capped(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of the regular file `path` (never a link, a FIFO or a
    device: Unreadable), read without loading more than that."""
    fd = open_regular(path)
    try:
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def read_limited(path: Path, limit: int) -> bytes:
    """The whole of the regular file `path` (see `read_capped`); Unreadable, without
    reading it, when it holds more than `limit` bytes."""
    fd = open_regular(path)
    try:
        if os.fstat(fd).st_size > limit:
            raise Unreadable(path, f"is larger than {size_text(limit)}")
        data = read_fd(fd, limit + 1)
        if len(data) > limit:  # it grew since
            raise Unreadable(path, f"is larger than {size_text(limit)}")
        return data
    finally:
        os.close(fd)


PROJECT_TEXT_LIMIT = 10 * 1024 * 1024  # a prompt, persona or pipeline file of the project


def read_project_text(path: Path, limit: int = PROJECT_TEXT_LIMIT) -> str:
    """A text file of the project (a persona's prompt, a prompt file, a pipeline) as
    UTF-8 (bad bytes replaced). Links are followed (the project's own files may be
    links), but what they reach must be a regular file, opened without waiting, of at
    most `limit` bytes: a step with a shell could have put a FIFO or a device there,
    and reading it would hang or act (Unreadable)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise Unreadable(path, "does not exist") from None
    except (OSError, ValueError) as exc:
        raise Unreadable(path, f"cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if not stat.S_ISREG(mode):
        raise _refused(path, mode)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise Unreadable(path, f"cannot be read: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(path, info.st_mode)
        data = read_fd(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Unreadable(path, f"is larger than {size_text(limit)}")
    return data.decode("utf-8", "replace")


def _chunks(fd: int) -> Iterator[bytes]:
    while data := os.read(fd, CHUNK):
        yield data


def digest_file(path: Path) -> tuple[str, int]:
    """sha256 and size of the regular file `path` (a link is refused, never read)."""
    fd = open_regular(path)
    h, size = hashlib.sha256(), 0
    try:
        for data in _chunks(fd):
            h.update(data)
            size += len(data)
    finally:
        os.close(fd)
    return h.hexdigest(), size


def _relative(rel: str | Path, label: str) -> Path:
    path = Path(rel)
    if path.is_absolute() or ".." in path.parts:
        raise UnsafePath(f"path {str(rel)!r} escapes the {label}")
    if "\0" in str(rel):
        raise UnsafePath(f"path {str(rel)!r} contains a NUL byte")
    return path


def make_dirs(
    base: Path, rel: str | Path, label: str = "workspace", *, repair: bool = False
) -> Path:
    """The directory `base/rel`, created where missing (`base` too). A component that is
    a link is used only when it resolves to a directory inside `base`; otherwise it is
    an error, or with `repair` it is removed and a directory made in its place. `label`
    names `base` in errors. Returns the directory, resolved."""
    parts = _relative(rel, label).parts
    if is_link(base):
        raise UnsafePath(f"the {label} {base} is a symbolic link")
    base.mkdir(parents=True, exist_ok=True)
    root = current = base.resolve()
    for part in parts:
        step = current / part
        if is_link(step):
            resolved = step.resolve()
            if resolved == root or root in resolved.parents:
                step = resolved
            elif repair:
                os.unlink(step)
            else:
                raise UnsafePath(
                    f"path {str(rel)!r} escapes the {label} through the link {step} -> "
                    f"{os.readlink(step)}"
                )
        if repair and os.path.lexists(step) and not step.is_dir():
            remove(step)
        if not step.exists():
            try:
                step.mkdir()
            except OSError as exc:
                broken = disk_broken(exc, step)
                raise broken or UnsafePath(f"cannot create {step}: {exc.strerror}") from None
        elif not step.is_dir():
            raise UnsafePath(f"{step} is not a directory")
        current = step
    return current


def place(base: Path, rel: str | Path, label: str = "workspace", *, repair: bool = False) -> Path:
    """Where `rel` lives under `base`: its directory resolved (and created) inside
    `base` (see `make_dirs`), its last component left as it is, never resolved."""
    path = _relative(rel, label)
    if path.name in ("", ".", ".."):
        raise UnsafePath(f"path {str(rel)!r} names no file")
    return make_dirs(base, path.parent, label, repair=repair) / path.name


def _replace_with(target: Path, chunks: Iterator[bytes], sha256: str | None = None) -> str:
    """Write `chunks` to a new file beside `target`, then rename it over `target`
    (replacing a link or a file, never writing through one). With `sha256`, the data
    must hash to it or nothing is replaced. Returns the data's sha256."""
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".swell")
    except OSError as exc:  # a full or read-only disk stops the run (runner.py)
        raise disk_broken(exc, target) or UnsafePath(
            f"cannot write {target}: {exc.strerror}"
        ) from None
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~_umask())  # as a plain open() would create it
            for data in chunks:
                h.update(data)
                if data == _ZEROS:  # a hole stays a hole: `truncate -s 1T` costs no disk
                    fh.seek(len(data), os.SEEK_CUR)
                else:
                    fh.write(data)
            fh.truncate()  # the file's length, when it ends in a hole
        if sha256 is not None and h.hexdigest() != sha256:
            raise ContentChanged(h.hexdigest(), sha256)
        if is_link(target) or (target.exists() and not target.is_dir()):
            os.replace(tmp, target)
        elif target.exists():
            raise UnsafePath(f"{target} is a directory")
        else:
            os.rename(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        # a write names no file: the disk's error names the one it was for
        if isinstance(exc, OSError) and (broken := disk_broken(exc, target)) is not None:
            raise broken from None
        raise
    return h.hexdigest()


def write_bytes(base: Path, rel: str | Path, data: bytes, label: str = "workspace") -> Path:
    """Write `data` to `base/rel` (see `place`); a link there is replaced. Returns the path."""
    target = place(base, rel, label)
    replace(target, data)
    return target


def replace(target: Path, data: bytes) -> None:
    """Write `data` to `target` (a path from `place`), replacing whatever is there."""
    _replace_with(target, iter([data]))


def copy_verified(source: Path, sha256: str, target: Path) -> None:
    """Copy the regular file `source` to `target` (a path from `place`) if its content
    still hashes to `sha256`; UnsafePath when it is a link, ContentChanged when not."""
    fd = open_regular(source)
    try:
        _replace_with(target, _chunks(fd), sha256)
    finally:
        os.close(fd)


def copy_file(source: Path, target: Path) -> tuple[str, int]:
    """Copy the regular file `source` (never a link, a FIFO or a device) to `target`
    (a path from `place`); returns the copy's sha256 and size."""
    fd = open_regular(source)
    size = 0

    def counted() -> Iterator[bytes]:
        nonlocal size
        for data in _chunks(fd):
            size += len(data)
            yield data

    try:
        return _replace_with(target, counted()), size
    finally:
        os.close(fd)


def _chmod(path: Path, change: int, add: bool) -> None:
    """Add or remove mode bits of `path` itself; a link is left alone."""
    try:
        flags = _O_PATH or (os.O_RDONLY | os.O_NONBLOCK)
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # a link (ELOOP), or gone
        return
    try:
        st = os.fstat(fd)
        if stat.S_ISLNK(st.st_mode):
            return
        mode = stat.S_IMODE(st.st_mode)
        mode = mode | change if add else mode & ~change
        if _O_PATH and os.path.isdir("/proc/self/fd"):
            os.chmod(f"/proc/self/fd/{fd}", mode)  # the inode we opened, not the name
        else:
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def walk(root: Path) -> Iterator[tuple[Path, os.stat_result]]:
    """`root` and everything under it in a stable order, with lstat results; links are
    listed, never entered."""
    stack = [root]
    while stack:
        path = stack.pop()
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        yield path, st
        if stat.S_ISDIR(st.st_mode):
            try:
                with os.scandir(path) as entries:
                    names = sorted((e.name for e in entries), reverse=True)
            except PermissionError:  # listed as it is, contents unknown
                continue
            stack += [path / name for name in names]


def set_writable(root: Path, writable: bool) -> None:
    """Add (or remove) the write bits of `root` and everything under it; links and
    what they point to are left alone."""
    bits = 0o200 if writable else 0o222
    for path, st in list(walk(root)):
        if not stat.S_ISLNK(st.st_mode):
            _chmod(path, bits, writable)


def remove(path: Path) -> None:
    """Remove `path`: a link or file is unlinked (its target untouched); a directory
    is made writable (never through a link) and removed with everything in it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return
    for item, item_st in walk(path):  # each directory is opened up before it is listed
        if stat.S_ISDIR(item_st.st_mode):
            _chmod(item, 0o700, True)
    shutil.rmtree(path)  # never follows links (fd-based where the platform has it)


def tree_digest(root: Path, skip: Collection[str] = ()) -> str:
    """A fingerprint of `root`: each entry's path and type, a file's content, a link's
    target (never what it points to), leaving out the entries named `skip` directly
    under `root`. A missing root has a fingerprint too."""
    h = hashlib.sha256()
    for path, st in walk(root):
        rel = path.relative_to(root).as_posix()
        if rel.split("/", 1)[0] in skip:
            continue
        kind = stat.S_IFMT(st.st_mode)
        h.update(f"{rel}\0{kind:o}\0".encode())
        if stat.S_ISLNK(st.st_mode):
            h.update(os.readlink(path).encode(errors="surrogateescape"))
        elif stat.S_ISREG(st.st_mode):
            try:
                h.update(digest_file(path)[0].encode())
            except UnsafePath:  # unreadable (or swapped since): its mode tells it apart
                h.update(f"unreadable {stat.S_IMODE(st.st_mode):o}".encode())
        h.update(b"\0")
    return h.hexdigest()


__all__ = [
    "ContentChanged",
    "NotRegular",
    "Unreadable",
    "UnsafePath",
    "copy_file",
    "copy_verified",
    "digest_file",
    "is_link",
    "make_dirs",
    "place",
    "read_capped",
    "read_fd",
    "read_limited",
    "read_project_text",
    "remove",
    "replace",
    "set_writable",
    "size_text",
    "tree_digest",
    "walk",
    "write_bytes",
]
