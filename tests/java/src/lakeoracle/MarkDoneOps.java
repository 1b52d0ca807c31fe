package lakeoracle;

import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.partition.actions.SuccessFileMarkDoneAction;
import org.apache.paimon.partition.file.SuccessFile;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Partition mark-done of the oracle: Paimon's own {@link SuccessFileMarkDoneAction} marks a
 * partition directory of a table on the local disk, and {@link SuccessFile} reads a marker back.
 */
final class MarkDoneOps {
    private static final ObjectMapper JSON = new ObjectMapper();

    private MarkDoneOps() {}

    /**
     * With "mark": markDone("partition") under "table_path" first. Then the marker of
     * "table_path"/"partition" as SuccessFile.fromPath reads it: {"creation_time",
     * "modification_time"} (the file's bytes are read on the Python side: readFileUtf8 drops line ends).
     */
    static JsonNode run(JsonNode a) throws Exception {
        LocalFileIO fileIO = LocalFileIO.create();
        Path table = new Path(a.get("table_path").asText());
        String partition = a.get("partition").asText();
        if (a.path("mark").asBoolean(false)) {
            new SuccessFileMarkDoneAction(fileIO, table).markDone(partition);
        }
        Path path = new Path(new Path(table, partition), SuccessFileMarkDoneAction.SUCCESS_FILE_NAME);
        SuccessFile marker = SuccessFile.fromPath(fileIO, path);
        ObjectNode out = JSON.createObjectNode();
        out.put("creation_time", marker.creationTime());
        out.put("modification_time", marker.modificationTime());
        return out;
    }
}
