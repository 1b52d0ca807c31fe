package lakeoracle;

import org.apache.paimon.CoreOptions;
import org.apache.paimon.mergetree.compact.aggregate.FieldAggregator;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.shade.org.apache.datasketches.hll.HllSketch;
import org.apache.paimon.shade.org.apache.datasketches.hll.TgtHllType;
import org.apache.paimon.shade.org.apache.datasketches.memory.Memory;
import org.apache.paimon.shade.org.apache.datasketches.theta.Sketches;
import org.apache.paimon.shade.org.apache.datasketches.theta.UpdateSketch;
import org.apache.paimon.shade.org.roaringbitmap.RoaringBitmap;
import org.apache.paimon.shade.org.roaringbitmap.longlong.Roaring64Bitmap;
import org.apache.paimon.types.VarBinaryType;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.HashMap;

/**
 * The sketch and bitmap aggregate functions of Paimon 0.9 (rbm32, rbm64, hll_sketch,
 * theta_sketch), driven directly: {@code fold} runs Paimon's own FieldAggregator over groups of
 * values in order (acc = agg(acc, value), as AggregateMergeFunction does), {@code make} builds
 * inputs with the libraries the bundle ships (datasketches 4.2, RoaringBitmap 1.0.5), {@code
 * estimate} reads estimates / cardinalities back.
 */
final class SketchAggOps {
    private static final ObjectMapper JSON = new ObjectMapper();

    private SketchAggOps() {}

    private static byte[] bytes(JsonNode n) {
        return n == null || n.isNull() ? null : Base64.getDecoder().decode(n.asText());
    }

    private static JsonNode text(byte[] b) {
        return b == null ? JSON.getNodeFactory().nullNode() : JSON.getNodeFactory().textNode(Base64.getEncoder().encodeToString(b));
    }

    /** {"function", "groups": [[b64|null, ...], ...]} -> {"results": [b64|null, ...]}. */
    static JsonNode fold(JsonNode a) {
        FieldAggregator agg = FieldAggregator.createFieldAggregator(
                new VarBinaryType(), a.get("function").asText(), false, false,
                new CoreOptions(new HashMap<>()), "v");
        ArrayNode results = JSON.createArrayNode();
        for (JsonNode group : a.get("groups")) {
            Object acc = null;
            for (JsonNode v : group) {
                acc = agg.agg(acc, bytes(v));
            }
            results.add(text((byte[]) acc));
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("results", results);
        return out;
    }

    /**
     * {"kind": hll|theta|rbm32|rbm64, "sets": [[long, ...], ...], "lg_k", "hll_type" (HLL_4|6|8),
     * "form" (hll: compact|updatable; theta: ordered|unordered; rbm: optimized|plain)}
     * -> {"results": [b64, ...]}.
     */
    static JsonNode make(JsonNode a) throws Exception {
        String kind = a.get("kind").asText();
        String form = a.path("form").asText("");
        int lgK = a.path("lg_k").asInt(12);
        ArrayNode results = JSON.createArrayNode();
        for (JsonNode set : a.get("sets")) {
            byte[] b;
            switch (kind) {
                case "hll": {
                    HllSketch s = new HllSketch(lgK, TgtHllType.valueOf(a.path("hll_type").asText("HLL_4")));
                    for (JsonNode v : set) {
                        s.update(v.asLong());
                    }
                    b = form.equals("updatable") ? s.toUpdatableByteArray() : s.toCompactByteArray();
                    break;
                }
                case "theta": {
                    UpdateSketch s = UpdateSketch.builder().setNominalEntries(1 << lgK).build();
                    for (JsonNode v : set) {
                        s.update(v.asLong());
                    }
                    b = s.compact(!form.equals("unordered"), null).toByteArray();
                    break;
                }
                case "rbm32": {
                    RoaringBitmap r = new RoaringBitmap();
                    for (JsonNode v : set) {
                        r.add((int) v.asLong());
                    }
                    if (!form.equals("plain")) {
                        r.runOptimize();
                    }
                    ByteBuffer buf = ByteBuffer.allocate(r.serializedSizeInBytes());
                    r.serialize(buf);
                    b = buf.array();
                    break;
                }
                case "rbm64": {
                    Roaring64Bitmap r = new Roaring64Bitmap();
                    for (JsonNode v : set) {
                        r.add(v.asLong());
                    }
                    if (!form.equals("plain")) {
                        r.runOptimize();
                    }
                    ByteArrayOutputStream bos = new ByteArrayOutputStream();
                    r.serialize(new DataOutputStream(bos));
                    b = bos.toByteArray();
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown sketch kind " + kind);
            }
            results.add(text(b));
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("results", results);
        return out;
    }

    /** {"kind", "values": [b64, ...]} -> {"results": [estimate or cardinality, ...]}. */
    static JsonNode estimate(JsonNode a) throws Exception {
        String kind = a.get("kind").asText();
        ArrayNode results = JSON.createArrayNode();
        for (JsonNode v : a.get("values")) {
            byte[] b = bytes(v);
            switch (kind) {
                case "hll":
                    results.add(HllSketch.heapify(b).getEstimate());
                    break;
                case "theta":
                    results.add(Sketches.wrapSketch(Memory.wrap(b)).getEstimate());
                    break;
                case "rbm32": {
                    RoaringBitmap r = new RoaringBitmap();
                    r.deserialize(ByteBuffer.wrap(b));
                    results.add(r.getLongCardinality());
                    break;
                }
                case "rbm64": {
                    Roaring64Bitmap r = new Roaring64Bitmap();
                    r.deserialize(new java.io.DataInputStream(new java.io.ByteArrayInputStream(b)));
                    ArrayNode values = JSON.createArrayNode();
                    r.forEach(values::add);
                    results.add(values);
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown sketch kind " + kind);
            }
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("results", results);
        return out;
    }
}
