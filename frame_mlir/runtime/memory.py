"""The host's free memory, which the trainers check a compiled step's buffers against
before allocating them (a clear RT-001 rather than the OOM killer)."""

from __future__ import annotations


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo in bytes (None where there is no such file)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
