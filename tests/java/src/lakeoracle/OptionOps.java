package lakeoracle;

import org.apache.paimon.CoreOptions;
import org.apache.paimon.compression.BlockCompressionFactory;
import org.apache.paimon.compression.CompressOptions;
import org.apache.paimon.options.ConfigOption;
import org.apache.paimon.options.MemorySize;
import org.apache.paimon.options.Options;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.concurrent.Callable;

/**
 * Option parsing of the oracle: the typed value Paimon's own {@link Options#get} reads from a
 * table option's text, for the {@link CoreOptions} declaration of that key.
 */
final class OptionOps {
    private static final ObjectMapper JSON = new ObjectMapper();

    private OptionOps() {}

    /**
     * {"type": Java class of the option, "value": the value as text - a Duration in millis
     * (toMillis), a MemorySize in bytes}; Paimon's exception when the text does not parse.
     */
    static JsonNode parse(JsonNode a) throws IllegalAccessException {
        String key = a.get("key").asText();
        ConfigOption<?> option = find(key);
        Options options = new Options();
        options.setString(key, a.get("value").asText());
        Object value = options.get(option);
        ObjectNode out = JSON.createObjectNode();
        out.put("type", value == null ? "null" : value.getClass().getSimpleName());
        if (value instanceof Duration) {
            out.put("value", Long.toString(((Duration) value).toMillis()));
        } else if (value instanceof MemorySize) {
            out.put("value", Long.toString(((MemorySize) value).getBytes()));
        } else {
            out.put("value", String.valueOf(value));
        }
        return out;
    }

    /**
     * What Paimon 0.9's readers of string options make of one text, each as the code Paimon runs
     * (or, where that is a one-line expression inside a writer, that expression): "format" the
     * identifier of {@link CoreOptions#fileFormat()} for file.format; "parquet" parquet-java's
     * {@code CompressionCodecName.fromConf} (RowDataParquetBuilder); "orc" ORC's
     * {@code CompressionKind.valueOf(text.toUpperCase())} (OrcWriterFactory.create); "avro" Avro's
     * {@code CodecFactory.fromString} (AvroFileFormat, avro.codec: the codec's toString, e.g.
     * "deflate-1"); "avro_zstd" the
     * {@code equalsIgnoreCase("zstd")} test AvroFileFormat.createCodecFactory makes of a
     * compression (file.compression of Avro tables, manifest.compression); "spill"
     * {@link BlockCompressionFactory#create(CompressOptions)} (spill-compression: its class, or
     * "none"). A value is the exception's class name, prefixed "!", where the lookup throws.
     */
    static JsonNode lookups(JsonNode a) {
        String text = a.get("value").asText();
        ObjectNode out = JSON.createObjectNode();
        Options options = new Options();
        options.setString(CoreOptions.FILE_FORMAT.key(), text);
        out.put("format", attempt(() -> new CoreOptions(options).fileFormat().getFormatIdentifier()));
        out.put("parquet", attempt(() -> org.apache.paimon.shade.org.apache.parquet.hadoop.metadata
                .CompressionCodecName.fromConf(text).name()));
        out.put("orc", attempt(() -> org.apache.paimon.shade.org.apache.orc.CompressionKind
                .valueOf(text.toUpperCase()).name()));
        out.put("avro", attempt(() -> org.apache.paimon.shade.org.apache.avro.file.CodecFactory
                .fromString(text).toString()));
        out.put("avro_zstd", text.equalsIgnoreCase("zstd"));
        out.put("spill", attempt(() -> {
            BlockCompressionFactory f = BlockCompressionFactory.create(new CompressOptions(text, 1));
            return f == null ? "none" : f.getClass().getSimpleName();
        }));
        return out;
    }

    /**
     * Paimon 0.9's {@link CoreOptions#fileFormatPerLevel()} and {@link
     * CoreOptions#fileCompressionPerLevel()} of one text given to both keys: {"format": {level:
     * value} or "!exception class", "compression": likewise}.
     */
    static JsonNode levelMaps(JsonNode a) {
        String text = a.get("value").asText();
        Options options = new Options();
        options.setString(CoreOptions.FILE_FORMAT_PER_LEVEL.key(), text);
        options.setString(CoreOptions.FILE_COMPRESSION_PER_LEVEL.key(), text);
        CoreOptions core = new CoreOptions(options);
        ObjectNode out = JSON.createObjectNode();
        out.set("format", levels(core::fileFormatPerLevel));
        out.set("compression", levels(core::fileCompressionPerLevel));
        return out;
    }

    private static JsonNode levels(Callable<java.util.Map<Integer, String>> lookup) {
        try {
            ObjectNode map = JSON.createObjectNode();
            for (java.util.Map.Entry<Integer, String> e : lookup.call().entrySet()) {
                map.put(String.valueOf(e.getKey()), e.getValue());
            }
            return map;
        } catch (Throwable e) {
            return JSON.getNodeFactory().textNode("!" + e.getClass().getSimpleName());
        }
    }

    private static String attempt(Callable<Object> lookup) {
        try {
            return String.valueOf(lookup.call());
        } catch (Throwable e) {
            return "!" + e.getClass().getSimpleName();
        }
    }

    private static ConfigOption<?> find(String key) throws IllegalAccessException {
        for (Field f : CoreOptions.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && ConfigOption.class.isAssignableFrom(f.getType())) {
                ConfigOption<?> option = (ConfigOption<?>) f.get(null);
                if (option.key().equals(key)) {
                    return option;
                }
            }
        }
        throw new IllegalArgumentException("no CoreOptions option " + key);
    }
}
