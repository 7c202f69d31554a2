"""The C library calls of the sandbox launcher (``_ns``, ``_landlock``), made through ``_ctypes``, the C
half of ``ctypes``: importing ``ctypes`` itself (its ~40 classes, ``struct``) cost the launcher ~5 ms of
CPU per sandboxed command (and ~4 more to tear down, which ``_start``'s ``os._exit`` skips); this ~1 ms.

``libc().name`` is the C library's ``int``-returning function ``name``, ``libc().syscall`` returns a ``long``;
arguments are Python ints (passed as C ``int``), ``bytes`` (a pointer to their bytes: structures are
packed with ``packed``) and ``None`` (NULL). ``errno()`` is the ``errno`` the last call left.
"""

from __future__ import annotations

import _ctypes as _ctypes_module
import sys

TYPE_CHECKING = False  # typing costs the launcher more than all its work
if TYPE_CHECKING:
    from typing import Any

__all__ = ["errno", "libc", "packed"]

_ctypes: Any = _ctypes_module  # (its private base classes are the point; typeshed types none of it)


class _Int(_ctypes._SimpleCData):  # what ctypes.c_int is
    _type_ = "i"


class _Long(_ctypes._SimpleCData):  # ctypes.c_long
    _type_ = "l"


class _IntCall(_ctypes.CFuncPtr):  # ctypes.CDLL(None, use_errno=True)'s functions
    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = _Int


class _LongCall(_ctypes.CFuncPtr):
    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = _Long


class _Program:
    """What a ``CFuncPtr`` looks a symbol up in: the running program (libc included)."""

    _handle: int = 0


class _Lib:
    """``ctypes.CDLL(None, use_errno=True)`` with ``syscall``'s result a ``long``: functions looked up
    once, on first use."""

    def __init__(self) -> None:
        self.syscall: Any = _LongCall(("syscall", _Program))

    def __getattr__(self, name: str) -> Any:
        fn = _IntCall((name, _Program))
        setattr(self, name, fn)
        return fn


_lib: _Lib | None = None


def libc() -> Any:
    """The C library (opened once); ``OSError`` where there is none to open."""
    global _lib
    if _lib is None:
        dlopen = getattr(_ctypes, "dlopen", None)
        if dlopen is None:
            raise OSError("no C library to call here")
        # RTLD_NOW; None: the running program, libc included
        _Program._handle = dlopen(None, 2)  # pyright: ignore[reportPrivateUsage]
        _lib = _Lib()
    return _lib


errno = _ctypes_module.get_errno


def packed(*fields: tuple[int, int]) -> bytes:
    """A C structure's bytes from ``(value, size)`` fields in order, native byte order, no padding
    (each field here is where its natural alignment puts it, or the kernel's struct is packed)."""
    return b"".join(value.to_bytes(size, sys.byteorder, signed=value < 0) for value, size in fields)
