package lakeoracle;

import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.types.BigIntType;
import org.apache.paimon.types.CharType;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DateType;
import org.apache.paimon.types.DoubleType;
import org.apache.paimon.types.FloatType;
import org.apache.paimon.types.IntType;
import org.apache.paimon.types.LocalZonedTimestampType;
import org.apache.paimon.types.SmallIntType;
import org.apache.paimon.types.TimeType;
import org.apache.paimon.types.TimestampType;
import org.apache.paimon.types.TinyIntType;
import org.apache.paimon.types.VarCharType;
import org.apache.paimon.utils.RoaringBitmap32;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Version 2 of Paimon's bitmap file index as Paimon 1.x writes it. Paimon Java 0.9 writes version
 * 1 only, so this follows HEAD's {@code BitmapFileIndex.Writer.serializedBytes} and
 * {@code BitmapFileIndexMetaV2.serialize} step by step, with Java's own HashMap (the order of the
 * body's bitmaps), RoaringBitmap32 (their bytes) and comparators (the order of the index entries):
 *
 * <ul>
 *   <li>version byte 2; int rows; int distinct non-null values; boolean has-null; if it has a
 *       null, int null offset ({@code -1 - row} for one null row, else 0) and int length of the
 *       serialized null bitmap (whatever its cardinality);
 *   <li>the entries (value, offset, length: -1 for a value in one row) sorted by value, cut into
 *       blocks of at most {@code index-block-size} bytes (4 for the entry count, then 8 plus the
 *       value's bytes per entry); int block count, each block's first value and int offset;
 *       int the blocks' total size; each block's int entry count and entries;
 *   <li>the body as in version 1: the null bitmap (more than one null row), then each value's
 *       bitmap in the HashMap's order.
 * </ul>
 */
final class BitmapV2Ops {
    private static final ObjectMapper JSON = new ObjectMapper();

    private BitmapV2Ops() {}

    /** {"type": ..., "values": [...], "block_size": bytes} -> {"bytes": base64 of the payload}. */
    static JsonNode serialize(JsonNode a) throws IOException {
        DataType type = DataTypeJsonParser.parseDataType(a.get("type"));
        long blockSize = a.get("block_size").asLong();
        Map<Object, RoaringBitmap32> id2bitmap = new HashMap<>();
        RoaringBitmap32 nulls = new RoaringBitmap32();
        int rows = 0;
        for (JsonNode v : a.get("values")) {
            Object value = Values.fromJson(type, v);
            if (value == null) {
                nulls.add(rows++);
            } else {
                id2bitmap.computeIfAbsent(key(type, value), k -> new RoaringBitmap32()).add(rows++);
            }
        }
        byte[] nullBytes = nulls.serialize();
        LinkedHashMap<Object, Integer> offsets = new LinkedHashMap<>();
        Map<Object, Integer> lengths = new HashMap<>();
        List<byte[]> body = new ArrayList<>();
        int offset = nulls.isEmpty() || nulls.getCardinality() == 1 ? 0 : nullBytes.length;
        for (Map.Entry<Object, RoaringBitmap32> e : id2bitmap.entrySet()) {
            RoaringBitmap32 bitmap = e.getValue();
            if (bitmap.getCardinality() == 1) {
                offsets.put(e.getKey(), -1 - bitmap.iterator().next());
            } else {
                byte[] bytes = bitmap.serialize();
                body.add(bytes);
                offsets.put(e.getKey(), offset);
                lengths.put(e.getKey(), bytes.length);
                offset += bytes.length;
            }
        }
        List<Object> sorted = new ArrayList<>(offsets.keySet());
        sorted.sort(comparator(type));
        // blocks: [first entry index, entry count, serialized bytes]
        List<int[]> blocks = new ArrayList<>();
        for (int i = 0; i < sorted.size(); i++) {
            int entryBytes = 8 + size(type, sorted.get(i));
            int[] last = blocks.isEmpty() ? null : blocks.get(blocks.size() - 1);
            if (last == null || last[2] + entryBytes > blockSize) {
                if (4 + entryBytes > blockSize) {
                    throw new IllegalStateException("index fail");
                }
                last = new int[] {i, 0, 4};
                blocks.add(last);
            }
            last[1]++;
            last[2] += entryBytes;
        }
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(buffer);
        out.writeByte(2);
        out.writeInt(rows);
        out.writeInt(id2bitmap.size());
        out.writeBoolean(!nulls.isEmpty());
        if (!nulls.isEmpty()) {
            out.writeInt(nulls.getCardinality() == 1 ? -1 - nulls.iterator().next() : 0);
            out.writeInt(nullBytes.length);
        }
        out.writeInt(blocks.size());
        int blockOffset = 0;
        for (int[] b : blocks) {
            write(out, type, sorted.get(b[0]));
            out.writeInt(blockOffset);
            blockOffset += b[2];
        }
        out.writeInt(blockOffset);
        for (int[] b : blocks) {
            out.writeInt(b[1]);
            for (int i = b[0]; i < b[0] + b[1]; i++) {
                Object k = sorted.get(i);
                write(out, type, k);
                out.writeInt(offsets.get(k));
                out.writeInt(lengths.getOrDefault(k, -1));
            }
        }
        if (nulls.getCardinality() > 1) {
            out.write(nullBytes);
        }
        for (byte[] bytes : body) {
            out.write(bytes);
        }
        out.flush();
        ObjectNode result = JSON.createObjectNode();
        result.put("bytes", Base64.getEncoder().encodeToString(buffer.toByteArray()));
        return result;
    }

    /** HEAD's getValueMapper: timestamps as epoch millis (precision <= 3) or micros. */
    private static Object key(DataType type, Object value) {
        int precision = -1;
        if (type instanceof TimestampType) {
            precision = ((TimestampType) type).getPrecision();
        } else if (type instanceof LocalZonedTimestampType) {
            precision = ((LocalZonedTimestampType) type).getPrecision();
        }
        if (precision >= 0) {
            Timestamp ts = (Timestamp) value;
            return precision <= 3 ? ts.getMillisecond() : ts.toMicros();
        }
        return value instanceof BinaryString ? ((BinaryString) value).copy() : value;
    }

    private static boolean isString(DataType type) {
        return type instanceof CharType || type instanceof VarCharType;
    }

    private static boolean isLong(DataType type) {
        return type instanceof BigIntType || type instanceof TimestampType
                || type instanceof LocalZonedTimestampType;
    }

    private static boolean isInt(DataType type) {
        return type instanceof IntType || type instanceof DateType || type instanceof TimeType;
    }

    /** HEAD's getComparator: each boxed type's own order (Float.compare, BinaryString's bytes). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Comparator<Object> comparator(DataType type) {
        return (x, y) -> ((Comparable) x).compareTo(y);
    }

    private static int size(DataType type, Object key) {
        if (isString(type)) {
            return 4 + ((BinaryString) key).getSizeInBytes();
        }
        if (type instanceof TinyIntType) {
            return 1;
        }
        if (type instanceof SmallIntType) {
            return 2;
        }
        if (isInt(type) || type instanceof FloatType) {
            return 4;
        }
        return 8;
    }

    private static void write(DataOutputStream out, DataType type, Object key) throws IOException {
        if (isString(type)) {
            byte[] bytes = ((BinaryString) key).toBytes();
            out.writeInt(bytes.length);
            out.write(bytes);
        } else if (type instanceof TinyIntType) {
            out.writeByte((byte) key);
        } else if (type instanceof SmallIntType) {
            out.writeShort((short) key);
        } else if (isInt(type)) {
            out.writeInt((int) key);
        } else if (isLong(type)) {
            out.writeLong((long) key);
        } else if (type instanceof FloatType) {
            out.writeFloat((float) key);
        } else if (type instanceof DoubleType) {
            out.writeDouble((double) key);
        } else {
            throw new IllegalArgumentException("no bitmap key for " + type);
        }
    }
}
