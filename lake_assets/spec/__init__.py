"""Paimon format specification: logical types and the BinaryRow codec."""
