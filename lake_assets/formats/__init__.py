"""Data file formats: Parquet files in Paimon's key-value and append layouts."""
