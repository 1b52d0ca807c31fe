"""The merge engines of primary-key tables: how the records of one key collapse into one.

One module per engine - `deduplicate`, `partial_update`, `aggregation` (its functions in
`aggregate_functions`, the ARRAY/MAP ones in `aggregate_collections` - their options in
`aggregate_collection_options` - and `aggregate_keytime` over `collection_values`, the option
checks it shares with partial-update in `engine_options`),
`first_row` - over the contract of `function` and the vectorized key-group helpers of `grouping`.
`registry` maps each ``merge-engine`` value (the names of `names`) to its factory and
properties; every caller goes through it. Factories read the table's typed options
(`lake_assets.options.CoreOptions`, parsed once by the option registry), never raw strings.
(This module imports nothing, so `lake_assets.lsm.merge` can use the contract.)

Every merge is group-wise numpy/Arrow work over a table sorted by key and sequence: no Python loop
over rows or keys. A key with a single record comes out as that record, unchanged - kind
included - as Paimon's ReducerMergeFunctionWrapper emits it: a commit whose only record of a key
is a -U/-D keeps it as a retraction, which later merges apply to the older records. The record is
still checked: one the engine could never apply is rejected.

Merged results are valid merge inputs (compaction may merge only the newest files of a bucket):
merge(X + merge(Y) + Z) == merge(X + Y + Z). For partial-update and aggregation this holds except
where one output row cannot carry the needed state (Paimon shares each case): a
last_non_null_value retract that nulled the value, a product retract on an empty accumulator, a
first_value slice that held only ignored retractions (its null looks like a first value), a
collect/merge_map/nested_update retraction that finds nothing to remove in the merged slice,
remove-on-delete when a -D is followed by more records of its key inside the merged slice, and the
order-dependent functions inside sequence groups whose sequences arrive out of order.
"""
