"""The rows the `kt` source produces: exactly the schema of Spark's own Kafka source.

  key            binary       null when the record has no key
  value          binary       null for a tombstone
  topic          string
  partition      int
  offset         long
  timestamp      timestamp    the record's timestamp (ms since the epoch, as micros in Spark)
  timestampType  int          0 CreateTime, 1 LogAppendTime, -1 none (magic 0)
  headers        array<struct<key: string, value: binary>>
                              only with includeHeaders=true; null when the record has none

Every field is nullable, as in KafkaRecordToRowConverter. Readers hand Spark Arrow record
batches whose schema must equal `to_arrow_schema(schema, timezone="UTC")` exactly; this
module builds both from one table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
HEADERS_COLUMN = "headers"


def spark_schema(include_headers: bool) -> StructType:
    """The Spark StructType of the source's rows."""
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField(HEADERS_COLUMN, ArrayType(header)))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema Spark expects of the record batches a reader yields."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema(include_headers), timezone="UTC")
