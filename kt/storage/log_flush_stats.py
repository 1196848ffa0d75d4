"""Kafka's LogFlushStats: the timer of every log flush of the process
(LogFlushRateAndTimeMs), one for the whole process as Kafka's is one for its JVM."""

from __future__ import annotations

from kt.metrics.meters import Histogram

LOG_FLUSH_TIMER = Histogram()
