package lakeoracle;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.apache.paimon.CoreOptions;
import org.apache.paimon.FileStore;
import org.apache.paimon.Snapshot;
import org.apache.paimon.fs.Path;
import org.apache.paimon.manifest.ManifestCommittable;
import org.apache.paimon.operation.OrphanFilesClean;
import org.apache.paimon.operation.PartitionExpire;
import org.apache.paimon.partition.PartitionExpireStrategy;
import org.apache.paimon.stats.Statistics;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.sink.TableCommitImpl;
import org.apache.paimon.utils.TimeUtils;

/**
 * Paimon 0.9's table lifecycle, one request op ({@code "lifecycle"}) with an {@code action}:
 *
 * <ul>
 *   <li>{@code expire_partitions}: partition expiration as the {@code expire_partitions}
 *       procedure runs it (the table's strategy, formatter and pattern; no check interval; one
 *       run at the JVM's current time), optionally with another {@code expiration_time};
 *   <li>{@code commit_watermark}: rows (lists in the table's column order) written and committed
 *       with a watermark, as Flink's sink commits a checkpoint; the commit path then runs what a
 *       committer runs after each commit (snapshot expiry, partition expiry, automatic tags);
 *       optional {@code log_offsets} (bucket number to offset) go into the committable as a
 *       Flink job's log system adds them;
 *   <li>{@code analyze}: statistics of the latest snapshot (its schema, {@code
 *       merged_record_count}, {@code merged_record_size}, no column statistics) committed as an
 *       ANALYZE snapshot by {@code FileStoreCommit.commitStatistics}, as Spark's ANALYZE TABLE;
 *   <li>{@code remove_orphan_files}: 0.9's {@code OrphanFilesClean} (what the remove_orphan_files
 *       procedure and action run) with {@code older_than_ms} (epoch ms) as its bound; {@code
 *       dry_run} replaces its file cleaner with one that only records. Answers every path it
 *       deleted (or would delete), files and directories alike.
 * </ul>
 */
final class Lifecycle {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Lifecycle() {}

    static JsonNode run(FileStoreTable table, JsonNode a) throws Exception {
        String action = a.get("action").asText();
        switch (action) {
            case "expire_partitions":
                return expirePartitions(table, a);
            case "commit_watermark":
                return commitWatermark(table, a);
            case "remove_orphan_files":
                return removeOrphanFiles(table, a);
            case "analyze":
                return analyze(table, a);
            default:
                throw new IllegalArgumentException("unknown lifecycle action " + action);
        }
    }

    private static JsonNode expirePartitions(FileStoreTable table, JsonNode a) {
        CoreOptions options = table.coreOptions();
        Duration expiration =
                a.hasNonNull("expiration_time")
                        ? TimeUtils.parseDuration(a.get("expiration_time").asText())
                        : options.partitionExpireTime();
        if (expiration == null) {
            throw new IllegalArgumentException("no partition.expiration-time and no expiration_time");
        }
        FileStore<?> store = table.store();
        // Interval zero: checks now, whatever was checked before (the procedure does the same).
        PartitionExpire expire =
                new PartitionExpire(
                        expiration,
                        Duration.ZERO,
                        PartitionExpireStrategy.createPartitionExpireStrategy(
                                options, store.partitionType()),
                        store.newScan(),
                        store.newCommit("expire-partitions-" + UUID.randomUUID()),
                        null);
        List<Map<String, String>> expired = expire.expire(Long.MAX_VALUE);
        return JSON.valueToTree(expired == null ? List.of() : expired);
    }

    /** Fixed-bucket and append tables (rows are routed by Paimon's own bucket function). */
    private static JsonNode commitWatermark(FileStoreTable table, JsonNode a) throws Exception {
        StreamWriteBuilder builder = table.newStreamWriteBuilder();
        if (a.hasNonNull("commit_user")) {
            builder.withCommitUser(a.get("commit_user").asText());
        }
        long identifier = a.get("commit_identifier").asLong();
        Long watermark = a.hasNonNull("watermark") ? a.get("watermark").asLong() : null;
        try (StreamTableWrite write = builder.newWrite();
                TableCommitImpl commit = (TableCommitImpl) builder.newCommit()) {
            for (JsonNode row : a.get("rows")) {
                write.write(Values.rowFromJson(table.rowType(), row));
            }
            List<CommitMessage> messages = write.prepareCommit(true, identifier);
            ManifestCommittable committable = new ManifestCommittable(identifier, watermark);
            messages.forEach(committable::addFileCommittable);
            if (a.hasNonNull("log_offsets")) {
                a.get("log_offsets")
                        .fields()
                        .forEachRemaining(
                                e ->
                                        committable.addLogOffset(
                                                Integer.parseInt(e.getKey()), e.getValue().asLong()));
            }
            commit.commit(committable);
        }
        ObjectNode result = JSON.createObjectNode();
        result.set("snapshot_id", JSON.valueToTree(table.snapshotManager().latestSnapshotId()));
        return result;
    }

    private static JsonNode analyze(FileStoreTable table, JsonNode a) {
        Snapshot latest = table.snapshotManager().latestSnapshot();
        Statistics stats =
                new Statistics(
                        latest.id(),
                        latest.schemaId(),
                        a.get("merged_record_count").asLong(),
                        a.get("merged_record_size").asLong(),
                        new HashMap<>());
        FileStore<?> store = table.store();
        store.newCommit("analyze-" + UUID.randomUUID()).commitStatistics(stats, Long.MAX_VALUE);
        ObjectNode result = JSON.createObjectNode();
        result.put("snapshot_id", table.snapshotManager().latestSnapshotId());
        result.put("statistics", table.snapshotManager().latestSnapshot().statistics());
        return result;
    }

    private static JsonNode removeOrphanFiles(FileStoreTable table, JsonNode a) throws Exception {
        // 0.9 takes the bound as a timestamp text in the JVM's time zone (DateTimeUtils.parseTimestampData)
        String olderThan =
                LocalDateTime.ofInstant(
                                Instant.ofEpochMilli(a.get("older_than_ms").asLong()),
                                ZoneId.systemDefault())
                        .format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS"));
        OrphanFilesClean clean = new OrphanFilesClean(table).olderThan(olderThan);
        if (a.path("dry_run").asBoolean(false)) {
            clean.fileCleaner(path -> {});
        }
        List<String> paths = new ArrayList<>();
        for (Path path : clean.clean()) {
            paths.add(path.toUri().getPath());
        }
        return JSON.valueToTree(paths);
    }
}
