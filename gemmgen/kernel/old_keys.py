"""The config keys before the mainloop and scheduler axes (mma, tma, persistent, pingpong), read into them.

Configs written before (users' files, results, search spaces' exported winners) said with ``tma`` "a producer
warpgroup", whose copies ``async_copy`` then chose (TMA or cp.async), and with ``persistent`` and ``pingpong``
the tile scheduler. :func:`upgraded` turns such a dictionary into the keys of today's KernelConfig;
a combination the old keys could not mean is one ConfigError naming it.

>>> upgraded({"family": "tf32x3", "mma": "wgmma", "tma": True, "async_copy": True, "persistent": 132,
...           "pingpong": True})
{'family': 'tf32x3', 'mainloop': 'ws_cpasync', 'scheduler': 'pingpong', 'persistent_blocks': 132}
>>> upgraded({"family": "tf32", "mma": "sync", "async_copy": True})   # the family's own mainloop: mma_sync
{'family': 'tf32', 'async_copy': True}
>>> upgraded({"family": "tf32", "mma": "sync", "tma": True})
Traceback (most recent call last):
gemmgen.kernel.coerce.ConfigError: tma = true with mma = 'sync': the warp-specialized kernels multiply with wgmma (old keys: tma needs mma = 'wgmma'; new: mainloop = 'ws_tma' or 'ws_cpasync')
"""
from __future__ import annotations

from typing import Any

from .coerce import ConfigError, coerce
from .families import MAINLOOPS

OLD_KEYS = ("mma", "tma", "persistent", "pingpong")
NEW_KEYS = ("mainloop", "scheduler", "persistent_blocks")
_OLD_MMA = ("sync", "wgmma")


def upgraded(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the old keys replaced by mainloop, scheduler and persistent_blocks (unchanged without old keys)."""
    old = [k for k in OLD_KEYS if k in data]
    if not old:
        return data
    new = [k for k in NEW_KEYS if k in data]
    if new:
        raise ConfigError(f"old key(s) {', '.join(old)} beside {', '.join(new)}: mainloop, scheduler and persistent_blocks "
                          "replace mma, tma, persistent and pingpong; write the new keys only")
    mma = coerce("mma", data.get("mma", "sync"), str)
    tma = coerce("tma", data.get("tma", False), bool)
    persistent = coerce("persistent", data.get("persistent", 0), int)
    pingpong = coerce("pingpong", data.get("pingpong", False), bool)
    cp_async = coerce("async_copy", data.get("async_copy", False), bool)
    if mma not in _OLD_MMA:
        raise ConfigError(f"mma = {mma!r}; valid: {', '.join(_OLD_MMA)} (old key; new: mainloop, one of "
                          f"{', '.join(MAINLOOPS)})")
    if tma and mma != "wgmma":
        raise ConfigError(f"tma = true with mma = {mma!r}: the warp-specialized kernels multiply with wgmma (old keys: "
                          "tma needs mma = 'wgmma'; new: mainloop = 'ws_tma' or 'ws_cpasync')")
    if pingpong and not persistent:
        raise ConfigError("pingpong = true with persistent = 0: pingpong takes a persistent grid's tiles (old keys: "
                          "pingpong needs persistent > 0; new: scheduler = 'pingpong' with persistent_blocks >= 1)")
    out = {k: v for k, v in data.items() if k not in OLD_KEYS}
    if tma:   # the producer's copies: async_copy said which, the mainloop says it now
        out.pop("async_copy", None)
        out["mainloop"] = "ws_cpasync" if cp_async else "ws_tma"
    elif mma == "wgmma":
        out["mainloop"] = "wgmma"
    if persistent:   # mma = 'sync' (above) leaves the family's own mainloop, the default
        out["scheduler"] = "pingpong" if pingpong else "persistent"
        out["persistent_blocks"] = persistent
    return out
