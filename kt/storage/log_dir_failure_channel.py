"""The log dirs that failed with an I/O error (Kafka's LogDirFailureChannel).

Any storage operation that meets an OSError (a full disk, a failing device) reports its
log dir here and answers KAFKA_STORAGE_ERROR; from then on the dir is offline for the
life of the process: the LogManager closes its logs, the ReplicaManager stops serving
its partitions, and the broker shuts down when no log dir is left. A restart on a
repaired disk recovers the dir like any unclean shutdown.

Kafka hands failures to a handler thread through a queue. kt runs one event loop, so the
listeners run at once, in the call that met the error: when it returns, nothing will
append to the dir again.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)

_Method = TypeVar("_Method", bound=Callable[..., Any])


class LogDirFailureChannel:
    """Invariants: a dir is reported to the listeners once, the first time it fails;
    `offline_log_dirs` only grows."""

    def __init__(self) -> None:
        self._offline: dict[str, str] = {}
        self.listeners: list[Callable[[str], None]] = []

    def has_offline_log_dir(self, log_dir: str) -> bool:
        return log_dir in self._offline

    @property
    def offline_log_dirs(self) -> list[str]:
        return list(self._offline)

    def maybe_add_offline_log_dir(self, log_dir: str, message: str, error: OSError) -> None:
        """Report an I/O error on `log_dir`; the first report takes the dir offline."""
        log.error("%s: %s", message, error)
        if log_dir in self._offline:
            return
        self._offline[log_dir] = message
        for listener in self.listeners:
            listener(log_dir)


def maybe_handle_io_exception(action: str) -> Callable[[_Method], _Method]:
    """Turn an OSError in a Log method into KAFKA_STORAGE_ERROR, taking its dir offline
    (Kafka's LocalLog.maybeHandleIOException). `action` completes "Error while ...", and
    names the log after it."""

    def decorate(method: _Method) -> _Method:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except OSError as e:
                raise self.storage_error(e, f"{action} {self.name}") from e

        return wrapper  # type: ignore[return-value]

    return decorate
