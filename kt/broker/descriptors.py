"""File descriptors: what a broker's logs hold open, against the process's limit.

Each segment holds three: its .log file, and the map of each of its two indexes (the
index files themselves are open only while they are sized). Kafka's docs tell an
operator to raise `ulimit -n`; the broker raises its own soft limit to the hard limit
when it starts, and says at start-up how many descriptors its logs take of it, with a
warning when little is left for connections and new segments.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
from collections.abc import Iterable

log = logging.getLogger(__name__)

DESCRIPTORS_PER_SEGMENT = 3
WARN_FRACTION = 0.8
CONNECTION_RESERVE = 64  # kept free for connections when creating logs


def check_descriptors_for(new_segments: int) -> None:
    """Raise OSError(EMFILE) when `new_segments` would leave fewer than CONNECTION_RESERVE
    of the open files limit free: CreateTopics then answers an error instead of creating
    logs that cannot be opened (or leaving nothing to accept connections with)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or new_segments <= 0:
        return
    in_use = len(os.listdir("/proc/self/fd"))
    needed = new_segments * DESCRIPTORS_PER_SEGMENT
    if in_use + needed + CONNECTION_RESERVE > soft:
        raise OSError(
            errno.EMFILE,
            f"Too many open files: {new_segments} new logs need {needed} file descriptors, "
            f"and {soft - in_use} of the limit of {soft} are free (raise ulimit -n)",
        )


def raise_open_files_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard one; return the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == hard:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as e:
        log.warning("could not raise the open files limit from %d to %d: %s", soft, hard, e)
        return soft
    log.info("raised the open files limit from %d to %d", soft, hard)
    return hard


def report_log_descriptors(segment_counts: Iterable[int], limit: int) -> int:
    """Log how many descriptors the logs' segments hold against `limit`; return it."""
    segments = sum(segment_counts)
    needed = segments * DESCRIPTORS_PER_SEGMENT
    message = "%d segments hold %d file descriptors, of a limit of %d (ulimit -n)"
    if limit != resource.RLIM_INFINITY and needed > WARN_FRACTION * limit:
        log.warning(message + ": raise the limit, or connections and new segments will "
                    "fail with 'Too many open files'", segments, needed, limit)  # fmt: skip
    else:
        log.info(message, segments, needed, limit)
    return needed
