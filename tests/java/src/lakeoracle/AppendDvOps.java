package lakeoracle;

import org.apache.paimon.append.UnawareAppendCompactionTask;
import org.apache.paimon.append.UnawareAppendTableCompactionCoordinator;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.deletionvectors.BitmapDeletionVector;
import org.apache.paimon.deletionvectors.DeletionVector;
import org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.io.IndexIncrement;
import org.apache.paimon.manifest.FileKind;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.operation.AppendOnlyFileStoreWrite;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.TableRead;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Deletion vectors of append tables (bucket = -1) the way Paimon 0.9's own engines maintain them:
 * Spark's DELETE on a deletion-vector append table (DeleteFromPaimonTableCommand with
 * PaimonSparkWriter.persistDeletionVectors: an unaware-bucket partition's maintainer, or a
 * fixed-bucket table's per-bucket BucketedAppendDeletionFileMaintainer) and Spark's compact procedure for such tables
 * (UnawareAppendTableCompactionCoordinator + UnawareAppendCompactionTask.doCompact).
 */
final class AppendDvOps {
    private static final ObjectMapper JSON = new ObjectMapper();

    private AppendDvOps() {}

    /**
     * Marks the rows matching {@code filter} in each data file's deletion vector: every file of
     * the latest snapshot read in file order without its vector (positions count every row), the
     * matching positions given to the partition's UnawareAppendDeletionFileMaintainer (which
     * merges them with the file's old vector and rewrites the index files it touches), committed
     * as the index increment Spark's DELETE commits.
     */
    static JsonNode delete(FileStoreTable table, JsonNode filter) throws Exception {
        Predicate predicate = PaimonOracle.predicate(table.rowType(), filter);
        Long snapshotId = table.snapshotManager().latestSnapshotId();
        IndexFileHandler handler = table.store().newIndexFileHandler();
        boolean unaware = table.store().bucketMode() == BucketMode.BUCKET_UNAWARE;
        Map<List<Object>, AppendDeletionFileMaintainer> maintainers = new LinkedHashMap<>();
        TableRead read = table.newRead();
        long deleted = 0;
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit ds = (DataSplit) split;
            for (DataFileMeta file : ds.dataFiles()) {
                DataSplit one = DataSplit.builder()
                        .withSnapshot(ds.snapshotId())
                        .withPartition(ds.partition())
                        .withBucket(ds.bucket())
                        .withBucketPath(ds.bucketPath())
                        .withDataFiles(Collections.singletonList(file))
                        .rawConvertible(true)
                        .build();
                DeletionVector dv = new BitmapDeletionVector();
                long[] position = {0};
                try (RecordReader<InternalRow> reader = read.createReader(one)) {
                    reader.forEachRemaining(row -> {
                        if (predicate == null || predicate.test(row)) {
                            dv.delete(position[0]);
                        }
                        position[0]++;
                    });
                }
                if (dv.isEmpty()) {
                    continue;
                }
                BinaryRow partition = ds.partition().copy();
                int bucket = ds.bucket();
                AppendDeletionFileMaintainer maintainer = maintainers.computeIfAbsent(
                        java.util.Arrays.asList(partition, unaware ? 0 : bucket),
                        k -> unaware
                                ? AppendDeletionFileMaintainer.forUnawareAppend(handler, snapshotId, partition)
                                : AppendDeletionFileMaintainer.forBucketedAppend(
                                        handler, snapshotId, partition, bucket));
                maintainer.notifyNewDeletionVector(file.fileName(), dv);
                deleted++;
            }
        }
        List<CommitMessage> messages = new ArrayList<>();
        for (AppendDeletionFileMaintainer maintainer : maintainers.values()) {
            List<IndexManifestEntry> entries = maintainer.persist();
            List<org.apache.paimon.index.IndexFileMeta> added = new ArrayList<>();
            List<org.apache.paimon.index.IndexFileMeta> removed = new ArrayList<>();
            for (IndexManifestEntry e : entries) {
                (e.kind() == FileKind.ADD ? added : removed).add(e.indexFile());
            }
            messages.add(new CommitMessageImpl(maintainer.getPartition(), maintainer.getBucket(),
                    DataIncrement.emptyIncrement(), CompactIncrement.emptyIncrement(),
                    new IndexIncrement(added, removed)));
        }
        if (!messages.isEmpty()) {
            try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
                commit.commit(messages);
            }
        }
        ObjectNode result = JSON.createObjectNode();
        result.put("files_marked", deleted);
        result.set("snapshot_id", JSON.valueToTree(table.snapshotManager().latestSnapshotId()));
        return result;
    }

    /**
     * Spark's compact procedure for an unaware-bucket append table: one COMPACT snapshot. Also
     * reports each task's input files ({@code groups}: file names, in the task's order), the
     * coordinator's pick.
     */
    static JsonNode compact(FileStoreTable table) throws Exception {
        List<UnawareAppendCompactionTask> tasks = new UnawareAppendTableCompactionCoordinator(table, false).run();
        ObjectNode result = JSON.createObjectNode();
        result.put("tasks", tasks.size());
        List<List<String>> groups = new ArrayList<>();
        for (UnawareAppendCompactionTask task : tasks) {
            List<String> names = new ArrayList<>();
            for (DataFileMeta file : task.compactBefore()) {
                names.add(file.fileName());
            }
            groups.add(names);
        }
        result.set("groups", JSON.valueToTree(groups));
        if (!tasks.isEmpty()) {
            String user = UUID.randomUUID().toString();
            AppendOnlyFileStoreWrite write = (AppendOnlyFileStoreWrite) table.store().newWrite(user);
            List<CommitMessage> messages = new ArrayList<>();
            for (UnawareAppendCompactionTask task : tasks) {
                messages.add(task.doCompact(table, write));
            }
            write.close();
            try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
                commit.commit(messages);
            }
        }
        result.set("snapshot_id", JSON.valueToTree(table.snapshotManager().latestSnapshotId()));
        return result;
    }
}
