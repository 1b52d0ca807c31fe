package lakeoracle;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.paimon.CoreOptions;
import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.consumer.Consumer;
import org.apache.paimon.consumer.ConsumerManager;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.serializer.InternalRowSerializer;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.core.JsonGenerator;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.RowKeyExtractor;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.sink.TableWrite;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.InnerTableRead;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.StreamTableScan;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.JsonSerdeUtil;

/**
 * Paimon Java 0.9 driven by a line protocol: one JSON request per stdin line
 * ({"id": n, "op": "...", "args": {...}}), one JSON response per stdout line
 * ({"id": n, "ok": true, "result": ...} or {"id": n, "ok": false, "error": {"class", "message",
 * "causes", "stack"}}). Everything else the JVM prints goes to stderr, which the Python client
 * sends to a log file. Only Paimon's public table API is used, as Flink/Spark jobs use it.
 */
public final class PaimonOracle {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Map<String, Catalog> catalogs = new HashMap<>();
    private final Map<Long, OpenWriter> writers = new HashMap<>();
    private final Map<Long, OpenStream> streams = new HashMap<>();
    private final IOManager ioManager;
    // the same, for static helpers (one oracle per JVM): the cross-partition assigner's RocksDB and sort spill
    private static IOManager sharedIoManager;
    private long nextHandle = 1;

    /** A stream writer kept across requests (several commits, compactions, one commit user). */
    private static final class OpenWriter {
        final FileStoreTable table;
        final StreamWriteBuilder builder;
        final StreamTableWrite write;
        final StreamTableCommit commit;
        final HashBucketAssigner assigner; // kept across writes: it knows the uncommitted keys

        OpenWriter(FileStoreTable table, StreamWriteBuilder builder, IOManager io) {
            this.assigner = newAssigner(table, builder.commitUser());
            this.table = table;
            this.builder = builder;
            this.write = builder.newWrite();
            this.write.withIOManager(io);
            this.commit = builder.newCommit();
        }
    }

    /** A streaming scan (FLIP-27 style enumerator state lives in the scan object). */
    private static final class OpenStream {
        final ReadBuilder builder;
        final StreamTableScan scan;
        final TableRead read;

        OpenStream(ReadBuilder builder, IOManager io) {
            this.builder = builder;
            this.scan = builder.newStreamScan();
            this.read = builder.newRead().withIOManager(io);
        }
    }

    private PaimonOracle(String tempDir) {
        // Lookup changelog producers, first-row and spilling sort buffers need an IOManager.
        this.ioManager = IOManager.create(tempDir);
        sharedIoManager = this.ioManager;
    }

    public static void main(String[] argv) throws Exception {
        PrintStream protocol =
                new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        // Anything a library prints must not corrupt the protocol.
        System.setOut(System.err);
        String tempDir = argv.length > 0 ? argv[0] : System.getProperty("java.io.tmpdir");
        PaimonOracle oracle = new PaimonOracle(tempDir);
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        protocol.println("{\"ready\": true}");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode response = JSON.createObjectNode();
            JsonNode request = null;
            try {
                request = JSON.readTree(line);
                response.set("id", request.get("id"));
                String op = request.get("op").asText();
                if (op.equals("shutdown")) {
                    response.put("ok", true);
                    protocol.println(JSON.writeValueAsString(response));
                    break;
                }
                JsonNode args = request.has("args") ? request.get("args") : JSON.createObjectNode();
                response.set("result", oracle.dispatch(op, args));
                response.put("ok", true);
            } catch (Throwable t) {
                System.err.println("request failed: " + line);
                t.printStackTrace();
                response.put("ok", false);
                response.set("error", describe(t));
            }
            protocol.println(JSON.writeValueAsString(response));
        }
        oracle.close();
    }

    private static ObjectNode describe(Throwable t) {
        ObjectNode error = JSON.createObjectNode();
        error.put("class", t.getClass().getName());
        error.put("message", t.getMessage() == null ? t.toString() : t.getMessage());
        ArrayNode causes = error.putArray("causes");
        for (Throwable c = t.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            ObjectNode cause = causes.addObject();
            cause.put("class", c.getClass().getName());
            cause.put("message", String.valueOf(c.getMessage()));
        }
        StringWriter stack = new StringWriter();
        t.printStackTrace(new PrintWriter(stack));
        error.put("stack", stack.toString());
        return error;
    }

    private void close() throws Exception {
        for (OpenWriter w : writers.values()) {
            w.write.close();
            w.commit.close();
        }
        for (Catalog c : catalogs.values()) {
            c.close();
        }
        ioManager.close();
    }

    private JsonNode dispatch(String op, JsonNode a) throws Exception {
        switch (op) {
            case "ping":
                return JSON.getNodeFactory().textNode("pong");
            case "create_table":
                return createTable(a);
            case "drop_table":
                catalog(a).dropTable(identifier(a), a.path("ignore_if_not_exists").asBoolean(false));
                return null;
            case "schema":
                return JSON.readTree(JsonSerdeUtil.toJson(table(a).schema()));
            case "alter_table":
                return alterTable(a);
            case "write":
                return write(a);
            case "writer_open":
                return writerOpen(a);
            case "writer_write":
                return writerWrite(a);
            case "writer_compact":
                return writerCompact(a);
            case "writer_commit":
                return writerCommit(a);
            case "writer_close":
                return writerClose(a);
            case "compact":
                return compact(a);
            case "read":
                return read(a);
            case "read_changes":
                return readChanges(a);
            case "stream_open":
                return streamOpen(a);
            case "stream_next":
                return streamNext(a);
            case "stream_notify":
                streams.get(a.get("handle").asLong()).scan.notifyCheckpointComplete(
                        a.get("checkpoint").asLong());
                return null;
            case "stream_close":
                streams.remove(a.get("handle").asLong());
                return null;
            case "splits":
                return splits(a);
            case "bucket_of":
                return bucketOf(a);
            case "append_dv_delete": // Spark's DELETE on a deletion-vector append table
                return AppendDvOps.delete(table(a), a.get("filter"));
            case "append_compact": // Spark's compact procedure on an unaware-bucket append table
                return AppendDvOps.compact(table(a));
            case "deletion_vectors":
                return DeletionVectorOps.deletionVectors(table(a));
            case "dynamic_bucket":
                return DynamicBucketOps.run(table(a), rows(table(a), a), a);
            case "snapshots":
                return snapshots(a);
            case "expire_snapshots":
                return expire(a, false);
            case "expire_changelogs":
                return expire(a, true);
            case "create_tag":
                return createTag(a);
            case "delete_tag":
                table(a).deleteTag(a.get("name").asText());
                return null;
            case "tags":
                return tags(a);
            case "rollback":
                if (a.hasNonNull("tag")) {
                    table(a).rollbackTo(a.get("tag").asText());
                } else {
                    table(a).rollbackTo(a.get("snapshot_id").asLong());
                }
                return null;
            case "consumers":
                return JSON.valueToTree(consumers(a).consumers());
            case "reset_consumer":
                consumers(a).resetConsumer(
                        a.get("consumer_id").asText(), new Consumer(a.get("next_snapshot").asLong()));
                return null;
            case "lifecycle": return Lifecycle.run(table(a), a); // partition expiry, watermark commits
            case "option_value":
                return OptionOps.parse(a);
            case "option_lookups":
                return OptionOps.lookups(a);
            case "level_maps":
                return OptionOps.levelMaps(a);
            case "success_file": // partition mark-done: SuccessFileMarkDoneAction, SuccessFile
                return MarkDoneOps.run(a);
            case "file_index_hash":
                return FileIndexOps.hash(a);
            case "bitmap64_serialize": // Paimon 1.2+'s 64-bit deletion vector, framed as HEAD frames it
                return Bitmap64Ops.serialize(a);
            case "bitmap_v2_serialize": // Paimon 1.x's bitmap file index version 2, laid out as HEAD does
                return BitmapV2Ops.serialize(a);
            case "bitmap64_deserialize":
                return Bitmap64Ops.deserialize(a);
            case "sketch_fold": // rbm32 / rbm64 / hll_sketch / theta_sketch: Paimon's FieldAggregator
                return SketchAggOps.fold(a);
            case "sketch_make":
                return SketchAggOps.make(a);
            case "sketch_estimate":
                return SketchAggOps.estimate(a);
            case "file_index_test": {
                FileStoreTable t = table(a);
                return FileIndexOps.test(t, t.rowType(), predicate(t.rowType(), a.get("filter")));
            }
            case "delete_consumer":
                consumers(a).deleteConsumer(a.get("consumer_id").asText());
                return null;
            case "create_branch": // BranchManager.createBranch: empty, or from a tag
                if (a.hasNonNull("tag")) {
                    table(a).createBranch(a.get("name").asText(), a.get("tag").asText());
                } else {
                    table(a).createBranch(a.get("name").asText());
                }
                return null;
            case "branches":
                return JSON.valueToTree(table(a).branchManager().branches());
            case "fast_forward": // BranchManager.fastForward: the branch's metadata copied over main's
                table(a).fastForward(a.get("name").asText());
                return null;
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // ---------------------------------------------------------------- catalog and tables

    private Catalog catalog(JsonNode a) {
        String warehouse = a.get("warehouse").asText();
        return catalogs.computeIfAbsent(
                warehouse,
                w -> {
                    Options options = new Options();
                    options.set("warehouse", w);
                    // The Python side changes tables behind Java's back: never serve a cached schema.
                    options.set("cache-enabled", "false");
                    return CatalogFactory.createCatalog(CatalogContext.create(options));
                });
    }

    private static Identifier identifier(JsonNode a) {
        return Identifier.fromString(a.get("table").asText());
    }

    private FileStoreTable table(JsonNode a) throws Exception {
        FileStoreTable table = (FileStoreTable) catalog(a).getTable(identifier(a));
        Map<String, String> dynamic = stringMap(a.get("options"));
        return dynamic.isEmpty() ? table : table.copy(dynamic);
    }

    private static Map<String, String> stringMap(JsonNode node) {
        Map<String, String> map = new LinkedHashMap<>();
        if (node != null && !node.isNull()) {
            node.fields().forEachRemaining(e -> map.put(e.getKey(), e.getValue().asText()));
        }
        return map;
    }

    private static List<String> stringList(JsonNode node) {
        List<String> list = new ArrayList<>();
        if (node != null && !node.isNull()) {
            node.forEach(n -> list.add(n.asText()));
        }
        return list;
    }

    private JsonNode createTable(JsonNode a) throws Exception {
        Catalog catalog = catalog(a);
        Identifier id = identifier(a);
        catalog.createDatabase(id.getDatabaseName(), true);
        Schema.Builder schema = Schema.newBuilder();
        for (JsonNode f : a.get("fields")) {
            // Types use the schema-file JSON form (strings like "INT NOT NULL", objects for nested).
            schema.column(f.get("name").asText(), DataTypeJsonParser.parseDataType(f.get("type")));
        }
        schema.primaryKey(stringList(a.get("primary_keys")));
        schema.partitionKeys(stringList(a.get("partition_keys")));
        schema.options(stringMap(a.get("table_options")));
        catalog.createTable(id, schema.build(), a.path("ignore_if_exists").asBoolean(false));
        return JSON.readTree(JsonSerdeUtil.toJson(table(a).schema()));
    }

    private JsonNode alterTable(JsonNode a) throws Exception {
        List<SchemaChange> changes = new ArrayList<>();
        for (JsonNode c : a.get("changes")) {
            String kind = c.get("change").asText();
            switch (kind) {
                case "add_column": {
                    SchemaChange.Move move = null;
                    if (c.path("first").asBoolean(false)) {
                        move = SchemaChange.Move.first(c.get("name").asText());
                    } else if (c.hasNonNull("after")) {
                        move = SchemaChange.Move.after(c.get("name").asText(), c.get("after").asText());
                    }
                    changes.add(
                            SchemaChange.addColumn(
                                    c.get("name").asText(),
                                    DataTypeJsonParser.parseDataType(c.get("type")),
                                    c.hasNonNull("comment") ? c.get("comment").asText() : null,
                                    move));
                    break;
                }
                case "rename_column":
                    changes.add(SchemaChange.renameColumn(c.get("name").asText(), c.get("new_name").asText()));
                    break;
                case "drop_column":
                    changes.add(SchemaChange.dropColumn(c.get("name").asText()));
                    break;
                case "update_column_type":
                    changes.add(
                            SchemaChange.updateColumnType(
                                    c.get("name").asText(),
                                    DataTypeJsonParser.parseDataType(c.get("type"))));
                    break;
                case "update_column_nullability":
                    changes.add(
                            SchemaChange.updateColumnNullability(
                                    c.get("name").asText(), c.get("nullable").asBoolean()));
                    break;
                case "set_option":
                    changes.add(SchemaChange.setOption(c.get("key").asText(), c.get("value").asText()));
                    break;
                case "remove_option":
                    changes.add(SchemaChange.removeOption(c.get("key").asText()));
                    break;
                default:
                    throw new IllegalArgumentException("unknown schema change " + kind);
            }
        }
        catalog(a).alterTable(identifier(a), changes, false);
        return JSON.readTree(JsonSerdeUtil.toJson(table(a).schema()));
    }

    // ---------------------------------------------------------------- writing

    /** Rows of the table's full row type; columns the request does not name are NULL. */
    private static List<InternalRow> rows(FileStoreTable table, JsonNode a) {
        RowType rowType = table.rowType();
        List<String> columns = stringList(a.get("columns"));
        int[] index = new int[columns.size()];
        for (int i = 0; i < index.length; i++) {
            index[i] = rowType.getFieldIndex(columns.get(i));
            if (index[i] < 0) {
                throw new IllegalArgumentException("table has no column " + columns.get(i));
            }
        }
        List<String> kinds = stringList(a.get("kinds"));
        List<InternalRow> out = new ArrayList<>();
        int r = 0;
        for (JsonNode values : a.get("rows")) {
            GenericRow row = new GenericRow(rowType.getFieldCount());
            for (int i = 0; i < index.length; i++) {
                row.setField(index[i], Values.fromJson(rowType.getTypeAt(index[i]), values.get(i)));
            }
            if (!kinds.isEmpty()) {
                row.setRowKind(RowKind.fromShortString(kinds.get(r)));
            }
            out.add(row);
            r++;
        }
        return out;
    }

    /**
     * Rows are written the way Paimon's Flink sink does for the table's bucket mode. Dynamic-bucket
     * tables ({@code bucket = -1} with a primary key) cannot derive a bucket from a row: Flink runs
     * a HashBucketAssigner (one here, as with assigner parallelism 1) that keeps the key-hash index
     * and hands each row its bucket; the writer maintains the index files it commits.
     */
    private static HashBucketAssigner newAssigner(FileStoreTable table, String user) {
        if (table.bucketMode() != BucketMode.HASH_DYNAMIC) {
            return null;
        }
        // Arguments: number of channels, number of assigners, this assigner's id, target rows per bucket.
        return new HashBucketAssigner(
                table.snapshotManager(),
                user,
                table.store().newIndexFileHandler(),
                1,
                1,
                0,
                table.coreOptions().dynamicBucketTargetRowNum());
    }

    private static void writeRows(
            FileStoreTable table, TableWrite write, List<InternalRow> rows, HashBucketAssigner assigner)
            throws Exception {
        if (table.bucketMode() == BucketMode.CROSS_PARTITION) {
            CrossPartitionOps.writeRows(table, write, rows, sharedIoManager);
            return;
        }
        if (assigner == null) {
            for (InternalRow row : rows) {
                write.write(row);
            }
            return;
        }
        RowKeyExtractor extractor = table.createRowKeyExtractor();
        for (InternalRow row : rows) {
            extractor.setRecord(row);
            int bucket = assigner.assign(extractor.partition(), extractor.trimmedPrimaryKey().hashCode());
            write.write(row, bucket);
        }
    }

    private JsonNode write(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        List<InternalRow> rows = rows(table, a);
        ObjectNode result = JSON.createObjectNode();
        if (a.hasNonNull("commit_identifier")) {
            // The streaming path (Flink's sink): a commit user and a checkpoint id per commit.
            StreamWriteBuilder builder = table.newStreamWriteBuilder();
            if (a.hasNonNull("commit_user")) {
                builder.withCommitUser(a.get("commit_user").asText());
            }
            long identifier = a.get("commit_identifier").asLong();
            try (StreamTableWrite write = builder.newWrite();
                    StreamTableCommit commit = builder.newCommit()) {
                write.withIOManager(ioManager);
                writeRows(table, write, rows, newAssigner(table, builder.commitUser()));
                List<CommitMessage> messages =
                        write.prepareCommit(a.path("wait_compaction").asBoolean(false), identifier);
                result.put("committed", commitStream(commit, identifier, messages, a));
            }
        } else {
            BatchWriteBuilder builder = table.newBatchWriteBuilder();
            if (a.has("overwrite") && !a.get("overwrite").isNull()) {
                builder.withOverwrite(stringMap(a.get("overwrite")));
            }
            try (BatchTableWrite write = builder.newWrite(); BatchTableCommit commit = builder.newCommit()) {
                write.withIOManager(ioManager);
                writeRows(table, write, rows, newAssigner(table, "batch-" + java.util.UUID.randomUUID()));
                commit.commit(write.prepareCommit());
                result.put("committed", 1);
            }
        }
        result.set("snapshot_id", JSON.valueToTree(table.snapshotManager().latestSnapshotId()));
        return result;
    }

    /**
     * Commit one identifier. With "filter_committed" this is Flink's recovery path
     * (filterAndCommit skips identifiers this commit user already committed); without it Paimon
     * commits unconditionally, as a running Flink job does.
     */
    private static int commitStream(
            StreamTableCommit commit, long identifier, List<CommitMessage> messages, JsonNode a)
            throws Exception {
        if (a.path("filter_committed").asBoolean(false)) {
            Map<Long, List<CommitMessage>> byId = new HashMap<>();
            byId.put(identifier, messages);
            return commit.filterAndCommit(byId);
        }
        commit.commit(identifier, messages);
        return 1;
    }

    private JsonNode writerOpen(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        StreamWriteBuilder builder = table.newStreamWriteBuilder();
        if (a.hasNonNull("commit_user")) {
            builder.withCommitUser(a.get("commit_user").asText());
        }
        long handle = nextHandle++;
        writers.put(handle, new OpenWriter(table, builder, ioManager));
        ObjectNode result = JSON.createObjectNode();
        result.put("handle", handle);
        result.put("commit_user", builder.commitUser());
        return result;
    }

    private OpenWriter writer(JsonNode a) {
        OpenWriter w = writers.get(a.get("handle").asLong());
        if (w == null) {
            throw new IllegalArgumentException("no open writer " + a.get("handle"));
        }
        return w;
    }

    private JsonNode writerWrite(JsonNode a) throws Exception {
        OpenWriter w = writer(a);
        writeRows(w.table, w.write, rows(w.table, a), w.assigner);
        return null;
    }

    private BinaryRow partition(FileStoreTable table, JsonNode values) {
        RowType partitionType = table.schema().logicalPartitionType();
        GenericRow row = Values.rowFromJson(partitionType, values == null ? JSON.createArrayNode() : values);
        return new InternalRowSerializer(partitionType).toBinaryRow(row).copy();
    }

    private JsonNode writerCompact(JsonNode a) throws Exception {
        OpenWriter w = writer(a);
        w.write.compact(partition(w.table, a.get("partition")), a.get("bucket").asInt(), a.path("full").asBoolean(true));
        return null;
    }

    private JsonNode writerCommit(JsonNode a) throws Exception {
        OpenWriter w = writer(a);
        long identifier = a.get("commit_identifier").asLong();
        List<CommitMessage> messages = w.write.prepareCommit(a.path("wait_compaction").asBoolean(false), identifier);
        if (w.assigner != null) {
            w.assigner.prepareCommit(identifier);
        }
        ObjectNode result = JSON.createObjectNode();
        result.put("committed", commitStream(w.commit, identifier, messages, a));
        result.set("snapshot_id", JSON.valueToTree(w.table.snapshotManager().latestSnapshotId()));
        return result;
    }

    private JsonNode writerClose(JsonNode a) throws Exception {
        OpenWriter w = writers.remove(a.get("handle").asLong());
        if (w != null) {
            w.write.close();
            w.commit.close();
        }
        return null;
    }

    /** Compaction through a writer, as a dedicated Flink/Spark compact job does. */
    private JsonNode compact(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        boolean full = a.path("full").asBoolean(true);
        List<BinaryRow> partitions = new ArrayList<>();
        List<Integer> buckets = new ArrayList<>();
        if (a.hasNonNull("bucket")) {
            partitions.add(partition(table, a.get("partition")));
            buckets.add(a.get("bucket").asInt());
        } else {
            // Every (partition, bucket) with data in the latest snapshot.
            for (Split split : table.newReadBuilder().newScan().plan().splits()) {
                DataSplit ds = (DataSplit) split;
                partitions.add(ds.partition());
                buckets.add(ds.bucket());
            }
        }
        if (!a.hasNonNull("commit_user") && !a.hasNonNull("commit_identifier")) {
            // A batch compaction (Spark's compact procedure): one COMPACT snapshot. A streaming
            // commit would add an empty APPEND snapshot in front of it to record the identifier.
            BatchWriteBuilder builder = table.newBatchWriteBuilder();
            try (BatchTableWrite write = builder.newWrite(); BatchTableCommit commit = builder.newCommit()) {
                write.withIOManager(ioManager);
                for (int i = 0; i < partitions.size(); i++) {
                    write.compact(partitions.get(i), buckets.get(i), full);
                }
                commit.commit(write.prepareCommit());
            }
        } else {
            StreamWriteBuilder builder = table.newStreamWriteBuilder();
            if (a.hasNonNull("commit_user")) {
                builder.withCommitUser(a.get("commit_user").asText());
            }
            long identifier = a.path("commit_identifier").asLong(Long.MAX_VALUE);
            try (StreamTableWrite write = builder.newWrite(); StreamTableCommit commit = builder.newCommit()) {
                write.withIOManager(ioManager);
                for (int i = 0; i < partitions.size(); i++) {
                    write.compact(partitions.get(i), buckets.get(i), full);
                }
                // Waiting makes the compaction part of this commit (Paimon compacts asynchronously).
                commit.commit(identifier, write.prepareCommit(true, identifier));
            }
        }
        ObjectNode result = JSON.createObjectNode();
        result.set("snapshot_id", JSON.valueToTree(table.snapshotManager().latestSnapshotId()));
        return result;
    }

    // ---------------------------------------------------------------- reading

    static Predicate predicate(RowType rowType, JsonNode filter) {
        if (filter == null || filter.isNull()) {
            return null;
        }
        // Disjunctive normal form: a list of AND-clauses, each a list of [column, op, value].
        PredicateBuilder builder = new PredicateBuilder(rowType);
        List<Predicate> ors = new ArrayList<>();
        for (JsonNode clause : filter) {
            List<Predicate> ands = new ArrayList<>();
            for (JsonNode term : clause) {
                String column = term.get(0).asText();
                String op = term.get(1).asText();
                int idx = builder.indexOf(column);
                if (idx < 0) {
                    throw new IllegalArgumentException("filter column " + column + " not in table");
                }
                DataType type = rowType.getTypeAt(idx);
                JsonNode v = term.get(2);
                switch (op) {
                    case "=":
                    case "==":
                        ands.add(builder.equal(idx, Values.fromJson(type, v)));
                        break;
                    case "!=":
                        ands.add(builder.notEqual(idx, Values.fromJson(type, v)));
                        break;
                    case "<":
                        ands.add(builder.lessThan(idx, Values.fromJson(type, v)));
                        break;
                    case "<=":
                        ands.add(builder.lessOrEqual(idx, Values.fromJson(type, v)));
                        break;
                    case ">":
                        ands.add(builder.greaterThan(idx, Values.fromJson(type, v)));
                        break;
                    case ">=":
                        ands.add(builder.greaterOrEqual(idx, Values.fromJson(type, v)));
                        break;
                    case "in":
                    case "not in": {
                        List<Object> literals = new ArrayList<>();
                        v.forEach(x -> literals.add(Values.fromJson(type, x)));
                        ands.add(op.equals("in") ? builder.in(idx, literals) : builder.notIn(idx, literals));
                        break;
                    }
                    case "is null":
                        ands.add(builder.isNull(idx));
                        break;
                    case "is not null":
                        ands.add(builder.isNotNull(idx));
                        break;
                    default:
                        throw new IllegalArgumentException("unknown filter op " + op);
                }
            }
            ors.add(PredicateBuilder.and(ands));
        }
        return PredicateBuilder.or(ors);
    }

    private static String rowTypeJson(RowType rowType) throws Exception {
        StringWriter out = new StringWriter();
        try (JsonGenerator gen = JSON.getFactory().createGenerator(out)) {
            rowType.serializeJson(gen);
        }
        return out.toString();
    }

    /**
     * Read the splits of a plan: rows of the table's full row type, filtered exactly by
     * {@code predicate} (Paimon's own filter only prunes), then projected to {@code columns}.
     */
    private static JsonNode readSplits(
            RowType rowType, TableRead read, List<Split> splits, Predicate predicate, List<String> columns)
            throws Exception {
        List<DataField> fields = new ArrayList<>();
        int[] index;
        if (columns.isEmpty()) {
            fields.addAll(rowType.getFields());
            index = new int[fields.size()];
            for (int i = 0; i < index.length; i++) {
                index[i] = i;
            }
        } else {
            index = new int[columns.size()];
            for (int i = 0; i < index.length; i++) {
                index[i] = rowType.getFieldIndex(columns.get(i));
                if (index[i] < 0) {
                    throw new IllegalArgumentException("table has no column " + columns.get(i));
                }
                fields.add(rowType.getFields().get(index[i]));
            }
        }
        ObjectNode result = JSON.createObjectNode();
        result.set("type", JSON.readTree(rowTypeJson(new RowType(fields))));
        ArrayNode rows = result.putArray("rows");
        ArrayNode kinds = result.putArray("kinds");
        InternalRow.FieldGetter[] getters = new InternalRow.FieldGetter[index.length];
        for (int i = 0; i < index.length; i++) {
            getters[i] = InternalRow.createFieldGetter(rowType.getTypeAt(index[i]), index[i]);
        }
        for (Split split : splits) {
            try (RecordReader<InternalRow> reader = read.createReader(split)) {
                // Readers reuse row objects: convert each row before advancing.
                reader.forEachRemaining(
                        row -> {
                            if (predicate != null && !predicate.test(row)) {
                                return;
                            }
                            ArrayNode values = rows.addArray();
                            for (int i = 0; i < getters.length; i++) {
                                values.add(Values.toJson(fields.get(i).type(), getters[i].getFieldOrNull(row)));
                            }
                            kinds.add(row.getRowKind().shortString());
                        });
            }
        }
        return result;
    }

    private static Map<String, String> timeTravel(JsonNode a) {
        Map<String, String> options = new HashMap<>();
        if (a.hasNonNull("snapshot_id")) {
            options.put(CoreOptions.SCAN_SNAPSHOT_ID.key(), a.get("snapshot_id").asText());
        }
        if (a.hasNonNull("tag")) {
            options.put(CoreOptions.SCAN_TAG_NAME.key(), a.get("tag").asText());
        }
        if (a.hasNonNull("timestamp_millis")) {
            options.put(CoreOptions.SCAN_TIMESTAMP_MILLIS.key(), a.get("timestamp_millis").asText());
        }
        return options;
    }

    private JsonNode read(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        Map<String, String> travel = timeTravel(a);
        if (!travel.isEmpty()) {
            table = table.copy(travel);
        }
        Predicate predicate = predicate(table.rowType(), a.get("filter"));
        ReadBuilder builder = table.newReadBuilder();
        if (predicate != null) {
            builder.withFilter(predicate);
        }
        List<Split> splits = builder.newScan().plan().splits();
        TableRead read = builder.newRead().withIOManager(ioManager);
        return readSplits(table.rowType(), read, splits, predicate, stringList(a.get("projection")));
    }

    /** Batch incremental read between two snapshots (start exclusive, end inclusive), row kinds kept. */
    private JsonNode readChanges(JsonNode a) throws Exception {
        Map<String, String> options = new HashMap<>();
        options.put(
                CoreOptions.INCREMENTAL_BETWEEN.key(),
                a.get("start").asText() + "," + a.get("end").asText());
        if (a.hasNonNull("mode")) {
            options.put(CoreOptions.INCREMENTAL_BETWEEN_SCAN_MODE.key(), a.get("mode").asText());
        }
        FileStoreTable table = table(a).copy(options);
        ReadBuilder builder = table.newReadBuilder();
        List<Split> splits = builder.newScan().plan().splits();
        TableRead read = builder.newRead();
        if (a.path("keep_deletes").asBoolean(true)) {
            // Batch reads drop -U/-D unless told to keep them.
            read = ((InnerTableRead) read).forceKeepDelete();
        }
        read = read.withIOManager(ioManager);
        return readSplits(table.rowType(), read, splits, predicate(table.rowType(), a.get("filter")),
                stringList(a.get("projection")));
    }

    private JsonNode streamOpen(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        long handle = nextHandle++;
        streams.put(handle, new OpenStream(table.newReadBuilder(), ioManager));
        ObjectNode result = JSON.createObjectNode();
        result.put("handle", handle);
        return result;
    }

    /** One enumerator step: the next plan's rows (with kinds) and the scan's checkpoint after it. */
    private JsonNode streamNext(JsonNode a) throws Exception {
        OpenStream s = streams.get(a.get("handle").asLong());
        if (s == null) {
            throw new IllegalArgumentException("no open stream " + a.get("handle"));
        }
        List<Split> splits = s.scan.plan().splits();
        ObjectNode result =
                (ObjectNode) readSplits(s.builder.readType(), s.read, splits, null, List.of());
        result.put("splits", splits.size());
        result.set("checkpoint", JSON.valueToTree(s.scan.checkpoint()));
        return result;
    }

    // ---------------------------------------------------------------- metadata and maintenance

    private JsonNode splits(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        Map<String, String> travel = timeTravel(a);
        if (!travel.isEmpty()) {
            table = table.copy(travel);
        }
        ReadBuilder builder = table.newReadBuilder();
        Predicate predicate = predicate(table.rowType(), a.get("filter"));
        if (predicate != null) {
            builder.withFilter(predicate);
        }
        RowType partitionType = table.schema().logicalPartitionType();
        ArrayNode out = JSON.createArrayNode();
        for (Split split : builder.newScan().plan().splits()) {
            DataSplit ds = (DataSplit) split;
            ObjectNode node = out.addObject();
            node.set("partition", Values.rowToJson(partitionType, ds.partition()));
            node.put("bucket", ds.bucket());
            ArrayNode files = node.putArray("files");
            for (DataFileMeta f : ds.dataFiles()) {
                ObjectNode file = files.addObject();
                file.put("file_name", f.fileName());
                file.put("level", f.level());
                file.put("row_count", f.rowCount());
                file.put("min_sequence_number", f.minSequenceNumber());
                file.put("max_sequence_number", f.maxSequenceNumber());
                file.put("schema_id", f.schemaId());
            }
        }
        return out;
    }

    /** The partition and bucket Paimon's writer assigns to each row. */
    private JsonNode bucketOf(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        RowKeyExtractor extractor = table.createRowKeyExtractor();
        RowType partitionType = table.schema().logicalPartitionType();
        ArrayNode out = JSON.createArrayNode();
        for (InternalRow row : rows(table, a)) {
            extractor.setRecord(row);
            ObjectNode node = out.addObject();
            node.set("partition", Values.rowToJson(partitionType, extractor.partition()));
            node.put("bucket", extractor.bucket());
        }
        return out;
    }

    private JsonNode snapshots(JsonNode a) throws Exception {
        ArrayNode out = JSON.createArrayNode();
        List<Snapshot> all = new ArrayList<>(table(a).snapshotManager().safelyGetAllSnapshots());
        all.sort((x, y) -> Long.compare(x.id(), y.id())); // listing order is the file system's
        for (Snapshot s : all) {
            out.add(JSON.readTree(s.toJson()));
        }
        return out;
    }

    private JsonNode expire(JsonNode a, boolean changelogs) throws Exception {
        // Retention comes from the table's options plus the request's dynamic "options".
        FileStoreTable table = table(a);
        int expired =
                (changelogs ? table.newExpireChangelog() : table.newExpireSnapshots())
                        .config(table.coreOptions().expireConfig())
                        .expire();
        return JSON.getNodeFactory().numberNode(expired);
    }

    private JsonNode createTag(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        String name = a.get("name").asText();
        if (a.hasNonNull("snapshot_id")) {
            table.createTag(name, a.get("snapshot_id").asLong());
        } else {
            table.createTag(name);
        }
        return null;
    }

    private JsonNode tags(JsonNode a) throws Exception {
        ObjectNode out = JSON.createObjectNode();
        for (Map.Entry<Snapshot, List<String>> e : table(a).tagManager().tags().entrySet()) {
            for (String name : e.getValue()) {
                out.put(name, e.getKey().id());
            }
        }
        return out;
    }

    private ConsumerManager consumers(JsonNode a) throws Exception {
        FileStoreTable table = table(a);
        return new ConsumerManager(table.fileIO(), table.location());
    }
}
