package lakeoracle;

import org.apache.paimon.CoreOptions;
import org.apache.paimon.options.ConfigOption;
import org.apache.paimon.options.MemorySize;
import org.apache.paimon.options.Options;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;

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
