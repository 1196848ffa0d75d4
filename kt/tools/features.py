"""`kt features describe`: Kafka's FeatureCommand (kafka-features.sh describe), from the
feature flags a broker reports in ApiVersions."""

from __future__ import annotations

from kt.client.client import KafkaClient
from kt.protocol import ApiKey
from kt.protocol import messages as m


def describe_lines(client: KafkaClient) -> list[str]:
    """One line per supported feature, sorted by name, as Kafka 4.4 prints them: the
    finalized level 0 when the feature is not finalized, the epoch `-` when unknown."""
    response = client.any_connection().send(ApiKey.API_VERSIONS, m.ApiVersionsRequest(
        client_software_name="kt", client_software_version="1"))  # fmt: skip
    finalized = {f.name: f.max_version_level for f in response.finalized_features}
    epoch = response.finalized_features_epoch
    return [
        f"Feature: {f.name:<40}  SupportedMinVersion: {f.min_version:<15}  "
        f"SupportedMaxVersion: {f.max_version:<15}  "
        f"FinalizedVersionLevel: {finalized.get(f.name, 0):<15}  "
        f"Epoch: {epoch if epoch >= 0 else '-'}"
        for f in sorted(response.supported_features, key=lambda f: f.name)
    ]
