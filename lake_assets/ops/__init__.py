"""Table operations: each a pure plan plus the code that applies it to storage."""
