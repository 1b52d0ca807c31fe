package lakeoracle;

import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.index.BucketAssigner;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.index.HashIndexFile;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.RowKeyExtractor;
import org.apache.paimon.types.RowType;

import java.util.List;
import java.util.UUID;

/**
 * Dynamic-bucket commands of the oracle ({@code dynamic_bucket} with {@code what}): how Paimon
 * itself reads a table's hash index and which bucket its own assigner, loaded from that index,
 * gives each row. Nothing here commits.
 */
final class DynamicBucketOps {
    private static final ObjectMapper JSON = new ObjectMapper();

    private DynamicBucketOps() {}

    static JsonNode run(FileStoreTable table, List<InternalRow> rows, JsonNode a) throws Exception {
        String what = a.get("what").asText();
        switch (what) {
            case "hash_index":
                return hashIndex(table);
            case "key_hashes":
                return keyHashes(table, rows);
            case "assign":
                return assign(table, rows, a.path("num_assigners").asInt(1));
            default:
                throw new IllegalArgumentException("unknown dynamic_bucket request " + what);
        }
    }

    /** The latest snapshot's HASH index entries: partition, bucket, row count and the hashes read back. */
    private static JsonNode hashIndex(FileStoreTable table) {
        IndexFileHandler handler = table.store().newIndexFileHandler();
        RowType partitionType = table.schema().logicalPartitionType();
        ArrayNode out = JSON.createArrayNode();
        for (IndexManifestEntry e : handler.scan(HashIndexFile.HASH_INDEX)) {
            ObjectNode node = out.addObject();
            node.set("partition", Values.rowToJson(partitionType, e.partition()));
            node.put("bucket", e.bucket());
            node.put("file_name", e.indexFile().fileName());
            node.put("row_count", e.indexFile().rowCount());
            ArrayNode hashes = node.putArray("hashes");
            for (Integer h : handler.readHashIndexList(e.indexFile())) {
                hashes.add(h);
            }
        }
        return out;
    }

    /** Per row: the hash of its trimmed primary key and of its partition, as Paimon's writers take them. */
    private static JsonNode keyHashes(FileStoreTable table, List<InternalRow> rows) {
        RowKeyExtractor extractor = table.createRowKeyExtractor();
        ArrayNode out = JSON.createArrayNode();
        for (InternalRow row : rows) {
            extractor.setRecord(row);
            ObjectNode node = out.addObject();
            node.put("key_hash", extractor.trimmedPrimaryKey().hashCode());
            node.put("partition_hash", extractor.partition().hashCode());
        }
        return out;
    }

    /**
     * The bucket of each row as {@code numAssigners} fresh HashBucketAssigners (as many channels as
     * assigners, like one task per assigner) give it, loading the latest snapshot's hash index.
     */
    private static JsonNode assign(FileStoreTable table, List<InternalRow> rows, int numAssigners) {
        HashBucketAssigner[] assigners = new HashBucketAssigner[numAssigners];
        String user = "oracle-" + UUID.randomUUID();
        for (int i = 0; i < numAssigners; i++) {
            assigners[i] = new HashBucketAssigner(
                    table.snapshotManager(), user, table.store().newIndexFileHandler(),
                    numAssigners, numAssigners, i, table.coreOptions().dynamicBucketTargetRowNum());
        }
        RowKeyExtractor extractor = table.createRowKeyExtractor();
        ArrayNode out = JSON.createArrayNode();
        for (InternalRow row : rows) {
            extractor.setRecord(row);
            BinaryRow partition = extractor.partition();
            int hash = extractor.trimmedPrimaryKey().hashCode();
            int id = BucketAssigner.computeAssigner(partition.hashCode(), hash, numAssigners, numAssigners);
            out.add(assigners[id].assign(partition, hash));
        }
        return out;
    }
}
