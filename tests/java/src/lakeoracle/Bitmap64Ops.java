package lakeoracle;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.shade.org.roaringbitmap.RoaringBitmap;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.zip.CRC32;

/**
 * 64-bit deletion vectors as Paimon 1.2+ frames them. Paimon Java 0.9 has no 64-bit vector, so
 * this follows the layout of Paimon HEAD's {@code Bitmap64DeletionVector.serializeTo} and
 * {@code OptimizedRoaringBitmap64.serialize / deserialize} step by step, with Java's own
 * RoaringBitmap (the one the 0.9 bundle ships) writing and reading each 32-bit bitmap:
 *
 * <ul>
 *   <li>one RoaringBitmap per high key from 0 to the largest (empty ones in gaps), each
 *       run-optimized (HEAD's {@code runLengthEncode});
 *   <li>int32 big-endian length of what follows up to the CRC; int32 little-endian magic
 *       1681511377; int64 little-endian count of bitmaps; per bitmap its int32 little-endian key
 *       and its portable serialization; int32 big-endian CRC-32 of magic and bitmaps.
 * </ul>
 */
final class Bitmap64Ops {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final int MAGIC = 1681511377;

    private Bitmap64Ops() {}

    /** {"positions": [...]} -> {"bytes": base64 of the framed vector}. */
    static JsonNode serialize(JsonNode a) {
        List<RoaringBitmap> bitmaps = new ArrayList<>();
        for (JsonNode p : a.get("positions")) {
            long pos = p.asLong();
            int key = (int) (pos >>> 32);
            while (bitmaps.size() <= key) {
                bitmaps.add(new RoaringBitmap());
            }
            bitmaps.get(key).add((int) pos);
        }
        int bitmapBytes = 8;
        for (RoaringBitmap b : bitmaps) {
            b.runOptimize();
            bitmapBytes += 4 + b.serializedSizeInBytes();
        }
        int length = 4 + bitmapBytes; // magic + bitmaps
        byte[] out = new byte[4 + length + 4];
        ByteBuffer frame = ByteBuffer.wrap(out); // big-endian: the length and the CRC
        frame.putInt(length);
        ByteBuffer body = ByteBuffer.wrap(out, 4, length).order(ByteOrder.LITTLE_ENDIAN);
        body.putInt(MAGIC);
        body.putLong(bitmaps.size());
        for (int key = 0; key < bitmaps.size(); key++) {
            body.putInt(key);
            bitmaps.get(key).serialize(body);
        }
        CRC32 crc = new CRC32();
        crc.update(out, 4, length);
        frame.putInt(4 + length, (int) crc.getValue());
        ObjectNode r = JSON.createObjectNode();
        r.put("bytes", Base64.getEncoder().encodeToString(out));
        return r;
    }

    /** {"bytes": base64 of a framed vector} -> {"positions": [...]}, checked as HEAD checks them. */
    static JsonNode deserialize(JsonNode a) throws Exception {
        byte[] in = Base64.getDecoder().decode(a.get("bytes").asText());
        ByteBuffer frame = ByteBuffer.wrap(in);
        int length = frame.getInt();
        if (length != in.length - 8) {
            throw new IllegalArgumentException("length " + length + " of " + in.length + " bytes");
        }
        CRC32 crc = new CRC32();
        crc.update(in, 4, length);
        if ((int) crc.getValue() != frame.getInt(4 + length)) {
            throw new IllegalArgumentException("CRC mismatch");
        }
        ByteBuffer body = ByteBuffer.wrap(in, 4, length).slice().order(ByteOrder.LITTLE_ENDIAN);
        if (body.getInt() != MAGIC) {
            throw new IllegalArgumentException("not a 64-bit vector");
        }
        long count = body.getLong();
        ArrayNode positions = JSON.createArrayNode();
        int lastKey = -1;
        for (long i = 0; i < count; i++) {
            int key = body.getInt();
            if (key <= lastKey || key > Integer.MAX_VALUE - 1) {
                throw new IllegalArgumentException("bad key " + key + " after " + lastKey);
            }
            RoaringBitmap b = new RoaringBitmap();
            b.deserialize(body);
            body.position(body.position() + b.serializedSizeInBytes());
            long high = ((long) key) << 32;
            b.forEach((int low) -> positions.add(high | (low & 0xFFFFFFFFL)));
            lastKey = key;
        }
        ObjectNode r = JSON.createObjectNode();
        r.set("positions", positions);
        return r;
    }
}
