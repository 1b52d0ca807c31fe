package lakeoracle;

import org.apache.paimon.crosspartition.GlobalIndexAssigner;
import org.apache.paimon.crosspartition.IndexBootstrap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.TableWrite;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;

/**
 * Writes of cross-partition upsert tables (bucket = -1, a primary key without every partition
 * field) as Paimon's Flink sink makes them (GlobalDynamicBucketSink): the key index bootstrapped
 * from the table by {@link IndexBootstrap}, each row placed by Paimon's own {@link
 * GlobalIndexAssigner} (one assigner, RocksDB state from rocksdbjni), every (row, bucket) it
 * emits - moved rows' retractions included - written with {@code write(row, bucket)}.
 */
final class CrossPartitionOps {
    private CrossPartitionOps() {}

    static void writeRows(FileStoreTable table, TableWrite write, List<InternalRow> rows, IOManager io)
            throws Exception {
        GlobalIndexAssigner assigner = new GlobalIndexAssigner(table);
        assigner.open(
                0,
                io,
                1,
                0,
                (row, bucket) -> {
                    try {
                        write.write(row, bucket);
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
        try {
            new IndexBootstrap(table)
                    .bootstrap(
                            1,
                            0,
                            row -> {
                                try {
                                    assigner.bootstrapKey(row);
                                } catch (IOException e) {
                                    throw new UncheckedIOException(e);
                                }
                            });
            assigner.endBoostrap(false);
            for (InternalRow row : rows) {
                assigner.processInput(row);
            }
        } finally {
            assigner.close();
        }
    }
}
