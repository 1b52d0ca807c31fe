"""Data files in Paimon's key-value and append layouts (Parquet, ORC, Avro), their statistics."""
