package lakeoracle;

import org.apache.paimon.deletionvectors.DeletionVector;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.DeletionFile;
import org.apache.paimon.table.source.Split;

import java.util.List;

/**
 * Deletion-vector commands of the oracle: what Paimon's own scan plans for a deletion-vector
 * table and which row positions its own reader deletes, per data file.
 */
final class DeletionVectorOps {
    private static final ObjectMapper JSON = new ObjectMapper();

    private DeletionVectorOps() {}

    /**
     * The latest snapshot's splits as Paimon plans them: per split its bucket, raw
     * convertibility and data files (name, level), each with its deletion file (index file
     * name, offset, length) and the positions Java's DeletionVector.read finds there.
     */
    static JsonNode deletionVectors(FileStoreTable table) throws Exception {
        ArrayNode out = JSON.createArrayNode();
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit ds = (DataSplit) split;
            ObjectNode s = out.addObject();
            s.put("bucket", ds.bucket());
            s.put("raw_convertible", ds.rawConvertible());
            ArrayNode files = s.putArray("files");
            List<DataFileMeta> metas = ds.dataFiles();
            List<DeletionFile> deletions = ds.deletionFiles().orElse(null);
            for (int i = 0; i < metas.size(); i++) {
                ObjectNode f = files.addObject();
                f.put("name", metas.get(i).fileName());
                f.put("level", metas.get(i).level());
                DeletionFile d = deletions == null ? null : deletions.get(i);
                if (d == null) {
                    continue;
                }
                String path = d.path();
                f.put("index_file", path.substring(path.lastIndexOf('/') + 1));
                f.put("offset", d.offset());
                f.put("length", d.length());
                DeletionVector dv = DeletionVector.read(table.fileIO(), d);
                ArrayNode positions = f.putArray("deleted");
                for (long p = 0; p < metas.get(i).rowCount(); p++) {
                    if (dv.isDeleted(p)) {
                        positions.add(p);
                    }
                }
            }
        }
        return out;
    }
}
