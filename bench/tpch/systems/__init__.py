"""One module per system; each has ``PHASES`` (phase name → function of a worker `Context`) and
``versions()``. ``TREE_MEMORY = True`` makes the meter sample the whole process tree (Spark)."""
