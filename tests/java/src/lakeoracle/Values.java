package lakeoracle;

import java.math.BigDecimal;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowType;

/**
 * Lossless conversion between Paimon's internal data (what InternalRow getters return) and the
 * JSON values of the oracle protocol. The Python side (tests/java/oracle.py) is the other half:
 *
 * <ul>
 *   <li>BOOLEAN, TINYINT..BIGINT, DATE (days), TIME (millis of day): JSON numbers / booleans;
 *   <li>FLOAT, DOUBLE: strings (Java's / Python's shortest round-trip text, NaN, Infinity), so
 *       -0.0, NaN and every bit of the mantissa survive;
 *   <li>DECIMAL: plain decimal string; CHAR/VARCHAR: string; BINARY/VARBINARY: base64;
 *   <li>TIMESTAMP / TIMESTAMP_LTZ: [epoch millis, nano of milli] (Paimon's own representation);
 *   <li>ARRAY: list; MAP / MULTISET: list of [key, value] pairs (keys need not be strings);
 *   <li>ROW: list of field values. JSON null is SQL NULL at every level.
 * </ul>
 */
final class Values {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private Values() {}

    /** The internal value of {@code node} for type {@code type} (null for JSON null). */
    static Object fromJson(DataType type, JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return node.asBoolean();
            case TINYINT:
                return (byte) node.asInt();
            case SMALLINT:
                return (short) node.asInt();
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return node.asInt();
            case BIGINT:
                return node.asLong();
            case FLOAT:
                return (float) Double.parseDouble(node.asText());
            case DOUBLE:
                return Double.parseDouble(node.asText());
            case DECIMAL: {
                DecimalType dt = (DecimalType) type;
                Decimal d =
                        Decimal.fromBigDecimal(
                                new BigDecimal(node.asText()), dt.getPrecision(), dt.getScale());
                if (d == null) {
                    // Paimon returns null on overflow; never turn a value into NULL silently.
                    throw new IllegalArgumentException(
                            "decimal " + node.asText() + " does not fit " + type);
                }
                return d;
            }
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(node.asText());
            case BINARY:
            case VARBINARY:
                return Base64.getDecoder().decode(node.asText());
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromEpochMillis(node.get(0).asLong(), node.get(1).asInt());
            case ARRAY: {
                DataType element = ((ArrayType) type).getElementType();
                Object[] values = new Object[node.size()];
                for (int i = 0; i < values.length; i++) {
                    values[i] = fromJson(element, node.get(i));
                }
                return new GenericArray(values);
            }
            case MAP:
            case MULTISET: {
                DataType keyType =
                        type instanceof MapType
                                ? ((MapType) type).getKeyType()
                                : ((MultisetType) type).getElementType();
                DataType valueType =
                        type instanceof MapType
                                ? ((MapType) type).getValueType()
                                : new org.apache.paimon.types.IntType(false);
                Map<Object, Object> map = new LinkedHashMap<>();
                for (JsonNode pair : node) {
                    map.put(fromJson(keyType, pair.get(0)), fromJson(valueType, pair.get(1)));
                }
                return new GenericMap(map);
            }
            case ROW:
                return rowFromJson((RowType) type, node);
            default:
                throw new UnsupportedOperationException("oracle cannot convert type " + type);
        }
    }

    /** A GenericRow of {@code rowType} from a JSON list of field values. */
    static GenericRow rowFromJson(RowType rowType, JsonNode node) {
        List<DataType> types = rowType.getFieldTypes();
        if (node.size() != types.size()) {
            throw new IllegalArgumentException(
                    "row has " + node.size() + " values, type " + rowType + " has " + types.size());
        }
        GenericRow row = new GenericRow(types.size());
        for (int i = 0; i < types.size(); i++) {
            row.setField(i, fromJson(types.get(i), node.get(i)));
        }
        return row;
    }

    /** The JSON value of internal data {@code value} of type {@code type}. */
    static JsonNode toJson(DataType type, Object value) {
        if (value == null) {
            return NODES.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return NODES.booleanNode((Boolean) value);
            case TINYINT:
                return NODES.numberNode((Byte) value);
            case SMALLINT:
                return NODES.numberNode((Short) value);
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return NODES.numberNode((Integer) value);
            case BIGINT:
                return NODES.numberNode((Long) value);
            case FLOAT:
                // Widening is exact, so the double's text names exactly this float.
                return NODES.textNode(Double.toString((double) (Float) value));
            case DOUBLE:
                return NODES.textNode(Double.toString((Double) value));
            case DECIMAL:
                return NODES.textNode(((Decimal) value).toBigDecimal().toPlainString());
            case CHAR:
            case VARCHAR:
                return NODES.textNode(value.toString());
            case BINARY:
            case VARBINARY:
                return NODES.textNode(Base64.getEncoder().encodeToString((byte[]) value));
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                Timestamp ts = (Timestamp) value;
                ArrayNode pair = NODES.arrayNode();
                pair.add(ts.getMillisecond());
                pair.add(ts.getNanoOfMillisecond());
                return pair;
            }
            case ARRAY: {
                DataType element = ((ArrayType) type).getElementType();
                InternalArray array = (InternalArray) value;
                InternalArray.ElementGetter getter = InternalArray.createElementGetter(element);
                ArrayNode out = NODES.arrayNode();
                for (int i = 0; i < array.size(); i++) {
                    out.add(toJson(element, getter.getElementOrNull(array, i)));
                }
                return out;
            }
            case MAP:
            case MULTISET: {
                DataType keyType =
                        type instanceof MapType
                                ? ((MapType) type).getKeyType()
                                : ((MultisetType) type).getElementType();
                DataType valueType =
                        type instanceof MapType
                                ? ((MapType) type).getValueType()
                                : new org.apache.paimon.types.IntType(false);
                InternalMap map = (InternalMap) value;
                InternalArray keys = map.keyArray();
                InternalArray values = map.valueArray();
                InternalArray.ElementGetter keyGetter = InternalArray.createElementGetter(keyType);
                InternalArray.ElementGetter valueGetter =
                        InternalArray.createElementGetter(valueType);
                ArrayNode out = NODES.arrayNode();
                for (int i = 0; i < map.size(); i++) {
                    ArrayNode pair = NODES.arrayNode();
                    pair.add(toJson(keyType, keyGetter.getElementOrNull(keys, i)));
                    pair.add(toJson(valueType, valueGetter.getElementOrNull(values, i)));
                    out.add(pair);
                }
                return out;
            }
            case ROW:
                return rowToJson((RowType) type, (InternalRow) value);
            default:
                throw new UnsupportedOperationException("oracle cannot convert type " + type);
        }
    }

    /** A JSON list of the fields of {@code row} (read through Paimon's field getters). */
    static ArrayNode rowToJson(RowType rowType, InternalRow row) {
        List<DataType> types = rowType.getFieldTypes();
        ArrayNode out = NODES.arrayNode();
        for (int i = 0; i < types.size(); i++) {
            Object v = InternalRow.createFieldGetter(types.get(i), i).getFieldOrNull(row);
            out.add(toJson(types.get(i), v));
        }
        return out;
    }
}
