"""`meta.properties` in every log dir: which broker and cluster the data belongs to.

Kafka (ZooKeeper mode) writes `version=0`, `broker.id` and `cluster.id` into each log
dir and refuses to start when they disagree with its config or with each other, so that
one broker's data is never served under another broker's id. A broker started with
broker.id=-1 takes the id its log dirs remember, or 0 for a new embedded broker.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from kt.config import InvalidConfigError, parse_properties

META_PROPERTIES = "meta.properties"


def read_meta_properties(log_dir: Path) -> dict[str, str] | None:
    try:
        return parse_properties((log_dir / META_PROPERTIES).read_text())
    except FileNotFoundError:
        return None


def write_meta_properties(log_dir: Path, broker_id: int, cluster_id: str) -> None:
    log_dir.mkdir(parents=True, exist_ok=True)
    text = f"#\n#Written by kt\ncluster.id={cluster_id}\nversion=0\nbroker.id={broker_id}\n"
    tmp = log_dir / (META_PROPERTIES + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, log_dir / META_PROPERTIES)


def check_meta_properties(log_dirs: Sequence[Path], broker_id: int, cluster_id: str) -> int:
    """Check or write meta.properties in each dir; return the broker id to use."""
    found: dict[Path, dict[str, str]] = {}
    for log_dir in log_dirs:
        meta = read_meta_properties(Path(log_dir))
        if meta is not None:
            found[Path(log_dir)] = meta
    ids = {int(m["broker.id"]) for m in found.values() if "broker.id" in m}
    clusters = {m["cluster.id"] for m in found.values() if "cluster.id" in m}
    if len(ids) > 1:
        raise InvalidConfigError(
            f"BrokerMetadata is not consistent across log.dirs: broker ids {sorted(ids)}"
        )
    if clusters and clusters != {cluster_id}:
        raise InvalidConfigError(
            f"The Cluster ID {cluster_id} doesn't match stored clusterId "
            f"{sorted(clusters)[0]} in meta.properties. The broker is trying to join the "
            "wrong cluster. Configured zookeeper.connect may be wrong."
        )
    stored = next(iter(ids), None)
    if broker_id == -1:
        broker_id = stored if stored is not None else 0
    elif stored is not None and stored != broker_id:
        raise InvalidConfigError(
            f"Configured broker.id {broker_id} doesn't match stored broker.id {stored} in "
            "meta.properties. If you moved your data, make sure your configured broker.id "
            "matches. If you intend to create a new broker, you should remove all data in "
            "your data directories (log.dirs)."
        )
    for log_dir in log_dirs:
        if Path(log_dir) not in found:
            write_meta_properties(Path(log_dir), broker_id, cluster_id)
    return broker_id
