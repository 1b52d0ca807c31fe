package lakeoracle;

import org.apache.paimon.fileindex.FileIndexPredicate;
import org.apache.paimon.fileindex.bloomfilter.FastHash;
import org.apache.paimon.fs.Path;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataFilePathFactory;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.RowType;

import java.util.Base64;

/**
 * File-index commands of the oracle: Paimon's own bloom-filter hash of typed values, and what
 * Paimon's own {@link FileIndexPredicate} decides for every data file of the latest snapshot.
 */
final class FileIndexOps {
    private static final ObjectMapper JSON = new ObjectMapper();

    private FileIndexOps() {}

    /** FastHash of each value (JSON as Values.fromJson takes it) under the Paimon type given. */
    static JsonNode hash(JsonNode a) {
        DataType type = DataTypeJsonParser.parseDataType(a.get("type"));
        FastHash fn = FastHash.getHashFunction(type);
        ArrayNode out = JSON.createArrayNode();
        for (JsonNode v : a.get("values")) {
            out.add(fn.hash(Values.fromJson(type, v)));
        }
        return out;
    }

    /**
     * Every data file of the latest snapshot with its index (embedded bytes as base64, extra
     * files) and whether Java's FileIndexPredicate keeps it for the filter given: the decision
     * its scan (embedded indexes) and reader (`.index` files) take.
     */
    static JsonNode test(FileStoreTable table, RowType rowType, Predicate predicate) throws Exception {
        ArrayNode out = JSON.createArrayNode();
        for (ManifestEntry entry : table.store().newScan().plan().files()) {
            DataFileMeta file = entry.file();
            ObjectNode f = out.addObject();
            f.put("name", file.fileName());
            f.put("bucket", entry.bucket());
            ArrayNode extra = f.putArray("extra_files");
            file.extraFiles().forEach(extra::add);
            byte[] embedded = file.embeddedIndex();
            if (embedded != null) {
                f.put("embedded", Base64.getEncoder().encodeToString(embedded));
                try (FileIndexPredicate p = new FileIndexPredicate(embedded, rowType)) {
                    f.put("remain", p.testPredicate(predicate));
                }
                continue;
            }
            for (String name : file.extraFiles()) {
                if (!name.endsWith(DataFilePathFactory.INDEX_PATH_SUFFIX)) {
                    continue;
                }
                DataFilePathFactory paths =
                        table.store().pathFactory().createDataFilePathFactory(entry.partition(), entry.bucket());
                Path path = paths.toPath(name);
                try (FileIndexPredicate p = new FileIndexPredicate(path, table.fileIO(), rowType)) {
                    f.put("remain", p.testPredicate(predicate));
                }
            }
        }
        return out;
    }
}
